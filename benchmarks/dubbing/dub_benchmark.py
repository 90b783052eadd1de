"""Dubbing benchmark: how well best-of-N fits the Sintel subtitles' slots at N=1 and N=8.

Dubs the 26 cues of the Sintel subtitles (tests/data/sintel-en.srt, (c) Blender Foundation,
durian.blender.org, CC-BY 3.0) with the embedded default models at N=1 and N=8 (adaptive), each
into a fresh store so every figure is that setting's own compute, and reports the share of cues
that fit their slot without stretching, mean and max stretch applied (and needed), flagged cues
and wall time. The real timing leaves espeak-ng plenty of room, so the same cues are also dubbed
into *tight* slots (each cue shortened to 60% of its length, no extension into the silence after
it), the situation of a dub into a wordier language, where choosing among candidates matters.
The models are loaded once and shared by every run (their load time is reported apart). Writes
benchmarks/results/dub_benchmark.json.

Usage: python -m benchmarks.dubbing.dub_benchmark [--cues 26] [--n 1 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SINTEL = ROOT / "tests" / "data" / "sintel-en.srt"
TIGHT_SHARE = 0.6


def subtitles(path: Path, cues: int, tight: bool) -> Path:
    """The first ``cues`` cues; with ``tight`` each one ends at 60% of its length."""
    import srt

    parsed = list(srt.parse(SINTEL.read_text(encoding="utf-8")))[:cues]
    if tight:
        parsed = [
            srt.Subtitle(s.index, s.start, s.start + (s.end - s.start) * TIGHT_SHARE, s.content)
            for s in parsed
        ]
    path.write_text(srt.compose(parsed, reindex=False), encoding="utf-8")
    return path


def flag_tally(out: Path) -> dict[str, int]:
    """Flagged cues by cause: each gate the winner failed, and running past the slot."""
    from verified_tts.output.manifest import read_manifest

    manifest = read_manifest(out)
    report = json.loads((out / "dub.json").read_text())
    tally: dict[str, int] = {}
    for utterance, cue in zip(manifest.utterances, report["cues"], strict=True):
        causes = list(utterance.winner_candidate.failed_gates)
        if not utterance.flagged:
            causes = []
        if cue["overlap_seconds"] > 0 or cue["cut_seconds"] > 0:
            causes.append("too long for the slot at the speed limit")
        for cause in causes:
            tally[cause] = tally.get(cause, 0) + 1
    return tally


def run_setting(src: Path, out: Path, base, n: int, variant: str, max_extend_s: float) -> dict:
    from dataclasses import replace

    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.dub import dub

    synthesizer = Synthesizer(base.generator, base.verifiers, replace(base.config, candidates=n))
    started, cpu_started = time.perf_counter(), time.process_time()
    load_before = os.getloadavg()[0]
    summary = dub(src, out, synthesizer.config, synthesizer=synthesizer, max_extend_s=max_extend_s)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    report = json.loads((out / "dub.json").read_text())
    stats = report["stats"]
    speech = sum(c["placed_end"] - c["placed_start"] for c in report["cues"])
    return {
        "variant": variant,
        "n": n,
        "adaptive": synthesizer.config.selection.adaptive,
        "cues": stats["cues"],
        "fit_without_stretch": stats["fit_without_stretch"],
        "fit_without_stretch_share": stats["fit_without_stretch_share"],
        "stretched": stats["stretched"],
        "mean_stretch": stats["mean_stretch"],
        "max_stretch": stats["max_stretch"],
        "mean_needed_stretch": stats["mean_needed_stretch"],
        "max_needed_stretch": stats["max_needed_stretch"],
        "overran_slot": stats["overran"],
        "cut": stats["cut"],
        "flagged": stats["flagged"],
        "flagged_cues": [c["index"] for c in report["cues"] if c["flagged"]],
        "flagged_by_cause": flag_tally(out),
        "candidates_generated": summary.candidates_generated,
        "candidates_per_cue": round(summary.candidates_generated / max(1, stats["cues"]), 2),
        "wall_seconds": round(wall, 2),
        # this process's CPU seconds (all its threads): steadier than wall time on a shared box
        "cpu_seconds": round(cpu, 2),
        "load_average_before": round(load_before, 2),
        "speech_seconds": round(speech, 2),
        "real_time_factor": round(wall / speech, 3) if speech else None,
        "seconds_per_stage": summary.seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cues", type=int, default=26)
    parser.add_argument("--n", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/dub_benchmark.json")
    args = parser.parse_args()

    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer

    load_started = time.perf_counter()
    base = Synthesizer.load(build_config({}, candidates=max(args.n)))
    load_seconds = time.perf_counter() - load_started
    results = []
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        for variant, tight, extend in (("sintel", False, 1.0), ("sintel-tight", True, 0.0)):
            src = subtitles(work / f"{variant}.srt", args.cues, tight)
            for n in args.n:
                result = run_setting(src, work / f"{variant}-n{n}", base, n, variant, extend)
                print(json.dumps(result), flush=True)
                results.append(result)
    record = {
        "benchmark": "dub",
        "input": "tests/data/sintel-en.srt (c) Blender Foundation, durian.blender.org, CC-BY 3.0",
        "cues": args.cues,
        "variants": {
            "sintel": "the subtitles' own timing; slots extend up to 1 s into the silence after",
            "sintel-tight": f"each cue shortened to {TIGHT_SHARE:.0%} of its length, no extension",
        },
        "speed_limit": 1.25,
        "generator": base.generator.model,
        "verifiers": sorted(v.name for v in base.verifiers.active) + ["duration_fit"],
        "load_seconds": round(load_seconds, 2),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
