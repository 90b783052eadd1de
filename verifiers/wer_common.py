"""What the per-clip and the packed WER scorers share: Whisper's audio framing and text metrics.

Whisper hears 16 kHz audio in 30 s windows of 3000 mel frames (hop 160, FFT 400) and its decoder
has 448 positions; both scorers (:mod:`verifiers.wer` one clip per window, :mod:`verifiers.
wer_packed` several clips per window) frame audio and floor probabilities the same way, and
report the same transcript and forced-decoding metrics, from here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from verifiers.textnorm import word_error_counts, word_error_rate

__all__ = [
    "CPU_BATCH",
    "PACKED_CPU_BATCH",
    "HOP",
    "MAX_DECODER_TOKENS",
    "MIN_PROB",
    "N_FFT",
    "SAMPLE_RATE",
    "WINDOW_FRAMES",
    "WINDOW_SAMPLES",
    "token_metrics",
    "transcript_metrics",
]

SAMPLE_RATE = 16_000
N_FFT = 400
HOP = 160
WINDOW_SAMPLES = 30 * SAMPLE_RATE  # Whisper's receptive field: 30 s, 3000 mel frames
WINDOW_FRAMES = WINDOW_SAMPLES // HOP
PACKED_CPU_BATCH = 8  # measured: packed windows decode long texts, which batch well
CPU_BATCH = 2  # measured: on CPU larger encoder batches cost more per clip (docstring)
MAX_DECODER_TOKENS = 448  # Whisper's decoder positions
MIN_PROB = 1e-10  # floor before log: a probability that underflowed to 0 stays finite


def transcript_metrics(text: str, transcript: str) -> dict[str, float]:
    """WER of ``transcript`` against ``text`` and its insertions and deletions, in words."""
    counts = word_error_counts(text, transcript)
    return {
        "wer": word_error_rate(text, transcript),
        "asr_insertions": float(counts["insertions"]),
        "asr_deletions": float(counts["deletions"]),
    }


def token_metrics(
    tokenizer: Any, tokens: list[int], probs: np.ndarray, detail: dict[str, Any]
) -> dict[str, float]:
    """``asr_logprob`` and ``asr_min_logprob`` of a forced decoding; ``detail`` gets the worst
    token and every reference token with its log-probability (what the sentence's takes are
    compared on, verified_tts.selection.consensus). Nothing without reference tokens (an empty
    text)."""
    if not probs.size:
        return {}
    logprobs = np.log(np.maximum(probs, MIN_PROB))
    worst = int(np.argmin(logprobs))
    detail["reference_tokens"] = int(probs.size)
    detail["worst_token"] = tokenizer.decode([tokens[worst]])
    detail["worst_token_index"] = worst
    detail["tokens"] = [tokenizer.decode([t]) for t in tokens[: probs.size]]
    detail["token_logprobs"] = [round(float(x), 3) for x in logprobs]
    return {"asr_logprob": float(logprobs.mean()), "asr_min_logprob": float(logprobs[worst])}
