"""Subtitle cues into segments: the dub's text front-end, after :mod:`~verified_tts.text.subtitles`.

A dub voices each cue as one utterance. :func:`cues_within` keeps the cues that start inside the
track's ``--duration`` (the last one cut at it, with a warning per cue it drops or cuts);
:func:`cue_segments` turns cues into the :class:`~verified_tts.text.book.Segment` s the synthesizer
plans, with the cue's text normalised for speech, dialogue kind, its source line and the voice its
speaker maps to; :func:`unmapped_speakers` names the speakers a voice map leaves to the default
voice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from verified_tts.errors import UserError
from verified_tts.text.book import Segment
from verified_tts.text.normalize import normalize_text
from verified_tts.text.subtitles import Cue, Subtitles, voice_for

__all__ = ["cue_segments", "cues_within", "unmapped_speakers"]


def cue_segments(cues: Sequence[Cue], voices: Mapping[str, str]) -> list[Segment]:
    """One dialogue segment per cue, in order; the last one ends the input."""
    return [
        Segment(
            chapter=0,
            paragraph=position,
            sentence=0,
            text=cue.text,
            spoken=normalize_text(cue.text),
            kind="dialogue",
            line=cue.line,
            pause_after="end" if position == len(cues) - 1 else "sentence",
            voice=voice_for(cue.speaker, voices),
        )
        for position, cue in enumerate(cues)
    ]


def cues_within(
    subtitles: Subtitles, duration: float | None, name: str
) -> tuple[list[Cue], list[str]]:
    """Cues that start inside ``--duration`` (the last one cut at it), with warnings."""
    cues, warnings = list(subtitles.cues), []
    if duration is None:
        return cues, warnings
    kept = []
    for cue in cues:
        if cue.start >= duration:
            warnings.append(
                f"{name}: cue {cue.index} (line {cue.line}) starts after --duration "
                f"{duration:g} s: not voiced"
            )
        elif cue.end > duration:
            warnings.append(
                f"{name}: cue {cue.index} (line {cue.line}) ends after --duration {duration:g} s: "
                "its slot ends there"
            )
            kept.append(replace(cue, end=duration))
        else:
            kept.append(cue)
    if not kept:
        raise UserError(f"--duration {duration:g} s ends before the first cue starts: raise it")
    return kept, warnings


def unmapped_speakers(cues: Sequence[Cue], voices: Mapping[str, str]) -> list[str]:
    """Speakers of ``cues`` that the voice map gives no voice, sorted."""
    mapped = {c.speaker for c in cues if c.speaker and voice_for(c.speaker, voices) is not None}
    return sorted({c.speaker for c in cues if c.speaker} - mapped)
