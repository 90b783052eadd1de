"""Assembly on synthetic clips whose every sample is known: pauses of the right length in the
right places, each clip at the target loudness under the peak ceiling, silence trimmed, chapter
file names from titles (hostile ones included), and winners loaded one at a time, in order."""

from __future__ import annotations

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf

from verified_tts.config import AssemblyOptions
from verified_tts.output.assembly import Placed, assemble_book, trim_silence

RATE = 16_000
OPTIONS = AssemblyOptions(
    sentence_pause=0.25,
    paragraph_pause=0.5,
    chapter_pause=1.0,
    lead_in=0.125,
    tail=0.375,
    loudness_lufs=-20.0,
    peak_dbfs=-3.0,
    master=False,
    room_tone_db=None,
)  # unmastered and without room tone, so every pause is exact digital silence
GRID_S = 0.011  # chapters are padded to the MP4 chapter grid (10 ms at 16 kHz)


def tone(seconds: float, amplitude: float, frequency: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (amplitude * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def voiced_runs(audio: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) sample of each stretch that is not digital silence."""
    loud = np.abs(audio) > 1e-4
    edges = np.flatnonzero(np.diff(loud.astype(np.int8)))
    bounds = [0, *(edges + 1), len(audio)]
    runs = [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if loud[a]]
    merged: list[tuple[int, int]] = []
    for start, end in runs:  # a sine's zero crossings are not pauses
        if merged and start - merged[-1][1] < 50:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


@pytest.fixture
def book(tmp_path):
    placed = [
        Placed(tone(1.0, 0.05), 0, "Chapter One: The Start", "sentence"),
        Placed(tone(1.0, 0.9), 0, "Chapter One: The Start", "paragraph"),
        Placed(tone(0.5, 0.3), 0, "Chapter One: The Start", "chapter"),
        Placed(tone(1.0, 0.2), 1, "../../Évasion / ..", "end"),
    ]
    files = assemble_book(placed, RATE, tmp_path, OPTIONS)
    return tmp_path, placed, files


def test_chapter_names_come_from_titles_and_stay_in_the_chapters_folder(book):
    out, _, files = book
    assert [f.wav for f in files] == [
        "chapters/01-chapter-one-the-start.wav",
        "chapters/02-vasion.wav",
        "book.wav",
    ]
    assert sorted(p.name for p in (out / "chapters").iterdir()) == [
        "01-chapter-one-the-start.flac",
        "01-chapter-one-the-start.wav",
        "02-vasion.flac",
        "02-vasion.wav",
    ]
    assert not list(out.rglob(".*"))  # no temporary file left


def test_pauses_lead_in_and_tail_have_the_configured_lengths(book):
    out, _, files = book
    chapter, rate = sf.read(out / "chapters/01-chapter-one-the-start.wav", dtype="float32")
    assert rate == RATE
    runs = voiced_runs(chapter)
    assert len(runs) == 3
    gaps = [(b[0] - a[1]) / RATE for a, b in zip(runs, runs[1:], strict=False)]
    assert gaps == pytest.approx([0.25, 0.5], abs=0.002)
    assert runs[0][0] / RATE == pytest.approx(0.125, abs=0.002)
    assert (len(chapter) - runs[-1][1]) / RATE == pytest.approx(0.375, abs=GRID_S)  # the tail
    whole, _ = sf.read(out / "book.wav", dtype="float32")
    book_runs = voiced_runs(whole)
    assert len(book_runs) == 4
    between = (book_runs[3][0] - book_runs[2][1]) / RATE
    assert between == pytest.approx(0.375 + 0.125, abs=GRID_S)  # a tail, then a lead-in
    assert files[-1].duration_s == pytest.approx(len(whole) / RATE, abs=0.001)
    assert files[-1].duration_s == pytest.approx(sum(f.duration_s for f in files[:-1]), abs=0.001)
    flac, _ = sf.read(out / "book.flac", dtype="float32")
    np.testing.assert_array_equal(flac, whole)  # the two formats hold the same samples


def test_each_clip_is_at_the_target_loudness_under_the_peak_ceiling(book):
    out, _, _ = book
    whole, _ = sf.read(out / "book.wav", dtype="float64")
    meter = pyloudnorm.Meter(RATE)
    for start, end in voiced_runs(whole):
        clip = whole[start:end]
        assert np.max(np.abs(clip)) <= 10 ** (-3.0 / 20) + 1e-3
        if len(clip) >= RATE:
            assert meter.integrated_loudness(clip) == pytest.approx(-20.0, abs=0.3)


def test_trim_silence_cuts_the_edges_but_keeps_a_breath():
    clip = np.concatenate([np.zeros(RATE), tone(0.5, 0.3), np.zeros(RATE)])
    trimmed = trim_silence(clip, RATE)
    assert len(trimmed) / RATE == pytest.approx(0.5 + 2 * 0.05, abs=0.011)
    assert trim_silence(np.zeros(RATE, dtype=np.float32), RATE).size == RATE  # all silent: as is


def test_winners_are_loaded_one_at_a_time_in_book_order(tmp_path, monkeypatch):
    monkeypatch.setattr("verified_tts.output.assembly.usable_cores", lambda: 1)
    loaded = []

    def loader(number):
        def load():
            loaded.append(number)
            return tone(0.5, 0.2)

        return load

    placed = [Placed(loader(i), i // 2, f"c{i // 2}", "sentence") for i in range(6)]
    assemble_book(placed, RATE, tmp_path, OPTIONS)
    assert loaded == list(range(6))


def test_chapters_assembled_on_several_cores_are_the_ones_one_core_writes(tmp_path, monkeypatch):
    placed = [
        Placed(tone(0.3 + 0.1 * i, 0.1 + 0.05 * i), i // 3, f"c{i // 3}", "sentence")
        for i in range(12)
    ]
    monkeypatch.setattr("verified_tts.output.assembly.usable_cores", lambda: 1)
    alone = assemble_book(placed, RATE, tmp_path / "one", OPTIONS)
    monkeypatch.setattr("verified_tts.output.assembly.usable_cores", lambda: 3)
    together = assemble_book(placed, RATE, tmp_path / "three", OPTIONS)
    assert [f.index for f in together] == [f.index for f in alone] == [0, 1, 2, 3, None]
    for one, three in zip(alone, together, strict=True):
        assert one.clips == three.clips
        a, _ = sf.read(tmp_path / "one" / one.flac, dtype="int16")
        b, _ = sf.read(tmp_path / "three" / three.flac, dtype="int16")
        assert np.array_equal(a, b)
