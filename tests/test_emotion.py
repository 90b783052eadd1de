import sys

import numpy as np
import pytest

from tests.emotion_model import build_emotion_model
from verified_tts.errors import MissingExtra, UserError
from verifiers.base import Clip
from verifiers.emotion import (
    EMOTION_UNAVAILABLE_REASON,
    EmotionOptions,
    canonical_emotion,
    load_emotion_verifier,
)

LABELS = {0: "neutral", 1: "Happy", 2: "sad", 3: "ang"}
RATE = 22_050


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_emotion_model(tmp_path_factory.mktemp("emotion-model"), LABELS)


@pytest.fixture(scope="module")
def verifier(model_dir):
    return load_emotion_verifier(EmotionOptions(model=str(model_dir), batch_size=2))


def noise(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (0.1 * rng.standard_normal(round(seconds * RATE))).astype(np.float32)


def test_no_model_is_unavailable_and_never_scores():
    verifier = load_emotion_verifier(EmotionOptions())
    assert verifier.available is False
    assert verifier.unavailable_reason == EMOTION_UNAVAILABLE_REASON == "no model configured"
    scores = verifier.score([Clip(noise(1.0, 0), RATE, "x", emotion="happy")])
    assert scores[0].metrics == {} and scores[0].detail["unavailable"] == "no model configured"
    assert verifier.identity()["available"] is False


def test_target_probability_and_top_label(verifier):
    audio = noise(1.2, 1)
    targets = ["neutral", "joy", "Sadness", "anger"]  # aliases of the model's four labels
    clips = [Clip(audio, RATE, "x", emotion=target) for target in targets]
    scores = verifier.score(clips)
    probabilities = [s.metrics["emotion"] for s in scores]
    assert all(0.0 < p < 1.0 for p in probabilities)
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-5)  # the same clip, every label
    top = {s.detail["emotion_label"] for s in scores}
    assert len(top) == 1 and top <= set(LABELS.values())
    assert LABELS[int(np.argmax(probabilities))] == top.pop()


def test_only_clips_with_a_target_are_scored_and_batching_does_not_matter(verifier):
    clips = [
        Clip(noise(0.6, 2), RATE, "a", emotion="happy"),
        Clip(noise(1.5, 3), RATE, "b"),
        Clip(noise(2.0, 4), 16_000, "c", emotion="ANGRY"),
        Clip(noise(0.05, 5), RATE, "d", emotion="sad"),  # shorter than the conv stack's field
    ]
    scores = verifier.score(clips)  # batch_size 2: two padded batches
    assert "emotion" not in scores[1].metrics and scores[1].detail == {}
    for index in (0, 2, 3):
        alone = verifier.score([clips[index]])[0]
        assert alone.metrics["emotion"] == pytest.approx(scores[index].metrics["emotion"], abs=1e-4)
        assert alone.detail["emotion_label"] == scores[index].detail["emotion_label"]
    assert verifier.score([]) == []


def test_unknown_target_lists_the_labels(verifier):
    with pytest.raises(UserError, match="'whimsical' is not a label") as error:
        verifier.score([Clip(noise(0.5, 6), RATE, "x", emotion="whimsical")])
    assert "neutral, Happy, sad, ang" in str(error.value)
    assert verifier.resolve_label("Anger") == [3]


def test_aliases():
    assert canonical_emotion(" Joy ") == canonical_emotion("hap") == "happy"
    assert (
        canonical_emotion("fear") == "fearful" and canonical_emotion("unheard-of") == "unheard-of"
    )


def test_loading_errors(tmp_path, model_dir, monkeypatch):
    with pytest.raises(UserError, match="does not exist"):
        load_emotion_verifier(EmotionOptions(model=str(tmp_path / "missing")))
    with pytest.raises(UserError, match="is not a transformers audio-classification model"):
        load_emotion_verifier(EmotionOptions(model=str(tmp_path)))
    with pytest.raises(UserError, match="not in the Hugging Face cache") as error:
        load_emotion_verifier(EmotionOptions(model="verified-tts-tests/no-such-emotion-model"))
    assert "\n" not in str(error.value)
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if the extra were not installed
    with pytest.raises(MissingExtra, match=r"verified-tts\[emotion\]"):
        load_emotion_verifier(EmotionOptions(model=str(model_dir)))


def test_identity(verifier, model_dir):
    assert verifier.identity()["model"] == str(model_dir)
    assert verifier.available is True and verifier.labels == tuple(LABELS.values())
