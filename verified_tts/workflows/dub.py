"""``dub``: a subtitle file in, one timed dubbing track (plus report, manifest and SRT) out.

This is the library function behind ``verified-tts dub``. Each cue gets a *slot*: from its start
to its end, extended into the silence before the next cue by at most ``max_extend_s`` (and never
closer than ``min_gap_s`` to the next cue). The slot's seconds travel with the utterance to every
verifier, where ``duration_fit`` measures the stretch a candidate would need; the dub policy gates
that stretch at the speed limit and ranks natural fits first, so best-of-N picks a candidate that
fits instead of squeezing one. Only what is left is then fixed: a winner that is still too long is
sped up (WSOLA from ``audiotsm``, pitch-preserving) by just the factor it needs, at most the speed
limit; if it is still too long it runs on into the silence before the next cue (flagged, with the
seconds past its slot reported) and, where there is no silence left, it is cut with a short fade
so two lines never play at once (flagged). Winners are trimmed of edge silence exactly as the
verifier measured them, levelled, and placed at their cue's start on one mono track. The store,
resume behaviour and manifest are the render's; every output file is written atomically.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.config import RenderConfig
from verified_tts.errors import UserError
from verified_tts.output.assembly import AssembledFile, level_clip
from verified_tts.output.atomic import write_audio_atomic, write_json_atomic, write_text_atomic
from verified_tts.output.manifest import STORE_DIR, Manifest, build_manifest, write_manifest
from verified_tts.pipeline import Synthesizer, UtteranceResult
from verified_tts.selection import Gate
from verified_tts.store import Store
from verified_tts.tables import check_keys
from verified_tts.text.cues import cue_segments, cues_within, unmapped_speakers
from verified_tts.text.subtitles import Cue, Subtitles, load_subtitles
from verified_tts.verification import LoadedVerifiers, load_verifiers
from verified_tts.workflows.render import prepare_output
from verifiers.duration_fit import DurationFitOptions, speech_bounds

__all__ = [
    "DubOptions",
    "DubSummary",
    "PlacedCue",
    "Slot",
    "compute_slots",
    "dub",
    "dub_settings",
    "duck_and_mix",
    "time_stretch",
]

_FADE_S = 0.03  # fade-out where a line that cannot fit is cut, so the cut does not click


@dataclass(frozen=True)
class DubOptions:
    """Timing, stretch and mixing settings of a dub (``[dub]`` in the TOML config)."""

    speed_limit: float = 1.25  # the most a winner is sped up (1.25 = 25% faster)
    max_extend_s: float = 1.0  # how far a slot may reach into the silence after its cue
    min_gap_s: float = 0.1  # silence always kept before the next cue starts
    tail_s: float = 1.0  # silence after the last cue's end (without --duration)
    duration: float | None = None  # the track's length in seconds (default: last end + tail)
    duck_db: float = 12.0  # how far the original is lowered under speech in the mix
    voices: Mapping[str, str] = field(default_factory=dict)  # speaker -> generator voice

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed_limit) and 1.0 <= self.speed_limit <= 4.0):
            raise UserError(
                f"--speed-limit must be between 1.0 (never stretch) and 4.0 "
                f"(got {self.speed_limit})"
            )
        for name in ("max_extend_s", "min_gap_s", "tail_s", "duck_db"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise UserError(f"[dub] {name} must be a number >= 0 (got {value})")
        if self.duration is not None and not (math.isfinite(self.duration) and self.duration > 0):
            raise UserError(
                f"--duration must be a positive number of seconds (got {self.duration})"
            )
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.voices.items()):
            raise UserError('[dub.voices] maps speaker names to voices: NAME = "voice"')


def dub_settings(table: Mapping[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """Keyword arguments for :func:`dub` from a ``[dub]`` table plus overrides (None = unset).

    Voice maps merge: an override names speakers on top of the table's ``[dub.voices]``.
    """
    table = dict(table or {})
    check_keys(table, (f.name for f in fields(DubOptions)), "[dub]")
    settings = {**table, **{k: v for k, v in overrides.items() if v is not None}}
    if "voices" in table and not isinstance(table["voices"], Mapping):
        raise UserError('[dub.voices] must be a table of NAME = "voice"')
    voices = {**dict(table.get("voices", {})), **dict(overrides.get("voices") or {})}
    if voices:
        settings["voices"] = voices
    return settings


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
    cut_seconds: float  # seconds cut off because even the silence was not enough
    flag_reasons: tuple[str, ...]

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
            "cut_seconds": round(self.cut_seconds, 3),
            "flagged": self.flagged,
            "flag_reasons": list(self.flag_reasons),
            "key": self.result.utterance.key,
            "winner": self.result.winner,
            "candidates": len(self.result.candidates),
            "scores": {k: round(float(v), 5) for k, v in winner.metrics.items()},
            "audio": f"{STORE_DIR}/{winner.audio}" if winner.audio else None,
        }


@dataclass(frozen=True)
class DubSummary:
    """What the CLI prints at the end of a dub."""

    out_dir: Path
    cues: int  # voiced cues
    skipped: int
    flagged: int
    fit_without_stretch: int
    mean_stretch: float
    max_stretch: float
    overran: int  # cues that ran past their slot (into the gap, or cut)
    candidates_generated: int
    candidates_reused: int
    seconds: dict[str, float]
    unavailable: dict[str, str]
    warnings: tuple[str, ...]
    track: Path
    mix: Path | None


def _dubbing_synthesizer(base: Synthesizer, speed_limit: float) -> Synthesizer:
    """The loaded models of ``base`` under the dub policy: duration_fit on, stretch gated."""
    policy = base.config.selection
    # margin: an adaptive run stops early only on a candidate that needs no stretch at all
    stretch_gate = Gate("stretch", max=speed_limit, margin=speed_limit - 1.0)
    gates = (*(g for g in policy.gates if g.metric != "stretch"), stretch_gate)
    config = replace(base.config, selection=replace(policy, gates=gates))
    verifiers = base.verifiers
    if verifiers.get("duration_fit") is None and "duration_fit" not in verifiers.status:
        extra = load_verifiers(base.config.verifiers, order=("duration_fit",))
        verifiers = LoadedVerifiers(
            (*verifiers.active, *extra.active), {**verifiers.status, **extra.status}
        )
    return Synthesizer(base.generator, verifiers, config, voice_reference=base.voice_reference)


def _place(
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
        reasons.append(f"no candidate passed the gates ({', '.join(_failed(result))})")
    available = round((slot.limit - slot.start) * sample_rate)
    cut = max(0, speech.size - available)
    if cut:
        fade = min(round(_FADE_S * sample_rate), available)
        speech = speech[:available].copy()
        if fade:
            speech[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    placed_end = slot.start + speech.size / sample_rate
    overlap = max(0.0, placed_end - slot.end)
    if overlap > 1e-3:
        reasons.append(f"too long at the speed limit: ran {overlap:.2f} s past its slot")
    else:
        overlap = 0.0
    if cut:
        reasons.append(f"no silence left before the next cue: last {cut / sample_rate:.2f} s cut")
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
        cut_seconds=cut / sample_rate,
        flag_reasons=tuple(reasons),
    )
    return placed, speech


def _failed(result: UtteranceResult) -> list[str]:
    return list(result.winner_candidate.failed) or ["none"]


def _read_original(path: Path) -> tuple[np.ndarray, int]:
    import soundfile as sf

    if not path.is_file():
        raise UserError(f"--mix {path} does not exist or is not a file: give the original's WAV")
    try:
        audio, rate = sf.read(path, dtype="float32", always_2d=True)
    except (RuntimeError, OSError) as error:  # soundfile's LibsndfileError is a RuntimeError
        raise UserError(
            f"--mix {path} is not an audio file soundfile can read ({error}); give a WAV or FLAC"
        ) from None
    return audio, int(rate)


def duck_and_mix(
    original: np.ndarray,
    original_rate: int,
    track: np.ndarray,
    track_rate: int,
    speech: Sequence[tuple[float, float]],
    duck_db: float,
    *,
    attack_s: float = 0.15,
    release_s: float = 0.3,
) -> tuple[np.ndarray, float]:
    """The original (frames x channels) lowered by ``duck_db`` under each speech interval, with
    ramps before and after, plus the dub on every channel; scaled down only if it would clip.
    Returns (mix at the original's rate, the gain applied against clipping)."""
    from verifiers.signal import resample

    dub_audio = resample(track, track_rate, original_rate)
    length = max(original.shape[0], dub_audio.size)
    channels = original.shape[1]
    base = np.zeros((length, channels), dtype=np.float32)
    base[: original.shape[0]] = original
    duck = np.zeros(length, dtype=np.float32)  # 0 = full level, 1 = fully ducked
    attack = max(1, round(attack_s * original_rate))
    release = max(1, round(release_s * original_rate))
    for begin, end in speech:
        first, last = round(begin * original_rate), round(end * original_rate)
        shape = np.concatenate(
            [
                np.linspace(0.0, 1.0, attack, endpoint=False, dtype=np.float32),
                np.ones(max(0, last - first), dtype=np.float32),
                np.linspace(1.0, 0.0, release, dtype=np.float32),
            ]
        )
        lo = first - attack
        a, b = max(0, lo), min(length, lo + shape.size)
        if b > a:
            duck[a:b] = np.maximum(duck[a:b], shape[a - lo : b - lo])
    floor = np.float32(10 ** (-duck_db / 20))
    gain = 1.0 - duck * (1.0 - floor)
    mix = base * gain[:, None]
    mix[: dub_audio.size] += dub_audio[:, None]
    peak = float(np.max(np.abs(mix))) if mix.size else 0.0
    scale = 0.99 / peak if peak > 0.99 else 1.0
    return (mix * np.float32(scale)).astype(np.float32), scale


def _voiced_srt(placed: Sequence[PlacedCue]) -> str:
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


def _stats(placed: Sequence[PlacedCue], skipped: int) -> dict[str, Any]:
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
        "overran": sum(p.overlap_seconds > 0 or p.cut_seconds > 0 for p in placed),
        "cut": sum(p.cut_seconds > 0 for p in placed),
    }


def dub(
    subtitles_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    config: RenderConfig,
    *,
    speed_limit: float = 1.25,
    duration: float | None = None,
    mix: str | os.PathLike | None = None,
    duck_db: float = 12.0,
    voices: Mapping[str, str] | None = None,
    max_extend_s: float = 1.0,
    min_gap_s: float = 0.1,
    tail_s: float = 1.0,
    synthesizer: Synthesizer | None = None,
    on_loading: Callable[[], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[UtteranceResult], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> DubSummary:
    """Dub ``subtitles_path`` into ``out_dir``; resumable like a render (see module docstring).

    Writes ``track.wav``/``track.flac``, ``dub.json``, ``manifest.json``, ``voiced.srt`` and,
    with ``mix``, ``mix.wav``. User mistakes raise one-line :class:`UserError` s before any
    synthesis starts.
    """
    started = time.perf_counter()
    options = DubOptions(
        speed_limit=float(speed_limit),
        max_extend_s=float(max_extend_s),
        min_gap_s=float(min_gap_s),
        tail_s=float(tail_s),
        duration=None if duration is None else float(duration),
        duck_db=float(duck_db),
        voices=dict(voices or {}),
    )
    name = str(subtitles_path)
    subtitles, cues, warnings = _read_cues(subtitles_path, name, options)
    original = _read_original(Path(mix)) if mix is not None else None
    out = prepare_output(out_dir)
    for warning in warnings:
        if on_warning:
            on_warning(warning)

    synth = _load_dubbing_synthesizer(config, synthesizer, options.speed_limit, on_loading)
    sample_rate = synth.generator.sample_rate
    track_end = options.duration if options.duration is not None else cues[-1].end + options.tail_s
    slots = compute_slots(cues, options, track_end)
    segments = cue_segments(cues, options.voices)
    utterances = synth.plan(segments, target_durations=[round(s.seconds, 3) for s in slots])
    if on_start:
        on_start(len({u.key for u in utterances}))
    fit_verifier = synth.verifiers.get("duration_fit")
    trim = getattr(fit_verifier, "options", None) or DurationFitOptions()

    track = np.zeros(round(track_end * sample_rate), dtype=np.float32)
    with Store(out / STORE_DIR) as store:
        results = synth.run(utterances, store, on_result=on_result)
        place_started = time.perf_counter()
        placed = [
            _place_on_track(
                track,
                store.load_audio(store.get_candidate(result.winner_candidate.key)),
                sample_rate,
                cue,
                slot,
                result,
                segment.voice,
                config,
                options.speed_limit,
                trim,
            )
            for cue, slot, segment, result in zip(cues, slots, segments, results, strict=True)
        ]
    _write_track(out, track, sample_rate, placed)
    mix_path, mix_scale = None, None
    if original is not None:
        mix_path, mix_scale = _write_mix(out, original, track, sample_rate, placed, options)
    synth.stats.seconds["place"] += time.perf_counter() - place_started

    wall = time.perf_counter() - started
    stats = _stats(placed, len(subtitles.skipped))
    track_seconds = round(track.size / sample_rate, 3)
    report = {
        "format": "verified-tts dub 1",
        "input": name,
        "subtitle_format": subtitles.format,
        "track": "track.wav",
        "track_flac": "track.flac",
        "voiced_srt": "voiced.srt",
        "mix": "mix.wav" if mix_path else None,
        "mix_original": str(mix) if mix is not None else None,
        "mix_gain": round(mix_scale, 4) if mix_scale is not None else None,
        "manifest": "manifest.json",
        "sample_rate": sample_rate,
        "duration_s": track_seconds,
        "n": config.candidates,
        "options": {**asdict(options), "voices": dict(options.voices)},
        "stats": {**stats, "wall_seconds": round(wall, 3)},
        "warnings": warnings,
        "skipped": [
            {"index": s.index, "line": s.line, "start": s.start, "end": s.end, "reason": s.reason}
            for s in subtitles.skipped
        ],
        "cues": [p.record() for p in placed],
    }
    manifest = replace(
        build_manifest(
            synthesizer=synth,
            source=name,
            book_title=None,
            results=results,
            files=[AssembledFile(None, None, "track.wav", "track.flac", track_seconds)],
            n=config.candidates,
            wall_seconds=wall,
        ),
        dub="dub.json",
    )
    write_json_atomic(out / "dub.json", report)
    write_manifest(out, manifest)
    return _summary(out, synth, manifest, stats, placed, subtitles, warnings, mix_path)


def _read_cues(
    path: str | os.PathLike, name: str, options: DubOptions
) -> tuple[Subtitles, list[Cue], list[str]]:
    """The subtitle file, the cues to voice and every warning about them."""
    subtitles = load_subtitles(path, known_speakers=options.voices)
    cues, warnings = cues_within(subtitles, options.duration, name)
    warnings = [*subtitles.warnings, *warnings]
    if options.voices:
        unmapped = unmapped_speakers(cues, options.voices)
        if unmapped:
            warnings.append(
                f"{name}: no voice in the voice map for {', '.join(unmapped)}: "
                "the default voice speaks their lines"
            )
    return subtitles, cues, warnings


def _load_dubbing_synthesizer(
    config: RenderConfig,
    synthesizer: Synthesizer | None,
    speed_limit: float,
    on_loading: Callable[[], None] | None,
) -> Synthesizer:
    """The given synthesizer, or one loaded from ``config``, under the dub policy; loading
    seconds are counted in its stats."""
    load_seconds = None
    if synthesizer is None:
        if on_loading:
            on_loading()
        load_started = time.perf_counter()
        synthesizer = Synthesizer.load(config)
        load_seconds = time.perf_counter() - load_started
    synth = _dubbing_synthesizer(synthesizer, speed_limit)
    if load_seconds is not None:
        synth.stats.seconds["load"] += load_seconds
    return synth


def _place_on_track(
    track: np.ndarray,
    audio: np.ndarray,
    sample_rate: int,
    cue: Cue,
    slot: Slot,
    result: UtteranceResult,
    voice: str | None,
    config: RenderConfig,
    speed_limit: float,
    trim: DurationFitOptions,
) -> PlacedCue:
    """Fit one winner to its slot (see :func:`_place`) and add it to ``track`` at the slot."""
    item, speech = _place(audio, sample_rate, cue, slot, result, voice, config, speed_limit, trim)
    first = round(slot.start * sample_rate)
    span = track[first : first + speech.size]
    span += speech[: span.size]
    return item


def _write_track(
    out: Path, track: np.ndarray, sample_rate: int, placed: Sequence[PlacedCue]
) -> None:
    write_audio_atomic(out / "track.wav", track, sample_rate, subtype="PCM_16")
    write_audio_atomic(out / "track.flac", track, sample_rate, subtype="PCM_16")
    write_text_atomic(out / "voiced.srt", _voiced_srt(placed))


def _write_mix(
    out: Path,
    original: tuple[np.ndarray, int],
    track: np.ndarray,
    sample_rate: int,
    placed: Sequence[PlacedCue],
    options: DubOptions,
) -> tuple[Path, float]:
    """``mix.wav``: the original ducked under the placed speech, plus the dub."""
    mixed, scale = duck_and_mix(
        original[0],
        original[1],
        track,
        sample_rate,
        [(p.placed_start, p.placed_end) for p in placed],
        options.duck_db,
    )
    path = out / "mix.wav"
    write_audio_atomic(path, mixed, original[1], subtype="PCM_16")
    return path, scale


def _summary(
    out: Path,
    synth: Synthesizer,
    manifest: Manifest,
    stats: Mapping[str, Any],
    placed: Sequence[PlacedCue],
    subtitles: Subtitles,
    warnings: Sequence[str],
    mix_path: Path | None,
) -> DubSummary:
    return DubSummary(
        out_dir=out,
        cues=len(placed),
        skipped=len(subtitles.skipped),
        flagged=stats["flagged"],
        fit_without_stretch=stats["fit_without_stretch"],
        mean_stretch=stats["mean_stretch"],
        max_stretch=stats["max_stretch"],
        overran=stats["overran"],
        candidates_generated=synth.stats.candidates_generated,
        candidates_reused=synth.stats.candidates_reused,
        seconds=manifest.stats["seconds"],
        unavailable={
            verifier: status["reason"]
            for verifier, status in synth.verifiers.status.items()
            if not status["available"]
        },
        warnings=tuple(warnings),
        track=out / "track.wav",
        mix=mix_path,
    )
