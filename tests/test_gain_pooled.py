"""Reading the judge's gain over several held-out samples at once
(benchmarks/real_prose/gain_pooled.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.real_prose import gain_pooled
from benchmarks.real_prose.gain_pooled import SampleGain

ROOT = Path(__file__).resolve().parent.parent


def _sample(mean: float, error: float, lines: int = 400, stem: str = "s") -> SampleGain:
    half = gain_pooled.Z95 * error
    return SampleGain(stem, lines, mean, mean - half, mean + half)


def test_equal_errors_pool_to_the_mean_with_a_narrower_interval():
    samples = [_sample(0.004, 0.003), _sample(0.010, 0.003)]
    pooled = gain_pooled.pool(samples)
    assert pooled["mean_gain"] == pytest.approx(0.007)
    assert pooled["standard_error"] == pytest.approx(0.003 / 2**0.5)
    assert pooled["lines"] == 800 and pooled["degrees_of_freedom"] == 1
    # Q = sum of squared distances over variances: 2 * (0.003 / 0.003) ** 2
    assert pooled["cochran_q"] == pytest.approx(2.0)
    assert pooled["p_common_gain"] == pytest.approx(0.1573, abs=1e-4)


def test_the_more_certain_sample_weighs_more_and_agreeing_samples_give_q_zero():
    pooled = gain_pooled.pool([_sample(0.0, 0.001), _sample(0.01, 0.003)])
    assert pooled["mean_gain"] == pytest.approx(0.001)  # weights 9 : 1
    same = gain_pooled.pool([_sample(0.005, 0.002), _sample(0.005, 0.004)])
    assert same["cochran_q"] == pytest.approx(0.0) and same["p_common_gain"] == pytest.approx(1.0)


def test_lines_needed_is_the_first_size_that_reaches_the_chance():
    gain, sd = 0.007, 0.07
    for chance in (0.5, 0.8, 0.9):
        needed = gain_pooled.lines_needed(gain, sd, chance)
        assert gain_pooled.chance_above_zero(gain, sd, needed) >= chance
        assert gain_pooled.chance_above_zero(gain, sd, needed - 1) < chance
    # at a gain of exactly 1.96 standard errors the interval touches 0 half the time
    assert gain_pooled.chance_above_zero(1.96 * 0.07 / 20, 0.07, 400) == pytest.approx(0.5, 1e-3)


def test_the_committed_result_is_what_its_samples_give():
    committed = json.loads((gain_pooled.RESULTS / "gain_pooled_held_out.json").read_text())
    samples = [gain_pooled.read_sample(row["stem"]) for row in committed["samples"]]
    assert [s.lines for s in samples] == [row["lines"] for row in committed["samples"]]
    pooled = gain_pooled.pool(samples)
    for key in ("lines", "mean_gain", "standard_error", "cochran_q", "p_common_gain"):
        assert pooled[key] == pytest.approx(committed["pooled"][key]), key
    sd = gain_pooled.per_line_sd(samples)
    assert sd == pytest.approx(committed["per_line_sd"])
    needed = gain_pooled.lines_needed(pooled["mean_gain"], sd, 0.8)
    assert {"chance": 0.8, "lines": needed} in committed["lines_needed"]
