"""The selection policy: hard gates first, then a weighted score, in adaptive rounds.

Verifiers only measure; this module decides. A candidate must pass every gate (a bound on one
metric, e.g. ``wer <= 0.5`` or ``0.5 <= duration_ratio <= 2``) before the weighted score ranks it.
A gate whose metric a verifier did not report (no speaker reference yet, no target emotion) does
not apply. The ranking leans on the less noisy signals (the reference text's likelihood under the
ASR model, speaker similarity) rather than on plain WER, which mostly rewards the ASR model's own
transcription noise (see "Verifier noise" in DESIGN.md). Every function here is pure: the winner
of the first k candidates is ``choose(judgements[:k])``, which is what makes one N=8 run hold
every smaller arm of an A/B comparison. The adaptive early stop is pure too: whether an utterance
stops after k candidates depends only on their judgements, so an adaptive render can be replayed
from a fixed-N run's scores (``benchmarks/adaptive_replay.py``) exactly where a candidate's scores
do not depend on the round that scored it: per-clip Whisper scoring, not packed scoring, the
default (whose later rounds hear each candidate beside fewer sentences; benchmarks/verify_speed.py
measures it, benchmarks/adaptive_judged.py renders the rounds instead).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from verified_tts.errors import UserError
from verified_tts.keys import stable_hash

__all__ = [
    "DEFAULT_GATES",
    "PACKED_WER_GATES",
    "PER_CLIP_GATES",
    "DEFAULT_WEIGHTS",
    "PACKED_STOP",
    "Gate",
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


@dataclass(frozen=True)
class Gate:
    """A bound on one metric. ``margin`` tightens it for the adaptive early stop."""

    metric: str
    min: float | None = None
    max: float | None = None
    margin: float = 0.0

    def check(self, metrics: Mapping[str, float]) -> tuple[bool, bool] | None:
        """(passed, passed with margin), or None when the metric was not reported."""
        value = metrics.get(self.metric, metrics.get(_STANDS_IN.get(self.metric, "")))
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        passed = (self.min is None or value >= self.min) and (self.max is None or value <= self.max)
        with_margin = (self.min is None or value >= self.min + self.margin) and (
            self.max is None or value <= self.max - self.margin
        )
        return passed, passed and with_margin


# A metric computed from a sentence's takes together (verified_tts.consensus) is, for a take judged
# alone, the take's own metric: a gate on it applies to a lone take through that one.
_STANDS_IN = {"asr_min_take_logprob": "asr_min_logprob"}


# Calibrated on injected faults (`verified-tts calibrate`, benchmarks/results/calibrate_espeak.json:
# espeak-ng, 40 Harvard sentences x 8 candidates, at most 5 % false alarms on clean candidates)
# with per-clip Whisper scoring, and measured on the Piper voice with it
# (calibrate_piper.json: 5.6 % of clean candidates rejected, 87.5-100 % of each fault
# kind caught). Piper's own fit on 40 sentences rejected 20 % of clean candidates on held-out
# sentences, so it is not shipped.
# Plain WER and the mean reference log-prob lost their gates there: at that false-alarm budget
# the worst reference token, the duration and the inserted-word count catch more of the same
# faults. The worst-token gate is on asr_min_take_logprob (verified_tts.consensus): the worst
# token once the doubt that every take of the sentence shares is taken off (a name tiny.en
# would spell otherwise), which for a lone take is its plain worst token, so the bound keeps
# its meaning. The duration gate is on pace_ratio (verifiers/signal.py: the clip against a reading
# that pauses where the punctuation asks), which replaced duration_ratio's 13 letters a second
# when real prose showed that expectation to flag short lines and punctuation-dense sentences:
# its bounds come from calibrating on the development chapters of the real-prose books
# (benchmarks/results/calibrate_real_prose_dev.json, packed scoring: 5.3 % of clean takes rejected,
# every fault kind caught at or above the Harvard recall), and the held-out chapters test them
# (calibrate_real_prose_held_out.json, real_books_held_out.json; docs/real-prose.md). The physical
# limits (clipping, edge and internal silences, dropped frames) are not calibrated. A producer
# calibrates their own voice and model and passes the gates.toml it writes.
PER_CLIP_GATES: tuple[Gate, ...] = (
    Gate("asr_min_take_logprob", min=-8.212, margin=3.44),
    Gate("asr_insertions", max=1.0, margin=1.0),  # with margin: no word heard beyond the text
    Gate("pace_ratio", min=0.8, max=1.15, margin=0.077),
    Gate("clipping", max=0.001),
    Gate("leading_silence_s", max=1.0),
    Gate("trailing_silence_s", max=1.0),
    Gate("max_internal_silence_s", max=1.5),
    Gate("dropped_frames", max=2),
    Gate("speaker", min=0.8093, margin=0.03387),
)

# With packed Whisper scoring (the default, [verifiers.wer] packing = true) a clip's reference is
# force-decoded after the texts of the clips before it in its window, which primes the decoder: a
# left-out word costs about 2 nats less there (three skips of 40 passed the per-clip gate in
# calibration). This bound rejects as many clean candidates of packed scoring as the per-clip gate
# does of per-clip scoring on sentences the calibration never saw (Piper, Harvard 600-663 x 8:
# 11 of 512 each, benchmarks/verify_speed.py "packed_min_logprob_bound"); the calibration sentences
# then test it (benchmarks/results/calibrate_piper_packed_greedy.json; on 120 sentences against
# per-clip scoring: compare_calibrations.json).
PACKED_WER_GATES: tuple[Gate, ...] = (Gate("asr_min_take_logprob", min=-7.011, margin=3.44),)


def default_gates(packed_wer: bool = True) -> tuple[Gate, ...]:
    """The shipped gates for the packed (default) or the per-clip Whisper scorer."""
    if not packed_wer:
        return PER_CLIP_GATES
    replaced = {gate.metric: gate for gate in PACKED_WER_GATES}
    return tuple(replaced.get(gate.metric, gate) for gate in PER_CLIP_GATES)


# The gates of the default verifier settings (packed Whisper scoring).
DEFAULT_GATES: tuple[Gate, ...] = default_gates()


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
    logprob: float | None = None  # asr_logprob: how far this candidate is from a perfect reading


# "margin": stop once a candidate passed every gate with margin. "expected_gain": stop once the
# best passing candidate's score is unlikely to be beaten by much by the candidates still to come
# (see expected_gain); on a good voice most candidates pass with margin, and the gain is many
# small improvements, which "margin" throws away.
STOP_RULES = ("margin", "expected_gain")


@dataclass(frozen=True)
class SelectionPolicy:
    """Gates, weights and the adaptive schedule; ``identity()`` keys stored decisions.

    The field defaults are the per-clip Whisper scorer's policy; :func:`default_policy` gives
    the shipped policy of either scorer, and a render's config builds it for the scorer in use."""

    gates: tuple[Gate, ...] = PER_CLIP_GATES
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    adaptive: bool = True
    # Defaults for per-clip Whisper scoring, tuned on Piper joe-medium, Harvard sentences 51-100
    # (benchmarks/adaptive_replay.py, README "How a winner is chosen"): one candidate a round,
    # stop on expected gain; held out on 101-300, 2.70 candidates keep 92 % of fixed N=8's judged
    # gain. The packed scorer has its own (PACKED_STOP, default_policy).
    first_round: int = 1
    step: int = 1  # candidates added per round; 0 = double each round
    rounds: tuple[int, ...] = ()  # explicit round targets, overriding first_round and step
    stop: str = "expected_gain"
    stop_gain: float = 0.04  # expected_gain: stop when fewer score points are expected
    prior_spread: float = 0.2  # expected_gain: prior spread of scores, per unit of -asr_logprob
    prior_weight: float = 2.0  # expected_gain: how many candidates' worth the prior counts

    def identity(self) -> str:
        return stable_hash(
            {
                "gates": [asdict(g) for g in self.gates],
                "weights": dict(self.weights),
                "adaptive": self.adaptive,
                "first_round": self.first_round,
                "step": self.step,
                "rounds": list(self.rounds),
                "stop": self.stop,
                "stop_gain": self.stop_gain,
                "prior_spread": self.prior_spread,
                "prior_weight": self.prior_weight,
            }
        )

    @classmethod
    def from_mapping(
        cls, table: Mapping[str, Any], *, adaptive: bool = True, packed_wer: bool = True
    ) -> SelectionPolicy:
        """Build from the ``[selection]`` TOML table; gates given there replace the defaults
        of the same metric (:func:`default_gates` of the WER scorer in use), and ``{}`` (an
        empty table) for a metric switches its gate off."""
        known = {
            "gates",
            "weights",
            "first_round",
            "step",
            "rounds",
            "stop",
            "stop_gain",
            "prior_spread",
            "prior_weight",
        }
        unknown = sorted(set(table) - known)
        if unknown:
            raise UserError(
                f"unknown [selection] key(s) {', '.join(unknown)}: use {', '.join(sorted(known))}"
            )
        gates = {gate.metric: gate for gate in default_gates(packed_wer)}
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
        defaults = default_policy(packed_wer)
        first_round = int(table.get("first_round", defaults.first_round))
        if first_round < 1:
            raise UserError("[selection] first_round must be at least 1")
        step = int(table.get("step", defaults.step))
        if step < 0:
            raise UserError("[selection] step must be 0 (double each round) or more")
        # first_round or step given without rounds: the user's schedule, not a default's rounds
        own_steps = "first_round" in table or "step" in table
        rounds = table.get("rounds", () if own_steps else defaults.rounds)
        if not isinstance(rounds, (list, tuple)) or any(
            not isinstance(r, int) or r < 1 for r in rounds
        ):
            raise UserError("[selection] rounds must be a list of candidate counts, e.g. [1, 2, 8]")
        rounds = tuple(sorted(set(rounds)))
        stop = str(table.get("stop", defaults.stop))
        if stop not in STOP_RULES:
            raise UserError(
                f"[selection] stop = {stop!r} is not a rule: use {' or '.join(STOP_RULES)}"
            )
        numbers = {}
        for name in _STOP_KEYS:
            value = float(table.get(name, getattr(defaults, name)))
            if value < 0:
                raise UserError(f"[selection] {name} must be zero or more")
            numbers[name] = value
        return cls(
            gates=tuple(gates.values()),
            weights=weights,
            adaptive=adaptive,
            first_round=first_round,
            step=step,
            rounds=rounds,
            stop=stop,
            **numbers,
        )


# The adaptive rounds for packed Whisper scores. A packed clip's reference is force-decoded after
# the texts before it in its window, so its asr_logprob sits nearer zero than per clip and the
# prior spread (a share of -asr_logprob) shrinks with it: with the per-clip settings an adaptive
# render stops after 2.1 candidates and keeps 35 % of fixed N=8's judged gain (replayed on
# Harvard 1-300, benchmarks/results/adaptive_replay_packed_300.json). A later round packs fewer
# sentences together, so its candidates are heard beside other sentences than the first round's
# and the replay is not exact; a first round of two candidates compares those two in one layout.
# Rendered round by round on Harvard 1-300 (benchmarks/results/adaptive_judged_packed.json): 4.25
# candidates, 80 % of fixed N=8's judged gain, judge WER no different from per-clip scoring's
# adaptive render (-0.001, -0.009..0.007) at a real-time factor of 0.29 against 0.40 (0.21
# against 0.33 with one Whisper worker per core, adaptive_judged_*_workers.json). One
# candidate a round with these settings kept 54 % at 3.3 candidates
# (adaptive_judged_packed_one_a_round.json).
PACKED_STOP: Mapping[str, Any] = {
    "rounds": (2, 4),
    "stop_gain": 0.01,
    "prior_spread": 0.3,
    "prior_weight": 8.0,
}
_STOP_KEYS = ("stop_gain", "prior_spread", "prior_weight")


def default_policy(packed_wer: bool = True, **changes: Any) -> SelectionPolicy:
    """The shipped policy for the packed (default) or the per-clip Whisper scorer: its gates,
    rounds and stop settings; ``changes`` replace fields (e.g. ``adaptive=False``)."""
    base = SelectionPolicy(gates=default_gates(packed_wer))
    if packed_wer:
        base = replace(base, **PACKED_STOP)
    return replace(base, **changes)


def per_clip_policy(policy: SelectionPolicy) -> SelectionPolicy:
    """``policy`` for per-clip Whisper scores: the packed scorer's default worst-token gate,
    rounds and stop settings become the per-clip ones; what the user set stays as set."""
    per_clip = {gate.metric: gate for gate in PER_CLIP_GATES}
    packed = set(PACKED_WER_GATES)
    gates = tuple(per_clip[gate.metric] if gate in packed else gate for gate in policy.gates)
    defaults = SelectionPolicy()
    schedule = {
        name: getattr(defaults, name)
        for name, value in PACKED_STOP.items()
        if getattr(policy, name) == value != getattr(defaults, name)
    }
    return replace(policy, gates=gates, **schedule)


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
    logprob = metrics.get("asr_logprob")
    if logprob is not None and math.isnan(float(logprob)):
        logprob = None
    return Judgement(
        not failed,
        not failed and margin_ok,
        tuple(failed),
        score,
        None if logprob is None else float(logprob),
    )


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
