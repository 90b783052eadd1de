"""Every fault kind really alters what it says it alters: the text, or the audio, measurably."""

from __future__ import annotations

import re

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


def _spectrum(audio: np.ndarray, rate: int) -> tuple[np.ndarray, np.ndarray]:
    magnitude = np.abs(np.fft.rfft(audio * np.hanning(audio.size)))
    return np.fft.rfftfreq(audio.size, 1 / rate), magnitude


def _pitch(audio: np.ndarray, rate: int) -> float:
    """Dominant frequency of the clip: the Hann-windowed FFT peak, interpolated between bins
    (a parabola through the log magnitudes), so it is good to a few hundredths of a semitone."""
    frequencies, magnitude = _spectrum(audio, rate)
    peak = int(np.argmax(magnitude))
    before, at, after = np.log(magnitude[peak - 1 : peak + 2])
    offset = 0.5 * (before - after) / (before - 2 * at + after)
    return float((peak + offset) * (frequencies[1] - frequencies[0]))


def _vowel(seconds: float, rate: int = RATE) -> np.ndarray:
    """Harmonics of 110 Hz under one formant (a resonance at 900 Hz), silence at the ends."""
    t = np.arange(int(seconds * rate)) / rate
    tone = np.zeros_like(t)
    for k in range(1, 36):
        tone += np.exp(-0.5 * ((k * 110.0 - 900.0) / 250.0) ** 2) * np.sin(
            2 * np.pi * k * 110 * t + k
        )
    edge = np.zeros(int(0.3 * rate))
    return np.concatenate([edge, 0.5 * tone / np.max(np.abs(tone)), edge]).astype(np.float32)


def _formant(audio: np.ndarray, rate: int) -> float:
    """Where the spectral envelope sits: the power-weighted mean frequency (on the vowel above,
    the formant: a pitch-only shift leaves it in place, a formant shift moves it)."""
    frequencies, magnitude = _spectrum(audio, rate)
    power = np.square(magnitude)
    return float(np.sum(frequencies * power) / np.sum(power))


def _semitones(after: float, before: float) -> float:
    return float(12 * np.log2(after / before))


def _described_semitones(description: str) -> float:
    return float(re.search(r"([+-]\d+\.\d) semitones", description).group(1))


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
    sample = 1 / (last - first)  # the cut lands on a whole sample
    kept_shares = []
    for seed in range(10):
        fault = audio_fault("truncate", audio, RATE, np.random.default_rng(seed))
        out = fault.audio
        kept = (out.size - first) / (last - first)
        assert 0.5 - sample <= kept <= 0.75 + sample, kept
        cut = float(re.search(r"last (\d+)% cut off", fault.description).group(1)) / 100
        assert abs((1 - kept) - cut) <= 0.005 + sample, (kept, fault.description)
        np.testing.assert_array_equal(out[: out.size - 100], audio[: out.size - 100])
        kept_shares.append(kept)
    assert max(kept_shares) - min(kept_shares) > 0.1  # the seeds draw different cuts


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
    shifts = []
    for seed in range(12):
        fault = audio_fault("voice", audio, RATE, np.random.default_rng(seed))
        assert fault.audio.size == audio.size
        semitones = _semitones(_pitch(fault.audio, RATE), _pitch(audio, RATE))
        # 4-7 semitones up or down, to the measurement's few hundredths
        assert 4.0 - 0.05 <= abs(semitones) <= 7.0 + 0.05, (semitones, fault.description)
        described = _described_semitones(fault.description)
        assert 4.0 <= abs(described) <= 7.0 and abs(semitones - described) <= 0.07
        shifts.append(semitones)
    assert min(shifts) < 0 < max(shifts)  # both directions are drawn


def test_voice_moves_the_formants_with_the_pitch():
    # Resampling moves the whole spectrum: the formant goes where the pitch goes (a pitch-only
    # shift would leave it at 900 Hz, and a speaker verifier would hear the same vocal tract).
    audio = _vowel(2.0)
    formant = _formant(audio, RATE)
    assert abs(formant - 900.0) < 5.0
    for seed in range(8):
        fault = audio_fault("voice", audio, RATE, np.random.default_rng(seed))
        moved = _semitones(_formant(fault.audio, RATE), formant)
        described = _described_semitones(fault.description)
        assert 4.0 - 0.1 <= abs(moved) <= 7.0 + 0.1, (moved, fault.description)
        assert abs(moved - described) <= 0.1, (moved, fault.description)


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
