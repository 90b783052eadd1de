"""Short lines the judge hears wrong but the gates pass: does any verifier signal point at them?

Dubs the DEVELOPMENT short dialogue lines (benchmarks/data/short_lines_development.srt, the first
halves of the books, benchmarks/dubbing/short_lines.py; never the held-out ones) with the defaults
(``verified-tts dub``, ``-n 4``, adaptive), has the independent judge (Whisper base,
``bundled:base``) transcribe every kept candidate (benchmarks/dubbing/dub_lines.py's helpers), and
asks of each signal the verifiers already compute whether it separates the passed winners the judge
hears wrong from those it hears word for word: the selection ASR's own transcript against the text
(``wer`` above 0), its worst token (``asr_min_logprob``, and ``asr_min_take_logprob`` on one-word
lines), its mean token log-probability, and agreement between a cue's takes (the share of the
cue's candidates whose selection transcript is the winner's). Per signal: the AUC over passed
winners (0.5 is no separation), and the rule "flag a passed cue whose winner is beyond the
signal's bound" at the loosest bound that keeps all flagged cues (the gates' and the rule's) at
or under 5% of the cues: how many cues it adds, how many of them the judge hears wrong, and the
judge WER of those added against the rest. The dub output and the judge's verdicts stay in
``--work``, so a rerun analyses again without dubbing or judging. Writes
benchmarks/results/short_line_signals.json. ``--split held-out`` measures the same on the held-out
lines (benchmarks/results/short_line_signals_held_out.json), to check what the development lines
showed, not to choose anything: there each rule's bound is again the loosest within the budget on
the lines measured, so its figures are the most any bound could catch there.

Usage: python -m benchmarks.flags.short_line_signals [--split development|held-out] [--n 4]
       [--work DIR] [--budget 0.05]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINES = {
    "development": ROOT / "benchmarks" / "data" / "short_lines_development.srt",
    "held-out": ROOT / "benchmarks" / "data" / "short_lines_held_out.srt",
}


def _words(text: str) -> str:
    """A transcript as the WER metrics compare it (Whisper's English normaliser)."""
    from verifiers.textnorm import normalize

    return normalize(text)


def dub_and_judge(lines: Path, work: Path, n: int) -> tuple[dict, dict]:
    """(dub.json, manifest.json with the judge's verdicts), made once and kept in ``work``."""
    judged = work / "judged_manifest.json"
    out = work / "dub"
    if judged.exists():
        return (
            json.loads((out / "dub.json").read_text(encoding="utf-8")),
            json.loads(judged.read_text(encoding="utf-8")),
        )
    from benchmarks.dubbing.dub_lines import judge_run
    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.dub import dub
    from verified_tts.workflows.judge import load_judge

    config = build_config({}, candidates=n)
    dub(lines, out, config, synthesizer=Synthesizer.load(config))
    report, manifest = judge_run(load_judge("bundled:base"), out)
    judged.write_text(json.dumps(manifest), encoding="utf-8")
    return report, manifest


def winners(report: dict, manifest: dict) -> list[dict]:
    """One row per cue: its winner's verifier signals, the gates' verdict and the judge's."""
    by_key = {u["key"]: u for u in manifest["utterances"]}
    rows = []
    for cue in report["cues"]:
        utterance = by_key[cue["key"]]
        takes = utterance["candidates"]
        winner = next(c for c in takes if c["index"] == cue["winner"])
        heard = _words(winner["detail"].get("transcript", ""))
        heard_takes = [_words(c["detail"].get("transcript", "")) for c in takes]
        metrics = winner["scores"]
        rows.append(
            {
                "text": cue["text"],
                "words": len(cue["text"].split()),
                "flagged": cue["flagged"],
                "judge_wer": winner.get("judge", {}).get("wer"),
                "judge_heard": winner.get("judge", {}).get("heard"),
                "asr_heard": winner["detail"].get("transcript"),
                "wer": metrics.get("wer"),
                "asr_min_logprob": metrics.get("asr_min_logprob"),
                "asr_min_take_logprob": metrics.get("asr_min_take_logprob"),
                "asr_logprob": metrics.get("asr_logprob"),
                "takes": len(takes),
                "take_agreement": sum(h == heard for h in heard_takes) / len(heard_takes),
            }
        )
    return rows


# name -> (value of a row, or None where it does not apply; higher means "more suspect")
SIGNALS: dict[str, Callable[[dict], float | None]] = {
    "asr transcript differs from the text (wer)": lambda r: r["wer"],
    "worst token, asr_min_logprob": lambda r: _neg(r["asr_min_logprob"]),
    "worst token once the takes agree, asr_min_take_logprob": lambda r: _neg(
        r["asr_min_take_logprob"]
    ),
    "worst token on one-word lines, asr_min_take_logprob": lambda r: (
        _neg(r["asr_min_take_logprob"]) if r["words"] == 1 else None
    ),
    "mean token log-probability, asr_logprob": lambda r: _neg(r["asr_logprob"]),
    "takes' transcripts disagree with the winner's (1 - agreement)": lambda r: (
        1.0 - r["take_agreement"] if r["takes"] > 1 else None
    ),
}


def _neg(value: float | None) -> float | None:
    return None if value is None else -value


def auc(wrong: list[float], right: list[float]) -> float | None:
    """Probability that a wrong winner's value exceeds a right one's (ties count half)."""
    if not wrong or not right:
        return None
    wins = sum((w > r) + 0.5 * (w == r) for w in wrong for r in right)
    return round(wins / (len(wrong) * len(right)), 4)


def rule_at_budget(rows: list[dict], value: Callable[[dict], float | None], budget: float) -> dict:
    """Flag passed cues whose value reaches a bound, at the loosest bound that keeps every flagged
    cue (the gates' and the rule's) at or under ``budget`` of the cues."""
    allowed = math.floor(budget * len(rows) + 1e-9) - sum(r["flagged"] for r in rows)
    scored = [(value(r), r) for r in rows if not r["flagged"] and value(r) is not None]
    bounds = sorted({v for v, _ in scored}, reverse=True)
    best: tuple[float | None, list[dict]] = (None, [])
    for bound in bounds:
        added = [r for v, r in scored if v >= bound]
        if len(added) > allowed:
            break
        best = (bound, added)
    bound, added = best
    rest = [r for r in rows if not r["flagged"] and r not in added]
    wrong_passed = sum((r["judge_wer"] or 0) > 0 for r in rows if not r["flagged"])
    return {
        "cues_it_may_add": max(allowed, 0),
        "bound": bound,
        "added": len(added),
        "added_judge_hears_wrong": sum((r["judge_wer"] or 0) > 0 for r in added),
        "share_of_passed_wrong_caught": round(
            sum((r["judge_wer"] or 0) > 0 for r in added) / wrong_passed, 4
        )
        if wrong_passed
        else None,
        "judge_wer_added": _mean([r["judge_wer"] for r in added]),
        "judge_wer_rest": _mean([r["judge_wer"] for r in rest]),
        "added_cues": [
            {k: r[k] for k in ("text", "judge_heard", "asr_heard", "judge_wer")} for r in added
        ],
    }


def _mean(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return round(statistics.fmean(found), 4) if found else None


def analyse(rows: list[dict], budget: float) -> dict:
    passed = [r for r in rows if not r["flagged"] and r["judge_wer"] is not None]
    signals = {}
    for name, value in SIGNALS.items():
        applies = [r for r in passed if value(r) is not None]
        wrong = [value(r) for r in applies if r["judge_wer"] > 0]
        right = [value(r) for r in applies if r["judge_wer"] == 0]
        signals[name] = {
            "passed_winners": len(applies),
            "judge_hears_wrong": len(wrong),
            "auc_wrong_vs_right": auc(wrong, right),
            "at_budget": rule_at_budget(rows, value, budget),
        }
    return {
        "cues": len(rows),
        "flagged_by_the_gates": sum(r["flagged"] for r in rows),
        "passed_judge_hears_wrong": sum(r["judge_wer"] > 0 for r in passed),
        "passed_judge_hears_wrong_one_word": sum(
            r["judge_wer"] > 0 and r["words"] == 1 for r in passed
        ),
        "passed_asr_transcript_differs": sum((r["wer"] or 0) > 0 for r in passed),
        "passed_wrong_where_the_asr_heard_it_right": sum(
            r["judge_wer"] > 0 and (r["wer"] or 0) == 0 for r in passed
        ),
        "passed_wrong_where_the_asr_heard_what_the_judge_heard": sum(
            r["judge_wer"] > 0 and _words(r["judge_heard"] or "") == _words(r["asr_heard"] or "")
            for r in passed
        ),
        "if_every_asr_mismatch_were_flagged": _mismatch_flags(rows, passed),
        "budget": budget,
        "signals": signals,
    }


def _mismatch_flags(rows: list[dict], passed: list[dict]) -> dict:
    """What flagging every passed cue whose selection transcript differs from the text would do."""
    added = [r for r in passed if (r["wer"] or 0) > 0]
    wrong = [r for r in passed if r["judge_wer"] > 0]
    return {
        "added": len(added),
        "flagged_share": round((len(added) + sum(r["flagged"] for r in rows)) / len(rows), 4),
        "added_judge_hears_wrong": sum(r["judge_wer"] > 0 for r in added),
        "added_judge_hears_right": sum(r["judge_wer"] == 0 for r in added),
        "passed_judge_hears_right": len(passed) - len(wrong),
        "share_of_passed_wrong_caught": round(
            sum(r["judge_wer"] > 0 for r in added) / len(wrong), 4
        )
        if wrong
        else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--work", type=Path, default=Path("/tmp/short_line_signals"))
    parser.add_argument("--budget", type=float, default=0.05, help="flagged share allowed")
    parser.add_argument("--split", choices=list(LINES), default="development")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    report, manifest = dub_and_judge(LINES[args.split], args.work, args.n)
    rows = winners(report, manifest)
    record = {
        "benchmark": "short_line_signals",
        "command": "python -m benchmarks.flags.short_line_signals"
        + f" --n {args.n} --budget {args.budget}"
        + (f" --split {args.split}" if args.split != "development" else ""),
        "input": str(LINES[args.split].relative_to(ROOT)),
        "n": args.n,
        "judge": "bundled:base (Whisper base, beam 5)",
        **analyse(rows, args.budget),
        "cue_list": rows,
    }
    suffix = "" if args.split == "development" else "_held_out"
    path = args.out or ROOT / "benchmarks" / "results" / f"short_line_signals{suffix}.json"
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in record.items() if k != "cue_list"}, indent=1)[:6000])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
