"""Calibration benchmark: what the verifiers catch on the default voice, and how long it takes.

Runs `verified-tts calibrate` as a user types it (default options: 40 built-in Harvard sentences,
8 clean candidates each, every fault kind, 5 % false alarms), times the whole command, and keeps
from its calibrate.json the figures the calibration issue asks for: recall and false alarms per
fault kind under the current and the recommended gates (and held out), the per-metric table
(AUC, bound at the target, recall there and at the current gate), the faulted-winner-vs-N curve,
both gate sets and the goals. Writes benchmarks/results/calibrate_<generator>.json.

``--real-prose dev`` (or ``held_out``) calibrates on sentences of the real-prose books' development
(or held-out) chapters instead (benchmarks/real_prose/real_prose.py: the sample written as a .txt
book, the sentences spread over it), labelled ``real_prose_<part>``. With ``--from``,
``--reanalyse`` redoes the analysis under today's shipped gates, and with ``--real-prose`` first
recomputes each case's
``pace_ratio`` from its kept length under today's pace constants (the clip is what the metric
measures; only its expectation changed; a case held to its voice's own predicted length keeps
it), without generating or scoring anything again.

Usage: python -m benchmarks.flags.calibrate_benchmark [BOOK_OR_SUBTITLES] [--generator NAME]
       [--config FILE] [--sentences K] [--candidates N] [--faults KINDS] [--label NAME]
       [--real-prose dev|held_out] [--from OUT_DIR [--reanalyse]] [--out KEEP_DIR]
(--from reads the calibrate.json of a run already made with those options instead of running
again; its wall time is then the run's own total.)
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

ROOT = Path(__file__).resolve().parents[2]
CPU_SECONDS: list[float] = []  # user + system seconds of the calibrate command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "input", nargs="?", default=None, help="book or subtitles (default: built-in)"
    )
    parser.add_argument("--generator", default=None, help="default: the configured default")
    parser.add_argument("--config", default=None, help="TOML config (e.g. gates to check)")
    parser.add_argument("--sentences", type=int, default=None)
    parser.add_argument("--candidates", type=int, default=None)
    parser.add_argument("--faults", default=None)
    parser.add_argument("--label", default=None, help="results file suffix")
    parser.add_argument("--real-prose", choices=("dev", "held_out"), default=None)
    parser.add_argument("--reanalyse", action="store_true", help="with --from: today's gates")
    parser.add_argument("--from", dest="source", default=None, help="existing output folder")
    parser.add_argument("--out", default=None, help="keep the run's output folder here")
    args = parser.parse_args()

    load_before = os.getloadavg()
    if args.source:
        data = json.loads((Path(args.source) / "calibrate.json").read_text(encoding="utf-8"))
        gates_toml = (Path(args.source) / "gates.toml").read_text(encoding="utf-8")
        wall = float(data["seconds"]["total"])
        if args.reanalyse:
            from verified_tts.calibration.gates import gates_toml as recommended_toml

            data = reanalysed(data, args.real_prose)
            gates_toml = recommended_toml(data)
    else:
        data, gates_toml, wall = run(args)
    write_results(args, data, gates_toml, wall, load_before)


def reanalysed(data: dict, part: str | None) -> dict:
    """``data`` analysed again under today's shipped gates (and, for a real-prose sample, with
    each case's pace_ratio recomputed from its length under today's pace constants)."""
    from verified_tts.config import build_config
    from verified_tts.workflows.calibrate import CalibrateOptions, _segments, reanalyse
    from verifiers.signal import expected_reading_s

    if part:
        from benchmarks.real_prose.real_prose import write_sample

        with tempfile.TemporaryDirectory() as work:
            book = Path(work) / f"{part}.txt"
            write_sample(book, part)
            segments = _segments(book, int(data["utterances"]), 250)
        # from signal version 5 a voice that predicts its length holds pace_ratio to it (equal
        # to duration_ratio, no constants involved): only the text's expectation is recomputed
        version = data["verifiers"]["signal"]["identity"]["version"]
        for case in data["cases"]:
            metrics = case["metrics"]
            if "voice_pace_ratio" in metrics:
                continue
            if version == 5 and metrics.get("pace_ratio") == metrics.get("duration_ratio"):
                # version 5 held pace_ratio to the voice; version 6 also reports it as
                # voice_pace_ratio, which has its own gate
                metrics["voice_pace_ratio"] = metrics["pace_ratio"]
                continue
            metrics["pace_ratio"] = metrics["duration_s"] / expected_reading_s(
                segments[case["utterance"]].spoken
            )
    options = CalibrateOptions(
        kinds=tuple(f["kind"] for f in data["faults"]),
        candidates=int(data["candidates_per_utterance"]),
        false_alarm=float(data["false_alarm_target"]),
    )
    again = reanalyse(data, build_config({}).selection, options)
    keep = ("generator", "utterances", "candidates_per_utterance", "seconds", "input", "cases",
            "skipped_faults", "examples", "verifiers", "options")  # fmt: skip
    return {**again, **{k: data[k] for k in keep if k in data}, "reanalysed": True}


# The hand-set gates shipped before calibration existed, to say what calibration changed.
HAND_SET_GATES = (
    ("wer", None, 0.5, 0.5),
    ("asr_logprob", -2.0, None, 1.0),
    ("duration_ratio", 0.45, 2.2, 0.15),
    ("clipping", None, 0.001, 0.0),
    ("leading_silence_s", None, 1.0, 0.0),
    ("trailing_silence_s", None, 1.0, 0.0),
    ("max_internal_silence_s", None, 1.5, 0.0),
    ("dropped_frames", None, 2, 0.0),
    ("speaker", 0.6, None, 0.1),
)


def hand_set_figures(data: dict) -> dict:
    """Recall, false alarms and faulted winners of the hand-set gates on the same scored cases."""
    from verified_tts.selection.policy import Gate, SelectionPolicy
    from verified_tts.workflows.calibrate import CalibrateOptions, reanalyse

    policy = SelectionPolicy(tuple(Gate(m, lo, hi, margin) for m, lo, hi, margin in HAND_SET_GATES))
    options = CalibrateOptions(
        kinds=tuple(f["kind"] for f in data["faults"]),
        candidates=int(data["candidates_per_utterance"]),
        false_alarm=float(data["false_alarm_target"]),
    )
    again = reanalyse(data, policy, options)
    return {
        "gates": again["gates"]["current"],
        "clean_false_alarm": again["clean"]["false_alarm"],
        "recall": {f["kind"]: f["recall"] for f in again["faults"]},
        "selection": [s for s in again["selection"] if s["gates"] == "current"],
    }


def run(args: argparse.Namespace) -> tuple[dict, str, float]:
    with tempfile.TemporaryDirectory(prefix="calibrate-bench-") as work:
        out = Path(args.out) if args.out else Path(work) / "cal"
        command = [sys.executable, "-m", "verified_tts", "calibrate", "--out", str(out)]
        if args.input:
            command.insert(4, args.input)
        elif args.real_prose:
            from benchmarks.real_prose.real_prose import write_sample

            book = Path(work) / f"{args.real_prose}.txt"
            write_sample(book, args.real_prose)
            command.insert(4, str(book))
        if args.generator:
            command += ["--generator", args.generator]
        if args.config:
            command += ["--config", args.config]
        for flag, value in (("--sentences", args.sentences), ("--candidates", args.candidates),
                            ("--faults", args.faults)):  # fmt: skip
            if value:
                command += [flag, str(value)]
        started = time.perf_counter()
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, cwd=ROOT, check=True)
        wall = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU_SECONDS.append(
            cpu_after.ru_utime - cpu_before.ru_utime + cpu_after.ru_stime - cpu_before.ru_stime
        )
        data = json.loads((out / "calibrate.json").read_text(encoding="utf-8"))
        return data, (out / "gates.toml").read_text(encoding="utf-8"), wall


def write_results(
    args: argparse.Namespace, data: dict, gates_toml: str, wall: float, load_before: tuple
) -> None:
    generator = data["generator"]["name"]
    result = {
        "command": "verified-tts calibrate"
        + (f" {args.input}" if args.input else "")
        + (f" --generator {args.generator}" if args.generator else "")
        + (f" --config {args.config}" if args.config else "")
        + (f" --sentences {args.sentences}" if args.sentences else "")
        + (f" --candidates {args.candidates}" if args.candidates else "")
        + (f" --faults {args.faults}" if args.faults else "")
        + (f" REAL_PROSE_{args.real_prose.upper()}.txt" if args.real_prose else ""),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            # of this script's start: for --from, not of the run it reads
            "load_average_at_start": None if args.source else [round(x, 2) for x in load_before],
        },
        "wall_seconds": round(wall, 1),
        "from_existing_run": bool(args.source),
        # on a busy shared machine wall time overstates the cost; CPU seconds do not
        "cpu_seconds": round(CPU_SECONDS[0], 1) if CPU_SECONDS else None,
        "seconds_per_stage": data["seconds"],
        "generator": data["generator"],
        "utterances": data["utterances"],
        "false_alarm_target": data["false_alarm_target"],
        "clean": data["clean"],
        "faults": [
            {
                k: f[k]
                for k in (
                    "kind",
                    "cases",
                    "recall",
                    "recall_at_target",
                    "held_out_recall",
                    "goal",
                    "auc",
                    "best_metric",
                )
            }  # fmt: skip
            for f in data["faults"]
        ],
        "per_metric": {
            f["kind"]: {
                f"{m['metric']} ({m['bound']})": {
                    "auc": m["auc"],
                    "recall_at_target_bound": m["recall_at_threshold"],
                    "recall_current_gate": m["recall_current_gate"],
                }
                for m in f["metrics"]
            }
            for f in data["faults"]
        },
        "metrics": data["metrics"],
        "selection": data["selection"],
        "input": data.get("input"),
        "gates": data["gates"],
        "gates_toml": gates_toml,
        "goals": data["goals"],
        "skipped_faults": data.get("skipped_faults", {}),
        "short_lines": data.get("short_lines"),
        "duration_model": data.get("duration_model"),
        "hand_set_gates_on_the_same_cases": hand_set_figures(data),
        "reanalysed_under_todays_gates": bool(data.get("reanalysed")),
    }
    name = args.label or (f"real_prose_{args.real_prose}" if args.real_prose else generator)
    path = ROOT / "benchmarks" / "results" / f"calibrate_{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
