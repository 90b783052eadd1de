"""The search settings and the partial-transcript check: what ``--search`` and ``--budget`` set.

:class:`SearchOptions` is the ``[search]`` table: best-of-N (:mod:`verified_tts.best_of_n`) or a
verifier-guided beam search over codec-LM outputs (:mod:`verified_tts.beam_search`), its width,
expansions and chunk, the process verifiers that steer it and a budget of audio seconds generated
per utterance (best-of-N with a budget samples only the candidates whose worst case fits).
:func:`parse_arm` reads an A/B arm (``best-of-n:8``, ``beam:2x4``).

The partial-transcript check (:func:`prefix_error`): the partial audio ends wherever the chunk
ended, possibly inside a word, and the model may speak slower or faster than the text's length
suggests. So the transcript's last word is dropped, and the rest is compared with the reference's
first k words for every k within two words of its length, keeping the best alignment: a skipped or
wrong word costs one error per transcript word, a different speaking rate costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from verified_tts.errors import UserError

__all__ = [
    "PROCESS_VERIFIERS",
    "STRATEGIES",
    "SearchOptions",
    "parse_arm",
    "prefix_error",
]

STRATEGIES = ("best-of-n", "beam")
PROCESS_VERIFIERS = ("speaker", "emotion", "wer")


@dataclass(frozen=True)
class SearchOptions:
    """The ``[search]`` table (``--search`` and ``--budget`` override it)."""

    strategy: str = "best-of-n"
    width: int = 2  # W: beams kept after each step
    expansions: int = 4  # E: continuations per live beam and step
    chunk_s: float = 1.0  # C: seconds of audio per continuation
    budget_s: float | None = None  # seconds of audio generated per utterance, at most
    process: tuple[str, ...] = PROCESS_VERIFIERS  # verifiers scoring partial audio
    speaker_weight: float = 1.0
    emotion_weight: float = 1.0
    text_weight: float = 1.0  # weight of the partial-transcript error

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise UserError(
                f"--search must be one of {', '.join(STRATEGIES)} (got '{self.strategy}')"
            )
        if int(self.width) < 1 or int(self.expansions) < 1:
            raise UserError(
                f"[search] width and expansions must be at least 1 "
                f"(got {self.width} and {self.expansions})"
            )
        if not (math.isfinite(self.chunk_s) and self.chunk_s > 0):
            raise UserError(
                f"[search] chunk_s must be a positive number of seconds (got {self.chunk_s})"
            )
        if self.budget_s is not None and not (math.isfinite(self.budget_s) and self.budget_s > 0):
            raise UserError(
                f"--budget must be a positive number of seconds of audio (got {self.budget_s})"
            )
        unknown = [name for name in self.process if name not in PROCESS_VERIFIERS]
        if unknown:
            raise UserError(
                f"[search] process names unknown verifiers {unknown}: choose among "
                + ", ".join(PROCESS_VERIFIERS)
            )

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any] | None, **overrides: Any) -> SearchOptions:
        known = {f.name for f in fields(cls)}
        values = {}
        for key, value in {
            **dict(table or {}),
            **{k: v for k, v in overrides.items() if v is not None},
        }.items():
            name = key.replace("-", "_")
            if name not in known:
                raise UserError(
                    f"unknown option '{key}' in [search]: known options are "
                    + ", ".join(sorted(known))
                )
            values[name] = value
        if "process" in values:
            values["process"] = tuple(values["process"])
        return cls(**values)

    @property
    def beam(self) -> bool:
        return self.strategy == "beam"

    def identity(self) -> dict[str, Any] | None:
        """What enters the content keys: None for plain best-of-N, so its keys are unchanged."""
        if not self.beam:
            return None if self.budget_s is None else {"budget_s": self.budget_s}
        return asdict(self)

    def label(self) -> str:
        if self.beam:
            return f"beam:{self.width}x{self.expansions}"
        return "best-of-n"


def parse_arm(text: str) -> tuple[str, int, int]:
    """``best-of-n:8`` -> ("best-of-n", 8, 1); ``beam:2x4`` -> ("beam", 2, 4) (width x E)."""
    strategy, _, size = text.partition(":")
    try:
        if strategy == "best-of-n":
            n = int(size)
            if n >= 1:
                return strategy, n, 1
        elif strategy == "beam":
            width, _, expansions = size.partition("x")
            w, e = int(width), int(expansions)
            if w >= 1 and e >= 1:
                return strategy, w, e
    except ValueError:
        pass
    raise UserError(f"--arm '{text}' is not an arm: write best-of-n:N or beam:WxE (e.g. beam:2x4)")


def _edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def prefix_error(text: str, transcript: str) -> float:
    """Errors per transcript word of a partial transcript against the start of ``text``.

    See the module docstring: the last transcript word is dropped (it may be cut), the best of
    the reference prefixes within two words of the transcript's length is kept. Nothing heard
    yet is no error (silence is the speaker and final checks' business).
    """
    from verifiers.textnorm import normalize

    heard = normalize(transcript).split()[:-1]
    if not heard:
        return 0.0
    words = normalize(text).split()
    lengths = range(max(0, len(heard) - 2), min(len(words), len(heard) + 2) + 1)
    best = min((_edit_distance(words[:k], heard) for k in lengths), default=len(heard))
    return best / len(heard)
