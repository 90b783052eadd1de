"""How long a text takes to say, for a voice that does not say so itself: a linear text model.

The signal verifier's ``duration_ratio`` holds a clip to the length its text should take. A Piper
voice gives its own prediction; any other generator (espeak-ng, a codec LM) is held to this model:
``intercept_s`` plus the letters and digits at ``chars_per_s``, ``per_word_s`` a word, and the
delivery the punctuation asks for: ``per_pause_s`` for every clause or sentence break inside the
line (, ; : . ! ? ... or a dash before a space), and what the line's ending adds
(``question_s``, ``exclamation_s``, ``ellipsis_s``, ``trailing_comma_s``). The default is the
letters alone at 13 a second (the verifier's reading rate, all else 0), which calls a one-word
exclamation "too long" because a voice needs its onset and release whatever the word;
:func:`fit` fits every coefficient to clean takes by least squares, pulled gently towards that
default so a handful of texts cannot swing it (``verified-tts calibrate`` does, on the generator
being calibrated, and writes them as ``[verifiers.signal]`` options), so short lines and
punctuation weigh what they weigh for that voice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

__all__ = ["FEATURES", "TextDurationModel", "features", "fit"]

_SPOKEN = re.compile(r"[^\W_]", re.UNICODE)
# a clause or sentence break inside the line: punctuation (or a dash) followed by a space
_PAUSES = re.compile(r"(?:[,;:.!?\u2026\u2013\u2014]+|--)[\"')\]\u2019\u201d]*(?=\s)")
_CLOSERS = "\"')]}\u2019\u201d\u00bb "
FEATURES = ("intercept", "chars", "words", "pauses", "question", "exclamation", "ellipsis", "comma")


@dataclass(frozen=True)
class TextDurationModel:
    """Seconds a text takes (see the module docstring); the default is letters at 13 a second."""

    intercept_s: float = 0.0
    chars_per_s: float = 13.0
    per_word_s: float = 0.0
    per_pause_s: float = 0.0
    question_s: float = 0.0
    exclamation_s: float = 0.0
    ellipsis_s: float = 0.0
    trailing_comma_s: float = 0.0

    def seconds(self, text: str) -> float:
        f = features(text)
        per_char = 1.0 / self.chars_per_s if self.chars_per_s > 0 else 0.0
        coefficients = (self.intercept_s if f[1] else 0.0, per_char, self.per_word_s,
                        self.per_pause_s, self.question_s, self.exclamation_s, self.ellipsis_s,
                        self.trailing_comma_s)  # fmt: skip
        return max(0.0, float(np.dot(coefficients, f)))

    def as_options(self) -> dict[str, float]:
        """The model as ``[verifiers.signal]`` keys (``SignalOptions`` fields)."""
        return {
            (
                "reading_rate_chars_per_s" if f.name == "chars_per_s" else f"expected_{f.name}"
            ): round(float(getattr(self, f.name)), 5)
            for f in fields(self)
        }


def features(text: str) -> tuple[float, ...]:
    """The model's inputs for ``text``, in :data:`FEATURES` order (intercept first)."""
    chars = len(_SPOKEN.findall(text))
    words = sum(1 for w in text.split() if _SPOKEN.search(w))
    end = text.rstrip(_CLOSERS)
    ellipsis = end.endswith(("...", "\u2026"))
    pauses = len(_PAUSES.findall(end))
    return (
        1.0,
        float(chars),
        float(words),
        float(pauses),
        float(end.endswith("?")),
        float(end.endswith("!")),
        float(ellipsis),
        float(end.endswith(",")),
    )


def fit(texts: Sequence[str], seconds: Sequence[float], prior: float = 1.0) -> TextDurationModel:
    """Least squares of ``seconds`` on the texts' features, pulled towards the default model with
    weight ``prior`` (ridge): with many texts the data decide, with a few distinct ones (or a
    feature no text has) the coefficients stay near letters at 13 a second."""
    x = np.array([features(t) for t in texts], dtype=np.float64)
    y = np.asarray(seconds, dtype=np.float64)
    default = TextDurationModel()
    start = np.array([0.0, 1.0 / default.chars_per_s, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    # the pull is on each coefficient times its feature's typical size: seconds, like the data
    scale = np.sqrt(np.mean(x**2, axis=0)) if len(x) else np.ones(x.shape[1])
    pull = np.sqrt(prior) * np.diag(np.where(scale > 0, scale, 1.0))
    solution = np.linalg.lstsq(np.vstack([x, pull]), np.concatenate([y, pull @ start]), rcond=None)[
        0
    ]
    per_char = solution[1]
    return TextDurationModel(
        intercept_s=float(solution[0]),
        chars_per_s=float(1.0 / per_char) if per_char > 1e-4 else default.chars_per_s,
        per_word_s=float(solution[2]),
        per_pause_s=float(solution[3]),
        question_s=float(solution[4]),
        exclamation_s=float(solution[5]),
        ellipsis_s=float(solution[6]),
        trailing_comma_s=float(solution[7]),
    )
