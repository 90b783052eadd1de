"""Constrained decoding for Orpheus: a vLLM V1 logits processor that keeps SNAC frames valid.

At output position t of a request, the only tokens that can start a decodable frame are the
4096 audio ids of frame position ``t % 7`` (``128266 + (t % 7) * 4096 + code``); end-of-speech is
allowed only at a frame boundary after at least one frame, so every stopped request holds whole
frames. Everything else is set to -inf before sampling. The processor is installed once in the
engine (``LLM(logits_processors=[FQCN])``) and switched on per request by
``SamplingParams(extra_args={EXTRA_ARG: True})``, so constrained and free requests can share a
batch. It tracks each request's live output-token list, which vLLM hands over by reference when
the request joins the persistent batch, so a step costs one gather/scatter over the constrained
rows and no per-token Python bookkeeping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from verified_tts.generators.codecs.snac import AUDIO_TOKEN_BASE, CODEBOOK_SIZE, FRAME_TOKENS

if TYPE_CHECKING:
    from vllm.config import VllmConfig

__all__ = ["END_OF_SPEECH", "EXTRA_ARG", "FQCN", "OrpheusFrameLogitsProcessor", "is_constrained"]

END_OF_SPEECH = 128_258
EXTRA_ARG = "orpheus_frames"  # key in SamplingParams.extra_args that switches the processor on
FQCN = "verified_tts.generators.orpheus_logits:OrpheusFrameLogitsProcessor"


def is_constrained(params: SamplingParams) -> bool:
    extra = params.extra_args or {}
    return bool(extra.get(EXTRA_ARG, False))


class OrpheusFrameLogitsProcessor(LogitsProcessor):
    """Masks every token that is not valid at the request's frame position (or end-of-speech)."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        extra = sampling_params.extra_args or {}
        if EXTRA_ARG in extra and not isinstance(extra[EXTRA_ARG], bool):
            raise ValueError(f"extra_args['{EXTRA_ARG}'] must be true or false")

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        self.device = device
        # batch row -> that request's output ids (a live reference, appended to by the engine)
        self.rows: dict[int, list[int]] = {}
        self._offsets = torch.arange(CODEBOOK_SIZE, device=device, dtype=torch.long)

    def is_argmax_invariant(self) -> bool:
        return False  # masking changes the argmax, so greedy requests must see it too

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        # vLLM's order: added requests fill the slots of removed ones first, then the removals
        # that are left, then moves (one-way or swaps) that compact the batch.
        for index, params, _prompt, output_ids in batch_update.added:
            if isinstance(params, SamplingParams) and is_constrained(params):
                self.rows[index] = output_ids
            else:
                self.rows.pop(index, None)
        for index in batch_update.removed:
            self.rows.pop(index, None)
        for a, b, direction in batch_update.moved:
            a_ids = self.rows.pop(a, None)
            b_ids = self.rows.pop(b, None)
            if a_ids is not None:
                self.rows[b] = a_ids
            if b_ids is not None and direction == MoveDirectionality.SWAP:
                self.rows[a] = b_ids

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.rows:
            return logits
        index: list[int] = []
        position: list[int] = []
        stop_ok: list[bool] = []
        for row, output_ids in self.rows.items():
            n = len(output_ids)
            index.append(row)
            position.append(n % FRAME_TOKENS)
            stop_ok.append(n > 0 and n % FRAME_TOKENS == 0)
        rows = torch.tensor(index, device=logits.device, dtype=torch.long)
        starts = AUDIO_TOKEN_BASE + CODEBOOK_SIZE * torch.tensor(
            position, device=logits.device, dtype=torch.long
        )
        cols = starts[:, None] + self._offsets.to(logits.device)[None, :]
        kept = logits[rows[:, None], cols]
        stop = logits[rows, END_OF_SPEECH]
        stop = torch.where(
            torch.tensor(stop_ok, device=logits.device), stop, torch.full_like(stop, -float("inf"))
        )
        logits[rows] = -float("inf")
        logits[rows[:, None], cols] = kept
        logits[rows, END_OF_SPEECH] = stop
        return logits
