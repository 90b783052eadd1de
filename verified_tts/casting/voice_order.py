"""Which voices a cast should use first: the ones the speaker verifier hears as most distinct.

``data/voice_similarity.json`` holds the cosine similarities between the shipped voices' speaker
centroids, and each voice's judged WER, as ``benchmarks/casting/voice_distinctness.py --package``
measured them. :func:`distinct_order` orders a pool of voices so that each next one is the least
like the narrator and the voices before it (a voice the table does not know, such as a Piper
voice from the voices folder, counts as moderately alike); ``cast`` gives the characters who speak
most the voices first in that order. :func:`moved_voices` names the moved voices (``@pitch``)
that were measured as told apart and as clear as the default voice, for the catalogue to list.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PACKAGE_TABLE", "distinct_order", "moved_voices", "similarity"]

PACKAGE_TABLE = Path(__file__).resolve().parent / "data" / "voice_similarity.json"
_UNKNOWN = 0.7  # a pair never measured: alike enough to come after every measured distinct one


@functools.lru_cache(maxsize=1)
def _table() -> Mapping[str, Any]:
    try:
        return json.loads(PACKAGE_TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def similarity(a: str, b: str) -> float:
    """The speaker-centroid cosine similarity of two catalogue voices (1.0 for the same one)."""
    if a == b:
        return 1.0
    row = _table().get("similarity", {}).get(a, {})
    value = row.get(b)
    return float(value) if value is not None else _UNKNOWN


def distinct_order(pool: Sequence[str], narrator: str) -> list[str]:
    """``pool`` ordered greedily: each voice the least like the narrator and those before it."""
    left, chosen = sorted(set(pool) - {narrator}), []
    while left:
        best = min(left, key=lambda v: (max(similarity(v, u) for u in [narrator, *chosen]), v))
        chosen.append(best)
        left.remove(best)
    return chosen


def moved_voices() -> list[str]:
    """Moved voices (``NAME@pitch+N``) measured as as clear as the default voice and in the set
    the speaker verifier told apart pairwise (heart moved 3 semitones up was clear, but too like
    heart itself to be another voice)."""
    table = _table()
    kept = table.get("told_apart", table.get("clear", []))
    return [name for name in kept if "@pitch" in name and name in table.get("clear", [])]
