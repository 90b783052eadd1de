"""The driver's ceiling: how many candidates per second one driver coordinates, and what bounds it.

The driver keeps the store, the rounds and the selection for every utterance; the generator and
the verifiers run in Ray actors. With the stand-ins of :mod:`verified_tts.testing.standin` (a fixed
sleep per candidate and per clip, real-sized audio: 22,050 Hz, as long as the text takes to read,
and a seeded score), actors cost no CPU, so this machine can hold as many of them as a cluster of
real nodes. The script renders one book at fixed N (a fresh store each time) and reports, per
setting, candidates per second against the ideal (replicas / seconds per candidate, verifier pool
/ seconds per clip), the driver's own CPU seconds per candidate, and the stage seconds the
pipeline measures (generate, verify, store):

- ``local``: no Ray, stand-ins at 0 s: the store and the selection alone;
- ``ray_overhead``: Ray, stand-ins at 0 s: the same plus object transfers and actor calls;
- ``ray_replicas``: Ray, replicas R = 1, 2, 4, ... each taking ``--gen-s`` per candidate and a
  verifier pool of R taking ``--ver-s`` per clip: where the measured rate leaves the ideal one;
- ``ray_window``: the saturated setting again with more utterances in flight (``window``), and
  with ``keep = "winners"`` (fewer FLACs kept; the candidates are still written first).

It starts a local one-node cluster of its own (loopback only) and stops it. Writes
benchmarks/results/driver_ceiling.json. Run it on idle cores: the figures are the driver's CPU.

Usage: python -m benchmarks.distributed.driver_ceiling [--utterances 96] [-n 8] [--gen-s 0.2]
[--ver-s 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "driver_ceiling.json"
SENTENCE = "Sentence number {i} walks slowly across the quiet field at dawn, then rests."


def config(n: int, gen_s: float, ver_s: float, replicas: int, window: int, keep: str) -> Any:
    from verified_tts.config import build_config

    return build_config(
        {
            "generator": {"name": "standin", "standin": {"seconds_per_candidate": gen_s}},
            "verifiers": {"standin": {"seconds_per_clip": ver_s}},
            "selection": {"weights": {"standin": 1.0}},
            "window": window,
            "keep": keep,
            "ray": {
                "replicas": replicas,
                "pool_size": replicas,
                "generator_num_cpus": 0,
                "verifier_num_cpus": 0,
                "max_in_flight": 2,
            },
        },
        candidates=n,
        adaptive=False,
    )


def book_segments(folder: Path, count: int) -> list[Any]:
    from verified_tts.options import ProductionOptions
    from verified_tts.text.production import load_input

    path = folder / "book.md"
    path.write_text(
        "# Ceiling\n\n" + "\n\n".join(SENTENCE.format(i=i) for i in range(count)) + "\n",
        encoding="utf-8",
    )
    return list(load_input(path, ProductionOptions()).book.segments)


def run(synthesizer: Any, items: list[Any], folder: Path) -> dict[str, Any]:
    from verified_tts.storage.store import Store

    synthesizer.stats = type(synthesizer.stats)(backend=synthesizer.stats.backend)
    utterances = synthesizer.plan(items)
    cpu, started = time.process_time(), time.perf_counter()
    with Store(folder) as store:
        results = synthesizer.run(utterances, store)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    candidates = sum(len(r.candidates) for r in results)
    stats = synthesizer.stats.as_dict()
    return {
        "utterances": len(results),
        "candidates": candidates,
        "wall_s": round(wall, 3),
        "candidates_per_s": round(candidates / wall, 2),
        "driver_cpu_s": round(cpu, 3),
        "driver_cpu_ms_per_candidate": round(1000 * cpu / candidates, 3),
        "stage_seconds": stats["seconds"],
        "audio_s_per_candidate": round(stats["audio_seconds_generated"] / max(1, candidates), 3),
    }


def local_synthesizer(settings: Any) -> Any:
    from verified_tts.generators import load_generator
    from verified_tts.pipeline import Synthesizer
    from verified_tts.verification import load_verifiers

    verifiers = load_verifiers(settings.verifiers, order=("standin",))
    return Synthesizer(load_generator(settings.generator), verifiers, settings)


def ray_synthesizer(settings: Any) -> tuple[Any, list[Any]]:
    from verified_tts.cluster import ray_backend
    from verified_tts.pipeline import Synthesizer

    generator = ray_backend.RayGenerator.start(settings.generator, settings.ray)
    verifiers = ray_backend.load_ray_verifiers(settings.verifiers, settings.ray, order=("standin",))
    synthesizer = Synthesizer(generator, verifiers, settings)
    return synthesizer, [generator, *verifiers.active]


def ceiling(result: dict[str, Any]) -> dict[str, Any]:
    """What the runs say about one driver, and what it means for nodes and a catalogue.

    The driver is one Python process: its CPU per candidate bounds it at ``1000 / ms`` candidates
    per second on one core whatever the actors do. A node's own rate is taken from the render
    benchmark (the embedded Piper voice with every verifier on a 2-core node, N=8 adaptive), the
    only measured per-candidate cost of a real node here. A catalogue is many books, each its own
    job with its own driver, so the driver bounds how fast one book goes, not the catalogue."""
    runs = [result["ray_overhead"], *result["ray_replicas"], *result["ray_window"].values()]
    per_candidate = sorted(r["driver_cpu_ms_per_candidate"] for r in runs)
    median_ms = per_candidate[len(per_candidate) // 2]
    best = max(runs, key=lambda r: r["candidates_per_s"])
    costed = [*result["ray_replicas"], *result["ray_window"].values()]
    saturated = max(r["candidates_per_s"] for r in costed)  # with real per-candidate costs
    bound = 1000.0 / median_ms
    render = json.loads((ROOT / "benchmarks" / "results" / "render_benchmark.json").read_text())
    adaptive = next(s for s in render["settings"] if s["setting"] == "n8-adaptive")
    node_rate = adaptive["candidates_generated"] / (
        adaptive["wall_seconds"] - adaptive["load_seconds"]
    )
    candidates_per_speech_s = adaptive["candidates_generated"] / adaptive["speech_seconds"]
    catalogue = 1000 * 3600 * candidates_per_speech_s
    return {
        "driver_cpu_ms_per_candidate_median": median_ms,
        "driver_bound_candidates_per_s": round(bound, 1),
        "best_measured_candidates_per_s": best["candidates_per_s"],
        "piper_node_candidates_per_s": round(node_rate, 2),
        "piper_nodes_per_driver": round(bound / node_rate, 1),
        "saturated_candidates_per_s": saturated,
        "piper_nodes_per_driver_measured": round(saturated / node_rate, 1),
        "catalogue_1000h_driver_hours_measured": round(catalogue / saturated / 3600, 1),
        "candidates_per_speech_s": round(candidates_per_speech_s, 3),
        "catalogue_1000h_candidates": round(catalogue),
        "catalogue_1000h_driver_hours": round(catalogue / bound / 3600, 1),
        "catalogue_hours": 1000,
        "node_cpus": 2,
        "source_of_node_rate": "benchmarks/results/render_benchmark.json n8-adaptive",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=96)
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument("--gen-s", type=float, default=0.2, help="stand-in s per candidate")
    parser.add_argument("--ver-s", type=float, default=0.05, help="stand-in s per clip")
    parser.add_argument("--replicas", default="1,2,4,8,16,32")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()

    from verified_tts.cluster import head, ray_backend

    result: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "settings": {
            "utterances": args.utterances,
            "n": args.n,
            "gen_s_per_candidate": args.gen_s,
            "ver_s_per_clip": args.ver_s,
            "note": "stand-in actors sleep (0 CPU); the driver is the only CPU user",
        },
    }
    with tempfile.TemporaryDirectory(prefix="vtts-ceiling-") as work:
        work_dir = Path(work)
        items = book_segments(work_dir, args.utterances)

        def fresh(name: str) -> Path:
            path = work_dir / name
            path.mkdir()
            return path

        result["local"] = run(local_synthesizer(config(args.n, 0, 0, 1, 16, "all")), items,
                              fresh("local"))  # fmt: skip
        print("local", result["local"]["candidates_per_s"], "candidates/s", flush=True)

        state, _ = head.up(directory=work_dir / "cluster", object_store_mb=1024)
        try:
            ray_backend.connect(state.gcs_address)

            def on_ray(name: str, settings: Any) -> dict[str, Any]:
                synthesizer, handles = ray_synthesizer(settings)
                try:
                    measured = run(synthesizer, items, fresh(name))
                finally:
                    for handle in handles:
                        handle.close()
                print(name, measured["candidates_per_s"], "candidates/s", flush=True)
                return measured

            result["ray_overhead"] = on_ray("overhead", config(args.n, 0, 0, 4, 16, "all"))
            sweep = []
            for replicas in [int(r) for r in args.replicas.split(",")]:
                measured = on_ray(
                    f"replicas-{replicas}",
                    config(args.n, args.gen_s, args.ver_s, replicas, 16, "all"),
                )
                ideal = min(replicas / args.gen_s, replicas / args.ver_s)
                measured.update(
                    {
                        "replicas": replicas,
                        "ideal_candidates_per_s": round(ideal, 2),
                        "efficiency": round(measured["candidates_per_s"] / ideal, 3),
                    }
                )
                sweep.append(measured)
            result["ray_replicas"] = sweep
            top = max(sweep, key=lambda m: m["candidates_per_s"])["replicas"]
            result["ray_window"] = {
                f"window-{window}-{keep}": on_ray(
                    f"window-{window}-{keep}",
                    config(args.n, args.gen_s, args.ver_s, top, window, keep),
                )
                for window, keep in ((64, "all"), (64, "winners"))
            }
        finally:
            ray_backend.disconnect()
            head.down(work_dir / "cluster")
    result["ceiling"] = ceiling(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
