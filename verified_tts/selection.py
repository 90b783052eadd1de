"""The selection policy: hard gates first, then a weighted score, in adaptive rounds.

Verifiers only measure; this module decides. A candidate must pass every gate (a bound on one
metric, e.g. ``wer <= 0.5`` or ``0.5 <= duration_ratio <= 2``) before the weighted score ranks it.
A gate whose metric a verifier did not report (no speaker reference yet, no target emotion) does
not apply. The ranking leans on the less noisy signals (the reference text's likelihood under the
ASR model, speaker similarity) rather than on plain WER, which mostly rewards the ASR model's own
transcription noise (see "Verifier noise" in DESIGN.md). Every function here is pure: the winner
of the first k candidates is ``choose(judgements[:k])``, which is what makes one N=8 run hold
every smaller arm of an A/B comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from verified_tts.errors import UserError
from verified_tts.keys import stable_hash

__all__ = [
    "DEFAULT_GATES",
    "DEFAULT_WEIGHTS",
    "Gate",
    "Judgement",
    "SelectionPolicy",
    "choose",
    "judge",
    "round_targets",
    "should_stop",
]


@dataclass(frozen=True)
class Gate:
    """A bound on one metric. ``margin`` tightens it for the adaptive early stop."""

    metric: str
    min: float | None = None
    max: float | None = None
    margin: float = 0.0

    def check(self, metrics: Mapping[str, float]) -> tuple[bool, bool] | None:
        """(passed, passed with margin), or None when the metric was not reported."""
        value = metrics.get(self.metric)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        passed = (self.min is None or value >= self.min) and (self.max is None or value <= self.max)
        with_margin = (self.min is None or value >= self.min + self.margin) and (
            self.max is None or value <= self.max - self.margin
        )
        return passed, passed and with_margin


# Calibrated on injected faults (`verified-tts calibrate`, benchmarks/results/calibrate_espeak.json:
# espeak-ng, 40 Harvard sentences x 8 candidates, at most 5 % false alarms on clean candidates),
# and measured on the default Piper voice (calibrate_piper.json: 5.6 % of clean candidates
# rejected, 87.5-100 % of each fault kind caught). Piper's own fit on 40 sentences rejected 20 %
# of clean candidates on held-out sentences, so it is not shipped.
# Plain WER and the mean reference log-prob lost their gates there: at that false-alarm budget
# the worst reference token, the duration and the inserted-word count catch more of the same
# faults. The physical limits (clipping, edge and internal silences, dropped frames) are not
# calibrated. A producer calibrates their own voice and model and passes the gates.toml it writes.
DEFAULT_GATES: tuple[Gate, ...] = (
    Gate("asr_min_logprob", min=-8.212, margin=3.44),
    Gate("asr_insertions", max=1.0, margin=1.0),  # with margin: no word heard beyond the text
    Gate("duration_ratio", min=0.7525, max=1.239, margin=0.1255),
    Gate("clipping", max=0.001),
    Gate("leading_silence_s", max=1.0),
    Gate("trailing_silence_s", max=1.0),
    Gate("max_internal_silence_s", max=1.5),
    Gate("dropped_frames", max=2),
    Gate("speaker", min=0.8093, margin=0.03387),
)

# Metric -> weight of the ranking score. Plain WER is kept out on purpose (see module docstring).
DEFAULT_WEIGHTS: Mapping[str, float] = {
    "asr_logprob": 1.0,
    "asr_min_logprob": 0.1,
    "speaker": 1.0,
    "emotion": 1.0,
    "duration_fit": 1.0,
}


@dataclass(frozen=True)
class Judgement:
    """The policy's view of one candidate."""

    passed: bool
    passed_with_margin: bool
    failed: tuple[str, ...]  # metrics whose gate failed
    score: float


@dataclass(frozen=True)
class SelectionPolicy:
    """Gates, weights and the adaptive schedule; ``identity()`` keys stored decisions."""

    gates: tuple[Gate, ...] = DEFAULT_GATES
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    adaptive: bool = True
    first_round: int = 2

    def identity(self) -> str:
        return stable_hash(
            {
                "gates": [asdict(g) for g in self.gates],
                "weights": dict(self.weights),
                "adaptive": self.adaptive,
                "first_round": self.first_round,
            }
        )

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any], *, adaptive: bool = True) -> SelectionPolicy:
        """Build from the ``[selection]`` TOML table; gates given there replace the defaults
        of the same metric, and ``{}`` (an empty table) for a metric switches its gate off."""
        known = {"gates", "weights", "first_round"}
        unknown = sorted(set(table) - known)
        if unknown:
            raise UserError(
                f"unknown [selection] key(s) {', '.join(unknown)}: use {', '.join(sorted(known))}"
            )
        gates = {gate.metric: gate for gate in DEFAULT_GATES}
        for metric, bounds in dict(table.get("gates", {})).items():
            if not isinstance(bounds, Mapping) or set(bounds) - {"min", "max", "margin"}:
                raise UserError(
                    f"[selection.gates] {metric} must be a table with min, max and/or margin, "
                    f"e.g. {metric} = {{ max = 0.5 }}"
                )
            if bounds:
                gates[metric] = Gate(metric, **{k: float(v) for k, v in bounds.items()})
            else:
                gates.pop(metric, None)
        weights = {**DEFAULT_WEIGHTS, **{k: float(v) for k, v in table.get("weights", {}).items()}}
        first_round = int(table.get("first_round", 2))
        if first_round < 1:
            raise UserError("[selection] first_round must be at least 1")
        return cls(tuple(gates.values()), weights, adaptive, first_round)


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
    return Judgement(not failed, not failed and margin_ok, tuple(failed), score)


def choose(judgements: Sequence[Judgement]) -> tuple[int, bool]:
    """(winner index, flagged). Passing candidates rank by score; if none passed, the one that
    failed the fewest gates (then the best score) is kept and the utterance is flagged."""
    if not judgements:
        raise ValueError("choose() needs at least one candidate")
    passing = [i for i, j in enumerate(judgements) if j.passed]
    if passing:
        # ties go to the lower index, so the choice never depends on how many came after
        return max(passing, key=lambda i: (judgements[i].score, -i)), False
    best = min(
        range(len(judgements)),
        key=lambda i: (len(judgements[i].failed), -judgements[i].score, i),
    )
    return best, True


def round_targets(n: int, policy: SelectionPolicy) -> tuple[int, ...]:
    """How many candidates an utterance has after each round: (2, 4, 8) for N=8, or (N,)."""
    if not policy.adaptive or n <= policy.first_round:
        return (n,)
    targets, size = [], policy.first_round
    while size < n:
        targets.append(size)
        size *= 2
    return (*targets, n)


def should_stop(judgements: Sequence[Judgement]) -> bool:
    """Adaptive early stop: some candidate passed every gate with margin."""
    return any(j.passed_with_margin for j in judgements)
