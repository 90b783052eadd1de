"""What a process pays to start: a one-line `verified-tts render`, wall and CPU seconds.

Every render, job driver, Ray actor and server loads the default voice and the verifiers before
it speaks a word, and the test suite starts well over a hundred such processes; this measures that
fixed cost on a one-line book (two takes), for the default generator (Piper) and espeak-ng, with
the derived-files cache warm (the usual case) and cold (a machine's first run). ``--against REF``
also measures the project at a git ref (a temporary worktree, compiled like the checkout), the two
trees interleaved run by run so that the machine's drifting speed falls on both alike. A fixed
Python loop is timed before each round as a gauge of that speed.

    python -m benchmarks.speed.process_startup [--runs 3] [--against 922a03d]

Writes: benchmarks/results/process_startup.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from verified_tts.storage.atomic import write_text_atomic

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "process_startup.json"
BOOK = "# One\n\nRain fell on the old road.\n"
CASES = {"piper (default)": (), "espeak": ("--generator", "espeak")}


def _gauge() -> float:
    """Seconds of a fixed pure-Python loop: how fast the machine is right now."""
    started = time.perf_counter()
    sum(i * i for i in range(20_000_000))
    return time.perf_counter() - started


def _render(tree: Path, work: Path, options: tuple[str, ...], cache: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the child's user + system) of one render from ``tree``'s code."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    argv = ["verified-tts", "render", str(work / "book.md"), *options, "-n", "2", "--out", str(out)]
    code = f"import sys; sys.argv = {argv!r}; from verified_tts.cli.commands import main; main()"
    env = {**os.environ, "PYTHONPATH": str(tree), "VERIFIED_TTS_CACHE": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # run from the work folder: `-c` puts the working folder first on sys.path, and from the
    # repository root that would be the checkout's code whatever PYTHONPATH says
    subprocess.run(
        [sys.executable, "-c", code], cwd=work, env=env, check=True, capture_output=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _worktree(ref: str, into: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(into), ref],
                   check=True)  # fmt: skip
    subprocess.run([sys.executable, "-m", "compileall", "-q", "verified_tts", "verifiers", "jobs"],
                   cwd=into, check=True)  # fmt: skip
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--against", help="a git ref to measure beside the checkout")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vtts-startup-"))
    (work / "book.md").write_text(BOOK, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "compileall", "-q", "verified_tts", "verifiers", "jobs"],
                   cwd=ROOT, check=True)  # fmt: skip
    trees = {"checkout": ROOT}
    if args.against:
        trees[args.against] = _worktree(args.against, work / "against")
    warm = work / "warm-cache"
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {}
    gauges = []
    try:
        for tree in trees.values():  # fill the warm cache, untimed
            _render(tree, work, (), warm)
        for run in range(args.runs):
            gauges.append(round(_gauge(), 3))
            for case, options in CASES.items():
                for name, tree in trees.items():
                    samples.setdefault(name, {}).setdefault(f"{case}, warm cache", []).append(
                        _render(tree, work, options, warm)
                    )
            cold = work / f"cold-{run}"
            samples["checkout"].setdefault("piper (default), cold cache", []).append(
                _render(ROOT, work, (), cold)
            )
    finally:
        if args.against:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(work / "against")], check=False)  # fmt: skip
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "what": "one-line `verified-tts render -n 2`, a fresh process each run; seconds",
        "runs": args.runs,
        "gauge_loop_s": gauges,
        "trees": {
            name: {
                case: {
                    "wall_s": [round(w, 2) for w, _ in values],
                    "cpu_s": [round(c, 2) for _, c in values],
                    "median_wall_s": round(statistics.median(w for w, _ in values), 2),
                    "median_cpu_s": round(statistics.median(c for _, c in values), 2),
                }
                for case, values in cases.items()
            }
            for name, cases in samples.items()
        },
    }
    write_text_atomic(RESULT, json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["trees"], indent=2))


if __name__ == "__main__":
    main()
