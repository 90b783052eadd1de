"""score_clips runs a batch's verifiers at once and merges their verdicts in the scoring order."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from verified_tts.errors import UserError
from verified_tts.selection.scoring import score_clips
from verifiers import Clip, Score


class Meeting:
    """A verifier that scores only once every verifier of the batch has started: run one after
    another, the first one waits for the others and the barrier breaks."""

    def __init__(self, name: str, barrier: threading.Barrier, value: float) -> None:
        self.name = name
        self.barrier = barrier
        self.value = value

    def identity(self) -> dict[str, str]:
        return {"verifier": self.name}

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        self.barrier.wait()
        return [Score({"shared": self.value, self.name: float(i)}) for i in range(len(clips))]


class Failing:
    name = "failing"

    def identity(self) -> dict[str, str]:
        return {"verifier": self.name}

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        raise UserError("this verifier cannot score these clips")


def clips(count: int) -> list[Clip]:
    return [Clip(np.zeros(1600, dtype=np.float32), 16_000, f"line {i}") for i in range(count)]


def test_the_verifiers_of_a_batch_score_it_at_the_same_time():
    barrier = threading.Barrier(3, timeout=20)
    named = (("a", 1.0), ("b", 2.0), ("c", 3.0))
    verifiers = [Meeting(name, barrier, value) for name, value in named]
    scores = score_clips(verifiers, clips(4))
    assert [dict(s.metrics) for s in scores] == [
        {"shared": 3.0, "a": float(i), "b": float(i), "c": float(i)} for i in range(4)
    ]  # a later verifier's metric of the same name wins, as in the scoring order


def test_a_verifiers_error_reaches_the_caller_unchanged():
    barrier = threading.Barrier(1)
    with pytest.raises(UserError, match="cannot score these clips"):
        score_clips([Meeting("a", barrier, 1.0), Failing()], clips(2))
