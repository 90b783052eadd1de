"""Beam search against best-of-N at equal budget on the tiny codec LMs: tokens, wall time, overhead.

For each layout on the tiny random-weight models of ``benchmarks/common/tiny_models.py`` (real vLLM
engine, real codec, real verifiers: resemblyzer speaker similarity, the bundled Whisper tiny.en
for WER and the partial-transcript check, the signal checks), the same Harvard sentences are
rendered twice into fresh stores under one ``--budget``:

- ``best-of-n:N``: today's pipeline (fixed N), candidates capped by the budget;
- ``beam:WxE``: ``--search beam`` with chunks of ``--chunk`` seconds.

Per arm and utterance: codec tokens generated, wall seconds, and for the beam the seconds spent
generating continuations, decoding partial audio and scoring it (the overhead best-of-N does not
have), and the share of prompt tokens the engine's prefix cache served. Random weights speak
noise, so no quality is compared here (``verified-tts ab --arm ...`` with real weights and the
judge does that). Writes ``benchmarks/results/search_benchmark.json``.

    .venv/bin/python -m benchmarks.selection.search_benchmark [--quick] [--only orpheus] [--out F]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.common.harvard import sentences as harvard_sentences

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ENGINE = {
    "dtype": "bfloat16",
    "max_model_len": 2048,
    "kv_cache_gib": 1,
    "enforce_eager": True,
    "max_tokens_max": 140,  # Orpheus: 20 frames, 1.7 s: keeps CPU runs short
    "max_tokens_min": 70,
}


def _sentences(count: int) -> list[str]:
    return harvard_sentences(0, count)


def _segments(texts: list[str]) -> list[Any]:
    from verified_tts.text.book import Segment

    return [Segment(0, 0, i, t, t, "paragraph", i + 1, "sentence") for i, t in enumerate(texts)]


def _arm(synth: Any, segments: list[Any], store_dir: Path, n: int) -> dict[str, Any]:
    from verified_tts.storage.store import Store

    utterances = synth.plan(segments)
    engine_before = synth.generator.stats()
    start = time.perf_counter()
    results = synth.run(utterances, Store(store_dir), n=n)
    wall = time.perf_counter() - start
    engine = synth.generator.stats()
    stats = synth.stats.as_dict()
    count = len(results)
    seconds = stats["seconds"]
    overhead = sum(v for k, v in seconds.items() if k.startswith(("search:decode", "search:score")))
    prompt = engine["prompt_tokens"] - engine_before["prompt_tokens"]
    cached = engine["cached_prompt_tokens"] - engine_before["cached_prompt_tokens"]
    return {
        "utterances": count,
        "tokens_per_utterance": stats["tokens_generated"] / count,
        "audio_s_generated_per_utterance": stats["tokens_generated"]
        / count
        / synth.generator.layout.tokens_per_second,
        "wall_s_per_utterance": wall / count,
        "final_candidates_per_utterance": sum(len(r.candidates) for r in results) / count,
        "flagged": sum(r.flagged for r in results),
        "seconds": seconds,
        "partial_decode_and_score_s_per_utterance": overhead / count,
        "partial_overhead_share_of_wall": overhead / wall if wall else 0.0,
        "prompt_tokens": prompt,
        "cached_prompt_tokens": cached,
        "prefix_cache_share": cached / prompt if prompt else 0.0,
    }


def run_layout(
    layout: str,
    models: dict[str, Path],
    args: argparse.Namespace,
    engine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Both arms on one layout; ``engine``: the generator table (default: the tiny CPU one)."""
    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer
    from verified_tts.selection.search import SearchOptions

    options = dict(ENGINE if engine is None else engine)
    if engine is None and layout != "orpheus":  # one token a frame at 50 Hz: the same cap
        options.update(max_tokens_max=85, max_tokens_min=40)
    table = {
        "generator": {
            "name": layout,
            "model": str(models["lm"]),
            "codec": str(models["codec"]),
            **({"voice": "tara"} if layout == "orpheus" else {}),
            **({"voice": "female:moderate:moderate"} if layout == "spark" else {}),
            layout: options,
        },
        "verifiers": {"emotion": {"enabled": False}},
        "adaptive": False,
        "prefetch": False,
    }
    base = build_config(table, candidates=args.n)
    synth = Synthesizer.load(base)
    segments = _segments(_sentences(args.sentences))
    cap_s = synth.generator.options.max_tokens_max / synth.generator.layout.tokens_per_second
    # best-of-N's N fits exactly (rounded up to the next 0.01 s, never below its need)
    budget = args.budget or math.ceil(args.n * cap_s * 100) / 100
    out: dict[str, Any] = {"budget_s": budget, "candidate_cap_s": round(cap_s, 3)}
    with tempfile.TemporaryDirectory(prefix="vtts-search-") as tmp:
        bon = synth.variant(replace(base, search=SearchOptions(budget_s=budget)))
        out[f"best-of-n:{args.n}"] = _arm(bon, segments, Path(tmp) / "bon", args.n)
        beam_options = SearchOptions(
            strategy="beam",
            width=args.width,
            expansions=args.expansions,
            chunk_s=args.chunk,
            budget_s=budget,
        )
        beam = synth.variant(replace(base, search=beam_options))
        out[f"beam:{args.width}x{args.expansions}"] = _arm(beam, segments, Path(tmp) / "beam", 1)
        # the same search without the Whisper pass on partial audio: what that check costs
        fast = synth.variant(replace(base, search=replace(beam_options, process=("speaker",))))
        label = f"beam:{args.width}x{args.expansions} speaker-only"
        out[label] = _arm(fast, segments, Path(tmp) / "beam-fast", 1)
    from verified_tts.generators.codec_lm_engine import shutdown_engine

    synth.generator.close()
    shutdown_engine()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 sentences, orpheus only")
    parser.add_argument("--only", default="orpheus,llasa,spark")
    parser.add_argument("--sentences", type=int, default=6)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--width", type=int, default=2)
    parser.add_argument("--expansions", type=int, default=4)
    parser.add_argument("--chunk", type=float, default=0.5)
    parser.add_argument("--budget", type=float, default=None, help="default: N x candidate cap")
    parser.add_argument(
        "--out", default=str(ROOT / "benchmarks" / "results" / "search_benchmark.json")
    )
    args = parser.parse_args()
    layouts = ["orpheus"] if args.quick else args.only.split(",")
    if args.quick:
        args.sentences = 2
    from verified_tts.testing.tiny_models import build_all

    result: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "note": "tiny random-weight models: cost only, no quality (they speak noise)",
        "layouts": {},
    }
    with tempfile.TemporaryDirectory(prefix="vtts-tiny-") as tmp:
        built = build_all(Path(tmp), only=tuple(layouts))
        for layout in layouts:
            print(f"{layout} ...", flush=True)
            result["layouts"][layout] = run_layout(layout, built[layout], args)
            print(json.dumps(result["layouts"][layout], indent=1), flush=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
