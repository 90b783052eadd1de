"""What the two A/B workflows share: the judge, judging winners once, each arm against the first.

Both ``ab --n`` (:mod:`verified_tts.workflows.ab`, arms read out of one N=max run) and
``ab --arm`` (:mod:`verified_tts.workflows.ab_search`, one render per search strategy) load the
judge before the long renders and refuse the WER verifier's own model (:func:`prepare_judge`),
re-transcribe each distinct winner once (:func:`judge_winners`), and give every arm after the
first the paired bootstrap interval of its per-utterance judge WER minus the first arm's
(:func:`versus_first`: negative means this arm is better).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from verified_tts.paired import paired_bootstrap
from verified_tts.workflows.judge import (
    Judge,
    JudgeOptions,
    check_independent,
    judge_clips,
    load_judge,
)

__all__ = ["mean", "prepare_judge", "judge_winners", "versus_first"]

Key = TypeVar("Key", bound=Hashable)


def mean(values: Sequence[float]) -> float | None:
    """The mean rounded to 4 places, None for no values."""
    return round(statistics.fmean(values), 4) if values else None


def prepare_judge(
    judge_asr: str | JudgeOptions | Judge | None, verifiers: Mapping[str, Mapping[str, Any]]
) -> Judge | None:
    """The loaded judge (before the long renders, so a bad model name fails in seconds), which
    must not be the model of the WER verifier in ``verifiers``."""
    if judge_asr is None:
        return None
    judge_model = judge_asr if isinstance(judge_asr, Judge) else load_judge(judge_asr)
    check_independent(judge_model, verifiers)
    return judge_model


def judge_winners(
    judge_model: Judge,
    wanted: Mapping[Key, tuple[str, str]],
    out: Path,
    *,
    on_start: Callable[[int], None] | None = None,
    on_judged: Callable[[int], None] | None = None,
) -> tuple[dict[Key, tuple[float, str]], dict[str, Any]]:
    """(WER, transcript) for every wanted clip (audio path relative to ``out``, text), and the
    judge's record for the A/B file (its identity, the clips judged, those an earlier run into
    ``out`` had judged, the seconds it took); progress as :func:`judge_clips` reports it."""
    heard = judge_clips(judge_model, wanted, out, on_start=on_start, on_judged=on_judged)
    info = {**judge_model.identity(), "clips": len(wanted), "heard_before": heard.heard_before,
            "seconds": round(heard.seconds, 3)}  # fmt: skip
    return heard.transcripts, info


def versus_first(
    per_arm: Sequence[Sequence[float]],
) -> list[tuple[float, float, float] | None]:
    """Per arm: the mean of its per-utterance judge WER minus the first arm's with a 95 % paired
    bootstrap interval (None for the first arm, and where the utterances do not pair up)."""
    first = per_arm[0] if per_arm else []
    return [None] + [
        paired_bootstrap(first, wers) if wers and len(wers) == len(first) else None
        for wers in per_arm[1:]
    ]
