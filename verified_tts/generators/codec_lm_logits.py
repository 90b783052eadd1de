"""Constrained decoding for codec LMs: a vLLM V1 logits processor driven by a token grammar.

Every codec-LM layout describes the output it can decode as a small grammar: a list of
segments, each a cycle of allowed id ranges (position ``count % len(cycle)`` inside the segment
picks the ranges), with a minimum and maximum length and a step (a segment may only be left after
a multiple of ``step`` tokens). Orpheus is one segment of 7 rotating 4096-id blocks left only on a
frame boundary; Llasa one segment of 65,536 speech ids; Spark an optional start marker and then
semantic ids, or, when a voice is drawn, a marker and exactly 32 global ids. Stop ids are allowed
only when every remaining segment may be empty. The grammar is a plain JSON-able dict passed per
request in ``SamplingParams.extra_args[EXTRA_ARG]`` (the engine core runs in another process), so
constrained and free requests share a batch. The processor follows each request's live output
list (handed over by reference when the request joins the batch), advances a two-number state per
new token (from the spec's ``start`` when the request continues an earlier output, see
:func:`resumed_grammar`), and masks rows with cached boolean masks: one gather and one fill per
step.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import torch
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from verified_tts.generators.codec_lm_grammar import Grammar, resumed_grammar

if TYPE_CHECKING:
    from vllm.config import VllmConfig

__all__ = [
    "EXTRA_ARG",
    "FQCN",
    "CodecGrammarLogitsProcessor",
    "Grammar",
    "grammar_of",
    "resumed_grammar",
]

EXTRA_ARG = "vtts_grammar"  # key in SamplingParams.extra_args holding the request's grammar
FQCN = "verified_tts.generators.codec_lm_logits:CodecGrammarLogitsProcessor"


def grammar_of(params: SamplingParams) -> dict[str, Any] | None:
    extra = params.extra_args or {}
    grammar = extra.get(EXTRA_ARG)
    return grammar if isinstance(grammar, dict) else None


class _Row:
    __slots__ = ("grammar", "key", "output", "seen", "seg", "count", "lost")

    def __init__(self, grammar: Grammar, key: str, output: list[int]) -> None:
        self.grammar, self.key, self.output = grammar, key, output
        self.seen, self.lost = 0, False
        self.seg, self.count = grammar.start

    def catch_up(self) -> None:
        while self.seen < len(self.output) and not self.lost:
            state = self.grammar.advance(self.seg, self.count, self.output[self.seen])
            if state is None:
                # Only a history written outside the mask gets here (a forced prefix); count
                # the token as its position's, so the layout's positions stay in step.
                seg = self.grammar.segments[self.seg]
                if seg.max is not None and self.count >= seg.max:
                    self.lost = True  # nothing sensible to constrain to: leave the row free
                else:
                    self.count += 1
            else:
                self.seg, self.count = state
            self.seen += 1


class CodecGrammarLogitsProcessor(LogitsProcessor):
    """Masks every token its request's grammar does not allow next (rows without one untouched)."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        extra = sampling_params.extra_args or {}
        if EXTRA_ARG in extra and extra[EXTRA_ARG] is not None:
            try:
                Grammar.from_spec(extra[EXTRA_ARG])
            except (KeyError, TypeError, ValueError) as exc:
                message = f"extra_args[{EXTRA_ARG!r}] is not a valid grammar: {exc}"
                raise ValueError(message) from exc

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        self.device = device
        self.rows: dict[int, _Row] = {}  # batch row -> that request's grammar state
        self._grammars: dict[str, Grammar] = {}
        self._mask_index: dict[tuple[str, tuple[int, int, bool, bool]], int] = {}
        self._masks: list[torch.Tensor] = []
        self._stacked: torch.Tensor | None = None

    def is_argmax_invariant(self) -> bool:
        return False  # masking changes the argmax, so greedy requests must see it too

    def _compile(self, spec: dict[str, Any]) -> tuple[Grammar, str]:
        key = json.dumps(spec, sort_keys=True)
        grammar = self._grammars.get(key)
        if grammar is None:
            grammar = self._grammars[key] = Grammar.from_spec(spec)
        return grammar, key

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        # vLLM's order: added requests fill the slots of removed ones first, then the removals
        # that are left, then moves (one-way or swaps) that compact the batch.
        for index, params, _prompt, output_ids in batch_update.added:
            spec = grammar_of(params) if isinstance(params, SamplingParams) else None
            if spec is not None:
                grammar, key = self._compile(spec)
                self.rows[index] = _Row(grammar, key, output_ids)
            else:
                self.rows.pop(index, None)
        for index in batch_update.removed:
            self.rows.pop(index, None)
        for a, b, direction in batch_update.moved:
            a_row = self.rows.pop(a, None)
            b_row = self.rows.pop(b, None)
            if a_row is not None:
                self.rows[b] = a_row
            if b_row is not None and direction == MoveDirectionality.SWAP:
                self.rows[a] = b_row

    def _mask_id(self, row: _Row, vocab: int) -> int:
        key = (row.key, row.grammar.state_key(row.seg, row.count))
        index = self._mask_index.get(key)
        if index is None:
            index = len(self._masks)
            self._masks.append(row.grammar.mask(row.seg, row.count, vocab))
            self._mask_index[key] = index
            self._stacked = None
        return index

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.rows:
            return logits
        vocab = logits.shape[-1]
        index: list[int] = []
        masks: list[int] = []
        for batch_row, row in self.rows.items():
            row.catch_up()
            if row.lost:
                continue
            index.append(batch_row)
            masks.append(self._mask_id(row, vocab))
        if not index:
            return logits
        if self._stacked is None or self._stacked.shape[1] != vocab:
            self._stacked = torch.stack(self._masks).to(logits.device)
        rows = torch.tensor(index, device=logits.device, dtype=torch.long)
        allowed = self._stacked[torch.tensor(masks, device=logits.device, dtype=torch.long)]
        logits[rows] = logits[rows].masked_fill(~allowed, -float("inf"))
        return logits
