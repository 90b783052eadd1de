import numpy as np
import pytest

from verified_tts.audio import resample
from verifiers.base import Clip
from verifiers.signal import (
    READING_RATE_CHARS_PER_S,
    SignalOptions,
    SignalVerifier,
    expected_duration_s,
    load_signal_verifier,
)

RATE = 16_000


def tone(seconds: float, amplitude: float = 0.5, rate: int = RATE) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def silence(seconds: float, rate: int = RATE) -> np.ndarray:
    return np.zeros(round(seconds * rate), dtype=np.float32)


def test_silences_are_measured():
    audio = np.concatenate(
        [silence(0.5), tone(1.0), silence(0.3), tone(0.5), silence(0.8), tone(0.7), silence(0.2)]
    )
    score = SignalVerifier().score([Clip(audio, RATE, "a b c")])[0].metrics
    assert score["duration_s"] == pytest.approx(4.0)
    assert score["leading_silence_s"] == pytest.approx(0.5, abs=0.02)
    assert score["trailing_silence_s"] == pytest.approx(0.2, abs=0.02)
    assert score["max_internal_silence_s"] == pytest.approx(0.8, abs=0.02)
    assert score["clipping"] == 0.0
    assert score["peak_dbfs"] == pytest.approx(20 * np.log10(0.5), abs=0.01)
    assert score["dropped_frames"] == 0.0


def test_quiet_noise_is_silence_and_threshold_is_an_option():
    rng = np.random.default_rng(0)
    noise = (10 ** (-55 / 20) * rng.standard_normal(RATE)).astype(np.float32)  # about -55 dBFS
    audio = np.concatenate([noise, tone(1.0), noise])
    default = SignalVerifier().score([Clip(audio, RATE, "x")])[0].metrics
    assert default["leading_silence_s"] == pytest.approx(1.0, abs=0.02)
    strict = SignalVerifier(SignalOptions(silence_threshold_dbfs=-70.0))
    assert strict.score([Clip(audio, RATE, "x")])[0].metrics["leading_silence_s"] < 0.05


def test_clipping_share_and_dropped_frames():
    audio = tone(1.0, amplitude=2.0)
    audio = np.clip(audio, -1.0, 1.0)
    clip = Clip(audio, RATE, "x", info={"dropped_frames": 3})
    metrics = SignalVerifier().score([clip])[0].metrics
    expected_share = float(np.mean(np.abs(audio) >= 0.999))
    assert 0.5 < expected_share < 0.8  # a sine at twice full scale is flat most of the time
    assert metrics["clipping"] == pytest.approx(expected_share)
    assert metrics["peak_dbfs"] == pytest.approx(0.0, abs=1e-6)
    assert metrics["dropped_frames"] == 3.0


def test_duration_ratio_uses_spoken_text_at_the_reading_rate():
    text = "Nineteen ninety-nine was a good year."
    letters = sum(ch.isalnum() for ch in text)
    assert expected_duration_s(text) == pytest.approx(letters / READING_RATE_CHARS_PER_S)
    expected = letters / READING_RATE_CHARS_PER_S
    audio = tone(expected * 2)
    clip = Clip(audio, RATE, "1999 was a good year.", spoken=text)
    assert SignalVerifier().score([clip])[0].metrics["duration_ratio"] == pytest.approx(2.0, 1e-3)
    # without a spoken form the written text is counted: shorter, so the ratio is higher
    written = SignalVerifier().score([Clip(audio, RATE, "1999 was a good year.")])[0]
    assert written.metrics["duration_ratio"] > 2.0


def test_batch_with_edge_cases_and_target_slot():
    clips = [
        Clip(silence(1.0), RATE, "nothing"),
        Clip(np.zeros(0, np.float32), RATE, "empty"),
        Clip(tone(1.0), RATE, "..."),
        Clip(tone(0.5, rate=22_050), 22_050, "slot", target_duration_s=1.0),
    ]
    verifier = load_signal_verifier()
    scores = verifier.score(clips)
    assert len(scores) == 4
    silent, empty, punctuation, slotted = (s.metrics for s in scores)
    assert silent["leading_silence_s"] == silent["trailing_silence_s"] == pytest.approx(1.0)
    assert silent["max_internal_silence_s"] == 0.0 and silent["peak_dbfs"] == -120.0
    assert empty["duration_s"] == 0.0 and empty["clipping"] == 0.0
    assert np.isfinite(punctuation["duration_ratio"]) and punctuation["duration_ratio"] > 10
    assert slotted["target_duration_ratio"] == pytest.approx(0.5, abs=1e-3)
    assert "target_duration_ratio" not in silent
    assert all(np.isfinite(v) for s in scores for v in s.metrics.values())
    assert verifier.identity()["options"]["silence_threshold_dbfs"] == -45.0


def test_resample_keeps_a_tone():
    audio = tone(1.0, rate=22_050)
    out = resample(audio, 22_050, RATE)
    assert out.dtype == np.float32 and len(out) == RATE
    spectrum = np.abs(np.fft.rfft(out))
    assert np.argmax(spectrum) == pytest.approx(220, abs=1)  # 1 Hz bins over one second
    assert np.array_equal(resample(audio, 22_050, 22_050), audio)


def test_speech_ratio_ignores_edge_silence_and_counts_speech_only():
    text = "abcdefghijklm"  # 13 letters: one second at the reading rate
    speech = tone(1.0)
    padded = np.concatenate([np.zeros(RATE), speech, np.zeros(RATE)]).astype(np.float32)
    clips = [Clip(speech, RATE, text), Clip(padded, RATE, text)]
    plain, quiet_edges = SignalVerifier().score(clips)
    assert plain.metrics["speech_ratio"] == pytest.approx(1.0, abs=0.03)
    assert quiet_edges.metrics["speech_ratio"] == pytest.approx(1.0, abs=0.03)
    assert quiet_edges.metrics["duration_ratio"] == pytest.approx(3.0, abs=0.03)


def test_duration_ratio_is_held_to_the_voice_prediction_when_the_generator_gives_one():
    text = "Scales!"
    audio = tone(0.9)
    predicted = {"timing": {"predicted_s": 0.75}}
    voiced, plain = SignalVerifier().score(
        [Clip(audio, RATE, text, info=predicted), Clip(audio, RATE, text)]
    )
    assert voiced.metrics["duration_ratio"] == pytest.approx(0.9 / 0.75, abs=1e-3)
    assert voiced.detail["expected_duration_s"] == 0.75
    assert voiced.detail["expected_from"] == "voice"
    # the letters formula would call the one-word line far too long
    assert plain.detail["expected_from"] == "text"
    assert plain.metrics["duration_ratio"] == pytest.approx(0.9 / (6 / READING_RATE_CHARS_PER_S))
    assert plain.metrics["duration_ratio"] > 1.9
    bad = SignalVerifier().score([Clip(audio, RATE, text, info={"timing": {"predicted_s": 0}})])
    assert bad[0].detail["expected_from"] == "text"  # no usable prediction: the text's


def test_text_model_fitted_on_short_lines_and_punctuation():
    from verifiers.duration_model import TextDurationModel, features, fit

    assert features("So...") == (1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    assert features('"All right," he said')[3] == 1.0  # the comma inside is a pause
    assert features("All right,")[7] == 1.0 and features("All right,")[3] == 0.0
    assert features("Scales!")[5] == 1.0 and features("Is it?")[4] == 1.0
    truth = TextDurationModel(intercept_s=0.3, chars_per_s=15.0, per_word_s=0.05,
                              per_pause_s=0.2, exclamation_s=0.15, ellipsis_s=0.4)  # fmt: skip
    texts = ["Scales!", "So...", "Yes, sir.", "A dragon.", "Come on, then!", "Wait... what?",
             "The birch canoe slid on the smooth planks.", "Hey, sit still.", "Go!"]  # fmt: skip
    fitted = fit(texts, [truth.seconds(t) for t in texts], prior=0.0)
    for text in texts:
        assert fitted.seconds(text) == pytest.approx(truth.seconds(text), abs=1e-6)
    assert fitted.chars_per_s == pytest.approx(15.0, rel=1e-4)
    # as options of the signal verifier, the fitted model is what scores a clip
    options = SignalOptions(**fitted.as_options())
    clip = Clip(tone(2 * truth.seconds("So...")), RATE, "So...")
    ratio = SignalVerifier(options).score([clip])[0].metrics["duration_ratio"]
    assert ratio == pytest.approx(2.0, abs=2e-3)
    assert SignalVerifier().score([clip])[0].metrics["duration_ratio"] > 4  # letters alone
    # a handful of texts cannot swing the model far from letters at 13 a second
    few = fit(["Scales!", "Scales!"], [0.9, 1.1])
    assert 8 < few.chars_per_s < 20 and few.seconds("Scales!") > TextDurationModel().seconds(
        "Scales!"
    )


def test_pace_ratio_expects_the_pauses_the_punctuation_asks_for():
    from verifiers.signal import (
        CLAUSE_PAUSE_S,
        FINAL_PAUSE_S,
        LETTER_S,
        SENTENCE_PAUSE_S,
        expected_reading_s,
    )

    assert expected_reading_s("So!") == pytest.approx(2 * LETTER_S + FINAL_PAUSE_S)
    two = expected_reading_s("Chapter two. The Fox, sour; he said")
    letters = sum(ch.isalnum() for ch in "Chapter two. The Fox, sour; he said")
    assert two == pytest.approx(letters * LETTER_S + 2 * CLAUSE_PAUSE_S + SENTENCE_PAUSE_S)
    # a dash or a bracket is no pause of its own (the voice reads through it)
    assert expected_reading_s("a--b (c)") == pytest.approx(3 * LETTER_S)
    # a short exclamation read at the voice's pace is on time, where 13 letters a second says
    # it runs three times too long
    seconds = 2 * LETTER_S + FINAL_PAUSE_S
    metrics = SignalVerifier().score([Clip(tone(seconds), RATE, "So!")])[0].metrics
    assert metrics["pace_ratio"] == pytest.approx(1.0, abs=0.02)
    assert metrics["duration_ratio"] > 2.5


def test_pace_is_held_to_the_voice_prediction_and_to_the_text_without_one():
    from verifiers.signal import expected_reading_s

    # "Act II." read by a voice that means 1.1 s for it, in 1.1 s: on time, whatever the
    # punctuation formula expects of seven letters and two full stops
    text = "Act two."
    audio = tone(1.1)
    voiced, plain = SignalVerifier().score(
        [Clip(audio, RATE, text, info={"timing": {"predicted_s": 1.1}}), Clip(audio, RATE, text)]
    )
    assert voiced.metrics["voice_pace_ratio"] == pytest.approx(1.0, abs=1e-3)
    assert voiced.metrics["voice_pace_ratio"] == pytest.approx(voiced.metrics["duration_ratio"])
    # the voice's own length has its own, narrower gate; a voice without one is not held to it
    assert voiced.metrics["pace_ratio"] == voiced.metrics["voice_pace_ratio"]
    assert "voice_pace_ratio" not in plain.metrics
    assert plain.metrics["pace_ratio"] == pytest.approx(1.1 / expected_reading_s(text), abs=1e-3)
    assert abs(plain.metrics["pace_ratio"] - 1.0) > 0.15
