"""Which lines are in doubt? Stop rules replayed over a render where every line has all 8 takes.

Input: a work folder of ``benchmarks/selection/judged_prose.py`` run with ``--pool 8`` (every
line's first 8 takes scored by the verifiers in a fixed-N render, and every take judged by Whisper
base). A stop rule decides after 2, 4 and 6 takes whether a line goes on, from what the verifiers
said of its takes so far; the winner is the selection policy's pick among the takes it spent
(``verified_tts.selection.consensus.judge_all``, ``policy.choose``), so each rule is replayed from
the same takes (packed scoring heard each take beside its fixed-N round's, not the round an
adaptive render would have made: the replay chooses a rule, a render measures it). Rules:

- ``shipped``: today's ``expected_gain`` stop (the packed profile);
- ``fixed-K``: every line K takes;
- ``doubt(own=T, disagree=D, shared_stop=S)``: a line goes on while no take passed, or the best
  passing take's own worst token (``asr_min_take_logprob``: the doubt its line's other takes do
  not share) is below T, or (D) the verifier heard the takes so far as different words; with S, a
  line whose only doubt is a word every take gets low (a pronunciation or the ASR's vocabulary,
  which more takes do not change) stops.

Per rule: takes a line, the judge WER of the winners and its paired gain over candidate 0 (95 %
interval, absolute and relative), flagged lines and the flagged winners' judge WER against the
rest's. Also, per signal measured after the first 2 takes, how the judge's gain of going on to 8
takes splits between the lines above and below its median (a yes/no signal: yes and no).

Usage: python -m benchmarks.selection.doubt_replay --work WORK --pool 8 --output JSON
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.common.judged_render import relative_gain, take_key
from verified_tts.paired import paired_gain

ROUNDS = (2, 4, 6, 8)


def heard(detail: Any) -> str:
    from verifiers.textnorm import normalize

    return normalize(str(detail.get("transcript", "")))


def own_worst(takes: Sequence[Any], best: int) -> float:
    """The best take's worst token with its line's shared doubt taken off."""
    from verified_tts.selection.consensus import with_take_metrics

    metrics = with_take_metrics([t.scores for t in takes], [t.detail for t in takes])
    value = metrics[best].get("asr_min_take_logprob")
    return float(value) if value is not None else 0.0


def shared_only(takes: Sequence[Any]) -> bool:
    """Some word every take gets low, and no take's own doubt beyond it (see module docstring)."""
    from verified_tts.selection.consensus import shared_hard_words

    return bool(shared_hard_words([t.detail for t in takes]))


Rule = Callable[[Sequence[Any], list[Any]], bool]  # (takes so far, judgements) -> stop


def doubt_rule(own: float | None, disagree: bool, shared_stop: bool) -> Rule:
    def stop(takes: Sequence[Any], judgements: list[Any]) -> bool:
        passing = [i for i, j in enumerate(judgements) if j.passed]
        if not passing:
            return False
        best = max(passing, key=lambda i: (judgements[i].score, -i))
        if shared_stop and shared_only(takes) and own_worst(takes, best) >= -2.0:
            return True
        if own is not None and own_worst(takes, best) < own:
            return False
        return not (disagree and len({heard(t.detail) for t in takes}) > 1)

    return stop


def replay_line(takes: Sequence[Any], policy: Any, stop: Rule | None, fixed: int | None) -> tuple:
    """(takes spent, winner, flagged) of one line under a rule."""
    from verified_tts.selection.consensus import judge_all
    from verified_tts.selection.policy import choose, should_stop

    for k in ROUNDS if fixed is None else (fixed,):
        first = takes[:k]
        judgements = judge_all([(t.scores, t.detail) for t in first], policy)
        last = k == ROUNDS[-1] or fixed is not None
        go_on = (
            not should_stop(judgements, ROUNDS[-1], policy)
            if stop is None
            else not stop(first, judgements)
        )
        if last or not go_on:
            winner, flagged = choose(judgements)
            return k, winner, flagged
    raise AssertionError("the last round always decides")


def figures(rows: Sequence[Any], outcomes: list[tuple], judged: dict) -> dict[str, Any]:
    c0 = [judged[take_key(u, 0)][0] for u in rows]
    won = [judged[take_key(u, w)][0] for u, (_, w, _) in zip(rows, outcomes, strict=True)]
    flagged = [w for w, (_, _, f) in zip(won, outcomes, strict=True) if f]
    rest = [w for w, (_, _, f) in zip(won, outcomes, strict=True) if not f]
    ratio = None
    if flagged and rest and statistics.fmean(rest) > 0:
        ratio = round(statistics.fmean(flagged) / statistics.fmean(rest), 2)
    return {
        "takes_per_line": round(statistics.fmean(k for k, _, _ in outcomes), 3),
        "judge_wer_winner": round(statistics.fmean(won), 4),
        "gain_over_candidate0": paired_gain([a - b for a, b in zip(c0, won, strict=True)]).as_dict(
            "gain"
        ),
        "relative": relative_gain(c0, won),
        "flagged": len(flagged),
        "flagged_ratio_to_rest": ratio,
    }


def signals(takes: Sequence[Any], policy: Any) -> dict[str, float]:
    """What the verifiers say of a line after its first 2 takes."""
    from verified_tts.selection.consensus import judge_all
    from verified_tts.selection.policy import choose

    first = takes[:2]
    judgements = judge_all([(t.scores, t.detail) for t in first], policy)
    best, _ = choose(judgements)
    logprobs = [float(t.scores.get("asr_logprob", 0.0)) for t in first]
    return {
        "no take passed": float(not any(j.passed for j in judgements)),
        "best take's reference log-prob (low: doubt)": -logprobs[best],
        "best take's own worst token (low: doubt)": -own_worst(first, best),
        "the two takes heard as different words": float(
            heard(first[0].detail) != heard(first[1].detail)
        ),  # fmt: skip
        "a word every take gets low": float(shared_only(first)),
        "log-prob spread between the takes": abs(logprobs[0] - logprobs[1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--pool", type=int, default=8)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()

    from verified_tts.output.manifest import read_manifest
    from verified_tts.selection.policy import default_policy
    from verified_tts.storage.atomic import write_json_atomic

    rows = [
        u
        for folder in sorted(args.work.glob(f"pool{args.pool}*"))
        for u in read_manifest(folder).utterances
    ]
    cache = json.loads((args.work / "judged.json").read_text(encoding="utf-8"))["clips"]
    judged = {key: (wer, heard_) for key, (wer, heard_, _) in cache.items()}
    rows = [u for u in rows if all(take_key(u, i) in judged for i in range(len(u.candidates)))]
    policy = replace(default_policy(), adaptive=True)
    rules: dict[str, tuple[Rule | None, int | None]] = {"shipped": (None, None)}
    rules |= {f"fixed-{k}": (None, k) for k in ROUNDS}
    for own, disagree, shared in itertools.product(
        (None, -1.0, -2.0, -3.0, -4.0, -5.0), (False, True), (False, True)
    ):
        if own is None and not disagree:
            continue
        name = f"doubt(own={own}, disagree={disagree}, shared_stop={shared})"
        rules[name] = (doubt_rule(own, disagree, shared), None)
    results = []
    for name, (stop, fixed) in rules.items():
        outcomes = [replay_line(u.candidates, policy, stop, fixed) for u in rows]
        results.append({"rule": name, **figures(rows, outcomes, judged)})
        print(json.dumps(results[-1]), file=sys.stderr)
    # the judge's gain of 8 takes over 2 (fixed), split by each signal after the first 2
    two = [replay_line(u.candidates, policy, None, 2) for u in rows]
    eight = [replay_line(u.candidates, policy, None, 8) for u in rows]
    gains = [
        judged[take_key(u, a[1])][0] - judged[take_key(u, b[1])][0]
        for u, a, b in zip(rows, two, eight, strict=True)
    ]
    measured = [signals(u.candidates, policy) for u in rows]
    split = {}
    for signal in measured[0]:
        values = [m[signal] for m in measured]
        # a yes/no signal splits at yes; a measure at its median
        cut = 0.5 if set(values) <= {0.0, 1.0} else statistics.median(values)
        high = [g for g, v in zip(gains, values, strict=True) if v > cut]
        low = [g for g, v in zip(gains, values, strict=True) if v <= cut]
        split[signal] = {
            "above_median": {"lines": len(high), "gain": round(statistics.fmean(high), 4)
                             if high else None},
            "at_or_below": {"lines": len(low), "gain": round(statistics.fmean(low), 4)
                            if low else None},
        }  # fmt: skip
    write_json_atomic(
        args.output,
        {
            "command": " ".join(["python -m benchmarks.selection.doubt_replay", *sys.argv[1:]]),
            "lines": len(rows),
            "rules": results,
            "gain_of_8_over_2_by_signal_after_2": split,
        },
    )


if __name__ == "__main__":
    main()
