"""A user's audio files and sample rates: one reader with one set of errors, one resampler.

:func:`read_audio` reads a file the user named (a ``--voice-ref`` recording, the original track
a dub is mixed into) as float32, mono or with its channels, and turns every way it can be wrong
(missing, a folder, not audio, empty) into one line that names the option and the file.
:func:`resample` converts between rates with scipy's polyphase filter (``resample_poly``), the
one resampler the verifiers, the codecs and the dub track share.
"""

from __future__ import annotations

import os
from math import gcd

import numpy as np

from verified_tts.errors import UserError

__all__ = ["read_audio", "resample", "shift_pitch"]


def read_audio(
    path: str | os.PathLike[str], what: str, *, mono: bool = True
) -> tuple[np.ndarray, int]:
    """``path`` as float32 samples and its rate: shape (n,) mixed down when ``mono``, else
    (n, channels). ``what`` names where the path came from (``--voice-ref``, ``--mix``) in the
    one-line :class:`UserError` a bad file gets."""
    import soundfile

    where = f"{what} {os.fspath(path)}"
    if not os.path.exists(path):
        raise UserError(f"{where} does not exist: check the path")
    if os.path.isdir(path):
        raise UserError(f"{where} is a folder: give a WAV or FLAC file")
    try:
        audio, rate = soundfile.read(os.fspath(path), dtype="float32", always_2d=True)
    except Exception as error:  # soundfile raises LibsndfileError / RuntimeError / OSError
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UserError(
            f"{where} cannot be read as audio, it is not an audio file soundfile reads "
            f"({reason}): give a WAV or FLAC file"
        ) from None
    if audio.size == 0:
        raise UserError(f"{where} holds no audio samples: give a recording")
    if mono:
        audio = audio.mean(axis=1)  # mix the channels down
    return np.ascontiguousarray(audio, dtype=np.float32), int(rate)


def resample(audio: np.ndarray, source_rate: int, target_rate: int) -> np.ndarray:
    """Polyphase resampling (scipy) to ``target_rate``, float32 out; a no-op at the same rate."""
    audio = np.asarray(audio, dtype=np.float32)
    if int(source_rate) == int(target_rate) or audio.size == 0:
        return audio
    from scipy.signal import resample_poly  # scipy.signal is slow to import; only here

    divisor = gcd(int(source_rate), int(target_rate))
    out = resample_poly(audio, int(target_rate) // divisor, int(source_rate) // divisor)
    return out.astype(np.float32, copy=False)


def shift_pitch(audio: np.ndarray, factor: float) -> np.ndarray:
    """``audio`` played ``factor`` times faster: every frequency, formants too, times ``factor``
    and the length divided by it (a voice spoken that much slower comes back to its own pace).
    A change of vocal-tract length rather than a vocoder's pitch shift: it sounds like a smaller
    (``factor`` above 1) or larger speaker, not like the same one singing higher."""
    from fractions import Fraction

    audio = np.asarray(audio, dtype=np.float32)
    ratio = Fraction(float(factor)).limit_denominator(200)
    if ratio == 1 or audio.size == 0:
        return audio
    from scipy.signal import resample_poly

    out = resample_poly(audio, ratio.denominator, ratio.numerator)
    return out.astype(np.float32, copy=False)
