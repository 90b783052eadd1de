"""Warm verifier sets, before and after: the same short render jobs on one loopback cluster with
``[ray] warm_idle_s = 0`` (every job loads its own verifiers, as before warm sets) and with the
default (a job leases the verifiers an earlier job kept).

The script starts a cluster (two CPUs, one job at a time, as the tests' cluster runs), then
submits ``--rounds`` pairs of jobs one after the other, alternating which setting goes first in
each pair, since load on a shared machine drifts. Each job renders its own two-sentence book with
espeak at N=2 through ``verified-tts jobs submit``, as a user submits it, and is timed from the
submit command to the record's SUCCEEDED (polled in-process); the job's own ``load`` seconds come
from its manifest. The first warm job loads its set like a cold one and is reported apart. Writes
benchmarks/results/warm_verifiers.json.

Usage: python -m benchmarks.distributed.warm_verifiers [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "warm_verifiers.json"
SETTINGS = {"cold": "[ray]\nwarm_idle_s = 0\n", "warm": "[ray]\n"}


def _cli(state_dir: Path, *args: str) -> dict:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "verified_tts", *args, "--json", "--state-dir", str(state_dir)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"verified-tts {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_job(state_dir: Path, work: Path, name: str, setting: str, text: str) -> dict[str, Any]:
    """Submit one render job and wait for it: its wall seconds and the manifest's stage times."""
    from jobs.queue import JobQueue

    book = work / f"{name}.md"
    book.write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    config = work / f"{setting}.toml"
    config.write_text(SETTINGS[setting], encoding="utf-8")
    out = work / f"out-{name}"
    started = time.perf_counter()
    job = _cli(state_dir, "jobs", "submit", "render", str(book), "--generator", "espeak",
               "-n", "2", "--config", str(config), "--out", str(out))  # fmt: skip
    # polled in this process: a `verified-tts jobs status` process a poll costs a second or two
    # of CPU, which on two cores the job being timed would pay for
    queue = JobQueue(state_dir)
    while (state := queue.status(job["id"]).state) not in ("SUCCEEDED", "FAILED", "STOPPED"):
        time.sleep(0.2)
    wall = time.perf_counter() - started
    if state != "SUCCEEDED":
        raise SystemExit(f"job {job['id']} ({setting}) ended {state}: see `verified-tts jobs logs`")
    stats = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["stats"]
    return {
        "setting": setting,
        "wall_seconds": round(wall, 2),
        "load_seconds": round(stats["seconds"]["load"], 2),
        "render_wall_seconds": round(stats["wall_seconds"], 2),
    }


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [r["wall_seconds"] for r in runs]
    loads = [r["load_seconds"] for r in runs]
    return {
        "jobs": len(runs),
        "wall_seconds_median": round(statistics.median(walls), 2),
        "wall_seconds": walls,
        "load_seconds_median": round(statistics.median(loads), 2),
        "load_seconds": loads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    from benchmarks.common.harvard import sentences as harvard_sentences
    from verified_tts.cluster import head

    sentences = harvard_sentences()
    result: dict[str, Any] = {
        "what": __doc__.split("\n\n")[0].replace("\n", " "),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "rounds": args.rounds,
    }
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="vtts-warm-") as folder:
        work = Path(folder)
        cluster = work / "cluster"
        head.up(directory=cluster, num_cpus=2, object_store_mb=200, max_jobs=1)
        try:
            # the warm set's first load, apart: it costs what a cold job's load does
            runs.append(run_job(cluster, work, "first", "warm", " ".join(sentences[:2])))
            for index in range(args.rounds):
                order = ("cold", "warm") if index % 2 == 0 else ("warm", "cold")
                for offset, setting in enumerate(order):
                    at = 2 + 4 * index + 2 * offset
                    text = " ".join(sentences[at : at + 2])
                    runs.append(run_job(cluster, work, f"r{index}-{setting}", setting, text))
                    print(runs[-1], flush=True)
        finally:
            head.down(cluster)
    result["first_warm_job"] = runs[0]
    result["cold"] = _summary([r for r in runs[1:] if r["setting"] == "cold"])
    result["warm"] = _summary([r for r in runs[1:] if r["setting"] == "warm"])
    result["wall_saved_per_job_seconds"] = round(
        result["cold"]["wall_seconds_median"] - result["warm"]["wall_seconds_median"], 2
    )
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    RESULT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("cold", "warm", "wall_saved_per_job_seconds")}))


if __name__ == "__main__":
    main()
