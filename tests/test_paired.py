"""The paired bootstrap: numpy draws that are Python's ``randrange`` draws, and the same figures."""

from __future__ import annotations

import random
import statistics

import pytest

from verified_tts.paired import bootstrap_draws, paired_gain


def python_draws(count: int, resamples: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(count) for _ in range(count)] for _ in range(resamples)]


@pytest.mark.parametrize("count", [1, 2, 3, 7, 64, 100, 1025])
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_the_draws_are_pythons_randrange_draws(count, seed):
    assert list(bootstrap_draws(count, 40, seed)) == python_draws(count, 40, seed)


def test_the_interval_is_the_one_python_resampling_gives():
    rng = random.Random(5)
    gains = [rng.choice([0.0, 0.0, 0.1, -0.05, 0.2, -0.3]) + rng.random() / 100 for _ in range(90)]
    means = sorted(statistics.fmean(gains[i] for i in d) for d in python_draws(90, 2000, 3))
    found = paired_gain(gains, 2000, seed=3)
    assert (found.low, found.high) == (round(means[50], 4), round(means[1950], 4))
    assert found.mean == round(statistics.fmean(gains), 4)
    assert found.better + found.worse + found.same == 90


def test_nothing_to_draw_from_is_an_error():
    with pytest.raises(ValueError):
        paired_gain([])
    with pytest.raises(ValueError, match="at least one item"):
        next(bootstrap_draws(0))
