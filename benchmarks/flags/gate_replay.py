"""A gate's bounds replayed over a real-prose render: what each flags, and does the judge agree?

Input, as for ``benchmarks/selection/stop_replay.py``: a render made with the defaults and every
take kept (``benchmarks/real_prose/real_books.py`` leaves one in ``WORK/PART/after``) and the
judge's cache beside it (``judged.json``). The render's own recorded setting is replayed first and
must give its own takes, winners and flags. Then the shipped selection (today's profile: its gates
and stop setting) is replayed without the gate on ``--metric`` and with it at each of ``--bounds``
on
``--side`` (the gate on that metric is replaced whole; its shipped margin is kept), from the
render's own takes. A variant that would want a take the render never made leaves that utterance
out of every variant, so all are compared on the same utterances; how many is reported. The
judge (Whisper base, never used for selection) transcribes each variant's winners it has not
heard yet. Per variant: takes per utterance, flagged utterances (and how many the judge confirms
or hears perfectly), the judge WER of flagged winners against the rest and its ratio (the first
goal of the real-books issue), the judge WER gain of the winners over candidate 0 with its
paired interval, and each flagged line with what the judge and the verifier heard. The replay
says what a bound would do on the development render; a render measures it.

Usage: python -m benchmarks.flags.gate_replay --render WORK/dev/after --judged WORK/dev/judged.json
       [--metric wer] [--side max] [--bounds 0.3,0.4,0.5,0.75]
       [--output benchmarks/results/gate_replay_dev.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.selection.stop_replay import Outcome, read_render, replay
from verified_tts.paired import paired_gain
from verified_tts.selection.policy import Gate, SelectionPolicy


def variants(
    shipped: SelectionPolicy, metric: str, side: str, bounds: Sequence[float]
) -> list[tuple[str, SelectionPolicy]]:
    """The shipped policy without a gate on ``metric``, then with it at each bound."""
    others = tuple(g for g in shipped.gates if g.metric != metric)
    current = next((g for g in shipped.gates if g.metric == metric), None)
    margin = current.margin if current is not None else 0.0
    out = [("without", replace(shipped, gates=others))]
    for bound in bounds:
        gate = Gate(metric, margin=margin, **{side: bound})
        out.append((f"{side} {bound:g}", replace(shipped, gates=(*others, gate))))
    return out


def figures(
    rows: Sequence[Any], outcomes: Sequence[Outcome], judged: dict[str, tuple[float, str]]
) -> dict[str, Any]:
    from benchmarks.real_prose.real_books import _key

    def wer(u: Any, take: int) -> float:
        return judged[_key(u, take)][0]

    flagged = [(u, o) for u, o in zip(rows, outcomes, strict=True) if o.flagged]
    rest = [wer(u, o.winner) for u, o in zip(rows, outcomes, strict=True) if not o.flagged]
    flagged_wer = [wer(u, o.winner) for u, o in flagged]
    mean = lambda xs: round(statistics.fmean(xs), 4) if xs else None  # noqa: E731
    ratio = None
    if flagged_wer and rest and statistics.fmean(rest) > 0:
        ratio = round(statistics.fmean(flagged_wer) / statistics.fmean(rest), 2)
    gains = [wer(u, 0) - wer(u, o.winner) for u, o in zip(rows, outcomes, strict=True)]
    return {
        "takes_per_utterance": round(statistics.fmean(o.takes for o in outcomes), 3),
        "flagged": len(flagged),
        "flagged_share": round(len(flagged) / len(rows), 4),
        "flagged_judge_confirms": sum(1 for w in flagged_wer if w > 0),
        "flagged_judge_hears_perfectly": sum(1 for w in flagged_wer if w == 0),
        "judge_wer_flagged_winners": mean(flagged_wer),
        "judge_wer_other_winners": mean(rest),
        "judge_wer_ratio_flagged_to_rest": ratio,
        "judge_gain_over_candidate0": paired_gain(gains).as_dict("mean_gain"),
        "flagged_utterances": [
            {"text": u.text, "judge_wer": wer(u, o.winner),
             "judge_heard": judged[_key(u, o.winner)][1],
             "verifier_heard": str(u.candidates[o.winner].detail.get("transcript", ""))}
            for u, o in flagged
        ],  # fmt: skip
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", type=Path, required=True)
    parser.add_argument("--judged", type=Path, required=True)
    parser.add_argument("--judge", default="bundled:base")
    parser.add_argument("--metric", default="wer")
    parser.add_argument("--side", choices=("min", "max"), default="max")
    parser.add_argument("--bounds", default="0.3,0.4,0.5,0.75",
                        help="comma-separated bounds")  # fmt: skip
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    from benchmarks.real_prose.real_books import JudgeCache
    from verified_tts.config import build_config

    _, rows, takes, _ = read_render(args.render)
    bounds = [float(b) for b in args.bounds.split(",") if b.strip()]
    shipped = build_config({}).selection
    runs = [(name, [replay(t, p) for t in takes]) for name, p in variants(
        shipped, args.metric, args.side, bounds)]  # fmt: skip
    kept = [i for i in range(len(rows)) if all(outcomes[i] for _, outcomes in runs)]
    rows_kept = [rows[i] for i in kept]
    runs_kept = [(name, [outcomes[i] for i in kept]) for name, outcomes in runs]
    wanted = {(i, o.winner) for _, outcomes in runs_kept for i, o in enumerate(outcomes)}
    wanted |= {(i, 0) for i in range(len(rows_kept))}
    judged = JudgeCache(args.judged, args.judge).judge(
        args.render, [(rows_kept[row], take) for row, take in sorted(wanted)]
    )
    result = {
        "command": " ".join(["python", "-m", "benchmarks.flags.gate_replay", *sys.argv[1:]]),
        "render": str(args.render),
        "judge": args.judge,
        "gate": {"metric": args.metric, "side": args.side},
        "shipped_gate": next(
            ({"min": g.min, "max": g.max, "margin": g.margin}
             for g in shipped.gates if g.metric == args.metric), None),  # fmt: skip
        "stop_setting": {"rounds": list(shipped.rounds), "stop_gain": shipped.stop_gain,
                         "prior_spread": shipped.prior_spread},  # fmt: skip
        "utterances": len(kept),
        "left_out_needing_more_takes": len(rows) - len(kept),
        "variants": {name: figures(rows_kept, outcomes, judged) for name, outcomes in runs_kept},
    }
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    for name, row in result["variants"].items():
        gain = row["judge_gain_over_candidate0"]
        print(name, row["takes_per_utterance"], row["flagged"], row["flagged_judge_confirms"],
              row["judge_wer_ratio_flagged_to_rest"], gain["mean_gain"], gain["ci95"])  # fmt: skip


if __name__ == "__main__":
    main()
