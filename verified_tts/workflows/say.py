"""``say``: one line of text in one voice, to hear what a voice sounds like before casting it.

The text goes through the book front end's normaliser (numbers, abbreviations), then to the
generator of the voice (a catalogue name, :mod:`verified_tts.voices`; none: the default
generator) as one candidate with the given seed, and the clip is written as it came out (WAV or
FLAC by the suffix, at the voice's own sample rate), atomically. No verifier runs: this is a
sample, not a render.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest
from verified_tts.generators.voice_set import VoiceSet
from verified_tts.storage.atomic import write_audio_atomic

__all__ = ["SaidClip", "say"]

_FORMATS = {".wav": "WAV", ".flac": "FLAC"}


@dataclass(frozen=True)
class SaidClip:
    """What ``say`` wrote."""

    path: Path
    voice: str
    generator: str
    sample_rate: int
    duration_s: float
    spoken: str  # the text as the generator was given it
    info: Mapping[str, Any]


def say(
    text: str,
    out: str | Path,
    *,
    voice: str | None = None,
    seed: int = 0,
    voices_dir: str | Path | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> SaidClip:
    """Speak ``text`` in ``voice`` into ``out``; ``options`` are per-generator option tables."""
    from verified_tts.text.normalize import normalize_text

    out = Path(out)
    if out.is_dir():
        raise UserError(f"--out {out} is a folder: give a file name such as sample.wav")
    if out.suffix.lower() not in _FORMATS:
        raise UserError(f"--out {out}: write a .wav or .flac file")
    spoken = normalize_text(text).strip()
    if not spoken:
        raise UserError('nothing to say: give some words, e.g. say "Hello there."')
    from verified_tts.voices import engine_of, find_voice, refuse_bare_engine

    refuse_bare_engine(voice, voices_dir)
    if engine_of(voice) is not None:  # the catalogue's own spelling of the name
        voice = find_voice(str(voice), voices_dir).name
    voices = VoiceSet(GeneratorConfig(), voices_dir=voices_dir, options=options)
    generator = voices.generator(voice)
    candidate = voices.sample([SynthesisRequest("say", 0, int(seed), spoken, voice=voice)])[0]
    if not candidate.audio.size:
        raise UserError(f"voice {voice or generator.name} said nothing for {text!r}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create the folder of --out {out} ({error.strerror})") from None
    write_audio_atomic(
        out, candidate.audio, candidate.sample_rate, format=_FORMATS[out.suffix.lower()],
        subtype="PCM_16",
    )  # fmt: skip
    return SaidClip(
        path=out,
        voice=voice or f"{generator.name} (default)",
        generator=generator.name,
        sample_rate=candidate.sample_rate,
        duration_s=round(candidate.duration_s, 3),
        spoken=spoken,
        info=dict(candidate.info),
    )
