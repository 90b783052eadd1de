"""The selection policy applied: hard gates first, then a weighted score, in adaptive rounds.

Verifiers only measure; this module decides. A candidate must pass every gate (a bound on one
metric, e.g. ``wer <= 0.5`` or ``0.5 <= duration_ratio <= 2``) before the weighted score ranks it,
or, under ``rank = "heard_alone"`` (the packed profile's), the word errors of the passing takes
heard alone (:mod:`verified_tts.selection.rehear`).
A gate whose metric a verifier did not report (no speaker reference yet, no target emotion) does
not apply. The ranking leans on the less noisy signals (the reference text's likelihood under the
ASR model, speaker similarity) rather than on plain WER, which mostly rewards the ASR model's own
transcription noise (see "Verifier noise" in DESIGN.md). The policy itself (:class:`Gate`,
:class:`SelectionPolicy`) is an options type of :mod:`verified_tts.options.selection`, and its
tuned gates and stop settings are the shipped profiles (``verified_tts/profiles/*.toml``, each
naming the benchmark result that produced it). Every function here is pure: the winner of the
first k candidates is ``choose(judgements[:k])``, which is what makes one N=8 run hold every
smaller arm of an A/B comparison. The adaptive early stop is pure too: whether an utterance stops
after k candidates depends only on their judgements, so an adaptive render can be replayed from a
fixed-N run's scores (``benchmarks/selection/adaptive_replay.py``) exactly where a candidate's
scores do not depend on the round that scored it: per-clip Whisper scoring, not packed scoring
(whose later rounds hear each candidate beside fewer sentences;
``benchmarks/selection/adaptive_judged.py`` renders the rounds instead).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from verified_tts.options.selection import (
    BASE_PROFILE,
    DEFAULT_PROFILE,
    RANK_RULES,
    STOP_RULES,
    Gate,
    SelectionPolicy,
    convert_policy,
    load_profile,
)

__all__ = [
    "DEFAULT_GATES",
    "PACKED_WER_GATES",
    "PER_CLIP_GATES",
    "DEFAULT_WEIGHTS",
    "PACKED_STOP",
    "Gate",
    "HEARD_ALONE",
    "RANK_RULES",
    "STOP_RULES",
    "Judgement",
    "SelectionPolicy",
    "choose",
    "default_gates",
    "default_policy",
    "expected_gain",
    "judge",
    "per_clip_policy",
    "round_targets",
    "should_stop",
]

# the metric a take heard alone gets (verified_tts.selection.rehear): its WER in its own window
HEARD_ALONE = "wer_alone"
_PER_CLIP = load_profile(BASE_PROFILE).policy
_PACKED = load_profile(DEFAULT_PROFILE).policy

# The shipped profiles' gates (per_clip.toml, packed.toml): what the packed scorer's gates have of
# their own, and its rounds and stop settings where they differ from the per-clip scorer's.
PER_CLIP_GATES: tuple[Gate, ...] = _PER_CLIP.gates
PACKED_WER_GATES: tuple[Gate, ...] = tuple(g for g in _PACKED.gates if g not in _PER_CLIP.gates)
DEFAULT_GATES: tuple[Gate, ...] = _PACKED.gates  # the default scorer's (packed)
DEFAULT_WEIGHTS: Mapping[str, float] = dict(_PER_CLIP.weights)
PACKED_STOP: Mapping[str, Any] = {
    name: getattr(_PACKED, name)
    for name in ("first_round", "step", "rounds", "stop", "stop_gain", "prior_spread",
                 "prior_weight", "rank", "alone_beam", "alone_lines")
    if getattr(_PACKED, name) != getattr(_PER_CLIP, name)
}  # fmt: skip


def default_gates(packed_wer: bool = True) -> tuple[Gate, ...]:
    """The shipped gates for the packed (default) or the per-clip Whisper scorer."""
    return default_policy(packed_wer).gates


@dataclass(frozen=True)
class Judgement:
    """The policy's view of one candidate."""

    passed: bool
    passed_with_margin: bool
    failed: tuple[str, ...]  # metrics whose gate failed
    score: float
    logprob: float | None = None  # asr_logprob: how far this candidate is from a perfect reading
    # word errors when heard alone (verified_tts.selection.rehear), under rank = "heard_alone"
    heard_alone: float | None = None


def default_policy(packed_wer: bool = True, **changes: Any) -> SelectionPolicy:
    """The shipped policy for the packed (default) or the per-clip Whisper scorer (its profile);
    ``changes`` replace fields (e.g. ``adaptive=False``)."""
    profile = load_profile(DEFAULT_PROFILE if packed_wer else BASE_PROFILE)
    return replace(profile.policy, **changes)


def per_clip_policy(policy: SelectionPolicy, source: str = DEFAULT_PROFILE) -> SelectionPolicy:
    """``policy`` for per-clip Whisper scores: what it has of the ``source`` profile's gates,
    rounds and stop settings becomes the per-clip profile's; what the user set stays as set."""
    return convert_policy(policy, load_profile(source).policy, load_profile(BASE_PROFILE).policy)


def judge(metrics: Mapping[str, float], policy: SelectionPolicy) -> Judgement:
    """Apply the gates and the weighted score to one candidate's metrics."""
    failed, margin_ok = [], True
    for gate in policy.gates:
        verdict = gate.check(metrics)
        if verdict is None:
            continue
        passed, with_margin = verdict
        if not passed:
            failed.append(gate.metric)
        margin_ok = margin_ok and with_margin
    score = sum(
        weight * float(metrics[name])
        for name, weight in policy.weights.items()
        if name in metrics and not math.isnan(float(metrics[name]))
    )
    logprob = _finite(metrics.get("asr_logprob"))
    alone = _finite(metrics.get(HEARD_ALONE)) if policy.rank == "heard_alone" else None
    return Judgement(not failed, not failed and margin_ok, tuple(failed), score, logprob, alone)


def _finite(value: Any) -> float | None:
    return None if value is None or math.isnan(float(value)) else float(value)


def choose(judgements: Sequence[Judgement]) -> tuple[int, bool]:
    """(winner index, flagged). Passing candidates rank by score, or, where two or more passed
    and every one of them was heard alone (``rank = "heard_alone"``), by the word errors heard
    alone, ties to the lower index; if none passed, the one that failed the fewest gates (then
    the best score) is kept and the utterance is flagged."""
    if not judgements:
        raise ValueError("choose() needs at least one candidate")
    passing = [i for i, j in enumerate(judgements) if j.passed]
    alone = [judgements[i].heard_alone for i in passing]
    if len(passing) > 1 and all(a is not None for a in alone):
        return min(passing, key=lambda i: (judgements[i].heard_alone, i)), False
    if passing:
        # ties go to the lower index, so the choice never depends on how many came after
        return max(passing, key=lambda i: (judgements[i].score, -i)), False
    best = min(
        range(len(judgements)),
        key=lambda i: (len(judgements[i].failed), -judgements[i].score, i),
    )
    return best, True


def round_targets(n: int, policy: SelectionPolicy) -> tuple[int, ...]:
    """How many candidates an utterance has after each round: ``rounds`` below N, then N; else
    first_round, growing by ``step`` (doubling when 0) up to N: (1, 2, ..., 8) by default,
    (2, 4, 8) for first_round 2, step 0; or (N,) when not adaptive."""
    if not policy.adaptive:
        return (n,)
    if policy.rounds:
        return (*(r for r in policy.rounds if r < n), n)
    targets, size = [], policy.first_round
    while size < n:
        targets.append(size)
        size = size + policy.step if policy.step > 0 else size * 2
    return (*targets, n)


def should_stop(
    judgements: Sequence[Judgement], n: int | None = None, policy: SelectionPolicy | None = None
) -> bool:
    """Adaptive early stop after ``len(judgements)`` of ``n`` candidates. With the "margin" rule
    (or no policy): some candidate passed every gate with margin. With "expected_gain": some
    candidate passed every gate, and the best of them is unlikely to be beaten by more than
    ``stop_gain`` score points by the remaining candidates (:func:`expected_gain`)."""
    if policy is None or policy.stop == "margin":
        return any(j.passed_with_margin for j in judgements)
    passing = [j for j in judgements if j.passed]
    if not passing:
        return False
    remaining = (n if n is not None else len(judgements)) - len(judgements)
    return expected_gain(judgements, remaining, policy) < policy.stop_gain


def expected_gain(
    judgements: Sequence[Judgement], remaining: int, policy: SelectionPolicy
) -> float:
    """Expected improvement of the best passing score if ``remaining`` more candidates come.

    Scores of one utterance's candidates are modelled as normal. Their spread is the spread seen
    so far, shrunk towards a prior worth ``prior_weight`` candidates; the prior's spread is
    ``prior_spread`` times the best candidate's distance from a perfect reading (-asr_logprob),
    because a candidate the ASR model already reads almost certainly leaves little to gain, and
    with one candidate there is no spread to see. The answer is E[max(0, best of the remaining
    draws - best so far)], integrated numerically (pure and deterministic)."""
    passing = [j for j in judgements if j.passed]
    if remaining <= 0 or not passing:
        return 0.0
    best = max(passing, key=lambda j: j.score)
    scores = [j.score for j in judgements]
    mean = sum(scores) / len(scores)
    headroom = max(0.0, -best.logprob) if best.logprob is not None else 1.0
    prior = policy.prior_spread * headroom
    squares = sum((s - mean) ** 2 for s in scores)
    weight = len(scores) - 1 + policy.prior_weight
    spread = math.sqrt((squares + policy.prior_weight * prior**2) / weight) if weight > 0 else 0.0
    if spread <= 0.0:
        return 0.0
    # E[max(0, M - b)] = integral from b to infinity of P(M > x) dx, M the max of `remaining`
    # normal draws; 400 steps up to 8 spreads above the larger of b and the mean
    start, stop = best.score, max(best.score, mean) + 8.0 * spread
    steps = 400
    width = (stop - start) / steps
    total = 0.0
    for i in range(steps):
        x = start + (i + 0.5) * width
        below = 0.5 * (1.0 + math.erf((x - mean) / (spread * math.sqrt(2.0))))
        total += 1.0 - below**remaining
    return total * width
