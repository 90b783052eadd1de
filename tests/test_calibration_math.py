"""ROC, thresholds, recommended gates and the selection simulation on data with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from verified_tts.calibration.gates import recommend, recommended_policy
from verified_tts.calibration.roc import Side, auc, flags, roc_points, threshold_at
from verified_tts.calibration.simulate import faulted_winner_share
from verified_tts.config import build_config
from verified_tts.selection.policy import Judgement, SelectionPolicy, judge

HIGH = Side("x", "max")
LOW = Side("x", "min")


def test_auc_known_values():
    clean = np.array([1.0, 2.0, 3.0, 4.0])
    assert auc(HIGH, clean, np.array([5.0, 6.0])) == 1.0
    assert auc(HIGH, clean, np.array([0.0, 0.5])) == 0.0
    assert auc(LOW, clean, np.array([0.0, 0.5])) == 1.0
    # 2.5 beats two of four clean values; a tie counts half
    assert auc(HIGH, clean, np.array([2.5])) == pytest.approx(0.5)
    assert auc(HIGH, clean, np.array([3.0])) == pytest.approx((2 + 0.5) / 4)
    # a missing value is never flagged: it ranks below every clean value
    assert auc(HIGH, clean, np.array([np.nan])) == 0.0


def test_threshold_rejects_at_most_the_target_share_of_clean():
    clean = np.arange(100, dtype=float)  # 0..99
    bound = threshold_at(HIGH, clean, 0.05)
    assert bound == 94.0 and flags(HIGH, clean, bound).sum() == 5
    bound = threshold_at(LOW, clean, 0.05)
    assert bound == 5.0 and flags(LOW, clean, bound).sum() == 5
    # ties at the bound never push the share over the target
    tied = np.array([0.0] * 90 + [1.0] * 10)
    assert flags(HIGH, tied, threshold_at(HIGH, tied, 0.05)).sum() == 0
    assert threshold_at(HIGH, clean, 0.0) == 99.0
    assert threshold_at(HIGH, np.array([np.nan]), 0.05) == np.inf


def test_roc_points_run_from_corner_to_corner():
    points = roc_points(HIGH, np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert points[0] == (0.0, 0.0) and points[-1] == (1.0, 1.0)
    assert (0.0, 1.0) in points  # perfectly separable: full recall at no false alarm
    xs = [x for x, _ in points]
    assert xs == sorted(xs)


def test_recommend_picks_the_metric_that_separates_each_fault():
    rng = np.random.default_rng(0)
    n = 200
    clean = {"a": rng.normal(0, 1, n), "b": rng.normal(0, 1, n), "noise": rng.normal(0, 1, n)}
    faulted = {
        # kind "up" is visible only as a high "a", kind "down" only as a low "b"
        "up": {"a": rng.normal(6, 1, 50), "b": rng.normal(0, 1, 50), "noise": rng.normal(0, 1, 50)},
        "down": {"a": rng.normal(0, 1, 50), "b": rng.normal(-6, 1, 50),
                 "noise": rng.normal(0, 1, 50)},
    }  # fmt: skip
    sides = [Side(m, d) for m in ("a", "b", "noise") for d in ("max", "min")]
    rec = recommend(clean, faulted, sides, 0.05)
    assert set(rec.thresholds) == {Side("a", "max"), Side("b", "min")}
    assert rec.false_alarm <= 0.05
    assert rec.recall["up"] > 0.95 and rec.recall["down"] > 0.95
    # fixed gates spend budget first and stay out of the calibrated set
    fixed = {Side("noise", "max"): float(np.quantile(clean["noise"], 0.97))}
    with_fixed = recommend(clean, faulted, sides[:4], 0.05, fixed=fixed)
    assert with_fixed.false_alarm <= 0.05 and Side("noise", "max") not in with_fixed.thresholds


def test_recommended_policy_is_accepted_by_the_config_and_keeps_other_gates():
    current = SelectionPolicy()
    clean = {"asr_logprob": np.linspace(-1.5, -0.2, 50), "wer": np.zeros(50)}
    policy = recommended_policy(
        current, {Side("asr_logprob", "min"): -1.2345678}, ["asr_logprob", "wer"], clean
    )
    gates = {g.metric: g for g in policy.gates}
    assert "wer" not in gates  # calibrated, not chosen: switched off
    assert gates["asr_logprob"].min == -1.235  # rounded outward: the clean case still passes
    assert gates["clipping"] == {g.metric: g for g in current.gates}["clipping"]
    # about 80 % of clean pass with margin
    passing = np.mean(
        clean["asr_logprob"] >= gates["asr_logprob"].min + gates["asr_logprob"].margin
    )
    assert 0.7 <= passing <= 0.85
    table = {"gates": {g.metric: {k: v for k, v in (("min", g.min), ("max", g.max),
             ("margin", g.margin)) if v is not None} for g in policy.gates}}  # fmt: skip
    table["gates"]["wer"] = {}
    rebuilt = build_config({"selection": table}).selection
    assert {g.metric: g for g in rebuilt.gates} == gates


def _j(passed: bool, score: float) -> Judgement:
    return Judgement(passed, passed, () if passed else ("x",), score)


def test_simulation_without_gates_is_the_fault_rate_at_n1():
    clean = [[_j(True, 0.0)] * 8 for _ in range(5)]
    bad = [[_j(True, 0.0)] * 3 for _ in range(5)]
    point = faulted_winner_share(clean, bad, p=0.3, n=1, trials=2000,
                                 rng=np.random.default_rng(0))  # fmt: skip
    assert point.faulted_winners == pytest.approx(0.3, abs=0.02)


def test_simulation_with_perfect_gates_and_with_a_ranking_that_prefers_faults():
    clean = [[_j(True, 0.0)] * 8 for _ in range(5)]
    caught = [[_j(False, 5.0)] * 3 for _ in range(5)]
    rng = np.random.default_rng(1)
    # every faulted copy fails a gate: a faulted winner needs all N slots faulted, p ** N
    for n in (1, 2, 4):
        point = faulted_winner_share(clean, caught, p=0.5, n=n, trials=4000, rng=rng)
        assert point.faulted_winners == pytest.approx(0.5**n, abs=0.02)
        assert point.flagged == pytest.approx(0.5**n, abs=0.02)
    # gates pass everything and the score prefers faults: one fault in N wins
    preferred = [[_j(True, 5.0)] * 3 for _ in range(5)]
    point = faulted_winner_share(clean, preferred, p=0.3, n=4, trials=4000, rng=rng)
    assert point.faulted_winners == pytest.approx(1 - 0.7**4, abs=0.02)
    with pytest.raises(ValueError):
        faulted_winner_share(clean, caught, p=0.3, n=9, trials=1, rng=rng)


def test_judge_of_recommended_policy_flags_beyond_bound():
    policy = recommended_policy(
        SelectionPolicy(()), {Side("speaker", "min"): 0.8}, ["speaker"], {"speaker": np.ones(10)}
    )
    assert judge({"speaker": 0.79}, policy).failed == ("speaker",)
    assert judge({"speaker": 0.81}, policy).passed
