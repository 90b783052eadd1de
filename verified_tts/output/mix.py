"""The dub's mix: the new dialogue over a background, each cue at a set ratio, at a loudness target.

The bed is either a music-and-effects stem (``--background``: the original without its dialogue)
or the original mix itself (the video's own audio, or ``--mix``), which still holds the original
dialogue. Under each placed line the bed is lowered, with an attack ramp before the line and a
release after it: a stem only as far as the cue needs to keep the dialogue ``dialogue_ratio_db``
above it (a quiet stretch of music is left alone), the original mix by at least ``duck_db`` (its
own dialogue must go) and further if the ratio needs it. The ratio of every cue is measured after
the mix (K-weighted level of the dub against the bed over the line) and reported. Then the whole
mix is brought to the loudness target with its true peak under the ceiling
(:mod:`verified_tts.output.loudness`), and measured again as it is delivered. The dub sits in the
centre: on every channel of a mono or stereo bed, in the centre channel of a 5.1 or 7.1 one
(:mod:`verified_tts.output.channels`); the bed keeps its channels.

Everything streams, so a feature film mixes in memory that does not grow with its length: the dub
is a :class:`~verified_tts.output.timeline.Timeline` (its lines, not its silence) and the bed is
decoded a block at a time (:class:`~verified_tts.output.bed.Bed`) once per pass: the levels of
dub and bed, then the ducked bed and the mix (loudness, true peak), then the delivery
(:meth:`PlannedMix.blocks`), which the muxer and ``mix.wav`` pull. Only where the gain would
push the true peak over the ceiling does the limiter run, and then the gain is settled with
measuring passes before the delivery.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from verified_tts.output.bed import Bed
from verified_tts.output.channels import dub_channels
from verified_tts.output.loudness import Loudness, LoudnessMeter, TruePeakMeter
from verified_tts.output.timeline import Timeline

__all__ = [
    "BED_KINDS",
    "CueLevel",
    "MixResult",
    "MixSettings",
    "PlannedMix",
    "duck_gain",
    "plan_mix",
]

BED_KINDS = ("background", "original", "none")
_FLOOR_DB = -120.0
_CHUNK_S = 10.0  # how much of the soundtrack is worked on at once
_LIMIT_CONTEXT = 1024  # samples each side a limited block sees: over the limiter's look-ahead


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
    """The delivered mix as measured."""

    sample_rate: int
    channels: int
    frames: int
    bed: str  # one of BED_KINDS
    cues: tuple[CueLevel, ...]
    gain_db: float  # the loudness gain applied to the whole mix
    loudness: Loudness  # measured on the delivered mix
    limited: bool  # the true-peak limiter ran


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
    *,
    offset: int = 0,
) -> np.ndarray:
    """The bed's gain for ``frames`` samples from sample ``offset`` on: down by ``depth`` dB
    from ``start`` to ``end`` of each (start, end, depth), ramping in dB over ``attack_s`` before
    and ``release_s`` after; where two ramps meet, the deeper one holds."""
    attack, release = round(attack_s * sample_rate), round(release_s * sample_rate)
    depth_db = np.zeros(frames, dtype=np.float32)
    for start, end, depth in ducks:
        if depth <= 0:
            continue
        first, last = round(start * sample_rate), round(end * sample_rate)
        lo, hi = first - attack - offset, last + release - offset
        if hi <= 0 or lo >= frames:
            continue
        shape = _ramp(first, last, attack, release) * np.float32(depth)
        a, b = max(0, lo), min(frames, lo + shape.size)
        if b > a:
            np.maximum(depth_db[a:b], shape[a - lo : b - lo], out=depth_db[a:b])
    return np.power(np.float32(10.0), -depth_db / np.float32(20.0))


@dataclass(frozen=True)
class PlannedMix:
    """A mix whose ducking and gain are settled; :meth:`blocks` makes it, a block at a time,
    and measures what it makes (:meth:`result`, once the blocks are all taken)."""

    voice: Timeline  # the dub at the bed's rate
    bed: Bed | None
    frames: int
    channels: int
    ducks: tuple[tuple[float, float, float], ...]
    settings: MixSettings
    gain_db: float
    ceiling_dbtp: float | None  # where the limiter holds the peaks, None: not needed
    cues: tuple[CueLevel, ...]
    bed_kind: str
    _delivered: list[Loudness] = field(default_factory=list, compare=False, repr=False)

    @property
    def sample_rate(self) -> int:
        return self.voice.sample_rate

    def blocks(self) -> Iterator[np.ndarray]:
        """The delivered mix in (frames, channels) blocks, measured as it goes."""
        meter, peak = LoudnessMeter(self.sample_rate, self.channels), TruePeakMeter()
        for block in self._made(self.gain_db, self.ceiling_dbtp):
            meter.feed(block)
            peak.feed(block)
            yield block
        self._delivered.append(meter.levels(peak.dbtp()))

    def result(self) -> MixResult:
        if not self._delivered:
            for _ in self.blocks():
                pass
        return MixResult(
            self.sample_rate, self.channels, self.frames, self.bed_kind, self.cues,
            self.gain_db, self._delivered[-1], self.ceiling_dbtp is not None,
        )  # fmt: skip

    def _made(self, gain_db: float, ceiling: float | None) -> Iterator[np.ndarray]:
        gain = np.float32(10 ** (gain_db / 20))
        mixed = (ducked + voice for ducked, voice in _ducked(self))
        scaled = (block * gain for block in mixed)
        yield from (_limited(scaled, self.sample_rate, ceiling) if ceiling is not None
                    else scaled)  # fmt: skip


def _pairs(
    voice: Timeline, bed: Bed | None, frames: int, channels: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
    """(first sample, the dub's block in the output's layout, the bed's block or None)."""
    step = round(_CHUNK_S * voice.sample_rate)
    beds = bed.blocks(step, frames) if bed is not None else None
    for first in range(0, frames, step):
        last = min(frames, first + step)
        dub = dub_channels(voice.span(first, last), channels)
        yield first, dub, next(beds) if beds is not None else None


def _ducked(mix: PlannedMix) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(the ducked bed, the dub) block by block; silence for the bed where there is none."""
    rate, settings = mix.sample_rate, mix.settings
    for first, dub, bed in _pairs(mix.voice, mix.bed, mix.frames, mix.channels):
        if bed is None:
            yield np.zeros_like(dub), dub
            continue
        bed *= duck_gain(bed.shape[0], rate, mix.ducks, settings.attack_s, settings.release_s,
                         offset=first)[:, None]  # fmt: skip
        yield bed, dub


def _limited(blocks: Iterator[np.ndarray], rate: int, ceiling_db: float) -> Iterator[np.ndarray]:
    """The look-ahead limiter on the oversampled peak envelope, a block at a time: each block is
    limited when the next arrives, with enough of its neighbours that the result is the one
    the whole programme would give."""
    from verified_tts.output.acx import limit_peaks
    from verified_tts.output.loudness import peak_envelope

    ceiling = 10 ** (ceiling_db / 20)
    left: np.ndarray | None = None
    pending: np.ndarray | None = None

    def limit(right: np.ndarray) -> np.ndarray:
        assert pending is not None
        before = left if left is not None else pending[:0]
        padded = np.concatenate([before, pending, right])
        envelope = peak_envelope(padded, rate, ceiling)
        limited = limit_peaks(envelope, rate, ceiling_db)
        ratio = np.divide(limited, envelope, out=np.ones_like(envelope), where=envelope > 0)
        return pending * ratio[before.shape[0] : before.shape[0] + pending.shape[0], None]

    for block in blocks:
        if pending is not None:
            out = limit(block[:_LIMIT_CONTEXT])
            left = pending[-_LIMIT_CONTEXT:]
            yield out
        pending = block
    if pending is not None:
        yield limit(pending[:0])


def _measure(blocks: Iterator[np.ndarray], rate: int, channels: int) -> Loudness:
    meter, peak = LoudnessMeter(rate, channels), TruePeakMeter()
    for block in blocks:
        meter.feed(block)
        peak.feed(block)
    return meter.levels(peak.dbtp())


def plan_mix(
    dub: Timeline,
    bed: Bed | None,
    lines: Sequence[tuple[float, float]],
    settings: MixSettings,
    *,
    length_s: float | None = None,
    attempts: int = 4,
) -> PlannedMix:
    """Settle the mix of ``dub`` over ``bed`` (None or kind ``none``: the dub alone, in stereo
    at 48 kHz): how far the bed goes down under each of ``lines`` (placed (start, end) seconds)
    and the gain (and limiter) that bring the whole to the loudness target. Reads the bed twice
    (three times and more only where the limiter is needed)."""
    if bed is not None and bed.kind == "none":
        bed = None
    rate = bed.sample_rate if bed is not None and bed.sample_rate else 48_000
    channels = bed.channels if bed is not None and bed.channels else 2
    voice = dub.at_rate(rate)
    bed_frames = round(bed.seconds * rate) if bed is not None and bed.seconds else 0
    wanted = round(length_s * rate) if length_s is not None else bed_frames
    frames = max(voice.frames, wanted)
    kind = bed.kind if bed is not None else "none"

    voice_meter = LoudnessMeter(rate, channels)
    bed_meter = LoudnessMeter(rate, channels)
    for _, dub_block, bed_block in _pairs(voice, bed, frames, channels):
        voice_meter.feed(dub_block)
        if bed_block is not None:
            bed_meter.feed(bed_block)
    depths = []
    for start, end in lines:
        depth = 0.0
        if bed is not None:
            dialogue = voice_meter.segment_lufs(start, end)
            needed = max(0.0, bed_meter.segment_lufs(start, end)
                         - (dialogue - settings.dialogue_ratio_db))  # fmt: skip
            depth = max(needed, settings.duck_db) if kind == "original" else needed
        depths.append(depth)
    ducks = tuple((start, end, depth) for (start, end), depth in zip(lines, depths, strict=True))
    plan = PlannedMix(voice, bed, frames, channels, ducks, settings, 0.0, None, (), kind)

    ducked_meter, mixed_meter, peak = (LoudnessMeter(rate, channels),
                                       LoudnessMeter(rate, channels), TruePeakMeter())  # fmt: skip
    for ducked, dub_block in _ducked(plan):
        ducked_meter.feed(ducked)
        ducked += dub_block
        mixed_meter.feed(ducked)
        peak.feed(ducked)
    levels = tuple(
        CueLevel(start, end, voice_meter.segment_lufs(start, end),
                 ducked_meter.segment_lufs(start, end) if bed is not None else _FLOOR_DB, depth)
        for (start, end), depth in zip(lines, depths, strict=True)
    )  # fmt: skip
    measured = mixed_meter.levels(peak.dbtp())
    plan = _settle(plan, measured, settings, attempts)
    return PlannedMix(voice, bed, frames, channels, ducks, settings, plan.gain_db,
                      plan.ceiling_dbtp, levels, kind)  # fmt: skip


def _settle(plan: PlannedMix, measured: Loudness, settings: MixSettings, attempts: int):
    """The gain (and limiter ceiling) that meet the target: exact from the measure where the
    peaks stay under the ceiling; otherwise limited and measured again, a few rounds at most."""
    from dataclasses import replace

    if measured.integrated_lufs <= -70.0:
        return plan
    gain = settings.loudness_lufs - measured.integrated_lufs
    if measured.true_peak_dbtp + gain <= settings.true_peak_dbtp:
        return replace(plan, gain_db=gain)
    ceiling = settings.true_peak_dbtp
    for _ in range(attempts):
        trial = replace(plan, gain_db=gain, ceiling_dbtp=ceiling)
        found = _measure(trial._made(gain, ceiling), plan.sample_rate, plan.channels)
        if found.true_peak_dbtp > settings.true_peak_dbtp:
            ceiling -= found.true_peak_dbtp - settings.true_peak_dbtp + 0.05  # overshoot
            continue
        if abs(found.integrated_lufs - settings.loudness_lufs) <= 0.1:
            break
        gain += settings.loudness_lufs - found.integrated_lufs
    return replace(plan, gain_db=gain, ceiling_dbtp=ceiling)
