"""The codec-LM token grammars and the logits processor that enforces them, driven as vLLM does.

No engine here: the grammars of all three layouts are checked on token sequences (pure Python, so
these run everywhere), and the processor is fed batch updates and logits the way vLLM's persistent
batch feeds them (these need the vllm package: skipped only under ``VTTS_SKIP_ENGINE``).
"""

from __future__ import annotations

import pytest
import torch
from orpheus_fixtures import needs_engine

from verified_tts.generators.codec_lm_grammar import Grammar
from verified_tts.generators.orpheus import END_OF_SPEECH, frame_grammar

BASE = 128_266


def _frame(codes: list[int]) -> list[int]:
    return [BASE + 4096 * k + c for k, c in enumerate(codes)]


def test_orpheus_grammar_accepts_whole_frames_only():
    g = Grammar.from_spec(frame_grammar())
    one = _frame([1, 2, 3, 4, 5, 6, 7])
    assert g.accepts(one) and g.accepts(one + one)
    assert not g.accepts([])  # at least one frame before end-of-speech
    assert not g.accepts(one[:5])  # a partial frame cannot stop
    assert not g.accepts([BASE + 1] * 7)  # position 1 must be in its own block


def _spark_like() -> tuple[dict, dict]:
    sem = [[1000, 1000 + 8192]]
    semantic = {
        "segments": [
            {"cycle": [[[50, 51]]], "min": 0, "max": 1},  # optional <|start_semantic_token|>
            {"cycle": [sem], "min": 1, "max": None},
        ],
        "stop": [7, 8],
    }
    draw = {
        "segments": [
            {"cycle": [[[60, 61]]], "min": 1, "max": 1},  # <|start_acoustic_token|>
            {"cycle": [[[61, 62]]], "min": 0, "max": 1},  # optional <|start_global_token|>
            {"cycle": [[[20000, 24096]]], "min": 32, "max": 32},
        ],
        "stop": [62],
    }
    return semantic, draw


def test_optional_markers_and_exact_counts():
    semantic, draw = map(Grammar.from_spec, _spark_like())
    assert semantic.accepts([50, 1000, 1001]) and semantic.accepts([1000])
    assert not semantic.accepts([50]) and not semantic.accepts([1000, 50])
    assert draw.accepts([60, 61, *range(20000, 20032)]) and draw.accepts([60, *[20001] * 32])
    assert not draw.accepts([60, *[20001] * 31]) and not draw.accepts([60, *[20001] * 33])
    assert not draw.accepts([*[20001] * 32])  # the acoustic marker comes first


def _finite(row: torch.Tensor) -> list[int]:
    return torch.isfinite(row).nonzero().flatten().tolist()


@needs_engine
def test_processor_follows_each_rows_grammar_and_state():
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate

    from verified_tts.generators.codec_lm_logits import EXTRA_ARG, CodecGrammarLogitsProcessor

    semantic, draw = _spark_like()
    proc = CodecGrammarLogitsProcessor(None, torch.device("cpu"), False)  # type: ignore[arg-type]
    outs: dict[int, list[int]] = {0: [], 1: [], 2: [60, *[20005] * 32], 3: []}
    added = [
        (0, SamplingParams(extra_args={EXTRA_ARG: semantic}), None, outs[0]),
        (1, SamplingParams(extra_args={EXTRA_ARG: draw}), None, outs[1]),
        (2, SamplingParams(extra_args={EXTRA_ARG: draw}), None, outs[2]),
        (3, SamplingParams(), None, outs[3]),
    ]
    proc.update_state(BatchUpdate(batch_size=4, removed=[], added=added, moved=[]))
    vocab = 30_000
    logits = torch.randn(4, vocab)
    free = logits[3].clone()
    out = proc.apply(logits)
    assert _finite(out[0]) == [50, *range(1000, 9192)]  # marker or a code; no stop yet
    assert _finite(out[1]) == [60]
    assert _finite(out[2]) == [62]  # 32 globals written: only the end marker may follow
    assert torch.equal(out[3], free)
    outs[0].append(50)  # the engine appends; the processor catches up
    outs[1].append(60)
    out = proc.apply(torch.randn(4, vocab))
    assert _finite(out[0]) == list(range(1000, 9192))
    assert _finite(out[1]) == [61, *range(20000, 24096)]
    outs[0].append(1234)
    out = proc.apply(torch.randn(4, vocab))
    assert _finite(out[0]) == [7, 8, *range(1000, 9192)]  # a code written: stop allowed


@needs_engine
def test_processor_rejects_a_malformed_grammar():
    from vllm import SamplingParams

    from verified_tts.generators.codec_lm_logits import EXTRA_ARG, CodecGrammarLogitsProcessor

    with pytest.raises(ValueError, match="not a valid grammar"):
        CodecGrammarLogitsProcessor.validate_params(
            SamplingParams(extra_args={EXTRA_ARG: {"segments": [{"min": 1}]}})
        )


def test_frame_grammar_matches_the_orpheus_stop_rule():
    g = Grammar.from_spec(frame_grammar())
    assert g.stop == (END_OF_SPEECH,)
    mask = g.mask(0, 7, 156_940)
    assert mask[END_OF_SPEECH] and mask[BASE] and not mask[BASE + 4096]
