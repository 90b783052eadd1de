"""Helpers of the review tests: a small rendered book, and checks that a chapter file holds a
chosen take where assembly puts it (sample-exact) and that the M4B carries it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

from verified_tts.config import AssemblyOptions
from verified_tts.output.assembly import Placed, level_clip, trim_silence, write_chapter
from verified_tts.output.manifest import read_manifest

BOOK = """## One

The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.

## Two

It's easy to tell the depth of a well. The Tortoise never stopped.

## Three

The Tortoise won the race.
"""


def manifest_json(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def chapter_lines(out: Path, chapter: int) -> list[int]:
    return [i for i, u in enumerate(manifest_json(out)["utterances"]) if u["chapter"] == chapter]


def segments_of(out: Path):
    from verified_tts.review.deliver import book_segments
    from verified_tts.workflows.rerender import original_config

    manifest = read_manifest(out)
    book, segments = book_segments(manifest, original_config(manifest))
    return manifest, book, segments


def expected_chapter(out: Path, chapter: int, takes: dict[int, str], tmp: Path) -> np.ndarray:
    """The chapter as assembly makes it from each line's take: ``takes`` maps a line's position
    to the audio (relative to ``out``) it must hold; other lines keep the manifest's winner."""
    manifest, book, segments = segments_of(out)
    title = next(c.title for c in book.chapters if c.index == chapter)
    items = [
        Placed(
            audio=sf.read(out / takes.get(i, manifest.utterances[i].audio), dtype="float32")[0],
            chapter=chapter,
            chapter_title=title,
            pause_after=segments[i].pause_after,
            pause_before=segments[i].pause_before,
        )
        for i in chapter_lines(out, chapter)
    ]
    written = write_chapter(items, chapter, title, int(manifest.sample_rate), tmp,
                            AssemblyOptions(), formats=("flac",))  # fmt: skip
    return sf.read(tmp / written.flac, dtype="int16")[0]


def take_offset(out: Path, chapter: int, position: int, takes: dict[int, str]) -> tuple[int, int]:
    """(first sample, length) of line ``position``'s levelled take in its chapter, counted the
    way assembly lays a chapter out: lead-in, then each take and the pause after it."""
    manifest, _, segments = segments_of(out)
    rate = int(manifest.sample_rate)
    options = AssemblyOptions()
    pauses = {"sentence": options.sentence_pause, "paragraph": options.paragraph_pause}
    at = round(options.lead_in * rate)
    previous_pause = 0
    lines = chapter_lines(out, chapter)
    for number, i in enumerate(lines):
        if number and segments[i].pause_before is not None:
            at += round(segments[i].pause_before * rate) - previous_pause
        audio = sf.read(out / takes.get(i, manifest.utterances[i].audio), dtype="float32")[0]
        length = len(level_clip(trim_silence(audio, rate), rate, options))
        if i == position:
            return at, length
        previous_pause = round(pauses.get(segments[i].pause_after, 0.0) * rate)
        at += length + previous_pause
    raise AssertionError(f"line {position} is not in chapter {chapter}")


def levelled(out: Path, audio: str, rate: int) -> np.ndarray:
    clip = sf.read(out / audio, dtype="float32")[0]
    return level_clip(trim_silence(clip, rate), rate, AssemblyOptions())


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    n = min(len(a), len(b))
    a, b = a[:n].astype(np.float64), b[:n].astype(np.float64)
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


def m4b_audio(path: Path) -> np.ndarray:
    import av

    with av.open(str(path)) as container:
        frames = [f.to_ndarray().reshape(-1) for f in container.decode(audio=0)]
    return np.concatenate(frames).astype(np.float32)


def upsampled(audio: np.ndarray, start: int, length: int) -> np.ndarray:
    """``audio[start:start + length]`` (22.05 kHz) at the M4B's 44.1 kHz."""
    from scipy.signal import resample_poly

    return resample_poly(audio[start : start + length].astype(np.float64), 2, 1)


def m4b_region(m4b: np.ndarray, book_flac: np.ndarray, start: int, length: int) -> np.ndarray:
    """The M4B's samples (44.1 kHz) that hold ``book_flac[start:start + length]`` (22.05 kHz),
    found past the AAC encoder's priming by cross-correlation."""
    from scipy.signal import correlate

    window = upsampled(book_flac, start, length)
    offset = max(0, 2 * start - 4096)
    search = m4b[offset : 2 * (start + length) + 4096].astype(np.float64)
    lag = int(np.argmax(correlate(search, window, mode="valid")))
    return search[lag : lag + len(window)]
