"""Ray backend benchmark: overhead against the local backend; utterances in flight vs throughput.

Renders the same book (the first Harvard sentences, one per paragraph) with the same seeds at a
fixed N, in-process and on a local Ray cluster that this script starts (loopback only, all CPUs)
and stops, each into a fresh store, and checks that both pick the same winners. It reports
model-loading and rendering seconds separately (Ray's actors load once per job, the local backend
once per process) and their ratios; the two backends alternate ``--repeats`` times, since load on
a shared machine drifts, and each one's fastest run counts. Then it sweeps the pipeline's
``window`` (utterances in flight together) on the loaded Ray actors and reports utterances and
candidates per second at each. Writes benchmarks/results/ray_benchmark.json.

Usage: python -m benchmarks.distributed.ray_benchmark [--sentences 10] [-n 2] [--repeats 2]
[--windows 1,2,5]
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

from benchmarks.common.harvard import harvard_book

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "ray_benchmark.json"


def winners(out: Path) -> list[tuple[str, int]]:
    from verified_tts.output.manifest import read_manifest

    return [(u.key, u.winner) for u in read_manifest(out).utterances]


def timed_render(book: Path, out: Path, synthesizer: Any) -> dict[str, Any]:
    from verified_tts.workflows.render import render

    synthesizer.stats = type(synthesizer.stats)()  # figures of this run only
    started = time.perf_counter()
    summary = render(book, out, synthesizer.config, synthesizer=synthesizer)
    wall = time.perf_counter() - started
    candidates = summary.candidates_generated
    return {
        "wall_seconds": round(wall, 2),
        "utterances": summary.utterances,
        "candidates": candidates,
        "utterances_per_second": round(summary.utterances / wall, 3),
        "candidates_per_second": round(candidates / wall, 3),
        "stage_seconds": summary.seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=10)
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--windows", default="1,2,5,10")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]

    from verified_tts.cluster import head as cluster
    from verified_tts.cluster.ray_backend import disconnect, load_ray_synthesizer
    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer

    # fixed N: every run does the same work, so the timings compare compute, not luck
    config = build_config({}, candidates=args.n, adaptive=False)
    result: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "book": {"sentences": args.sentences, "n": args.n, "adaptive": False},
    }
    scratch = ROOT / "benchmarks" / "work"  # git-ignored
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ray-bench-", dir=scratch) as tmp:
        work = Path(tmp)
        book = harvard_book(work / "book.md", args.sentences, heading="Harvard sentences")

        started = time.perf_counter()
        local = Synthesizer.load(config)
        local_load = time.perf_counter() - started
        state, _ = cluster.up(directory=work / "cluster", object_store_mb=300, max_jobs=1)
        try:
            started = time.perf_counter()
            remote = load_ray_synthesizer(config, state.gcs_address)
            ray_load = time.perf_counter() - started
            print(f"load: local {local_load:.1f} s, ray {ray_load:.1f} s", flush=True)
            local_runs, ray_runs = [], []
            for repeat in range(args.repeats):  # alternate: the machine's load drifts
                local_runs.append(timed_render(book, work / f"local-{repeat}", local))
                ray_runs.append(timed_render(book, work / f"ray-{repeat}", remote))
                print(
                    f"render: local {local_runs[-1]['wall_seconds']} s, "
                    f"ray {ray_runs[-1]['wall_seconds']} s",
                    flush=True,
                )
            same = all(
                winners(work / f"local-{r}") == winners(work / f"ray-{r}")
                for r in range(args.repeats)
            )
            local_run = min(local_runs, key=lambda r: r["wall_seconds"])
            ray_run = min(ray_runs, key=lambda r: r["wall_seconds"])

            sweep = []
            for window in windows:
                remote.config = replace(config, window=window)
                point = timed_render(book, work / f"window-{window}", remote)
                sweep.append({"window": window, **point})
                print(f"window {window}: {point['utterances_per_second']} utt/s", flush=True)
        finally:
            disconnect()
            cluster.down(work / "cluster")

    result["local"] = {
        "load_seconds": round(local_load, 2),
        **local_run,
        "all_wall_seconds": [r["wall_seconds"] for r in local_runs],
    }
    result["ray"] = {
        "load_seconds": round(ray_load, 2),
        **ray_run,
        "all_wall_seconds": [r["wall_seconds"] for r in ray_runs],
    }
    result["same_winners"] = same
    result["ratio_ray_over_local"] = {
        "render_wall": round(ray_run["wall_seconds"] / local_run["wall_seconds"], 3),
        "load_plus_render_wall": round(
            (ray_load + ray_run["wall_seconds"]) / (local_load + local_run["wall_seconds"]), 3
        ),
    }
    result["in_flight_sweep"] = sweep
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result["ratio_ray_over_local"]), f"same winners: {same}")
    print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
