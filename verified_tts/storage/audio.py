"""Checks of a stored candidate's audio file: it exists, decodes in full, has the length the
index recorded, and holds the samples it was stored with (the sha256 of its decoded 16-bit
samples, :func:`audio_digest`). Used by the store the first time a run reads a candidate and by
``verified-tts doctor``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import soundfile as sf

__all__ = ["audio_digest", "audio_problem", "check_audio"]


def audio_digest(samples: np.ndarray) -> str:
    """The digest of a candidate's audio as the store holds it: its 16-bit samples, decoded."""
    return hashlib.sha256(np.ascontiguousarray(samples, dtype="<i2").tobytes()).hexdigest()


def check_audio(
    path: Path, expected_frames: int | None, expected_digest: str | None
) -> tuple[str | None, str | None]:
    """(why the file cannot be trusted or None, the digest of its samples when it decodes)."""
    if not path.exists():
        return "its audio file is missing", None
    try:
        with sf.SoundFile(path) as handle:
            samples = handle.read(dtype="int16")
    except (sf.LibsndfileError, RuntimeError, OSError) as error:
        return f"its audio file does not decode ({error})", None
    if expected_frames is not None and len(samples) != expected_frames:
        return f"its audio file is truncated ({len(samples)} of {expected_frames} samples)", None
    digest = audio_digest(samples)
    if expected_digest is not None and digest != expected_digest:
        return "its audio file holds other samples than were stored (digest differs)", None
    return None, digest


def audio_problem(
    path: Path, expected_frames: int | None = None, expected_digest: str | None = None
) -> str | None:
    """Why the audio file at ``path`` cannot be trusted, or None when it decodes in full (to
    ``expected_frames`` samples whose digest is ``expected_digest``, where given)."""
    return check_audio(path, expected_frames, expected_digest)[0]
