"""Dubbing lines: do the flags on short and exclamatory cues point at takes a listener would fix?

Dubs each input with the defaults (``verified-tts dub`` as a user runs it, ``-n 4``, adaptive)
into a fresh store, then has the independent judge (Whisper base, ``bundled:base``, never used
for selection) transcribe every candidate that kept its audio, winners included. Per input:
cues, cues flagged, flagged cues whose winner the judge hears word for word (false alarms a
producer would listen to for nothing), the judge WER of flagged and of passed winners, their
difference and ratio with bootstrap intervals, every flagged cue with the reasons ``dub.json``
gives, and the false-alarm rate of each gate by clip length: among the candidates the judge
hears perfectly, the share each gate rejects, per clip-length bin. Inputs: the Sintel subtitles
(tests/data/sintel-en.srt, (c) Blender Foundation, durian.blender.org, CC-BY 3.0; 26 cues) and
the held-out short dialogue lines (benchmarks/data/short_lines_held_out.srt,
benchmarks/dubbing/short_lines.py). The script uses only the public ``dub`` and judge functions, so
the same file measures an earlier checkout ("before"):
``PYTHONPATH=/path/to/old/checkout python -m benchmarks.dubbing.dub_lines --label before``. Writes
benchmarks/results/dub_lines[_LABEL].json.

Usage: python -m benchmarks.dubbing.dub_lines [--inputs sintel short_lines] [--n 4] [--label NAME]
       python -m benchmarks.dubbing.dub_lines --rescore benchmarks/results/dub_lines_before.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INPUTS = {
    "sintel": ROOT / "tests" / "data" / "sintel-en.srt",
    "short_lines": ROOT / "benchmarks" / "data" / "short_lines_held_out.srt",
}
LENGTH_BINS = ((0.0, 1.0), (1.0, 1.5), (1.5, 2.5), (2.5, 4.0), (4.0, 1e9))


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def flagged_against_passed(flagged: list[float], passed: list[float]) -> dict | None:
    """Judge WER of flagged minus passed winners, and their ratio, with 95 % intervals.

    The two groups hold different cues, so each is resampled on its own (verified_tts.paired's
    seeded draws, one stream per group); a resample whose passed cues are all heard perfectly has
    no ratio, and an interval reaching it is open above (None).
    """
    if not flagged or not passed:
        return None
    from verified_tts.paired import bootstrap_draws, percentile_interval

    differences, ratios = [], []
    draws = zip(
        bootstrap_draws(len(flagged), seed=0), bootstrap_draws(len(passed), seed=1), strict=True
    )
    for high_draw, low_draw in draws:
        high = statistics.fmean(flagged[i] for i in high_draw)
        low = statistics.fmean(passed[i] for i in low_draw)
        differences.append(high - low)
        ratios.append(high / low if low > 0 else math.inf)
    low_mean = statistics.fmean(passed)
    return {
        "difference": round(statistics.fmean(flagged) - low_mean, 4),
        "difference_ci95": list(percentile_interval(differences)),
        "ratio": round(statistics.fmean(flagged) / low_mean, 2) if low_mean > 0 else None,
        "ratio_ci95": [v if math.isfinite(v) else None for v in percentile_interval(ratios)],
    }


def judge_run(judge, out: Path) -> tuple[dict, dict]:
    """Judge every kept candidate of a dub; (dub.json, manifest.json) with ``judge`` added."""
    from verified_tts.workflows.judge import judge_clips

    report = json.loads((out / "dub.json").read_text(encoding="utf-8"))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    wanted = {}
    for utterance in manifest["utterances"]:
        for candidate in utterance["candidates"]:
            if candidate.get("audio"):
                wanted[(utterance["key"], candidate["index"])] = (
                    candidate["audio"],
                    utterance["text"],
                )
    judged = judge_clips(judge, wanted, out).transcripts
    for utterance in manifest["utterances"]:
        for candidate in utterance["candidates"]:
            found = judged.get((utterance["key"], candidate["index"]))
            if found is not None:
                candidate["judge"] = {"wer": found[0], "heard": found[1]}
    return report, manifest


def summarise(report: dict, manifest: dict) -> dict:
    by_key = {u["key"]: u for u in manifest["utterances"]}
    cues = []
    for cue in report["cues"]:
        utterance = by_key[cue["key"]]
        winner = next(c for c in utterance["candidates"] if c["index"] == cue["winner"])
        verdict = winner.get("judge", {})
        cues.append(
            {
                "index": cue["index"],
                "text": cue["text"],
                "words": len(cue["text"].split()),
                "flagged": cue["flagged"],
                "reasons": cue["flag_reasons"],
                "notes": cue.get("notes", []),
                "judge_wer": verdict.get("wer"),
                "judge_heard": verdict.get("heard"),
                "winner_seconds": winner["duration_s"],
            }
        )
    return {
        **summarise_cues(cues),
        "notes": dict(Counter(note for c in cues for note in c["notes"])),
        "gate_false_alarms_by_length": false_alarms(manifest),
    }


def summarise_cues(cues: list[dict]) -> dict:
    """What the cue list alone gives: flags, the judge WER of flagged and passed winners."""
    flagged = [c for c in cues if c["flagged"]]
    passed = [c for c in cues if not c["flagged"]]
    flagged_wer = [c["judge_wer"] for c in flagged if c["judge_wer"] is not None]
    passed_wer = [c["judge_wer"] for c in passed if c["judge_wer"] is not None]
    ratio = None
    if flagged_wer and passed_wer and statistics.fmean(passed_wer) > 0:
        ratio = round(statistics.fmean(flagged_wer) / statistics.fmean(passed_wer), 2)
    return {
        "cues": len(cues),
        "flagged": len(flagged),
        "flagged_share": round(len(flagged) / len(cues), 4) if cues else None,
        "flagged_judged_perfect": sum(c["judge_wer"] == 0 for c in flagged),
        "judge_wer_flagged": _mean(flagged_wer),
        "judge_wer_passed": _mean(passed_wer),
        "judge_wer_flagged_over_passed": ratio,
        "flagged_against_passed": flagged_against_passed(flagged_wer, passed_wer),
        "flagged_cues": flagged,
        "cue_list": cues,
    }


def rescore(record: dict) -> dict:
    """The record with every cue's judge WER recomputed from its stored transcript by today's
    text normaliser, so two runs scored under different normalisers compare on one; the
    per-length false alarms need every candidate's transcript, which the file does not keep."""
    from verifiers.textnorm import word_error_rate

    changed = 0
    for result in record["results"].values():
        for cue in result["cue_list"]:
            if cue["judge_wer"] is None or cue["judge_heard"] is None:
                continue
            wer = round(word_error_rate(cue["text"], cue["judge_heard"]), 4)
            changed += abs(wer - cue["judge_wer"]) > 1e-4
            cue["judge_wer"] = wer
        result.update(summarise_cues(result["cue_list"]))
    record["rescored"] = {
        "cues_changed": changed,
        "note": "judge WER recomputed from the stored transcripts (dub_lines.py --rescore); "
        "gate_false_alarms_by_length is as first measured",
    }
    return record


def false_alarms(manifest: dict) -> dict:
    """Per gate and clip-length bin: the share of judge-perfect candidates the gate rejects."""
    clean = [
        c
        for u in manifest["utterances"]
        for c in u["candidates"]
        if c.get("judge", {}).get("wer") == 0
    ]
    gates = sorted({g for c in clean for g in c["failed_gates"]})
    out = {}
    for low, high in LENGTH_BINS:
        group = [c for c in clean if low <= c["duration_s"] < high]
        label = f"{low:g}-{high:g} s" if high < 1e9 else f"{low:g} s and up"
        out[label] = {
            "candidates": len(group),
            "rejected_by_any_gate": round(
                sum(bool(c["failed_gates"]) for c in group) / len(group), 4
            )
            if group
            else None,
            **{
                gate: round(sum(gate in c["failed_gates"] for c in group) / len(group), 4)
                for gate in gates
                if group
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", nargs="+", default=list(INPUTS), choices=list(INPUTS))
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--label", default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--intervals",
        type=Path,
        help="only recompute the flagged-against-passed intervals of this result file's cues",
    )
    parser.add_argument(
        "--rescore",
        type=Path,
        help="only recompute this result file's cue judge WERs from their stored transcripts",
    )
    args = parser.parse_args()
    if args.rescore:
        record = rescore(json.loads(args.rescore.read_text(encoding="utf-8")))
        args.rescore.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        print(f"rescored {record['rescored']['cues_changed']} cues in {args.rescore}")
        return
    if args.intervals:
        record = json.loads(args.intervals.read_text(encoding="utf-8"))
        for result in record["results"].values():
            cues = result["cue_list"]
            result["flagged_against_passed"] = flagged_against_passed(
                [c["judge_wer"] for c in cues if c["flagged"] and c["judge_wer"] is not None],
                [c["judge_wer"] for c in cues if not c["flagged"] and c["judge_wer"] is not None],
            )
        args.intervals.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        return

    import verified_tts
    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.dub import dub
    from verified_tts.workflows.judge import load_judge

    config = build_config({}, candidates=args.n)
    synthesizer = Synthesizer.load(config)
    judge = load_judge("bundled:base")
    results = {}
    with tempfile.TemporaryDirectory() as temporary:
        for name in args.inputs:
            out = Path(temporary) / name
            dub(INPUTS[name], out, config, synthesizer=synthesizer)
            report, manifest = judge_run(judge, out)
            results[name] = summarise(report, manifest)
            summary = {
                k: v for k, v in results[name].items() if k not in ("cue_list", "flagged_cues")
            }
            print(name, json.dumps(summary), flush=True)
    record = {
        "benchmark": "dub_lines",
        "label": args.label or "after",
        "code": str(Path(verified_tts.__file__).resolve().parent.parent),
        "n": args.n,
        "judge": "bundled:base (Whisper base, beam 5)",
        "generator": synthesizer.generator.model,
        "inputs": {name: str(INPUTS[name].relative_to(ROOT)) for name in args.inputs},
        "results": results,
    }
    suffix = f"_{args.label}" if args.label else ""
    path = args.out or ROOT / "benchmarks" / "results" / f"dub_lines{suffix}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
