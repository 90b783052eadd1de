"""Which ranking of a line's takes finds the take the judge would pick? Rankings replayed.

Input: work folders of ``benchmarks/selection/judged_prose.py`` run with ``--pool 8`` (the render
as a user runs it, and every line's first 8 takes; every take of both heard by the judge, Whisper
base, which no ranking reads): the development sample, and a held-out one. Every take is scored
once more by tiny.en in its own window (:mod:`benchmarks.selection.rank_features`), and the
rankings of :mod:`benchmarks.selection.rank_rules` pick each line's winner from

- the render's own takes (as many as the shipped adaptive stop spent, with the scores that render
  gave them: a render whose stop is unchanged and whose ranking is the rule keeps exactly these
  winners, since the per-clip scores depend on a take's audio alone), and
- the first 2, 4 and 8 takes of the fixed-N pool (fixed N, scored together).

Per rule and setting: the judge WER of the winners, its paired gain over candidate 0 and over the
shipped ranking (95 % bootstrap intervals, absolute and relative), lines whose winner differs
from the shipped one, and flags. On the development lines a rule is chosen twice, on one half of
the lines (odd or even), by the mean judge WER of its winners over the render's takes and the 8
takes, and reported on the other half (pooled over the two halves). The held-out sample is then
read once, with the rule named by ``--rule`` (chosen on the development lines before it was
read) reported beside the others, and DNSMOS P.835 overall of its winners against candidate 0's
and the shipped ranking's (paired), so a ranking that buys words with a worse-sounding take
shows.

Usage: python -m benchmarks.selection.rank_replay --dev WORK [--held-out WORK] [--rule NAME]
       --output JSON
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from benchmarks.common.judged_render import dnsmos_scorer, relative_gain
from benchmarks.selection.rank_features import Line, add_clip_scores, load_lines
from benchmarks.selection.rank_rules import RankRule, pick
from verified_tts.paired import paired_gain

RULES = (
    RankRule("shipped (policy score, packed)", (("policy", 1.0),)),
    RankRule("packed reference log-prob", (("logprob", 1.0),)),
    RankRule("packed WER", (("wer", 1.0),)),
    RankRule("packed word-token log-prob", (("words_logprob", 1.0),)),
    RankRule("per-clip reference log-prob", (("clip_logprob", 1.0),)),
    RankRule("per-clip WER (beam 5)", (("clip_wer", 1.0),)),
    RankRule("per-clip word-token log-prob", (("clip_words_logprob", 1.0),)),
    RankRule(
        "per-clip policy score",
        (("clip_logprob", 1.0), ("clip_min_logprob", 0.1), ("speaker", 1.0)),
    ),
    RankRule("agreement among the takes' transcripts", (("agreement", 1.0),)),
    RankRule("packed + per-clip log-prob", (("logprob", 1.0), ("clip_logprob", 1.0))),
    RankRule("per-clip log-prob + WER", (("clip_logprob", 1.0), ("clip_wer", 1.0))),
    RankRule("per-clip log-prob + 0.5 WER", (("clip_logprob", 1.0), ("clip_wer", 0.5))),
    RankRule(
        "per-clip WER, ties to the higher per-clip log-prob",
        (("clip_wer", 1.0), ("clip_logprob", 0.001)),
    ),
    RankRule(
        "per-clip WER, ties to the higher packed score", (("clip_wer", 1.0), ("policy", 0.001))
    ),
    RankRule("packed + per-clip WER", (("wer", 1.0), ("clip_wer", 1.0))),
    RankRule("per-clip log-prob + agreement", (("clip_logprob", 1.0), ("agreement", 1.0))),
    *(
        RankRule(
            f"per-clip reference log-prob, take 0 unless beaten by {m}", (("clip_logprob", 1.0),), m
        )
        for m in (0.01, 0.02, 0.05)
    ),
    *(
        RankRule(f"shipped, take 0 unless beaten by {m}", (("policy", 1.0),), m)
        for m in (0.02, 0.05)
    ),
)
SHIPPED = RULES[0].name
SETTINGS = ("render", "N=2", "N=4", "N=8")


def sample(work: Path) -> dict[str, list[Line]]:
    """The lines of each setting, with their per-clip scores (scored once, cached in ``work``)."""
    cache = work / "clip_scores.json"
    pool = add_clip_scores(load_lines(work, "pool8-*", 8), cache)
    render = add_clip_scores(load_lines(work, "render*", 1), cache)
    keys = {line.key for line in pool} & {line.key for line in render}
    pool = [line for line in pool if line.key in keys]
    render = [line for line in render if line.key in keys]
    out = {"render": render}
    for n in (2, 4, 8):
        out[f"N={n}"] = [replace(line, takes=line.takes[:n]) for line in pool]
    return out


def winners(rule: RankRule, lines: Sequence[Line], policy: Any) -> list[tuple[int, bool]]:
    return [pick(rule, line.takes, policy) for line in lines]


def figures(
    lines: Sequence[Line], won: Sequence[tuple[int, bool]], shipped: Sequence[tuple[int, bool]]
) -> dict[str, Any]:
    """The judged figures of one rule's winners (module docstring)."""
    c0 = [line.takes[0].judge_wer for line in lines]
    mine = [line.takes[w].judge_wer for line, (w, _) in zip(lines, won, strict=True)]
    base = [line.takes[w].judge_wer for line, (w, _) in zip(lines, shipped, strict=True)]
    return {
        "judge_wer": round(statistics.fmean(mine), 4),
        "gain_over_candidate0": paired_gain([a - b for a, b in zip(c0, mine, strict=True)]).as_dict(
            "gain"
        ),
        "relative_to_candidate0": relative_gain(c0, mine),
        "gain_over_shipped": paired_gain([a - b for a, b in zip(base, mine, strict=True)]).as_dict(
            "gain"
        ),
        "lines_winner_differs_from_shipped": sum(
            a != b for (a, _), (b, _) in zip(won, shipped, strict=True)
        ),
        "lines_winner_not_take_0": sum(w != 0 for w, _ in won),
        "flagged": sum(f for _, f in won),
    }


def baseline(lines: Sequence[Line]) -> dict[str, Any]:
    c0 = [line.takes[0].judge_wer for line in lines]
    oracle = [min(t.judge_wer for t in line.takes) for line in lines]
    return {
        "lines": len(lines),
        "takes_per_line": round(statistics.fmean(len(line.takes) for line in lines), 3),
        "judge_wer_candidate0": round(statistics.fmean(c0), 4),
        "judge_wer_mean_take": round(
            statistics.fmean(statistics.fmean(t.judge_wer for t in line.takes) for line in lines),
            4,
        ),
        "judge_wer_oracle": round(statistics.fmean(oracle), 4),
        "oracle_relative_to_candidate0": relative_gain(c0, oracle),
    }


def evaluate(settings: dict[str, list[Line]], policy: Any) -> dict[str, Any]:
    """Every rule's figures in every setting, and its winners (for the folds and DNSMOS)."""
    out: dict[str, Any] = {"settings": {}, "winners": {}}
    for setting, lines in settings.items():
        picked = {rule.name: winners(rule, lines, policy) for rule in RULES}
        out["winners"][setting] = picked
        out["settings"][setting] = {
            **baseline(lines),
            "rules": {name: figures(lines, won, picked[SHIPPED]) for name, won in picked.items()},
        }
    return out


def folds(settings: dict[str, list[Line]], picked: dict[str, dict[str, list]]) -> dict[str, Any]:
    """Choose a rule on one half of the lines, report it on the other (module docstring)."""
    count = len(settings["render"])
    halves = [list(range(0, count, 2)), list(range(1, count, 2))]
    chosen, reported = [], {s: [] for s in ("render", "N=8")}

    def mean_wer(name: str, rows: list[int]) -> float:
        return statistics.fmean(
            statistics.fmean(settings[s][i].takes[picked[s][name][i][0]].judge_wer for i in rows)
            for s in ("render", "N=8")
        )

    for tune, report in (halves, halves[::-1]):
        best = min((rule.name for rule in RULES), key=lambda name: (mean_wer(name, tune), name))
        chosen.append(best)
        for s in reported:
            reported[s] += [(i, best) for i in report]
    pooled = {}
    for s, rows in reported.items():
        lines = [settings[s][i] for i, _ in rows]
        won = [picked[s][name][i] for i, name in rows]
        shipped = [picked[s][SHIPPED][i] for i, _ in rows]
        pooled[s] = figures(lines, won, shipped)
    return {
        "rule": "lines split by parity; on each half the rule with the lowest mean judge WER of "
        "its winners (the render's takes and the 8 takes, averaged) is chosen and reported on "
        "the other half; the two reported halves pooled",
        "chosen": chosen,
        "reported_on_the_other_half": pooled,
    }


def dnsmos(
    settings: dict[str, list[Line]], picked: dict[str, dict[str, list]], rule: str, cache: Path
) -> dict[str, Any]:
    """DNSMOS overall of ``rule``'s winners against candidate 0's and the shipped ranking's."""
    from verified_tts.storage.atomic import write_json_atomic

    known: dict[str, float] = (
        json.loads(cache.read_text(encoding="utf-8")) if cache.is_file() else {}
    )
    score = None
    out = {}
    for s in ("render", "N=8"):
        lines = settings[s]
        wanted = [
            (line, i)
            for line, (w, _), (v, _) in zip(lines, picked[s][rule], picked[s][SHIPPED], strict=True)
            for i in dict.fromkeys((0, w, v))
        ]
        for line, i in wanted:
            take = line.takes[i]
            if take.key not in known:
                score = score or dnsmos_scorer()
                known[take.key] = score(Path(line.folder) / take.audio)
        write_json_atomic(cache, known)

        def of(arm: str, lines: list[Line] = lines, s: str = s) -> list[float]:
            if arm == "candidate0":
                return [known[line.takes[0].key] for line in lines]
            return [
                known[line.takes[w].key] for line, (w, _) in zip(lines, picked[s][arm], strict=True)
            ]

        c0, shipped, mine = of("candidate0"), of(SHIPPED), of(rule)
        out[s] = {
            "candidate0": round(statistics.fmean(c0), 4),
            "shipped": round(statistics.fmean(shipped), 4),
            "rule": round(statistics.fmean(mine), 4),
            "rule_minus_candidate0": paired_gain(
                [b - a for a, b in zip(c0, mine, strict=True)]
            ).as_dict("difference"),
            "rule_minus_shipped": paired_gain(
                [b - a for a, b in zip(shipped, mine, strict=True)]
            ).as_dict("difference"),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, required=True)
    parser.add_argument("--held-out", type=Path, default=None)
    parser.add_argument("--rule", default=None, help="the rule chosen before the held-out read")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()

    from verified_tts.selection.policy import default_policy
    from verified_tts.storage.atomic import write_json_atomic

    policy = replace(default_policy(), adaptive=False)
    dev = sample(args.dev)
    dev_result = evaluate(dev, policy)
    data: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "benchmarks.selection.rank_replay", *sys.argv[1:]]),
        "judge": "bundled:base (Whisper base; no rule reads it)",
        "rules": [asdict(rule) for rule in RULES],
        "development": {
            "settings": dev_result["settings"],
            "folds": folds(dev, dev_result["winners"]),
        },
    }
    if args.rule:
        data["rule"] = args.rule
        data["development"]["dnsmos_overall"] = dnsmos(
            dev, dev_result["winners"], args.rule, args.dev / "dnsmos_rank.json"
        )
    if args.held_out:
        held = sample(args.held_out)
        held_result = evaluate(held, policy)
        data["held_out"] = {"settings": held_result["settings"]}
        if args.rule:
            data["held_out"]["dnsmos_overall"] = dnsmos(
                held, held_result["winners"], args.rule, args.held_out / "dnsmos_rank.json"
            )
    write_json_atomic(args.output, data)
    for part in ("development", "held_out"):
        for setting, found in data.get(part, {}).get("settings", {}).items():
            print(
                part,
                setting,
                found["lines"],
                "c0",
                found["judge_wer_candidate0"],
                "oracle",
                found["judge_wer_oracle"],
                file=sys.stderr,
            )
            for name, f in found["rules"].items():
                g = f["gain_over_candidate0"]
                print(
                    f"  {name:60s} {f['judge_wer']:.4f} gain {g['gain']:+.4f} {g['ci95']}",
                    file=sys.stderr,
                )


if __name__ == "__main__":
    main()
