"""Render benchmark for the embedded default: demo time, real-time factor and WER vs N.

Renders the first sentences of the Harvard list (the package's copy, benchmarks/common/harvard.py,
one sentence per paragraph) at N=1, N=8 adaptive and N=8 fixed, each into a fresh store so every
figure is the compute of that setting alone, and times `verified-tts render examples/book.md`
as a user runs it after set-up. Writes JSON to benchmarks/results/render_benchmark.json; a run
of some settings (``--settings``) replaces those settings in an existing file and keeps the others.

Every timing is given in wall seconds and in CPU seconds (process time of all threads; for the
demo, of the child process): on a machine shared with other work the wall seconds are inflated,
the CPU seconds are not. ``cpu_real_time_factor`` is CPU seconds per second of finished speech,
which on an idle machine with C cores bounds the wall factor from below by cpu/C.

Usage: python -m benchmarks.speed.render_benchmark [--sentences 100] [--skip-demo]
       [--settings n1 n8-adaptive n8-fixed]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common.harvard import harvard_book

ROOT = Path(__file__).resolve().parents[2]


def run_setting(book: Path, work: Path, name: str, n: int, adaptive: bool) -> dict:
    from verified_tts.config import build_config
    from verified_tts.output.manifest import read_manifest
    from verified_tts.workflows.render import render

    config = build_config({}, candidates=n, adaptive=adaptive)
    started, cpu_started = time.perf_counter(), time.process_time()
    summary = render(book, work / name, config)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    manifest = read_manifest(work / name)
    speech = sum(u.winner_candidate.duration_s for u in manifest.utterances)
    return {
        "setting": name,
        "n": n,
        "adaptive": adaptive,
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "selection": {
            key: getattr(config.selection, key)
            for key in (
                "stop",
                "rounds",
                "first_round",
                "stop_gain",
                "prior_spread",
                "prior_weight",
            )
        },
        "load_seconds": manifest.stats["seconds"].get("load", 0.0),
        "speech_seconds": round(speech, 2),
        "book_seconds": manifest.book.duration_s,
        # compute seconds per second of finished speech, model loading excluded
        "real_time_factor": round((wall - manifest.stats["seconds"].get("load", 0.0)) / speech, 4),
        # CPU seconds of all threads per second of finished speech, model loading included
        "cpu_real_time_factor": round(cpu / speech, 4),
        "candidates_generated": summary.candidates_generated,
        "candidates_per_utterance": manifest.stats["mean_candidates_per_utterance"],
        "flagged": summary.flagged,
        "passed_share": summary.passed_share,
        "mean_wer_winners": summary.mean_wer_winners,
        "mean_wer_candidate0": summary.mean_wer_candidate0,
        "seconds_per_stage": manifest.stats["seconds"],
    }


def time_demo(work: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # this checkout's code, as `make demo` runs it after set-up (`verified-tts render ...`)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "verified_tts",
            "render",
            "examples/book.md",
            "--out",
            str(work / "demo"),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    manifest = json.loads((work / "demo" / "manifest.json").read_text())
    return {
        "demo_seconds": round(wall, 2),
        "demo_cpu_seconds": round(cpu, 2),
        "demo_utterances": len(manifest["utterances"]),
        "demo_book_seconds": manifest["book"]["duration_s"],
        "demo_candidates_per_utterance": manifest["stats"]["mean_candidates_per_utterance"],
        "demo_flagged": manifest["stats"]["flagged"],
        "demo_seconds_per_stage": manifest["stats"]["seconds"],
        "demo_load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


SETTINGS = {"n1": (1, False), "n8-adaptive": (8, True), "n8-fixed": (8, False)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--settings", nargs="*", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/render_benchmark.json"
    )
    args = parser.parse_args()
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    if previous.get("sentences") != args.sentences:
        previous = {}  # figures of another input do not mix
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        book = harvard_book(work / "harvard.md", args.sentences, heading="Harvard sentences")
        fresh = []
        for name in args.settings:
            n, adaptive = SETTINGS[name]
            fresh.append(
                {
                    **run_setting(book, work, name, n, adaptive=adaptive),
                    "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
                }
            )
        kept = [s for s in previous.get("settings", []) if s["setting"] not in args.settings]
        results = {
            **previous,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
            "sentences": args.sentences,
            "timing_note": "wall seconds grow with other work on the machine (see each "
            "load_average_at_end); cpu_seconds = process time of all threads",
            "settings": sorted(kept + fresh, key=lambda s: list(SETTINGS).index(s["setting"])),
        }
        if not args.skip_demo:
            results.update(time_demo(work))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
