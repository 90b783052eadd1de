"""Rankings of a line's takes, tried offline: each a pure function of the verifiers' view of them.

A ranking sees a line's first k takes (the metrics and detail of the render's packed tiny.en
scoring, and the per-clip tiny.en scores of
:func:`benchmarks.selection.rank_features.add_clip_scores`) and the policy's gates, and returns the
winner's index; none of them reads the judge. Every rule keeps the gates (where no take passes,
the policy's :func:`~verified_tts.selection.policy.choose` keeps the take that failed fewest and
flags the line) and differs only in how it orders the takes that pass: a weighted sum of signals,
each higher-is-better, optionally with a margin (take 0, the take an N=1 render keeps, stays unless
the best take beats it by more than the margin). The signals:

- ``policy``: the shipped weighted score (mean reference log-prob, 0.1 x the worst token, speaker
  similarity), from the packed scoring;
- ``logprob`` / ``clip_logprob``: the mean log-probability of the reference's tokens under
  forced decoding, packed (after the texts of the clips before it in its window) or per clip (its
  own window, nothing before it);
- ``words_logprob`` / ``clip_words_logprob``: the same over word tokens only (punctuation, which
  the judge's WER does not read and whose probability follows the pauses, left out);
- ``min_logprob`` / ``clip_min_logprob``: the worst reference token;
- ``wer`` / ``clip_wer``: minus tiny.en's WER (greedy packed; beam 5 per clip);
- ``agreement``: minus the mean WER of the take's transcripts against the other takes'
  transcripts (a minimum-Bayes-risk choice that reads no reference);
- ``speaker``: speaker similarity.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RankRule", "SIGNALS", "agreement", "pick", "signal", "words_logprob"]

SIGNALS = (
    "policy",
    "logprob",
    "clip_logprob",
    "words_logprob",
    "clip_words_logprob",
    "min_logprob",
    "clip_min_logprob",
    "wer",
    "clip_wer",
    "agreement",
    "speaker",
)


@dataclass(frozen=True)
class RankRule:
    """Order the passing takes by a weighted sum of signals; keep take 0 unless beaten by more
    than ``margin`` (None: no prior for take 0)."""

    name: str
    weights: tuple[tuple[str, float], ...]
    margin: float | None = None


def words_logprob(detail: Mapping[str, Any]) -> float | None:
    """Mean log-prob of the reference's word tokens (punctuation tokens left out)."""
    tokens, logprobs = detail.get("tokens") or [], detail.get("token_logprobs") or []
    values = [
        float(lp)
        for token, lp in zip(tokens, logprobs, strict=False)
        if any(c.isalnum() for c in str(token))
    ]
    return statistics.fmean(values) if values else None


def agreement(takes: Sequence[Any]) -> list[float]:
    """For each take, minus the mean WER of its transcripts (packed and per clip) against the
    other takes' transcripts: higher is more like the others."""
    from verifiers.textnorm import word_error_rate

    heard = [
        [
            h
            for h in (
                str(t.detail.get("transcript", "")),
                str(t.clip.get("detail", {}).get("transcript", "")),
            )
            if h
        ]
        for t in takes
    ]
    out = []
    for i, own in enumerate(heard):
        rates = [
            word_error_rate(other, mine)
            for j, others in enumerate(heard)
            if j != i
            for other in others
            for mine in own
        ]
        out.append(-statistics.fmean(rates) if rates else 0.0)
    return out


def signal(name: str, takes: Sequence[Any], judgements: Sequence[Any]) -> list[float]:
    """One signal for each take of a line, higher is better (-inf where it is missing)."""
    if name == "agreement":
        return agreement(takes)
    if name == "policy":
        return [j.score for j in judgements]
    values = []
    for t in takes:
        clip = t.clip.get("metrics", {})
        if name == "words_logprob":
            value = words_logprob(t.detail)
        elif name == "clip_words_logprob":
            value = words_logprob(t.clip.get("detail", {}))
        elif name in ("wer", "clip_wer"):
            found = (clip if name == "clip_wer" else t.metrics).get("wer")
            value = None if found is None else -float(found)
        elif name.startswith("clip_"):
            value = clip.get("asr_" + name.removeprefix("clip_"))
        elif name == "speaker":
            value = t.metrics.get("speaker")
        else:
            value = t.metrics.get("asr_" + name)
        values.append(float(value) if value is not None else float("-inf"))
    return values


def pick(rule: RankRule, takes: Sequence[Any], policy: Any) -> tuple[int, bool]:
    """(winner index, flagged) of ``takes`` (a line's first k) under ``rule``."""
    from verified_tts.selection.consensus import judge_all
    from verified_tts.selection.policy import choose

    judgements = judge_all([(t.metrics, t.detail) for t in takes], policy)
    ok = [i for i, j in enumerate(judgements) if j.passed]
    if not ok:
        return choose(judgements)
    score = [0.0] * len(takes)
    for name, weight in rule.weights:
        for i, value in enumerate(signal(name, takes, judgements)):
            score[i] += weight * value
    best = max(ok, key=lambda i: (score[i], -i))
    if rule.margin is not None and 0 in ok and score[best] - score[0] <= rule.margin:
        return 0, False
    return best, False
