"""Token grammars of the codec-LM layouts: which ids may come next, and when a stop may.

Every codec-LM layout describes the output it can decode as a small grammar: a list of
segments, each a cycle of allowed id ranges (position ``count % len(cycle)`` inside the segment
picks the ranges), with a minimum and maximum length and a step (a segment may only be left after
a multiple of ``step`` tokens). Stop ids are allowed only when every remaining segment may be
empty. A grammar is a plain JSON-able dict (the spec) compiled into :class:`Grammar`, whose state
is two numbers (segment, count). Pure Python and torch: the vLLM logits processor that enforces
grammars lives in :mod:`verified_tts.generators.codec_lm_logits`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Grammar", "resumed_grammar"]


@dataclass(frozen=True)
class _Segment:
    cycle: tuple[tuple[tuple[int, int], ...], ...]  # per position: half-open id ranges
    min: int
    max: int | None
    step: int


@dataclass(frozen=True)
class Grammar:
    """A compiled grammar: segments in order, then one of the stop ids."""

    segments: tuple[_Segment, ...]
    stop: tuple[int, ...]
    start: tuple[int, int] = (0, 0)  # (segment, count) a continued prefix resumes from

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Grammar:
        segments = tuple(
            _Segment(
                cycle=tuple(tuple((int(lo), int(hi)) for lo, hi in pos) for pos in seg["cycle"]),
                min=int(seg.get("min", 1)),
                max=None if seg.get("max") is None else int(seg["max"]),
                step=int(seg.get("step", 1)),
            )
            for seg in spec["segments"]
        )
        seg, count = spec.get("start", (0, 0))
        return cls(segments, tuple(int(s) for s in spec.get("stop", ())), (int(seg), int(count)))

    def resume(self, prefix: Sequence[int]) -> tuple[int, int] | None:
        """The state after ``prefix`` (tokens already generated), or None outside the grammar."""
        seg, count = self.start
        for token in prefix:
            state = self.advance(seg, count, int(token))
            if state is None:
                return None
            seg, count = state
        return seg, count

    def _can_leave(self, seg: int, count: int) -> bool:
        s = self.segments[seg]
        return count >= s.min and count % s.step == 0

    def _entries(self, seg: int, count: int) -> tuple[list[tuple[int, int]], bool]:
        """Ranges allowed next in state (seg, count), and whether a stop id is allowed."""
        ranges: list[tuple[int, int]] = []
        s = self.segments[seg]
        if s.max is None or count < s.max:
            ranges.extend(s.cycle[count % len(s.cycle)])
        if not self._can_leave(seg, count):
            return ranges, False
        nxt = seg + 1
        while nxt < len(self.segments):
            ranges.extend(self.segments[nxt].cycle[0])
            if self.segments[nxt].min > 0:
                return ranges, False
            nxt += 1
        return ranges, True

    def state_key(self, seg: int, count: int) -> tuple[int, int, bool, bool]:
        s = self.segments[seg]
        return (
            seg,
            count % len(s.cycle),
            s.max is None or count < s.max,
            self._can_leave(seg, count),
        )

    def advance(self, seg: int, count: int, token: int) -> tuple[int, int] | None:
        """The state after ``token``, or None when the token is outside the grammar."""
        s = self.segments[seg]
        if (s.max is None or count < s.max) and _inside(s.cycle[count % len(s.cycle)], token):
            return seg, count + 1
        if not self._can_leave(seg, count):
            return None
        nxt = seg + 1
        while nxt < len(self.segments):
            if _inside(self.segments[nxt].cycle[0], token):
                return nxt, 1
            if self.segments[nxt].min > 0:
                return None
            nxt += 1
        return None

    def mask(self, seg: int, count: int, vocab: int) -> torch.Tensor:
        ranges, stop_ok = self._entries(seg, count)
        allowed = torch.zeros(vocab, dtype=torch.bool)
        for lo, hi in ranges:
            allowed[max(lo, 0) : min(hi, vocab)] = True
        if stop_ok:
            for s in self.stop:
                if 0 <= s < vocab:
                    allowed[s] = True
        return allowed

    def accepts(self, tokens: Sequence[int]) -> bool:
        """Whether ``tokens`` (stop id excluded) is a complete sentence of the grammar."""
        seg, count = 0, 0
        for token in tokens:
            state = self.advance(seg, count, int(token))
            if state is None:
                return False
            seg, count = state
        return self._entries(seg, count)[1]


def resumed_grammar(spec: Mapping[str, Any], prefix: Sequence[int]) -> dict[str, Any]:
    """``spec`` for a request whose prompt ends with ``prefix`` (output of an earlier request):
    the grammar starts where that output left it, so frame positions and segment limits stay
    in step. ValueError for a prefix the grammar does not allow."""
    state = Grammar.from_spec(spec).resume(prefix)
    if state is None:
        raise ValueError("the prefix is not a sentence start of the grammar")
    return {**spec, "start": list(state)}


def _inside(ranges: Sequence[tuple[int, int]], token: int) -> bool:
    return any(lo <= token < hi for lo, hi in ranges)
