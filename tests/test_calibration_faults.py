"""Every fault kind really alters what it says it alters: the text, or the audio, measurably."""

from __future__ import annotations

import numpy as np
import pytest

from verified_tts.calibration.faults import (
    FAULT_KINDS,
    audio_fault,
    parse_kinds,
    speech_span,
    text_fault,
)

SENTENCE = "The birch canoe slid on the smooth planks."
RATE = 16_000


def _speech(seconds: float, rate: int = RATE, pause_at: float | None = None) -> np.ndarray:
    """A voiced-like tone with 0.3 s of silence at each end (and an optional pause)."""
    t = np.arange(int(seconds * rate)) / rate
    tone = 0.5 * np.sin(2 * np.pi * 150 * t) * (1 + 0.3 * np.sin(2 * np.pi * 3 * t))
    if pause_at is not None:
        tone[int(pause_at * rate) : int((pause_at + 0.1) * rate)] = 0.0
    edge = np.zeros(int(0.3 * rate))
    return np.concatenate([edge, tone, edge]).astype(np.float32)


def _pitch(audio: np.ndarray, rate: int) -> float:
    """Dominant frequency of the clip (FFT peak)."""
    spectrum = np.abs(np.fft.rfft(audio))
    return float(np.fft.rfftfreq(audio.size, 1 / rate)[np.argmax(spectrum)])


def test_skip_leaves_out_one_content_word():
    fault = text_fault("skip", SENTENCE, np.random.default_rng(1))
    before, after = SENTENCE.split(), fault.text.split()
    assert len(after) == len(before) - 1
    missing = [w for w in before if w not in after]
    assert len(missing) == 1 and missing[0].strip(".").lower() not in {"the", "on"}
    assert fault.text.endswith(".")  # the sentence keeps its punctuation


def test_repeat_says_a_phrase_of_two_to_four_words_twice():
    for seed in range(20):
        fault = text_fault("repeat", SENTENCE, np.random.default_rng(seed))
        added = len(fault.text.split()) - len(SENTENCE.split())
        assert 2 <= added <= 4
        words = [w.strip(".").lower() for w in fault.text.split()]
        # the inserted phrase is followed immediately by itself
        assert any(words[i : i + added] == words[i + added : i + 2 * added]
                   for i in range(len(words)))  # fmt: skip


def test_substitute_replaces_one_word_with_another():
    fault = text_fault("substitute", SENTENCE, np.random.default_rng(2), ["orange", "violin"])
    before, after = SENTENCE.split(), fault.text.split()
    assert len(after) == len(before)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed) == 1 and changed[0][1].strip(".") in {"orange", "violin"}


def test_text_faults_refuse_text_too_short():
    with pytest.raises(ValueError):
        text_fault("repeat", "Hello there", np.random.default_rng(0))
    with pytest.raises(ValueError):
        text_fault("skip", "a an", np.random.default_rng(0))


def test_truncate_cuts_a_quarter_to_half_of_the_speech():
    audio = _speech(2.0)
    first, last = speech_span(audio, RATE)
    for seed in range(10):
        out = audio_fault("truncate", audio, RATE, np.random.default_rng(seed)).audio
        kept = (out.size - first) / (last - first)
        assert 0.49 <= kept <= 0.76, kept
        np.testing.assert_array_equal(out[: out.size - 100], audio[: out.size - 100])


def test_silence_inserts_at_least_one_and_a_half_seconds_mid_speech():
    audio = _speech(2.0, pause_at=1.2)
    fault = audio_fault("silence", audio, RATE, np.random.default_rng(0))
    added = (fault.audio.size - audio.size) / RATE
    assert 1.5 <= added <= 2.5
    first, last = speech_span(audio, RATE)
    zeros = np.flatnonzero(fault.audio == 0.0)
    # the longest run of digital silence starts inside the speech, at the pause
    runs = np.split(zeros, np.flatnonzero(np.diff(zeros) != 1) + 1)
    longest = max(runs, key=len)
    assert len(longest) >= 1.5 * RATE and first < longest[0] < last
    assert abs(longest[0] / RATE - (0.3 + 1.2)) < 0.15


def test_babble_adds_other_speech():
    audio, other = _speech(1.5), _speech(3.0) * 0.8
    for seed in range(6):
        fault = audio_fault("babble", audio, RATE, np.random.default_rng(seed), other)
        added = (fault.audio.size - audio.size) / RATE
        assert 1.1 <= added <= 2.0
        assert "appended" in fault.description or "inserted" in fault.description
        # what was added is the other clip's speech, not silence
        assert np.sqrt(np.mean(np.square(fault.audio))) > 0.9 * np.sqrt(np.mean(np.square(audio)))
    with pytest.raises(ValueError):
        audio_fault("babble", audio, RATE, np.random.default_rng(0), None)


def test_voice_shifts_pitch_by_four_to_seven_semitones_at_the_same_length():
    audio = _speech(2.0)
    for seed in range(4):
        fault = audio_fault("voice", audio, RATE, np.random.default_rng(seed))
        assert fault.audio.size == audio.size
        ratio = _pitch(fault.audio, RATE) / _pitch(audio, RATE)
        semitones = abs(12 * np.log2(ratio))
        assert 3.5 <= semitones <= 7.5, (semitones, fault.description)


def test_clip_drives_the_signal_into_hard_clipping():
    audio = _speech(1.0)
    out = audio_fault("clip", audio, RATE, np.random.default_rng(0)).audio
    assert np.max(np.abs(out)) == pytest.approx(1.0)
    assert np.mean(np.abs(out) >= 0.999) > 0.05
    assert np.max(np.abs(audio)) < 0.99  # the clean one did not clip


def test_parse_kinds():
    assert parse_kinds(None) == FAULT_KINDS
    assert parse_kinds("skip, repeat,skip") == ("skip", "repeat")
    with pytest.raises(ValueError, match="wobble"):
        parse_kinds("skip,wobble")
    with pytest.raises(ValueError):
        parse_kinds("")
