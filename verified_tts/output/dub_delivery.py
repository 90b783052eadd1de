"""What a dub delivers: the track, the mix over its bed at the loudness target, the dubbed film.

:func:`read_bed` finds what the dub is mixed over (a music-and-effects stem, the film's own audio,
an original soundtrack, or nothing) with one-line errors for what cannot be used;
:func:`deliver_dub` writes, atomically, ``track.wav``/``.flac`` (the placed lines alone),
``voiced.srt`` and ``voiced.vtt`` (what was spoken, when), ``mix.wav`` (the dub over the bed,
measured and brought to the loudness target) and, for a film, ``FILM.dub.mp4`` (or ``.mkv``) with
the picture copied and the mix as the default track in the dub's language, and returns what
``dub.json`` records of it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.options import DubOptions
from verified_tts.output.dub_track import PlacedCue, voiced_srt
from verified_tts.output.mix import MixResult, MixSettings, mix_dub
from verified_tts.output.video import VideoInfo, mux_dub, output_path, read_video_audio
from verified_tts.storage.atomic import write_audio_atomic, write_text_atomic

__all__ = ["Bed", "DubFiles", "deliver_dub", "read_bed", "voiced_vtt"]

# a stem may end this much before the film (encoder padding, a last frame) and still be whole
_STEM_SLACK_S = 0.1


@dataclass(frozen=True)
class Bed:
    """What the dub is mixed over: ``kind`` is background, original or none."""

    kind: str
    audio: np.ndarray | None  # (frames, channels)
    sample_rate: int | None
    source: str | None  # the file it came from, as given


@dataclass(frozen=True)
class DubFiles:
    """The files a dub wrote and the measured mix."""

    track: Path
    mix: Path | None
    video: Path | None
    mixed: MixResult | None


def _read_audio_file(path: Path, option: str) -> tuple[np.ndarray, int]:
    import soundfile as sf

    if not path.is_file():
        raise UserError(f"{option} {path} does not exist or is not a file: give a WAV or FLAC")
    try:
        audio, rate = sf.read(path, dtype="float32", always_2d=True)
    except (RuntimeError, OSError) as error:  # soundfile's LibsndfileError is a RuntimeError
        raise UserError(
            f"{option} {path} is not an audio file soundfile can read ({error}); give a WAV or FLAC"
        ) from None
    return audio, int(rate)


def read_bed(
    video: VideoInfo | None,
    background: str | os.PathLike | None,
    mix: str | os.PathLike | None,
) -> tuple[Bed, list[str]]:
    """The bed and any warning about it: a ``--background`` stem first (it must last as long as
    the film), else the film's own audio, else ``--mix``; a film without audio and without a stem
    gets the dub alone, and says so."""
    if background is not None and mix is not None:
        raise UserError(
            "--background and --mix are two beds: give the music-and-effects stem (--background) "
            "or the original mix (--mix), not both"
        )
    if background is not None:
        audio, rate = _read_audio_file(Path(background), "--background")
        seconds = audio.shape[0] / rate
        if video is not None and seconds + _STEM_SLACK_S < video.duration_s:
            raise UserError(
                f"--background {background} lasts {seconds:.2f} s but {video.path.name} lasts "
                f"{video.duration_s:.2f} s: give the stem of the whole film"
            )
        return Bed("background", audio, rate, str(background)), []
    if video is not None:
        if mix is not None:
            raise UserError(
                "--mix and --video both give the original audio: leave out --mix (the film's "
                "own audio is used) or give --background for a music-and-effects stem"
            )
        if not video.has_audio:
            warning = (
                f"{video.path.name} has no audio track: the dub plays alone (give --background "
                "me.wav to mix it over music and effects)"
            )
            return Bed("none", None, None, None), [warning]
        audio, rate = read_video_audio(video)
        return Bed("original", audio, rate, str(video.path)), []
    if mix is not None:
        audio, rate = _read_audio_file(Path(mix), "--mix")
        return Bed("original", audio, rate, str(mix)), []
    return Bed("none", None, None, None), []


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
    track: np.ndarray,
    sample_rate: int,
    placed: Sequence[PlacedCue],
    bed: Bed,
    options: DubOptions,
    *,
    video: VideoInfo | None,
    language: str,
) -> DubFiles:
    """Write every file of the dub (see the module docstring)."""
    write_audio_atomic(out / "track.wav", track, sample_rate, subtype="PCM_16")
    write_audio_atomic(out / "track.flac", track, sample_rate, subtype="PCM_16")
    write_text_atomic(out / "voiced.srt", voiced_srt(placed))
    write_text_atomic(out / "voiced.vtt", voiced_vtt(placed))
    if bed.kind == "none" and video is None:
        return DubFiles(out / "track.wav", None, None, None)
    mixed = mix_dub(
        track,
        sample_rate,
        (bed.audio, bed.sample_rate) if bed.audio is not None else None,
        bed.kind,
        [(p.placed_start, p.placed_end) for p in placed],
        settings_of(options),
        length_s=video.duration_s if video is not None else None,
    )
    mix_path = out / "mix.wav"
    write_audio_atomic(mix_path, mixed.audio, mixed.sample_rate, subtype="PCM_24")
    film = None
    if video is not None:
        lines = [(p.placed_start, p.placed_end, p.cue.text) for p in placed]
        film = mux_dub(
            video, output_path(out, video), mixed.audio, mixed.sample_rate, language, lines
        )
    return DubFiles(out / "track.wav", mix_path, film, mixed)


def mix_record(bed: Bed, files: DubFiles, options: DubOptions, language: str) -> dict[str, Any]:
    """``dub.json``'s account of the mix and the film."""
    mixed = files.mixed
    return {
        "bed": bed.kind,
        "bed_source": bed.source,
        "file": files.mix.name if files.mix else None,
        "sample_rate": mixed.sample_rate if mixed else None,
        "target_lufs": options.loudness_lufs,
        "true_peak_ceiling_dbtp": options.true_peak_dbtp,
        "dialogue_ratio_db": options.dialogue_ratio_db,
        "gain_db": round(mixed.gain_db, 2) if mixed else None,
        "measured": mixed.loudness.record() if mixed else None,
        "video": files.video.name if files.video else None,
        "language": language,
    }
