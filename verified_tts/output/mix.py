"""The dub's mix: the new dialogue over a background, each cue at a set ratio, at a loudness target.

The bed is either a music-and-effects stem (``--background``: the original without its dialogue)
or the original mix itself (the video's own audio, or ``--mix``), which still holds the original
dialogue. Under each placed line the bed is lowered, with an attack ramp before the line and a
release after it: a stem only as far as the cue needs to keep the dialogue ``dialogue_ratio_db``
above it (a quiet stretch of music is left alone), the original mix by at least ``duck_db`` (its
own dialogue must go) and further if the ratio needs it. The ratio of every cue is measured after
the mix (K-weighted level of the dub against the bed over the line) and reported. Then the whole
mix is brought to the loudness target with its true peak under the ceiling
(:mod:`verified_tts.output.loudness`), and measured again. The dub sits in the centre: on every
channel of a mono or stereo bed, in the centre channel of a 5.1 one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verified_tts.audio import resample
from verified_tts.output.loudness import (
    Loudness,
    LoudnessMeter,
    normalize_loudness,
    true_peak_dbtp,
)

__all__ = ["BED_KINDS", "CueLevel", "MixResult", "MixSettings", "duck_gain", "mix_dub"]

BED_KINDS = ("background", "original", "none")
_FLOOR_DB = -120.0
_CHUNK_S = 10.0  # how much of the soundtrack is worked on at once


@dataclass(frozen=True)
class MixSettings:
    """How the dub meets its bed and how loud the result is."""

    duck_db: float = 12.0  # the original mix goes at least this far down under speech
    attack_s: float = 0.15  # the bed's ramp down before a line
    release_s: float = 0.3  # and back up after it
    dialogue_ratio_db: float = 10.0  # dialogue above the bed under each line, at least
    loudness_lufs: float = -23.0  # integrated loudness of the delivered mix (EBU R128)
    true_peak_dbtp: float = -1.0  # ceiling of the mix's true peak


@dataclass(frozen=True)
class CueLevel:
    """One line's levels in the finished mix (before the loudness gain, which moves both)."""

    start: float
    end: float
    dialogue_lufs: float
    bed_lufs: float  # the bed under the line after ducking
    ducked_db: float  # how far the bed was lowered under the line

    @property
    def ratio_db(self) -> float:
        return self.dialogue_lufs - self.bed_lufs

    def record(self) -> dict[str, float]:
        return {
            "dialogue_lufs": round(self.dialogue_lufs, 2),
            "bed_lufs": round(self.bed_lufs, 2),
            "dialogue_to_bed_db": round(min(self.ratio_db, 99.0), 2),
            "ducked_db": round(self.ducked_db, 2),
        }


@dataclass(frozen=True)
class MixResult:
    audio: np.ndarray  # (frames, channels) at ``sample_rate``
    sample_rate: int
    bed: str  # one of BED_KINDS
    cues: tuple[CueLevel, ...]
    gain_db: float  # the loudness gain applied to the whole mix
    loudness: Loudness  # measured on the delivered mix


def _dub_channels(dub: np.ndarray, channels: int) -> np.ndarray:
    """The mono dub as (frames, channels): every channel, or the centre of 5.1."""
    if channels == 6:
        out = np.zeros((dub.size, 6), dtype=np.float32)
        out[:, 2] = dub
        return out
    return np.repeat(dub[:, None], channels, axis=1)


def _ramp(first: int, last: int, attack: int, release: int) -> np.ndarray:
    """1 from ``first`` to ``last``, linear ramps of ``attack``/``release`` samples around it,
    for the samples ``first - attack`` to ``last + release`` (offsets small enough for float32,
    wherever in a long film the line sits)."""
    offsets = np.arange(last - first + attack + release, dtype=np.int64)
    up = np.clip((offsets + 1) / max(1, attack), 0.0, 1.0)
    down = np.clip((offsets[::-1] + 1) / max(1, release), 0.0, 1.0)
    return np.minimum(up, down).astype(np.float32)


def duck_gain(
    frames: int,
    sample_rate: int,
    ducks: Sequence[tuple[float, float, float]],
    attack_s: float,
    release_s: float,
) -> np.ndarray:
    """The bed's gain per sample: down by ``depth`` dB from ``start`` to ``end`` of each
    (start, end, depth), ramping in dB over ``attack_s`` before and ``release_s`` after; where
    two ramps meet, the deeper one holds."""
    attack, release = round(attack_s * sample_rate), round(release_s * sample_rate)
    depth_db = np.zeros(frames, dtype=np.float32)
    for start, end, depth in ducks:
        if depth <= 0:
            continue
        first, last = round(start * sample_rate), round(end * sample_rate)
        shape = _ramp(first, last, attack, release) * np.float32(depth)
        lo = first - attack
        a, b = max(0, lo), min(frames, lo + shape.size)
        if b > a:
            np.maximum(depth_db[a:b], shape[a - lo : b - lo], out=depth_db[a:b])
    return np.power(np.float32(10.0), -depth_db / np.float32(20.0))


def _meter(audio_of, frames: int, rate: int, channels: int) -> LoudnessMeter:
    """A loudness meter fed ``audio_of(start, stop)`` a chunk at a time."""
    meter = LoudnessMeter(rate, channels)
    step = round(_CHUNK_S * rate)
    for start in range(0, frames, step):
        meter.feed(audio_of(start, min(frames, start + step)))
    return meter


def mix_dub(
    dub_track: np.ndarray,
    dub_rate: int,
    bed: tuple[np.ndarray, int] | None,
    bed_kind: str,
    lines: Sequence[tuple[float, float]],
    settings: MixSettings,
    *,
    length_s: float | None = None,
) -> MixResult:
    """Mix the placed dub over ``bed`` (frames x channels, rate) and bring it to the target.

    ``lines`` are the (start, end) seconds of every placed line; ``bed_kind`` says what the bed is
    (``background``, ``original`` or ``none``: the dub alone, in stereo at 48 kHz). The bed's
    array is mixed into in place: a film's soundtrack is held in memory once."""
    rate = bed[1] if bed is not None else 48_000
    dub = resample(np.asarray(dub_track, dtype=np.float32).reshape(-1), dub_rate, rate)
    bed_frames = bed[0].shape[0] if bed is not None else 0
    frames = max(dub.size, bed_frames, round((length_s or 0.0) * rate))
    channels = bed[0].reshape(bed_frames, -1).shape[1] if bed is not None else 2
    if bed is not None and bed_frames == frames:
        base = np.asarray(bed[0], dtype=np.float32).reshape(frames, channels)
    else:
        base = np.zeros((frames, channels), dtype=np.float32)
        if bed is not None:
            base[:bed_frames] = np.asarray(bed[0], dtype=np.float32).reshape(bed_frames, channels)
    voice = np.zeros(frames, dtype=np.float32)
    voice[: dub.size] = dub

    voice_meter = _meter(lambda a, b: _dub_channels(voice[a:b], channels), frames, rate, channels)
    bed_meter = _meter(lambda a, b: base[a:b], frames, rate, channels) if bed is not None else None
    depths = []
    for start, end in lines:
        dialogue = voice_meter.segment_lufs(start, end)
        depth = 0.0
        if bed_meter is not None:
            under = bed_meter.segment_lufs(start, end)
            needed = max(0.0, under - (dialogue - settings.dialogue_ratio_db))
            depth = max(needed, settings.duck_db) if bed_kind == "original" else needed
        depths.append(depth)
    ducks = [(start, end, depth) for (start, end), depth in zip(lines, depths, strict=True)]
    base *= duck_gain(frames, rate, ducks, settings.attack_s, settings.release_s)[:, None]
    ducked = _meter(lambda a, b: base[a:b], frames, rate, channels) if bed is not None else None
    levels = [
        CueLevel(
            start,
            end,
            voice_meter.segment_lufs(start, end),
            ducked.segment_lufs(start, end) if ducked is not None else _FLOOR_DB,
            depth,
        )
        for (start, end), depth in zip(lines, depths, strict=True)
    ]
    step = round(_CHUNK_S * rate)
    mixed = LoudnessMeter(rate, channels)
    for first in range(0, frames, step):  # the dub joins the ducked bed, a chunk at a time
        last = min(frames, first + step)
        base[first:last] += _dub_channels(voice[first:last], channels)
        mixed.feed(base[first:last])
    audio, gain_db, loudness = normalize_loudness(
        base,
        rate,
        settings.loudness_lufs,
        settings.true_peak_dbtp,
        measured=mixed.levels(true_peak_dbtp(base, rate)),
    )
    return MixResult(audio, rate, bed_kind, tuple(levels), gain_db, loudness)
