"""``dub``: a subtitle file in, one timed dubbing track (plus report, manifest and SRT) out.

This is the library function behind ``verified-tts dub``: read the cues
(:mod:`~verified_tts.text.cues`), give each a slot on the timeline
(:mod:`~verified_tts.output.dub_track`), and run best-of-N over them. The slot's seconds travel
with the utterance to every verifier, where ``duration_fit`` measures the stretch a candidate
would need; the dub policy gates that stretch at the speed limit and ranks natural fits first, so
best-of-N picks a candidate that fits instead of squeezing one. Only what is left is then fixed
when the winners are laid on the track (stretched up to the speed limit, else run on into the
silence, and past it rather than lose a word: flagged with how much). With a film (``video``) or a
bed (``background`` stem, ``mix`` original), the dub is mixed over it at the loudness target and,
for a film, muxed back into it (:mod:`verified_tts.output.dub_delivery`). The store, resume
behaviour and manifest are the render's; every output file (``track.wav``/``.flac``,
``voiced.srt``/``.vtt``, ``mix.wav``, ``FILM.dub.mp4``, ``dub.json``, ``manifest.json``) is written
atomically.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.audio import resample
from verified_tts.cast import Cast
from verified_tts.errors import UserError
from verified_tts.options import DurationFitOptions, RenderConfig, from_table, overlay
from verified_tts.output.assembly import AssembledFile
from verified_tts.output.bed import Bed, read_bed
from verified_tts.output.dub_delivery import DubFiles, deliver_dub, mix_record
from verified_tts.output.dub_track import (
    DubOptions,
    PlacedCue,
    Slot,
    compute_slots,
    fit_to_slot,
    lay_on_track,
    track_stats,
)
from verified_tts.output.lock import output_lock
from verified_tts.output.manifest import Manifest, output_folders, write_manifest
from verified_tts.output.readalong import READ_ALONG_FORMATS
from verified_tts.output.run_manifest import build_manifest
from verified_tts.output.source import check_same_input
from verified_tts.output.video import language_code, probe_video
from verified_tts.pipeline import Synthesizer
from verified_tts.review.hook import ReviewHook
from verified_tts.review.index import write_index
from verified_tts.selection.dub_gates import dub_policy
from verified_tts.storage.atomic import remove_interrupted_writes, write_json_atomic
from verified_tts.storage.results import UtteranceResult
from verified_tts.storage.store import STORE_DIR, Store
from verified_tts.text.book import Segment
from verified_tts.text.cues import cue_segments, cues_within, unmapped_speakers
from verified_tts.text.subtitles import Cue, Subtitles, load_subtitles
from verified_tts.verification import LoadedVerifiers, load_verifiers
from verified_tts.workflows.render import prepare_output
from verifiers import HasOptions

__all__ = ["DubSummary", "dub", "dub_settings", "dubbing_synthesizer"]


def dub_settings(table: Mapping[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """A ``[dub]`` table with ``overrides`` on top (None = unset), checked as :class:`DubOptions`.

    Voice maps merge: an override names speakers on top of the table's ``[dub.voices]``.
    """
    settings = overlay(dict(table or {}), overrides)
    from_table(DubOptions, settings, "[dub]")
    return settings


def _dub_options(config: RenderConfig, overrides: Mapping[str, Any]) -> DubOptions:
    """``config.dub`` with the keyword arguments of :func:`dub` on top (None = not given); a
    voice map is merged into the config's."""
    text = ("voices", "language", "original_language")
    given = {k: v if k in text else float(v) for k, v in overrides.items()
             if v is not None}  # fmt: skip
    if "voices" in given:
        given["voices"] = {**config.dub.voices, **given["voices"]}
    return replace(config.dub, **given)


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
    damaged: tuple[str, ...] = ()  # store entries found damaged, dropped and generated again
    video: Path | None = None  # the dubbed film
    loudness: Mapping[str, float] | None = None  # the mix as measured: integrated, range, peak
    flags: tuple[tuple[int, str, tuple[str, ...]], ...] = ()  # (cue index, text, reasons in words)


def dubbing_synthesizer(base: Synthesizer, options: DubOptions) -> Synthesizer:
    """The loaded models of ``base`` under the dub policy (``dub_gates.dub_policy``: the dub
    gates in place of the book defaults, stretch gated; duration_fit on) and the dub's settings
    (so the manifest records them)."""
    policy = dub_policy(
        base.config.selection, options.speed_limit, packed_wer=base.config.verifiers.wer.packing
    )
    config = replace(base.config.variant(selection=policy), dub=options)
    verifiers = base.verifiers
    if verifiers.get("duration_fit") is None and "duration_fit" not in verifiers.status:
        extra = load_verifiers(base.config.verifiers, order=("duration_fit",))
        verifiers = LoadedVerifiers(
            (*verifiers.active, *extra.active), {**verifiers.status, **extra.status}
        )
    return base.variant(config, verifiers=verifiers)


def dub(
    subtitles_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    config: RenderConfig,
    *,
    speed_limit: float | None = None,
    duration: float | None = None,
    mix: str | os.PathLike | None = None,
    duck_db: float | None = None,
    voices: Mapping[str, str] | None = None,
    max_extend_s: float | None = None,
    min_gap_s: float | None = None,
    tail_s: float | None = None,
    video: str | os.PathLike | None = None,
    background: str | os.PathLike | None = None,
    cast: Cast | None = None,
    language: str | None = None,
    original_language: str | None = None,
    loudness_lufs: float | None = None,
    true_peak_dbtp: float | None = None,
    dialogue_ratio_db: float | None = None,
    attack_s: float | None = None,
    release_s: float | None = None,
    synthesizer: Synthesizer | None = None,
    on_loading: Callable[[], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[UtteranceResult], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> DubSummary:
    """Dub ``subtitles_path`` into ``out_dir``; resumable like a render (see module docstring).

    The timing and mix settings are ``config.dub`` (the ``[dub]`` table); the keyword arguments
    given (not None) replace them, and ``voices`` names speakers on top of its voice map. Writes
    ``track.wav``/``track.flac``, ``dub.json``, ``manifest.json``, ``voiced.srt``/``.vtt`` and,
    with a bed (``video``'s own audio, ``background``, ``mix``), ``mix.wav``, and with ``video``
    the dubbed film. User mistakes raise one-line :class:`UserError` s before any synthesis
    starts.
    """
    started = time.perf_counter()
    run_began = time.time()  # earlier temporary files are a killed run's
    book_only = [f for f in config.production.formats if f in READ_ALONG_FORMATS]
    if book_only:
        raise UserError(
            f"[production] formats {','.join(book_only)} are made from books (a read-along "
            "EPUB and captions of the narration): a dub delivers one timed track and voiced.srt; "
            "drop them from the config's formats, or render a book with `verified-tts render`"
        )
    options = _dub_options(
        config,
        {
            "speed_limit": speed_limit, "max_extend_s": max_extend_s, "min_gap_s": min_gap_s,
            "tail_s": tail_s, "duration": duration, "duck_db": duck_db, "voices": voices,
            "attack_s": attack_s, "release_s": release_s, "dialogue_ratio_db": dialogue_ratio_db,
            "loudness_lufs": loudness_lufs, "true_peak_dbtp": true_peak_dbtp,
            "language": language, "original_language": original_language,
        },
    )  # fmt: skip
    film = probe_video(video) if video is not None else None
    if film is not None and options.duration is None:
        options = replace(options, duration=round(film.duration_s, 3))  # the film's timeline
    if cast is not None:  # the cast's characters, under the voice map given here
        options = replace(options, voices={**cast.characters, **options.voices})
    config = replace(config, dub=options)
    name = str(subtitles_path)
    subtitles, cues, warnings = _read_cues(subtitles_path, name, options, cast=cast)
    bed, bed_warnings = read_bed(film, background, mix)
    warnings = [*warnings, *bed_warnings]
    spoken_language = _language(options, config)
    language_code(spoken_language)  # a bad tag is one line now, not after the synthesis
    if options.original_language:
        language_code(options.original_language, option="--original-language")
    check_same_input(out_dir, subtitles_path, "dub")  # before anything is written there
    out = prepare_output(out_dir)
    with output_lock(out, "dub"):
        review = ReviewHook.load(out)
        for warning in warnings:
            if on_warning:
                on_warning(warning)

        synth = _load_dubbing_synthesizer(config, synthesizer, options, on_loading)
        sample_rate = synth.generator.sample_rate
        track_end = (
            options.duration if options.duration is not None else cues[-1].end + options.tail_s
        )
        slots = compute_slots(cues, options, track_end)
        segments = cue_segments(cues, options.voices)
        utterances = review.plan(synth, segments, [round(s.seconds, 3) for s in slots])
        if on_start:
            on_start(len({u.key for u in utterances}))

        with Store(out / STORE_DIR) as store:
            results = review.results(synth.run(utterances, store, on_result=on_result))
            place_started = time.perf_counter()
            # the dub policy's gates (synth.config), which the reasons in words quote
            fitted = _fit_winners(
                store, synth, synth.config, options, cues, slots, segments, results
            )
            damaged = tuple(store.damaged)
        track, placed = lay_on_track(fitted, sample_rate, track_end)
        synth.stats.seconds["place"] += time.perf_counter() - place_started
        mix_started = time.perf_counter()
        files = deliver_dub(
            out, track, placed, bed, options, video=film, language=spoken_language,
            store_dir=out / STORE_DIR,
        )  # fmt: skip
        synth.stats.seconds["mix"] += time.perf_counter() - mix_started

        wall = time.perf_counter() - started
        stats = track_stats(placed, len(subtitles.skipped))
        track_seconds = round(track.frames / sample_rate, 3)
        report = _dub_report(
            name,
            subtitles,
            options,
            placed,
            stats={**stats, "wall_seconds": round(wall, 3)},
            warnings=warnings,
            sample_rate=sample_rate,
            track_seconds=track_seconds,
            n=config.candidates,
            mix=(bed, files, spoken_language),
        )
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
        manifest = review.manifest(manifest)
        write_json_atomic(out / "dub.json", report)
        write_manifest(out, manifest)
        write_index(out, manifest)  # the review opens a long book from it
        remove_interrupted_writes(output_folders(out), older_than=run_began)
        summary = _summary(out, synth, manifest, stats, placed, subtitles, warnings, files)
        return replace(summary, damaged=damaged)


def _fit_winners(
    store: Store,
    synth: Synthesizer,
    config: RenderConfig,
    options: DubOptions,
    cues: Sequence[Cue],
    slots: Sequence[Slot],
    segments: Sequence[Segment],
    results: Sequence[UtteranceResult],
) -> list[tuple[PlacedCue, np.ndarray]]:
    """Each cue's winner from the store, fitted to its slot; edge silence is trimmed with the
    settings the ``duration_fit`` verifier measured with."""
    fit_verifier = synth.verifiers.get("duration_fit")
    trim = fit_verifier.options if isinstance(fit_verifier, HasOptions) else DurationFitOptions()
    rate = synth.generator.sample_rate

    def winner_audio(result: UtteranceResult) -> np.ndarray:
        # a speaker's voice of another generator is brought to the track's rate, once
        stored = store.get_candidate(result.winner_candidate.key)
        return resample(store.load_audio(stored), stored.sample_rate, rate)

    return [
        fit_to_slot(
            winner_audio(result),
            rate,
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


def _dub_report(
    name: str,
    subtitles: Subtitles,
    options: DubOptions,
    placed: Sequence[PlacedCue],
    *,
    stats: Mapping[str, Any],
    warnings: Sequence[str],
    sample_rate: int,
    track_seconds: float,
    n: int,
    mix: tuple[Bed, DubFiles, str],
) -> dict[str, Any]:
    """``dub.json``: the files written, the settings, the mix's measured loudness, where every
    cue landed (and its level against the bed) and why any was flagged or skipped; lines that
    ran past their slot come first in ``overruns``, longest first; ``mix`` is (the bed, the files
    written, the dub's language)."""
    bed, files, language = mix
    levels = files.mixed.cues if files.mixed else ()
    cues = [
        {**p.record(), **({"mix": level.record()} if files.mixed else {})}
        for p, level in zip(placed, levels or [None] * len(placed), strict=True)
    ]
    overruns = sorted(
        (c for c in cues if c["overlap_seconds"] > 0 or c["overlap_next_seconds"] > 0),
        key=lambda c: -(c["overlap_seconds"] + c["overlap_next_seconds"]),
    )
    gain = 10 ** (files.mixed.gain_db / 20) if files.mixed else None
    return {
        "format": "verified-tts dub 1",
        "input": name,
        "subtitle_format": subtitles.format,
        "track": "track.wav",
        "track_flac": "track.flac",
        "voiced_srt": "voiced.srt",
        "voiced_vtt": "voiced.vtt",
        "mix": files.mix.name if files.mix else None,
        "mix_original": bed.source if bed.kind == "original" else None,
        "mix_gain": round(gain, 4) if gain is not None else None,
        "mixing": mix_record(bed, files, options, language),
        "video": files.video.name if files.video else None,
        "manifest": "manifest.json",
        "sample_rate": sample_rate,
        "duration_s": track_seconds,
        "n": n,
        "options": {**asdict(options), "voices": dict(options.voices)},
        "stats": dict(stats),
        "warnings": list(warnings),
        "skipped": [
            {"index": s.index, "line": s.line, "start": s.start, "end": s.end, "reason": s.reason}
            for s in subtitles.skipped
        ],
        "overruns": [
            {k: c[k] for k in ("index", "text", "overlap_seconds", "overlap_next_seconds")}
            for c in overruns
        ],
        "cues": cues,
    }


def _read_cues(
    path: str | os.PathLike, name: str, options: DubOptions, *, cast: Cast | None = None
) -> tuple[Subtitles, list[Cue], list[str]]:
    """The subtitle file, the cues to voice and every warning about them; with a cast file,
    a named speaker it gives no voice is an error (without one, the default voice speaks)."""
    subtitles = load_subtitles(path, known_speakers=options.voices)
    cues, warnings = cues_within(subtitles, options.duration, name)
    warnings = [*subtitles.warnings, *warnings]
    if cast is not None:
        unmapped = unmapped_speakers(cues, options.voices)
        if unmapped:
            raise UserError(
                f"{name}: the cast file gives no voice to {', '.join(unmapped)}: add "
                f'[characters."{unmapped[0]}"] voice = "ENGINE:VOICE" to it (or --voice-map '
                f"{unmapped[0]}=VOICE)"
            )
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
    options: DubOptions,
    on_loading: Callable[[], None] | None,
) -> Synthesizer:
    """The given synthesizer, or one loaded from ``config``, under the dub policy; loading
    seconds (this call's, or those a given synthesizer has not reported yet) are counted in its
    stats."""
    load_seconds = None
    if synthesizer is None:
        if on_loading:
            on_loading()
        load_started = time.perf_counter()
        synthesizer = Synthesizer.load(config)
        load_seconds = time.perf_counter() - load_started
    synth = dubbing_synthesizer(synthesizer, options)
    if load_seconds is None:  # a loaded synthesizer: the seconds it took, unless a run had them
        load_seconds = synthesizer.hand_over_load_seconds()
    if load_seconds:
        synth.stats.seconds["load"] += load_seconds
    return synth


def _language(options: DubOptions, config: RenderConfig) -> str:
    """The dub's language tag: as given, else the voice's first language, else English."""
    if options.language:
        return options.language
    from verified_tts.generators import voice_languages

    spoken = voice_languages(config.generator)
    # a voice's own code may be written the POSIX way (Piper's en_US): the tag is BCP 47
    return spoken[0].replace("_", "-") if spoken else "en"


def _summary(
    out: Path,
    synth: Synthesizer,
    manifest: Manifest,
    stats: Mapping[str, Any],
    placed: Sequence[PlacedCue],
    subtitles: Subtitles,
    warnings: Sequence[str],
    files: DubFiles,
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
        unavailable=synth.verifiers.unavailable(),
        warnings=tuple(warnings),
        track=files.track,
        mix=files.mix,
        video=files.video,
        loudness=files.mixed.loudness.record() if files.mixed else None,
        flags=tuple((p.cue.index, p.cue.text, p.flag_reasons) for p in placed if p.flagged),
    )
