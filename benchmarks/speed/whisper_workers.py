"""Whisper verifier throughput by worker layout: one worker on every core against a worker per core.

Generates N candidates for Harvard sentences (the package's copy, benchmarks/common/harvard.py) with
the chosen generator, then scores all of them with the WER verifier, per clip (beam 5) and packed
(greedy), each with one CTranslate2 worker on every core and two windows per encoder call (the
layout before ``workers``) and with the default of one single-threaded worker per core (packed: up
to 8 windows a call, also timed on one worker alone), one ``score`` call per window of utterances
as a render's round hands them over. Reports wall and CPU seconds, clips per second, the speed-up,
and whether every metric and detail came out identical. Writes
benchmarks/results/whisper_workers.json (or --out).

Usage: python -m benchmarks.speed.whisper_workers [--generator piper] [--first 600] [--sentences 32]
       [--n 8] [--window 16] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.speed.verify_speed import generate, sentences
from verified_tts.cores import usable_cores

ROOT = Path(__file__).resolve().parents[2]


def layouts() -> Mapping[str, Mapping[str, Any]]:
    # "one worker": the layout before workers, two windows per encoder call for both scorers
    one_worker = {"workers": 1, "cpu_threads": usable_cores(), "batch_size": 2}
    return {
        "per-clip, one worker": {"packing": False, "beam_size": 5, **one_worker},
        "per-clip, a worker per core": {"packing": False, "beam_size": 5},
        "packed, one worker": {"packing": True, "beam_size": 1, **one_worker},
        # the packed default's larger batches alone, without the second worker
        "packed, one worker, up to 8 windows a call": {
            "packing": True,
            "beam_size": 1,
            "workers": 1,
            "cpu_threads": usable_cores(),
        },  # fmt: skip
        "packed, a worker per core": {"packing": True, "beam_size": 1},
    }


def score_all(
    options: Mapping[str, Any], texts: Sequence[str], candidates: Sequence[Sequence[Any]],
    window: int,
) -> tuple[dict[str, Any], list[Any]]:  # fmt: skip
    from verifiers import Clip, WerOptions, load_wer_verifier

    verifier = load_wer_verifier(WerOptions(**options))
    verifier.score([Clip(candidates[0][0].audio, candidates[0][0].sample_rate, texts[0])])
    scores: list[Any] = []
    started, cpu_started = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), window):
        clips = [
            Clip(c.audio, c.sample_rate, text)
            for text, row in zip(texts[start : start + window], candidates[start : start + window],
                                 strict=True)
            for c in row
        ]  # fmt: skip
        scores.extend(verifier.score(clips))
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    timing = {
        "options": dict(options),
        "clips": len(scores),
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "clips_per_second": round(len(scores) / wall, 2),
        "clips_per_cpu_second": round(len(scores) / cpu, 2),
    }
    return timing, [(s.metrics, s.detail) for s in scores]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generator", default="piper")
    parser.add_argument("--first", type=int, default=600, help="first Harvard line (0-based)")
    parser.add_argument("--sentences", type=int, default=32)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--window", type=int, default=16, help="utterances per score call")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "whisper_workers.json"
    )
    args = parser.parse_args()

    texts = sentences(args.first, args.sentences)
    candidates = generate(args.generator, texts, args.n)
    results: dict[str, Any] = {
        "machine": {
            "cpus": usable_cores(),
            "platform": platform.platform(),
            "load_average_at_start": os.getloadavg(),
        },  # fmt: skip
        "generator": args.generator,
        "harvard_lines": [args.first, args.first + args.sentences],
        "n": args.n,
        "window": args.window,
        "layouts": {},
    }
    scored: dict[str, list[Any]] = {}
    for name, options in layouts().items():
        timing, scored[name] = score_all(options, texts, candidates, args.window)
        results["layouts"][name] = timing
        print(name, json.dumps(timing), flush=True)
    for scorer in ("per-clip", "packed"):
        one = results["layouts"][f"{scorer}, one worker"]
        many = results["layouts"][f"{scorer}, a worker per core"]
        results[f"{scorer} speed-up"] = {
            "clips_per_second": round(many["clips_per_second"] / one["clips_per_second"], 2),
            "clips_per_cpu_second": round(
                many["clips_per_cpu_second"] / one["clips_per_cpu_second"], 2
            ),
            "identical_scores": scored[f"{scorer}, one worker"]
            == scored[f"{scorer}, a worker per core"],
        }
    results["load_average_at_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if "speed-up" in k}, indent=1))


if __name__ == "__main__":
    main()
