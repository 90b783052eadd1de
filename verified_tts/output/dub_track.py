"""The dub's track: a slot per cue, each winner fitted into its slot and laid on one timeline.

Each cue gets a :class:`Slot`: from its start to its end, extended into the silence before the
next cue by at most ``max_extend_s`` (never closer than ``min_gap_s`` to the next cue).
:func:`fit_to_slot` fixes only what selection left: the winner, trimmed of edge silence exactly as
the ``duration_fit`` verifier measured it and levelled, is sped up (WSOLA, pitch-preserving,
:func:`time_stretch`) by just the factor it needs, at most the speed limit; if it is still too
long it runs on into the silence before the next cue, and where even that is not enough it runs
on over the next line's start rather than lose a word: it is flagged with the seconds it ran past
its slot and over the next line, so the producer can shorten the line (``dub.json`` lists these
first). :func:`voiced_srt` and :func:`track_stats` describe where every line landed; the mix over
a background is :mod:`verified_tts.output.mix`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import numpy as np

from verified_tts.options import DubOptions, DurationFitOptions, RenderConfig
from verified_tts.output.assembly import level_clip
from verified_tts.output.dub_reasons import cue_notes, cue_reasons
from verified_tts.output.timeline import Timeline
from verified_tts.storage.results import UtteranceResult
from verified_tts.storage.store import STORE_DIR
from verified_tts.text.subtitles import Cue
from verifiers.duration_fit import speech_bounds

__all__ = [
    "DubOptions",
    "PlacedCue",
    "Slot",
    "compute_slots",
    "fit_to_slot",
    "lay_on_track",
    "time_stretch",
    "track_stats",
    "voiced_srt",
]

_FADE_S = 0.03  # the fade where the end of the track stops a line, so it does not click


@dataclass(frozen=True)
class Slot:
    """Where a cue may sound: ``start`` to ``end`` (cue end plus the extension); ``limit`` is
    the hard end (the next cue's start less the gap, or the track's end) an overrun may reach."""

    start: float
    cue_end: float
    end: float
    limit: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def compute_slots(cues: Sequence[Cue], options: DubOptions, track_end: float) -> list[Slot]:
    """One slot per cue (cues in time order, not overlapping: see ``text.subtitles``)."""
    slots = []
    for position, cue in enumerate(cues):
        if position + 1 < len(cues):
            following = cues[position + 1].start
            # the gap before the next cue is taken from the silence only, never from this cue
            limit = max(cue.end, following - options.min_gap_s)
        else:
            limit = max(cue.end, track_end)
        limit = min(limit, track_end)
        cue_end = min(cue.end, limit)
        end = min(cue_end + options.max_extend_s, limit)
        slots.append(Slot(cue.start, cue_end, end, limit))
    return slots


def time_stretch(audio: np.ndarray, sample_rate: int, rate: float) -> np.ndarray:
    """Speed ``audio`` up by ``rate`` (>1 is faster) with WSOLA, keeping its pitch.

    The output is exactly ``round(len(audio) / rate)`` samples: the input is padded with
    silence so WSOLA's last frames are not lost, and the result cut to length.
    """
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if rate == 1.0 or audio.size == 0:
        return audio.copy()
    from audiotsm import wsola
    from audiotsm.io.array import ArrayReader, ArrayWriter

    # ~46 ms frames (1024 samples at 22.05 kHz): long enough for a pitch period of a low voice
    frame = 2 ** max(8, round(math.log2(0.046 * sample_rate)))
    padded = np.concatenate([audio, np.zeros(2 * frame, dtype=np.float32)])
    writer = ArrayWriter(1)
    wsola(1, speed=rate, frame_length=frame).run(ArrayReader(padded.reshape(1, -1)), writer)
    out = np.asarray(writer.data, dtype=np.float32).reshape(-1)
    target = round(audio.size / rate)
    if out.size < target:
        out = np.concatenate([out, np.zeros(target - out.size, dtype=np.float32)])
    return out[:target]


@dataclass(frozen=True)
class PlacedCue:
    """One voiced cue on the timeline, as ``dub.json`` reports it."""

    cue: Cue
    slot: Slot
    voice: str | None
    result: UtteranceResult
    speech_seconds: float  # the winner's speech (edge silence trimmed) before any stretch
    needed_stretch: float  # speech / slot: above 1 it had to be sped up
    stretch: float  # the factor applied (1.0 = none), at most the speed limit
    placed_start: float
    placed_end: float
    overlap_seconds: float  # seconds it sounds past its slot (into the silence before the next)
    overlap_next_seconds: float  # seconds it sounds over the next line (even the silence was short)
    flag_reasons: tuple[str, ...]
    past_end_seconds: float = 0.0  # seconds lost at the end of the track (the film's end)

    @property
    def flagged(self) -> bool:
        return bool(self.flag_reasons)

    def record(self) -> dict[str, Any]:
        winner = self.result.winner_candidate
        return {
            "index": self.cue.index,
            "id": self.cue.identifier,
            "line": self.cue.line,
            "start": round(self.cue.start, 3),
            "end": round(self.cue.end, 3),
            "text": self.cue.text,
            "speaker": self.cue.speaker,
            "voice": self.voice,
            "slot_end": round(self.slot.end, 3),
            "slot_seconds": round(self.slot.seconds, 3),
            "speech_seconds": round(self.speech_seconds, 3),
            "needed_stretch": round(self.needed_stretch, 4),
            "stretch": round(self.stretch, 4),
            "placed_start": round(self.placed_start, 3),
            "placed_end": round(self.placed_end, 3),
            "overlap_seconds": round(self.overlap_seconds, 3),
            "overlap_next_seconds": round(self.overlap_next_seconds, 3),
            "past_end_seconds": round(self.past_end_seconds, 3),
            # only the track's end cuts a line (kept under its old name for readers of dub.json)
            "cut_seconds": round(self.past_end_seconds, 3),
            "flagged": self.flagged,
            "flag_reasons": list(self.flag_reasons),
            "failed_gates": list(winner.failed) if self.result.flagged else [],
            "notes": cue_notes(winner.detail),
            "key": self.result.utterance.key,
            "winner": self.result.winner,
            "candidates": len(self.result.candidates),
            "scores": {k: round(float(v), 5) for k, v in winner.metrics.items()},
            "audio": f"{STORE_DIR}/{winner.audio}" if winner.audio else None,
        }


def fit_to_slot(
    audio: np.ndarray,
    sample_rate: int,
    cue: Cue,
    slot: Slot,
    result: UtteranceResult,
    voice: str | None,
    config: RenderConfig,
    speed_limit: float,
    trim: DurationFitOptions,
) -> tuple[PlacedCue, np.ndarray]:
    start, end = speech_bounds(
        audio, sample_rate, threshold_dbfs=trim.silence_threshold_dbfs, keep_edge_s=trim.keep_edge_s
    )
    speech = level_clip(audio[start:end], sample_rate, config.assembly)
    speech_seconds = speech.size / sample_rate
    needed = speech_seconds / slot.seconds if slot.seconds > 0 else math.inf
    # stretch only what is left: the factor this winner needs, never more, never past the limit
    stretch = min(max(needed, 1.0), speed_limit)
    if stretch > 1.0:
        speech = time_stretch(speech, sample_rate, stretch)
    reasons = []
    if result.flagged:
        winner = result.winner_candidate
        heard = cue_reasons(winner.failed, winner.metrics, winner.detail, config.selection.gates)
        reasons.append(f"no candidate passed the gates: {'; '.join(heard or ['none'])}")
    placed_end = slot.start + speech.size / sample_rate
    overlap = max(0.0, placed_end - slot.end)
    if overlap > 1e-3:
        reasons.append(f"too long at the speed limit: ran {overlap:.2f} s past its slot")
    else:
        overlap = 0.0
    over_next = max(0.0, placed_end - slot.limit)
    if over_next > 1e-3:
        reasons.append(
            f"no silence left before the next cue: it runs {over_next:.2f} s over the next line; "
            "shorten the line"
        )
    else:
        over_next = 0.0
    placed = PlacedCue(
        cue=cue,
        slot=slot,
        voice=voice,
        result=result,
        speech_seconds=speech_seconds,
        needed_stretch=needed,
        stretch=stretch,
        placed_start=slot.start,
        placed_end=placed_end,
        overlap_seconds=overlap,
        overlap_next_seconds=over_next,
        flag_reasons=tuple(reasons),
    )
    return placed, speech


def lay_on_track(
    fitted: Sequence[tuple[PlacedCue, np.ndarray]], sample_rate: int, track_end: float
) -> tuple[Timeline, list[PlacedCue]]:
    """One track of ``track_end`` seconds with every fitted line added at its slot's start.

    Lines run on whole past their slot and over the next line (flagged by :func:`fit_to_slot`);
    only the end of the track (the end of the film) stops one, with a short fade, and the line
    says so. Returns the track (as its pieces: :class:`~verified_tts.output.timeline.Timeline`,
    so a feature-length film's silence is never held) and the placed lines as they ended up."""
    frames = round(track_end * sample_rate)
    fade = round(_FADE_S * sample_rate)
    placed, pieces = [], []
    for item, speech in fitted:
        first = round(item.slot.start * sample_rate)
        room = max(0, frames - first)
        if speech.size > room:
            past = (speech.size - room) / sample_rate
            speech = speech[:room].copy()
            speech[-min(fade, room) :] *= np.linspace(1.0, 0.0, min(fade, room), dtype=np.float32)
            reason = f"runs {past:.2f} s past the end of the track; shorten the line"
            item = replace(
                item,
                placed_end=item.slot.start + room / sample_rate,
                past_end_seconds=past,
                flag_reasons=(*item.flag_reasons, reason),
            )
        if speech.size:
            pieces.append((first, np.asarray(speech, dtype=np.float32)))
        placed.append(item)
    return Timeline(sample_rate, frames, tuple(pieces)), placed


def voiced_srt(placed: Sequence[PlacedCue]) -> str:
    import srt

    return srt.compose(
        [
            srt.Subtitle(
                index=number,
                start=timedelta(seconds=round(p.placed_start, 3)),
                end=timedelta(seconds=round(p.placed_end, 3)),
                content=p.cue.text,
            )
            for number, p in enumerate(placed, 1)
        ],
        reindex=False,
    )


def track_stats(placed: Sequence[PlacedCue], skipped: int) -> dict[str, Any]:
    stretches = [p.stretch for p in placed]
    needed = [p.needed_stretch for p in placed]
    fit = sum(p.needed_stretch <= 1.0 for p in placed)
    return {
        "cues": len(placed),
        "skipped": skipped,
        "flagged": sum(p.flagged for p in placed),
        "fit_without_stretch": fit,
        "fit_without_stretch_share": round(fit / len(placed), 4) if placed else 0.0,
        "stretched": sum(s > 1.0 for s in stretches),
        "mean_stretch": round(float(np.mean(stretches)), 4) if placed else 1.0,
        "max_stretch": round(max(stretches), 4) if placed else 1.0,
        "mean_needed_stretch": round(float(np.mean(needed)), 4) if placed else 0.0,
        "max_needed_stretch": round(max(needed), 4) if placed else 0.0,
        "overran": sum(p.overlap_seconds > 0 or p.overlap_next_seconds > 0 for p in placed),
        "over_next_line": sum(p.overlap_next_seconds > 0 for p in placed),
        "cut": sum(p.past_end_seconds > 0 for p in placed),  # only at the track's end
    }
