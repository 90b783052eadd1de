"""Piper's CPU time per second of audio with its 1-D convolutions run as they are and as 2-D ones.

Loads the default voice twice, plain (``[generator.piper] planar = false``) and planar (the
default, :mod:`verified_tts.generators.piper_planar`), and times both on the fixed workload of
:mod:`machine_speed` (two takes each of the first ``--lines`` development lines of the real-prose
books, one graph run per core), in alternating order (plain, planar, planar, plain, ...) so that
the machine's drift over the minutes falls on both alike. Reports each run's CPU seconds per
second of audio, the planar/plain ratio of each adjacent pair with its median and range, and how
far the two graphs' samples are apart (largest absolute difference, and whether every take has
the same length).

Usage: python -m benchmarks.speed.piper_planar [--lines 24] [--pairs 4] [--output JSON]
"""

from __future__ import annotations

import argparse
import json
import statistics
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.speed.machine_speed import probe, probe_generator, probe_requests

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=24)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument(
        "--output", type=Path, default=ROOT / "benchmarks" / "results" / "piper_planar.json"
    )
    args = parser.parse_args()
    from verified_tts.storage.atomic import write_json_atomic

    generators = {planar: probe_generator(planar) for planar in (False, True)}
    requests = probe_requests(args.lines)
    plain_takes = generators[False].sample(requests)
    planar_takes = generators[True].sample(requests)
    same_lengths = all(
        a.audio.shape == b.audio.shape for a, b in zip(plain_takes, planar_takes, strict=True)
    )
    largest = max(
        float(np.max(np.abs(a.audio - b.audio)))
        for a, b in zip(plain_takes, planar_takes, strict=True)
        if a.audio.shape == b.audio.shape
    )

    runs = []
    for pair in range(args.pairs):
        order = (False, True) if pair % 2 == 0 else (True, False)
        timed = {planar: probe(args.lines, generators[planar]) for planar in order}
        runs.append({"pair": pair, "plain": timed[False], "planar": timed[True]})
        print(
            f"pair {pair}: plain {timed[False]['cpu_seconds_per_audio_second']}, "
            f"planar {timed[True]['cpu_seconds_per_audio_second']}",
            flush=True,
        )
    ratios = [
        r["planar"]["cpu_seconds_per_audio_second"] / r["plain"]["cpu_seconds_per_audio_second"]
        for r in runs
    ]
    result = {
        "benchmark": "benchmarks/speed/piper_planar.py",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "lines": args.lines,
        "takes": len(requests),
        "pairs": args.pairs,
        "samples": {
            "same_lengths": same_lengths,
            "largest_absolute_difference": round(largest, 6),
        },
        "runs": runs,
        "planar_over_plain_cpu": {
            "per_pair": [round(r, 4) for r in ratios],
            "median": round(statistics.median(ratios), 4),
            "lowest": round(min(ratios), 4),
            "highest": round(max(ratios), 4),
        },
    }
    write_json_atomic(args.output, result)
    print(json.dumps(result["planar_over_plain_cpu"]), json.dumps(result["samples"]))


if __name__ == "__main__":
    main()
