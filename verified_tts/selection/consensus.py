"""What the takes of one sentence share: words the ASR model doubts in every take alike.

Forced decoding scores every reference token of a take (the WER verifier's detail keeps them,
``tokens`` and ``token_logprobs``). A name or a rare word ("Biffin's", "preternaturally") that
tiny.en would spell otherwise scores low in every take of its sentence, however well it is read:
that says something about the ASR model's vocabulary, or about a pronunciation the generator
gets the same way every time (a lexicon entry fixes it, more takes do not), not about one take.
A word that one take skips or garbles scores low in that take only. So a token's doubt is split
in two: the part that even the sentence's best take has, below :data:`SHARED_CEILING` (shared),
and what this take has beyond that (its own). ``asr_min_take_logprob`` is a take's worst token
with the shared part taken off: the gate on it catches what best-of-N can fix, and
:func:`shared_hard_words` lists the rest as words to check once. With a single take there is
nothing to compare: the metric is then the plain worst token (``asr_min_logprob``), so a gate on
it never loses its bite where the takes are not all known. The voice is split the same way: a
one-word exclamation or question ("So!", "What?") moves every take's speaker embedding away from
the narration's, so ``speaker_take`` is a take's similarity with the shortfall that even the
line's best take has below :data:`SPEAKER_CEILING` taken off, up to :data:`SPEAKER_ALLOWANCE`: a
take unlike its own line's other takes still fails, and so does a line whose every take is
further from the narrator than the allowance (another voice throughout), while a line that is
the narrator's voice in every take, only read differently, gets a note to listen once
(:func:`shared_voice_shortfall`). Pure functions of the takes' metrics and details;
:func:`judge_all` is :func:`verified_tts.selection.policy.judge` over a sentence's takes with them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verified_tts.selection.policy import Judgement, SelectionPolicy

__all__ = [
    "SHARED_CEILING",
    "SPEAKER_ALLOWANCE",
    "SPEAKER_CEILING",
    "SPEAKER_TAKE_METRIC",
    "TAKE_METRIC",
    "TakeView",
    "judge_all",
    "shared_hard_word_positions",
    "shared_hard_words",
    "shared_voice_shortfall",
    "take_views",
    "token_words",
    "with_take_metrics",
]

# A token whose best take scores below this is doubted by the ASR model itself by that much;
# clear speech of a common word scores well above it. Tuned on the development chapters of
# the real-prose books (docs/real-prose.md).
SHARED_CEILING = -2.0
TAKE_METRIC = "asr_min_take_logprob"
# A line whose best take is less like the narrator than this shares the shortfall, up to the
# allowance: the least forgiving setting that clears the speaker gate's false alarms on the
# development render of the real-prose books ("So!", '"Jealous!" he repeated.') and still catches
# every wrong voice there, in one take or in all of a line's (benchmarks/flags/speaker_consensus.py,
# benchmarks/results/speaker_consensus_dev.json). Set for the shipped bound (0.8093): a line
# passes the speaker gate when its best take is within the allowance of it.
SPEAKER_CEILING = 0.81
SPEAKER_ALLOWANCE = 0.02
SPEAKER_TAKE_METRIC = "speaker_take"


@dataclass(frozen=True)
class TakeView:
    """One take against its sentence's other takes."""

    min_take_logprob: float  # worst token after the shared doubt is taken off
    worst_index: int  # that token's position in the reference tokens
    compared: int  # how many takes (this one included) shared its reference tokens


def _tokens(detail: Mapping[str, Any]) -> tuple[tuple[str, ...], list[float]] | None:
    tokens, logprobs = detail.get("tokens"), detail.get("token_logprobs")
    if not tokens or not logprobs or len(tokens) != len(logprobs):
        return None
    return tuple(str(t) for t in tokens), [float(x) for x in logprobs]


def take_views(details: Sequence[Mapping[str, Any]]) -> list[TakeView | None]:
    """Each take's view (None without token log-probs); takes are compared with the others
    whose reference tokens are the same."""
    parsed = [_tokens(d) for d in details]
    groups: dict[tuple[str, ...], list[int]] = {}
    for index, item in enumerate(parsed):
        if item is not None:
            groups.setdefault(item[0], []).append(index)
    views: list[TakeView | None] = [None] * len(details)
    for members in groups.values():
        rows = [parsed[i][1] for i in members]  # type: ignore[index]
        best = [max(column) for column in zip(*rows, strict=True)]
        shared = [max(0.0, SHARED_CEILING - b) if len(members) > 1 else 0.0 for b in best]
        for index, row in zip(members, rows, strict=True):
            own = [lp + s for lp, s in zip(row, shared, strict=True)]
            worst = min(range(len(own)), key=own.__getitem__)
            views[index] = TakeView(own[worst], worst, len(members))
    return views


def shared_voice_shortfall(
    metrics: Sequence[Mapping[str, float]],
    details: Sequence[Mapping[str, Any]],
    *,
    ceiling: float = SPEAKER_CEILING,
    allowance: float = SPEAKER_ALLOWANCE,
) -> list[float | None]:
    """For each take with a ``speaker`` metric, how much of its distance from the narrator its
    line's takes share: the best take's shortfall below ``ceiling``, at most ``allowance``, among
    the takes compared with the same reference (the book's, or the short takes'); 0 for a lone
    take, None without the metric."""
    values = [_finite(m.get("speaker")) for m in metrics]
    groups: dict[str, list[int]] = {}
    for index, (value, detail) in enumerate(zip(values, details, strict=True)):
        if value is not None:
            groups.setdefault(str(detail.get("speaker_against", "book")), []).append(index)
    out: list[float | None] = [None] * len(metrics)
    for members in groups.values():
        best = max(values[i] for i in members)  # type: ignore[type-var]
        shared = min(allowance, max(0.0, ceiling - best))  # type: ignore[operator]
        for index in members:
            out[index] = shared if len(members) > 1 else 0.0
    return out


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def with_take_metrics(
    metrics: Sequence[Mapping[str, float]], details: Sequence[Mapping[str, Any]]
) -> list[dict[str, float]]:
    """The takes' metrics with ``asr_min_take_logprob`` added where token log-probs exist, and
    ``speaker_take`` where a speaker similarity does."""
    out = []
    shortfalls = shared_voice_shortfall(metrics, details)
    for m, view, shared in zip(metrics, take_views(details), shortfalls, strict=True):
        m = dict(m)
        if view is not None and not math.isnan(view.min_take_logprob):
            m[TAKE_METRIC] = view.min_take_logprob
        if shared is not None:
            m[SPEAKER_TAKE_METRIC] = float(m["speaker"]) + shared
        out.append(m)
    return out


def judge_all(
    candidates: Sequence[tuple[Mapping[str, float], Mapping[str, Any]]], policy: SelectionPolicy
) -> list[Judgement]:
    """:func:`~verified_tts.selection.policy.judge` of each take of one sentence, the takes compared
    with each other (pass the first k takes for an N=k decision)."""
    from verified_tts.selection.policy import judge

    metrics = with_take_metrics([m for m, _ in candidates], [d for _, d in candidates])
    return [judge(m, policy) for m in metrics]


def token_words(detail: Mapping[str, Any]) -> list[tuple[int | None, str]]:
    """For each reference token, (index of its word, the word), counting words as
    :func:`verified_tts.selection.reasons.heard_for` does (hyphens split words); a punctuation token
    gets
    (None, the punctuation)."""
    tokens = detail.get("tokens") or []
    spans: list[list[int]] = []  # token positions of each word
    owners: list[int | None] = []
    split_next = True
    for position, token in enumerate(tokens):
        token = str(token)
        if not any(c.isalnum() for c in token):
            owners.append(None)
            split_next = split_next or token.startswith(" ") or "-" in token or "—" in token
            continue
        if split_next or token.startswith(" ") or not spans:
            spans.append([])
        spans[-1].append(position)
        owners.append(len(spans) - 1)
        split_next = False
    words = ["".join(str(tokens[p]) for p in span).strip() for span in spans]
    return [
        (owner, words[owner]) if owner is not None else (None, str(tokens[p]).strip())
        for p, owner in enumerate(owners)
    ]


def shared_hard_words(details: Sequence[Mapping[str, Any]], below: float = -7.0) -> list[str]:
    """Words with a token that every take (two or more) scores below ``below``: the ASR model
    doubts them however they are read."""
    return [word for _, word in shared_hard_word_positions(details, below)]


def shared_hard_word_positions(
    details: Sequence[Mapping[str, Any]], below: float = -7.0
) -> list[tuple[int, str]]:
    """:func:`shared_hard_words` with each word's index among the reference's words (as
    :func:`token_words` counts them), the first time it is found."""
    parsed = [_tokens(d) for d in details]
    usable = [(i, p) for i, p in enumerate(parsed) if p is not None]
    if len(usable) < 2 or len({p[0] for _, p in usable}) != 1:
        return []
    rows = [p[1] for _, p in usable]
    words = token_words(details[usable[0][0]])
    found: list[tuple[int, str]] = []
    for position, column in enumerate(zip(*rows, strict=True)):
        index, word = words[position]
        word = word.strip("\"'“”‘’()[],.;:!?")
        if index is not None and max(column) < below and word not in {w for _, w in found}:
            found.append((index, word))
    return found
