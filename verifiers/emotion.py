"""Emotion verifier: a transformers audio-classification model scores the target emotion.

Active only for clips that carry a target emotion (``clip.emotion``): those are resampled to the
model's rate and classified in padded batches; metric ``emotion`` is the probability the model
gives the target label (higher is better) and detail ``emotion_label`` is its top label. Labels
match case-insensitively through a small alias table, because emotion models name the same class
differently ("angry", "anger", "ang"; "happy", "joy", "hap"); a target no label matches is a
:class:`~verified_tts.errors.UserError` listing the model's labels (check targets up front with
:meth:`EmotionVerifier.resolve_label`). The model is any ``AutoModelForAudioClassification``
checkpoint, a local folder or a hub id already in the Hugging Face cache (fetched when online);
transformers is imported only when a model is configured. With no model configured
:func:`load_emotion_verifier` returns a verifier whose ``available`` is False and
``unavailable_reason`` is :data:`EMOTION_UNAVAILABLE_REASON`: it returns no ``emotion`` metric
for any clip, so the pipeline reports it unavailable instead of pretending to have scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from verified_tts.audio import resample
from verified_tts.errors import MissingExtra, UserError
from verified_tts.models import locate_model
from verified_tts.options.verifiers import EmotionOptions
from verifiers.base import Clip, Score

__all__ = [
    "METRICS",
    "EMOTION_UNAVAILABLE_REASON",
    "EmotionOptions",
    "EmotionVerifier",
    "UnavailableEmotionVerifier",
    "canonical_emotion",
    "load_emotion_verifier",
]

METRICS = ("emotion",)  # the target emotion's probability, for clips that carry one

EMOTION_UNAVAILABLE_REASON = "no model configured"

# Names emotion datasets and models use for the same class (RAVDESS, CREMA-D, IEMOCAP, TESS,
# MELD, GoEmotions-style text labels), grouped under one canonical name.
_ALIASES: dict[str, tuple[str, ...]] = {
    "neutral": ("neutral", "neu", "none"),
    "calm": ("calm",),
    "happy": ("happy", "happiness", "joy", "joyful", "hap"),
    "excited": ("excited", "excitement", "exc"),
    "sad": ("sad", "sadness", "sa"),
    "angry": ("angry", "anger", "ang", "mad"),
    "fearful": ("fearful", "fear", "fea", "afraid", "scared"),
    "disgusted": ("disgusted", "disgust", "dis"),
    "surprised": ("surprised", "surprise", "sur", "ps"),
    "contempt": ("contempt", "contemptuous"),
}
_CANONICAL = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}


def canonical_emotion(label: str) -> str:
    """The canonical name of an emotion label ("Anger" -> "angry"); unknown names unchanged."""
    key = label.strip().lower()
    return _CANONICAL.get(key, key)


class UnavailableEmotionVerifier:
    """Stands in when no emotion model is configured: scores nothing and says why."""

    name = "emotion"
    available = False
    unavailable_reason = EMOTION_UNAVAILABLE_REASON

    def identity(self) -> Mapping[str, Any]:
        return {"verifier": self.name, "available": False}

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        return [Score(metrics={}, detail={"unavailable": self.unavailable_reason}) for _ in clips]


class EmotionVerifier:
    """Scores target emotions with one loaded classifier (see :func:`load_emotion_verifier`)."""

    name = "emotion"
    available = True
    unavailable_reason: str | None = None

    def __init__(self, extractor: Any, model: Any, options: EmotionOptions, label: str) -> None:
        self._extractor = extractor
        self._model = model
        self.options = options
        self.model_label = label
        id2label = model.config.id2label
        self.labels: tuple[str, ...] = tuple(str(id2label[i]) for i in range(len(id2label)))
        self._sample_rate = int(getattr(extractor, "sampling_rate", 16_000))

    def identity(self) -> Mapping[str, Any]:
        return {"verifier": self.name, "version": 1, "model": self.model_label}

    def resolve_label(self, emotion: str) -> list[int]:
        """Indices of the model's labels that mean ``emotion``; UserError when none does."""
        wanted = canonical_emotion(emotion)
        found = [i for i, label in enumerate(self.labels) if canonical_emotion(label) == wanted]
        if not found:
            raise UserError(
                f"emotion '{emotion}' is not a label of the emotion model '{self.model_label}': "
                f"its labels are {', '.join(self.labels)}"
            )
        return found

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        scores = [Score(metrics={}) for _ in clips]
        targets = [(i, self.resolve_label(c.emotion)) for i, c in enumerate(clips) if c.emotion]
        if not targets:
            return scores
        waves = {
            i: resample(
                np.asarray(clips[i].audio).reshape(-1), clips[i].sample_rate, self._sample_rate
            )  # fmt: skip
            for i, _ in targets
        }
        probabilities = {}
        step = max(1, self.options.batch_size)
        for start in range(0, len(targets), step):
            rows = [i for i, _ in targets[start : start + step]]
            for i, probs in zip(rows, self._classify([waves[i] for i in rows]), strict=True):
                probabilities[i] = probs
        for i, label_ids in targets:
            probs = probabilities[i]
            scores[i] = Score(
                metrics={"emotion": float(probs[label_ids].sum())},
                detail={"emotion_label": self.labels[int(np.argmax(probs))]},
            )
        return scores

    def _classify(self, waves: list[np.ndarray]) -> np.ndarray:
        """Class probabilities [len(waves), labels] from one padded forward pass."""
        import torch

        # The feature extractor pads to the longest wave and adds an attention mask when the
        # model was trained with one; a clip shorter than the model's receptive field is padded.
        shortest = self._sample_rate // 10
        waves = [np.pad(w, (0, max(0, shortest - w.size))) for w in waves]
        inputs = self._extractor(
            waves, sampling_rate=self._sample_rate, padding=True, return_tensors="pt"
        )
        device = self._model.device
        with torch.no_grad():
            logits = self._model(**{k: v.to(device) for k, v in inputs.items()}).logits
        return torch.softmax(logits.float(), dim=-1).cpu().numpy().astype(np.float64)


def _from_pretrained(source: str, local_files_only: bool) -> tuple[Any, Any]:
    from transformers import AutoFeatureExtractor, AutoModelForAudioClassification

    extractor = AutoFeatureExtractor.from_pretrained(source, local_files_only=local_files_only)
    model = AutoModelForAudioClassification.from_pretrained(
        source, local_files_only=local_files_only
    )
    return extractor, model


def load_emotion_verifier(
    options: EmotionOptions | None = None,
) -> EmotionVerifier | UnavailableEmotionVerifier:
    """Load the configured classifier once, or the unavailable stand-in when there is none."""
    options = options or EmotionOptions()
    if not options.model:
        return UnavailableEmotionVerifier()
    try:
        import transformers  # noqa: F401  (only to report a missing extra clearly)
    except ImportError as error:
        raise MissingExtra("the emotion verifier", "emotion", "transformers") from error

    source = options.model
    location = locate_model(source, what="emotion model", option="[verifiers.emotion] model")
    try:
        extractor, model = _from_pretrained(location.path, local_files_only=True)
    except (OSError, ValueError, KeyError) as error:
        raise UserError(
            f"emotion model folder '{source}' is not a transformers audio-classification "
            f"model ({type(error).__name__}: {str(error).splitlines()[0]}): it needs "
            "config.json, preprocessor_config.json and the weights"
        ) from error
    label = location.label
    if not getattr(model.config, "id2label", None):
        raise UserError(f"emotion model '{source}' has no labels (config.id2label is empty)")
    model.to(options.device)
    model.eval()
    return EmotionVerifier(extractor, model, options, label)
