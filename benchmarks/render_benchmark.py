"""Render benchmark for the embedded default: demo time, real-time factor and WER vs N.

Renders the first sentences of the Harvard list (../shared/data/harvard-sentences.txt, one
sentence per paragraph) at N=1, N=8 adaptive and N=8 fixed, each into a fresh store so every
figure is the compute of that setting alone, and times `verified-tts render examples/book.md`
as a user runs it after set-up. Writes JSON to benchmarks/results/render_benchmark.json.

Usage: python benchmarks/render_benchmark.py [--sentences 100] [--skip-demo]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARVARD = ROOT.parent / "shared" / "data" / "harvard-sentences.txt"


def harvard_book(path: Path, count: int) -> Path:
    sentences = HARVARD.read_text(encoding="utf-8").splitlines()[:count]
    path.write_text("# Harvard sentences\n\n" + "\n\n".join(sentences) + "\n", encoding="utf-8")
    return path


def run_setting(book: Path, work: Path, name: str, n: int, adaptive: bool) -> dict:
    from verified_tts.config import build_config
    from verified_tts.output.manifest import read_manifest
    from verified_tts.workflows.render import render

    config = build_config({}, candidates=n, adaptive=adaptive)
    started = time.perf_counter()
    summary = render(book, work / name, config)
    wall = time.perf_counter() - started
    manifest = read_manifest(work / name)
    speech = sum(u.winner_candidate.duration_s for u in manifest.utterances)
    return {
        "setting": name,
        "n": n,
        "adaptive": adaptive,
        "wall_seconds": round(wall, 2),
        "load_seconds": manifest.stats["seconds"].get("load", 0.0),
        "speech_seconds": round(speech, 2),
        "book_seconds": manifest.book.duration_s,
        # compute seconds per second of finished speech, model loading excluded
        "real_time_factor": round((wall - manifest.stats["seconds"].get("load", 0.0)) / speech, 4),
        "candidates_generated": summary.candidates_generated,
        "candidates_per_utterance": manifest.stats["mean_candidates_per_utterance"],
        "flagged": summary.flagged,
        "passed_share": summary.passed_share,
        "mean_wer_winners": summary.mean_wer_winners,
        "mean_wer_candidate0": summary.mean_wer_candidate0,
        "seconds_per_stage": manifest.stats["seconds"],
    }


def time_demo(work: Path) -> dict:
    started = time.perf_counter()
    subprocess.run(
        [
            str(Path(sys.executable).parent / "verified-tts"),
            "render",
            "examples/book.md",
            "--out",
            str(work / "demo"),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return {"demo_seconds": round(time.perf_counter() - started, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/render_benchmark.json"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        book = harvard_book(work / "harvard.md", args.sentences)
        results = {
            "machine": {"cpus": __import__("os").cpu_count(), "platform": platform.platform()},
            "sentences": args.sentences,
            "settings": [
                run_setting(book, work, "n1", 1, adaptive=False),
                run_setting(book, work, "n8-adaptive", 8, adaptive=True),
                run_setting(book, work, "n8-fixed", 8, adaptive=False),
            ],
        }
        if not args.skip_demo:
            results.update(time_demo(work))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
