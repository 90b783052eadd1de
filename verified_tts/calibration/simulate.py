"""Best-of-N selection simulated at a known fault rate: how often does a faulted candidate win?

For one utterance the pool is its scored clean candidates and its scored faulted copies. A trial
draws N slots; each slot is faulted with probability ``p`` (then it is one of the utterance's
faulted copies, drawn without replacement while any are left) and clean otherwise (one of the clean
candidates, without replacement). The selection policy's ``choose`` picks the winner exactly as a
render does with a fixed N, and the trial counts whether the winner is faulted. At N = 1 the share
is ``p`` by construction; the gates and the ranking have to bring it down as N grows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verified_tts.selection.policy import Judgement, choose

__all__ = ["SelectionPoint", "faulted_winner_share"]


@dataclass(frozen=True)
class SelectionPoint:
    p: float
    n: int
    faulted_winners: float  # share of trials whose winner is faulted
    flagged: float  # share of trials where no candidate passed the gates
    trials: int


def faulted_winner_share(
    clean: Sequence[Sequence[Judgement]],
    faulted: Sequence[Sequence[Judgement]],
    *,
    p: float,
    n: int,
    trials: int,
    rng: np.random.Generator,
) -> SelectionPoint:
    """Simulate ``trials`` selections per utterance; ``clean[u]`` and ``faulted[u]`` are the
    judgements of utterance u's clean candidates (at least ``n``) and faulted copies."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"fault rate p must lie in [0, 1], not {p}")
    wins = flagged = total = 0
    for pool, bad in zip(clean, faulted, strict=True):
        if len(pool) < n:
            raise ValueError(f"an utterance has {len(pool)} clean candidates, fewer than N={n}")
        if not bad:
            raise ValueError("an utterance has no faulted copies to draw from")
        for _ in range(trials):
            mask = rng.random(n) < p
            count = int(mask.sum())
            clean_pick = iter(rng.choice(len(pool), n - count, replace=False))
            bad_pick = iter(rng.choice(len(bad), count, replace=count > len(bad)))
            slots = [bad[next(bad_pick)] if m else pool[next(clean_pick)] for m in mask]
            winner, was_flagged = choose(slots)
            wins += bool(mask[winner])
            flagged += was_flagged
            total += 1
    return SelectionPoint(p, n, wins / total, flagged / total, total)
