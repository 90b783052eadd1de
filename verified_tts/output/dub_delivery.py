"""What a dub delivers: the track, the mix over its bed at the loudness target, the dubbed film.

The bed (what the dub is mixed over) is :mod:`verified_tts.output.bed`'s;
:func:`deliver_dub` writes, atomically, ``track.wav``/``.flac`` (the placed lines alone),
``voiced.srt`` and ``voiced.vtt`` (what was spoken, when), ``mix.wav`` (the dub over the bed,
measured and brought to the loudness target) and, for a film, ``FILM.dub.mp4`` (or ``.mkv``) with
the picture copied and the mix as the default track in the dub's language, and returns what
``dub.json`` records of it. Every file is made a block at a time: ``mix.wav`` is written as the
muxer pulls the mix, so a feature film's soundtrack is never in memory whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from verified_tts.errors import UserError
from verified_tts.options import DubOptions
from verified_tts.output.bed import Bed
from verified_tts.output.channels import layout_name
from verified_tts.output.dub_track import PlacedCue, voiced_srt
from verified_tts.output.mix import MixResult, MixSettings, PlannedMix, plan_mix
from verified_tts.output.timeline import Timeline, write_blocks_atomic
from verified_tts.output.video import VideoInfo, mux_dub, output_path
from verified_tts.storage.atomic import atomic_path, write_text_atomic

__all__ = ["DubFiles", "deliver_dub", "voiced_vtt"]


@dataclass(frozen=True)
class DubFiles:
    """The files a dub wrote and the measured mix."""

    track: Path
    mix: Path | None
    video: Path | None
    mixed: MixResult | None


def voiced_vtt(placed: Sequence[PlacedCue]) -> str:
    def stamp(seconds: float) -> str:
        whole = timedelta(seconds=round(seconds, 3))
        hours, rest = divmod(whole.total_seconds(), 3600)
        minutes, secs = divmod(rest, 60)
        return f"{int(hours):02d}:{int(minutes):02d}:{secs:06.3f}"

    cues = [f"{stamp(p.placed_start)} --> {stamp(p.placed_end)}\n{p.cue.text}" for p in placed]
    return "WEBVTT\n\n" + "\n\n".join(cues) + ("\n" if cues else "")


def settings_of(options: DubOptions) -> MixSettings:
    return MixSettings(
        duck_db=options.duck_db,
        attack_s=options.attack_s,
        release_s=options.release_s,
        dialogue_ratio_db=options.dialogue_ratio_db,
        loudness_lufs=options.loudness_lufs,
        true_peak_dbtp=options.true_peak_dbtp,
    )


def deliver_dub(
    out: Path,
    track: Timeline,
    placed: Sequence[PlacedCue],
    bed: Bed,
    options: DubOptions,
    *,
    video: VideoInfo | None,
    language: str,
    store_dir: Path | None = None,
) -> DubFiles:
    """Write every file of the dub (see the module docstring), streaming: the track, the mix and
    the film are made a block at a time. A film that cannot be written is one line that says
    the voiced lines are kept (``store_dir``), so the same command runs again in seconds."""
    rate = track.sample_rate
    write_blocks_atomic(out / "track.wav", track.blocks(), rate, 1, "PCM_16")
    write_blocks_atomic(out / "track.flac", track.blocks(), rate, 1, "PCM_16")
    write_text_atomic(out / "voiced.srt", voiced_srt(placed))
    write_text_atomic(out / "voiced.vtt", voiced_vtt(placed))
    if bed.kind == "none" and video is None:
        return DubFiles(out / "track.wav", None, None, None)
    plan = plan_mix(
        track,
        bed,
        [(p.placed_start, p.placed_end) for p in placed],
        settings_of(options),
        length_s=video.duration_s if video is not None else None,
    )
    mix_path = out / "mix.wav"
    film = None
    with (
        atomic_path(mix_path) as temporary,
        sf.SoundFile(
            temporary, "w", samplerate=plan.sample_rate, channels=plan.channels, subtype="PCM_24"
        ) as sink,
    ):

        def kept(blocks: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
            for block in blocks:
                sink.write(block)  # mix.wav is written as the film pulls the mix
                yield block

        if video is None:
            for _ in kept(plan.blocks()):
                pass
        else:
            lines = [(p.placed_start, p.placed_end, p.cue.text) for p in placed]
            film = _mux(video, out, plan, kept(plan.blocks()), language, lines, options, store_dir)
    return DubFiles(out / "track.wav", mix_path, film, plan.result())


def _mux(
    video: VideoInfo,
    out: Path,
    plan: PlannedMix,
    blocks: Iterator[np.ndarray],
    language: str,
    lines: Sequence[tuple[float, float, str]],
    options: DubOptions,
    store_dir: Path | None,
) -> Path:
    """The film muxed; a failure is one line that says the voiced lines are kept."""
    import av

    destination = output_path(out, video)
    try:
        return mux_dub(
            video, destination, blocks, plan.sample_rate, plan.channels, language, lines,
            original_language=options.original_language,
        )  # fmt: skip
    except (av.error.FFmpegError, OSError) as error:
        kept = f" (in {store_dir})" if store_dir else ""
        raise UserError(
            f"writing {destination.name} failed ({error}); the voiced lines are kept{kept}: fix "
            "the cause and run the same command again, which mixes and muxes without voicing them"
        ) from None


def mix_record(bed: Bed, files: DubFiles, options: DubOptions, language: str) -> dict[str, Any]:
    """``dub.json``'s account of the mix and the film."""
    mixed = files.mixed
    return {
        "bed": bed.kind,
        "bed_source": bed.source,
        "file": files.mix.name if files.mix else None,
        "sample_rate": mixed.sample_rate if mixed else None,
        "layout": layout_name(mixed.channels) if mixed else None,
        "limited": mixed.limited if mixed else None,
        "target_lufs": options.loudness_lufs,
        "true_peak_ceiling_dbtp": options.true_peak_dbtp,
        "dialogue_ratio_db": options.dialogue_ratio_db,
        "gain_db": round(mixed.gain_db, 2) if mixed else None,
        "measured": mixed.loudness.record() if mixed else None,
        "video": files.video.name if files.video else None,
        "language": language,
    }
