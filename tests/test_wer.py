import dataclasses

import numpy as np
import pytest

from verified_tts.audio import resample
from verified_tts.errors import UserError
from verified_tts.generators.base import SynthesisRequest
from verified_tts.generators.espeak import EspeakGenerator, EspeakOptions
from verifiers.base import Clip
from verifiers.wer import WerOptions, WerVerifier, load_wer_verifier

FIRST, MIDDLE, LAST = "The box was thrown", "beside", "the parked truck."
SENTENCE = f"{FIRST} {MIDDLE} {LAST}"
OTHER = "Help the woman get back to her feet."
RATE = 22_050


@pytest.fixture(scope="module")
def say():
    # one fixed prosody, so every piece below is read the same way
    options = EspeakOptions(
        variants=("m1",), rate=(165, 165), pitch=(50, 50), pitch_range=(50, 50), word_gap=(0, 0)
    )
    generator = EspeakGenerator(options)

    def speak(text: str) -> np.ndarray:
        return generator.sample([SynthesisRequest("u", 0, 7, text)])[0].audio

    return speak


@pytest.fixture(scope="module")
def verifier():
    # the per-clip path, spelled out (packing has its own tests in test_wer_packing.py)
    return load_wer_verifier(WerOptions(packing=False, beam_size=5))


@pytest.fixture(scope="module")
def batch(say):
    sentence, other = say(SENTENCE), say(OTHER)
    # The same pieces with and without the middle word: the splice is the only difference.
    full = np.concatenate([say(FIRST), say(MIDDLE), say(LAST)])
    cut = np.concatenate([say(FIRST), say(LAST)])
    return [
        Clip(sentence, RATE, SENTENCE),
        Clip(sentence, RATE, OTHER),
        Clip(other, RATE, OTHER),
        Clip(other, RATE, SENTENCE),
        Clip(full, RATE, SENTENCE),
        Clip(cut, RATE, SENTENCE),
    ]


@pytest.fixture(scope="module")
def scored(verifier, batch):
    return verifier.score(batch)


def test_own_text_scores_better_than_another_sentence(scored):
    own_a, wrong_a, own_b, wrong_b = scored[:4]
    # tiny.en mishears espeak-ng now and then ("The marks was thrown"), hence the loose bounds
    for own, wrong in ((own_a, wrong_a), (own_b, wrong_b)):
        assert own.metrics["wer"] < 0.5 < 0.8 <= wrong.metrics["wer"]
        assert own.metrics["asr_logprob"] > wrong.metrics["asr_logprob"] + 2.0
        assert own.metrics["asr_min_logprob"] > wrong.metrics["asr_min_logprob"]
        assert -1.0 < own.metrics["asr_logprob"] < 0.0
    # the transcript does not depend on the reference text
    assert own_a.detail["transcript"] == wrong_a.detail["transcript"]
    assert own_a.detail["reference_tokens"] > 5


def test_a_cut_out_word_sinks_the_worst_token(scored):
    full, cut = scored[4], scored[5]
    assert cut.metrics["asr_min_logprob"] < full.metrics["asr_min_logprob"] - 3.0
    assert cut.metrics["asr_logprob"] < full.metrics["asr_logprob"]
    assert cut.detail["worst_token"].strip() == MIDDLE
    # tiny.en's mishearings of espeak-ng vary with the CPU ("The marks was thrown", "park
    # truck"), so the WER of both can tie; the missing word itself is what must show
    assert cut.metrics["asr_deletions"] > full.metrics["asr_deletions"]
    assert MIDDLE not in cut.detail["transcript"].lower().split()


def test_batch_equals_one_at_a_time(verifier, batch, scored):
    for index in (0, 3, 5):
        alone = verifier.score([batch[index]])[0]
        assert alone.detail["transcript"] == scored[index].detail["transcript"]
        assert alone.metrics["wer"] == scored[index].metrics["wer"]
        for name in ("asr_logprob", "asr_min_logprob"):
            assert alone.metrics[name] == pytest.approx(scored[index].metrics[name], abs=1e-3)


class _CountingModel:
    """Forwards to the CTranslate2 model and counts encoder calls."""

    def __init__(self, model):
        self._model, self.encodes = model, 0

    def encode(self, *args, **kwargs):
        self.encodes += 1
        return self._model.encode(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._model, name)


def test_encoder_runs_once_per_batch(verifier, say):
    clips = [Clip(say(OTHER), RATE, OTHER), Clip(np.zeros(RATE, np.float32), RATE, "")]
    counting = _CountingModel(verifier._model)
    options = dataclasses.replace(verifier.options, batch_size=16)
    scores = WerVerifier(counting, verifier._tokenizer, options, "x").score(clips)
    assert counting.encodes == 1 and len(scores) == 2
    # an empty text has no tokens to force-decode: no likelihood, and anything heard is wrong
    silent = scores[1]
    assert "asr_logprob" not in silent.metrics and "asr_min_logprob" not in silent.metrics
    assert silent.metrics["wer"] == (0.0 if not silent.detail["transcript"] else 1.0)
    assert scores[0].metrics["wer"] < 0.5
    assert verifier.score([]) == []


def test_log_mel_matches_faster_whisper(verifier, say):
    from faster_whisper.feature_extractor import FeatureExtractor

    audio = resample(say(OTHER), RATE, 16_000)
    ours = verifier._log_mel([audio, audio[:8000]])
    reference = FeatureExtractor(feature_size=80)(np.pad(audio, (0, 480_000 - audio.size)))
    assert ours.shape == (2, 80, 3000)
    np.testing.assert_allclose(ours[0], reference[:, :3000], atol=2e-3)
    # a row does not depend on what else is in the batch
    np.testing.assert_allclose(ours[1], verifier._log_mel([audio[:8000]])[0], atol=1e-6)


def test_clip_over_30_seconds_is_transcribed_in_windows(verifier, say):
    lines = [
        "The birch canoe slid on the smooth planks.",
        "Glue the sheet to the dark blue background.",
        "It's easy to tell the depth of a well.",
        "These days a chicken leg is a rare dish.",
        "Rice is often served in round bowls.",
        "The juice of lemons makes fine punch.",
    ]
    pause = np.zeros(RATE // 2, np.float32)
    audio = np.concatenate([part for line in lines * 2 for part in (say(line), pause)])
    assert 30 < len(audio) / RATE < 60
    score = verifier.score([Clip(audio, RATE, " ".join(lines * 2))])[0]
    assert score.detail["windows"] == 2
    assert score.metrics["wer"] < 0.5
    assert score.metrics["asr_logprob"] > -2.0
    assert score.detail["reference_tokens"] > 100


def test_identity_and_options(verifier):
    identity = verifier.identity()
    assert identity["model"].startswith("tiny.en") and identity["beam_size"] == 5
    assert identity["compute_type"] == "int8"
    assert "device" not in identity  # speed, not scores
    assert WerOptions().model is None
    # the defaults: packed windows with greedy transcripts; per clip, beam-5 transcripts
    assert WerOptions().packing and WerOptions().beam == 1
    assert WerOptions(packing=False).beam == 5 and WerOptions(beam_size=3).beam == 3
    assert load_wer_verifier().identity()["beam_size"] == 1
    assert "packing" not in identity


def test_unknown_models_are_one_line_user_errors(tmp_path):
    with pytest.raises(UserError, match="no-such-folder' does not exist"):
        load_wer_verifier(WerOptions(model=str(tmp_path / "no-such-folder")))
    with pytest.raises(UserError, match="has no model.bin"):
        load_wer_verifier(WerOptions(model=str(tmp_path)))
    with pytest.raises(UserError, match="unknown Whisper model 'tiny.xx'"):
        load_wer_verifier(WerOptions(model="tiny.xx"))
    with pytest.raises(UserError, match="not in the Hugging Face cache") as error:
        load_wer_verifier(WerOptions(model="verified-tts-tests/no-such-whisper"))
    assert "\n" not in str(error.value)
    with pytest.raises(UserError, match="at least 1"):
        load_wer_verifier(WerOptions(beam_size=0))


def test_workers_score_as_one_worker_does(scored, batch):
    # One row per call on two workers at once: the calls run in parallel and their results
    # come back in the clips' order, with the scores one worker gives.
    two = load_wer_verifier(WerOptions(packing=False, beam_size=5, workers=2, batch_size=1))
    assert two._workers == 2
    again = two.score(batch)
    assert [s.metrics for s in again] == [s.metrics for s in scored]
    assert [s.detail for s in again] == [s.detail for s in scored]


def test_cpu_workers_default_to_one_thread_each(monkeypatch):
    from verifiers.wer import _workers_and_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr("verifiers.wer._default_threads", lambda: 4)
    assert _workers_and_threads(WerOptions()) == (4, 1)
    assert _workers_and_threads(WerOptions(cpu_threads=2)) == (1, 2)  # the old single worker
    assert _workers_and_threads(WerOptions(workers=3)) == (3, 1)
    assert _workers_and_threads(WerOptions(device="cuda")) == (1, 4)
    monkeypatch.setattr("verifiers.wer._default_threads", lambda: 0)  # OMP_NUM_THREADS set
    assert _workers_and_threads(WerOptions()) == (1, 0)


def test_a_batch_size_leaves_no_worker_idle():
    # batch_size caps a call's rows; it must not put every row on one worker while another
    # waits (the judge's 16 clips a call ran on one of two cores)
    seen: list[list[int]] = []

    def run(rows):
        seen.append(list(rows))
        return [row * 10 for row in rows]

    verifier = WerVerifier(None, None, WerOptions(batch_size=16), "x", workers=2)
    assert verifier.map_batches(run, list(range(6)), 8) == [0, 10, 20, 30, 40, 50]
    assert sorted(map(len, seen)) == [3, 3]
    seen.clear()
    capped = WerVerifier(None, None, WerOptions(batch_size=2), "x", workers=2)
    assert capped.map_batches(run, list(range(6)), 8) == [0, 10, 20, 30, 40, 50]
    assert sorted(map(len, seen)) == [2, 2, 2]
