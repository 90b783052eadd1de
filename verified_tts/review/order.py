"""Worst first: the order a producer hears the lines in, and the list rows the page shows.

Flagged lines come first (no take passed the gates), then the lines a listener would most likely
hear wrong, then the rest in book order. A line's doubt follows what is heard, of the take the book
holds: a take the ASR model heard as other words counts 3 plus the share of its words heard wrong
(:func:`~verified_tts.review.explain.heard_wrong`), so it ranks above every take heard as written;
then three parts, each between 0 and 1: how near it came to a gate whose figure a listener would
notice (one margin, or for a gate without one a quarter of its bound, or more inside every gate
counts nothing; a pace within a tenth of the expected one counts nothing however near its gate,
:func:`~verified_tts.review.explain.noticed`), how unlikely the reference text is under the ASR
model (one less the geometric mean token probability, from ``asr_logprob``) and how much its
candidates disagree (the share of the other takes that failed a gate or were heard as other
words). Ties keep book order. :func:`rows`
filters (flagged, chapter, reviewed or not, text) and pages that order; the figures of a row are
computed once per take and reused, so a 10,000-line book re-sorts in a few milliseconds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verified_tts.output.manifest import UtteranceRecord
from verified_tts.review.explain import (
    doubtful_word,
    gate_scale,
    heard_wrong,
    line_reasons,
    mark,
    noticed,
)
from verified_tts.review.state import LineState

__all__ = ["FILTERS", "Listed", "Ranked", "Ranking", "doubt", "order_of", "rows_of"]

FILTERS = ("all", "flagged", "unreviewed", "reviewed", "changed")


def _heard(text: Any) -> str:
    return re.sub(r"[^\w\s']", "", str(text or "").lower()).strip()


def _gate_bounds(gates: Sequence[Mapping[str, Any]]) -> list[tuple[str, float, float]]:
    """(metric, bound, signed scale) per side of every gate: slack = (value - bound) / scale."""
    bounds = []
    for gate in gates:
        for side, sign in (("min", 1.0), ("max", -1.0)):
            bound = gate.get(side)
            if bound is not None:
                bounds.append((str(gate["metric"]), float(bound), sign * gate_scale(gate, bound)))
    return bounds


def doubt(
    record: UtteranceRecord,
    gates: Sequence[Mapping[str, Any]],
    *,
    bounds: list[tuple[str, float, float]] | None = None,
) -> float:
    """How much a listener would doubt the record's winner (0 to 7; see the module docstring)."""
    winner = record.winner_candidate
    scores = winner.scores
    slack = min(
        ((value - bound) / scale
         for metric, bound, scale in (bounds if bounds is not None else _gate_bounds(gates))
         if (value := scores.get(metric)) is not None and value == value
         and noticed(metric, value)),
        default=None,
    )  # fmt: skip
    wrong = heard_wrong(winner)
    heard_as_other = 3.0 + wrong if wrong > 0 else 0.0
    near = 0.0 if slack is None else min(1.0, max(0.0, 1.0 - slack))
    logprob = scores.get("asr_logprob")
    unlikely = 0.0 if logprob is None or logprob != logprob else 1.0 - math.exp(min(0.0, logprob))
    others = [c for c in record.candidates if c.index != winner.index]
    if not others:
        return heard_as_other + near + unlikely
    heard = _heard(winner.detail.get("transcript"))
    differ = sum((not c.passed) or _heard(c.detail.get("transcript")) != heard for c in others)
    return heard_as_other + near + unlikely + differ / len(others)


@dataclass(frozen=True)
class Listed:
    """One line as the list shows, filters and sorts it: the figures of the take the book holds
    (``text``, ``spoken`` and ``flagged`` are the verifiers' record's, as the filters read them)."""

    line: str
    chapter: int
    text: str
    spoken: str | None
    flagged: bool
    doubt: float
    reason: str | None
    marked: tuple[int, int] | None
    winner: int
    candidates: int
    decision: str | None = None
    changed: bool = False
    pending: bool = False
    stale: bool = False

    @property
    def reviewed(self) -> bool:
        return self.decision is not None

    def row(self, position: int) -> dict[str, Any]:
        return {
            "pos": position,
            "chapter": self.chapter,
            "text": self.text,
            "flagged": self.flagged,
            "decision": self.decision,
            "changed": self.changed,
            "pending": self.pending,
            "stale": self.stale,
            "doubt": self.doubt,
            "reason": self.reason,
            "marked": list(self.marked) if self.marked else None,
            "winner": self.winner,
            "candidates": self.candidates,
        }


@dataclass(frozen=True)
class Ranked:
    """What the list shows of one line, and where it sorts."""

    doubt: float
    reason: str | None
    word: str | None
    marked: tuple[int, int] | None


class Ranking:
    """Rows of a review in worst-first order, with the figures of each take cached."""

    def __init__(self, gates: Sequence[Mapping[str, Any]]) -> None:
        self.gates = list(gates)
        self._bounds = _gate_bounds(self.gates)
        self._doubts: dict[tuple[Any, ...], float] = {}
        self._cache: dict[tuple[Any, ...], Ranked] = {}

    @staticmethod
    def _key(record: UtteranceRecord) -> tuple[Any, ...]:
        return (record.key, record.winner, len(record.candidates), record.flagged)

    def doubt(self, record: UtteranceRecord) -> float:
        key = self._key(record)
        found = self._doubts.get(key)
        if found is None:
            found = self._doubts[key] = round(doubt(record, self.gates, bounds=self._bounds), 4)
        return found

    def ranked(self, record: UtteranceRecord) -> Ranked:
        """The line's figures with its reason in words (for the rows a page shows)."""
        key = self._key(record)
        found = self._cache.get(key)
        if found is None:
            reasons = line_reasons(record, self.gates)
            word = doubtful_word(reasons)
            found = Ranked(
                doubt=self.doubt(record),
                reason=reasons[0]["text"] if reasons else None,
                word=word,
                marked=mark(record.text, word),
            )
            self._cache[key] = found
        return found

    def listed(self, state: LineState) -> Listed:
        """What the list needs of one line (the review index keeps this for untouched lines)."""
        record = state.effective()
        figures = self.ranked(record)
        return Listed(
            line=state.line,
            chapter=record.chapter,
            text=state.record.text,
            spoken=state.record.spoken,
            flagged=state.record.flagged,
            doubt=self.doubt(record if state.choice else state.record),
            reason=figures.reason,
            marked=figures.marked,
            winner=record.winner,
            candidates=len(record.candidates),
            decision="chosen" if state.choice else "approved" if state.approval else None,
            changed=bool(state.changes),
            pending=bool(state.pending),
            stale=bool(state.stale),
        )

    def order(self, lines: Sequence[LineState]) -> list[int]:
        """Positions in the order a producer hears them: flagged, most doubtful, book order."""
        return order_of([self.listed(state) for state in lines])

    def rows(
        self,
        lines: Sequence[LineState],
        order: Sequence[int],
        **query: Any,
    ) -> tuple[int, list[dict[str, Any]]]:
        """(how many match, the rows ``offset`` .. ``offset + limit`` of them)."""
        return rows_of([self.listed(state) for state in lines], order, **query)

    def row(self, position: int, state: LineState) -> dict[str, Any]:
        return self.listed(state).row(position)


def order_of(listed: Sequence[Listed]) -> list[int]:
    """Positions in the order a producer hears them: flagged, most doubtful, book order."""
    return sorted(range(len(listed)), key=lambda p: (not listed[p].flagged, -listed[p].doubt, p))


def rows_of(
    listed: Sequence[Listed],
    order: Sequence[int],
    *,
    show: str = "all",
    chapter: int | None = None,
    query: str = "",
    offset: int = 0,
    limit: int = 100,
) -> tuple[int, list[dict[str, Any]]]:
    """(how many of ``order`` match the filters, the rows ``offset`` .. ``offset + limit``)."""
    needle = query.strip().lower()
    keep = {
        "all": lambda s: True,
        "flagged": lambda s: s.flagged,
        "unreviewed": lambda s: not s.reviewed,
        "reviewed": lambda s: s.reviewed,
        "changed": lambda s: s.changed or s.pending,
    }[show if show in FILTERS else "all"]
    matching = [
        p
        for p in order
        if keep(listed[p])
        and (chapter is None or listed[p].chapter == chapter)
        and (
            not needle
            or needle in listed[p].text.lower()
            or needle in (listed[p].spoken or "").lower()
        )
    ]
    start = max(0, offset)
    return len(matching), [listed[p].row(p) for p in matching[start : start + limit]]
