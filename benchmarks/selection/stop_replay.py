"""Adaptive stop settings replayed over a finished real-prose render: fewer takes, the same gain?

Input: a render made with the defaults and every take kept (``benchmarks/real_prose/real_books.py``
leaves one in ``WORK/PART/after``) and the judge's cache beside it (``judged.json``). An adaptive
decision after k takes depends only on those k takes' scores and details
(``verified_tts.selection.consensus.judge_all``, ``verified_tts.selection.policy.should_stop``), so
a setting that stops each utterance no later than the render did is replayed from the render's own
takes; a setting that would want a take the render never made is reported as not replayable rather
than guessed. (Packed scoring hears a take beside the other takes of its round, so a replayed
utterance whose neighbours stopped sooner could have scored a little differently: the replay chooses
a setting, a render measures it.) The setting the render recorded in its manifest is replayed first
and must give the render's own takes and winners. The judge (Whisper base, never used for selection)
transcribes every replayed winner it has not heard yet, added to the cache. Per setting: takes per
utterance, flagged utterances, the judge WER gain of the winners over candidate 0 with its paired
interval, the share of the render's gain kept and the winners that changed. The setting chosen is
the one with the most takes per utterance within ``--most-takes`` (the speed budget: takes cost
nearly all of a render's time) among those whose gain is at least the render's with a paired
interval above 0; with ``--rule budget``, for a budget below what the render's gain needs, the one
with the largest gain within ``--most-takes`` among those whose paired interval is above 0 (ties:
fewer takes).

Usage: python -m benchmarks.selection.stop_replay --render WORK/dev/after --judged
WORK/dev/judged.json
       [--most-takes 4.2] [--rule keep-gain|budget]
       [--output benchmarks/results/stop_replay_dev.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from verified_tts.paired import paired_gain
from verified_tts.selection.policy import (
    Gate,
    SelectionPolicy,
    choose,
    default_policy,
    round_targets,
)

ROOT = Path(__file__).resolve().parents[2]
N = 8
SCHEDULES = ((2, 4), (1, 2, 4), (2, 4, 6), (1, 2, 4, 6))
STOP_GAINS = (0.01, 0.015, 0.02, 0.03, 0.05, 0.08)
PRIOR_SPREADS = (0.3, 0.2, 0.1)


@dataclass(frozen=True)
class Outcome:
    """One utterance replayed under one setting."""

    winner: int
    takes: int
    flagged: bool


def replay(takes: Sequence[tuple[Any, Any]], policy: SelectionPolicy) -> Outcome | None:
    """The adaptive render of one utterance from its takes' (metrics, detail); None when the
    setting would go on past the takes the render made."""
    from verified_tts.selection.consensus import judge_all
    from verified_tts.selection.policy import should_stop

    for target in round_targets(N, policy):
        if target > len(takes):
            return None
        judgements = judge_all(takes[:target], policy)
        if target == N or should_stop(judgements, N, policy):
            winner, flagged = choose(judgements)
            return Outcome(winner, target, flagged)
    raise AssertionError("round_targets ends at N")


def recorded_policy(selection: Mapping[str, Any]) -> SelectionPolicy:
    """The policy a render recorded in its manifest (its gates, weights and stop setting)."""
    return replace(
        default_policy(),
        gates=tuple(Gate(**gate) for gate in selection["gates"]),
        weights=dict(selection["weights"]),
        rounds=tuple(r for r in selection["rounds"] if r < N),
        **{name: selection[name] for name in ("stop", "stop_gain", "prior_spread", "prior_weight")},
    )


def replayed_render(
    rows: Sequence[Any], takes: Sequence[Sequence[tuple[Any, Any]]], policy: SelectionPolicy
) -> list[Outcome]:
    """The render replayed under its own recorded ``policy``; exits when that does not give the
    render's own takes, winners and flags (a replay of anything else would mean nothing)."""
    rendered = [replay(t, policy) for t in takes]
    mismatched = [
        u.key for u, o in zip(rows, rendered, strict=True)
        if o is None or (o.winner, o.takes, o.flagged) != (u.winner, len(u.candidates), u.flagged)
    ]  # fmt: skip
    if mismatched:
        sys.exit(
            f"the render's own setting does not replay the render ({len(mismatched)} utterances "
            f"differ, e.g. {mismatched[0]}): was it rendered with another setting?"
        )
    return rendered  # type: ignore[return-value]


def read_render(
    path: Path,
) -> tuple[Any, list[Any], list[list[tuple[Any, Any]]], list[Outcome]]:
    """A finished render's manifest, utterance records, each utterance's takes as (metrics,
    detail), and its own decisions replayed under the setting it recorded
    (:func:`replayed_render`, which exits when they differ)."""
    from verified_tts.output.manifest import read_manifest

    manifest = read_manifest(path)
    rows = list(manifest.utterances)
    takes = [[(c.scores, c.detail) for c in u.candidates] for u in rows]
    return manifest, rows, takes, replayed_render(rows, takes, recorded_policy(manifest.selection))


def settings_grid(base: SelectionPolicy) -> list[SelectionPolicy]:
    return [
        replace(base, rounds=rounds, stop_gain=gain, prior_spread=spread)
        for rounds in SCHEDULES
        for spread in PRIOR_SPREADS
        for gain in STOP_GAINS
    ]


def describe(policy: SelectionPolicy) -> dict[str, Any]:
    return {"rounds": list(policy.rounds), "stop_gain": policy.stop_gain,
            "prior_spread": policy.prior_spread, "prior_weight": policy.prior_weight}  # fmt: skip


def figures(
    rows: Sequence[Any], outcomes: Sequence[Outcome], rendered: Sequence[Outcome],
    judged: dict[str, tuple[float, str]],
) -> dict[str, Any]:  # fmt: skip
    from benchmarks.real_prose.real_books import _key

    gains = [
        judged[_key(u, 0)][0] - judged[_key(u, o.winner)][0]
        for u, o in zip(rows, outcomes, strict=True)
    ]
    rendered_gain = statistics.fmean(
        judged[_key(u, 0)][0] - judged[_key(u, o.winner)][0]
        for u, o in zip(rows, rendered, strict=True)
    )
    mean_gain = statistics.fmean(gains)
    return {
        "takes_per_utterance": round(statistics.fmean(o.takes for o in outcomes), 3),
        "flagged": sum(o.flagged for o in outcomes),
        "judge_gain_over_candidate0": paired_gain(gains).as_dict("mean_gain"),
        "share_of_rendered_gain": (
            round(mean_gain / rendered_gain, 3) if rendered_gain > 0 else None
        ),
        "winners_changed": sum(
            o.winner != s.winner for o, s in zip(outcomes, rendered, strict=True)
        ),
    }


RULES = {
    "keep-gain": "the most takes per utterance within {budget:g} among the settings whose gain "
    "is at least the render's own setting's, paired interval above 0",
    "budget": "the largest gain among the settings within {budget:g} takes per utterance whose "
    "paired interval is above 0 (ties: fewer takes)",
}


def choose_setting(
    rows: Sequence[dict[str, Any]], rendered: dict[str, Any], budget: float, rule: str
) -> dict[str, Any] | None:
    """The setting ``rule`` (a key of :data:`RULES`) picks among the replayed ``rows``."""

    def gain(row: dict[str, Any]) -> float:
        return row["judge_gain_over_candidate0"]["mean_gain"]

    within = [
        r for r in rows
        if r["judge_gain_over_candidate0"]["ci95"][0] > 0 and r["takes_per_utterance"] <= budget
    ]  # fmt: skip
    if rule == "budget":
        return max(within, key=lambda r: (gain(r), -r["takes_per_utterance"]), default=None)
    keeping = [r for r in within if gain(r) >= rendered["judge_gain_over_candidate0"]["mean_gain"]]
    return max(keeping, key=lambda r: r["takes_per_utterance"], default=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", type=Path, required=True)
    parser.add_argument("--judged", type=Path, required=True)
    parser.add_argument("--judge", default="bundled:base")
    parser.add_argument("--most-takes", type=float, default=4.2,
                        help="the speed budget in takes per utterance")  # fmt: skip
    parser.add_argument("--rule", choices=RULES, default="keep-gain")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    manifest, rows, takes, rendered = read_render(args.render)
    base = recorded_policy(manifest.selection)
    replayed: list[tuple[SelectionPolicy, list[Outcome]]] = []
    not_replayable = []
    for policy in settings_grid(base):
        outcomes = [replay(t, policy) for t in takes]
        if any(o is None for o in outcomes):
            not_replayable.append(
                {**describe(policy), "utterances_needing_more_takes": outcomes.count(None)}
            )
            continue
        replayed.append((policy, outcomes))  # type: ignore[arg-type]
    wanted = {(i, o.winner) for _, outcomes in replayed for i, o in enumerate(outcomes)}
    wanted |= {(i, 0) for i in range(len(rows))}
    from benchmarks.real_prose.real_books import JudgeCache

    judged = JudgeCache(args.judged, args.judge).judge(
        args.render, [(rows[row], take) for row, take in sorted(wanted)]
    )
    rendered_figures = figures(rows, rendered, rendered, judged)
    rows_out = [{**describe(p), **figures(rows, o, rendered, judged)} for p, o in replayed]
    chosen = choose_setting(rows_out, rendered_figures, args.most_takes, args.rule)
    result = {
        "command": " ".join(["python", "-m", "benchmarks.selection.stop_replay", *sys.argv[1:]]),
        "render": str(args.render),
        "utterances": len(rows),
        "judge": args.judge,
        "rendered": {**describe(base), **rendered_figures},
        "most_takes": args.most_takes,
        "rule": RULES[args.rule].format(budget=args.most_takes),
        "chosen": chosen,
        "settings": rows_out,
        "not_replayable": not_replayable,
    }
    text = json.dumps(result, indent=2) + "\n"
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    for row in result["settings"]:
        gain = row["judge_gain_over_candidate0"]
        print(row["rounds"], row["stop_gain"], row["prior_spread"], row["takes_per_utterance"],
              row["flagged"], gain["mean_gain"], gain["ci95"],
              row["share_of_rendered_gain"])  # fmt: skip
    print("chosen:", json.dumps(chosen))


if __name__ == "__main__":
    main()
