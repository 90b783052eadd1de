"""Adaptive N=8 rendered round by round and judged: its real-time factor and the judge's gain,
against fixed N=8 on the same candidates.

Replaying the stop rule over a fixed-N run's scores (benchmarks/selection/adaptive_replay.py) is
exact for per-clip Whisper scoring only: a packed score depends on which utterances share its
round's windows, and the later rounds of an adaptive render hold fewer of them. This renders the
first Harvard sentences (the package's copy, benchmarks/common/harvard.py) at N=8 adaptive with a
config, in a fresh store so the time is that setting's alone, and has the judge (Whisper base,
``bundled:base``, never used by the verifiers) transcribe every winner. Judge WERs of the fixed-N
A/B run of the same sentences and config (``--fixed``, an ``ab_benchmark.py`` output folder, with
``selection_rules.py``'s judge cache) are reused: candidate k's seed depends only on its utterance
and k, so it is the same audio in both runs (checked by duration). Reports candidates per
utterance, the real-time factor in wall and CPU seconds, the judge's paired gain over candidate 0
of the adaptive winners and of fixed N=8's, the share of fixed N=8's gain kept, and how often the
rendered winner and candidate count are those the replay over the fixed run predicts; with
``--against`` another run's output of the same sentences, the paired difference of the winners'
judge WER. Writes benchmarks/results/adaptive_judged.json (or --output).

Usage: python -m benchmarks.selection.adaptive_judged --fixed benchmarks/work/ab_packed/out
       [--config benchmarks/configs/packed_greedy.toml] [--sentences 300] [--work DIR]
       [--output JSON] [--note TEXT] [--against OTHER_RUN_JSON]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import time
from pathlib import Path

from benchmarks.common.harvard import harvard_book
from benchmarks.selection.selection_rules import already_judged
from verified_tts.paired import paired_gain

ROOT = Path(__file__).resolve().parents[2]


def judge_cache(fixed: Path) -> dict[tuple[str, int], float]:
    """Every judge WER known for the fixed run's candidates: its A/B arms and the judge cache."""
    known = already_judged(fixed)
    cache = fixed / "judge_cache.json"
    if cache.is_file():
        for key, index, wer in json.loads(cache.read_text(encoding="utf-8")):
            known.setdefault((key, int(index)), float(wer))
    return known


def replayed(fixed_manifest, policy, n: int) -> dict[str, tuple[int, int]]:
    """(winner, candidates) per utterance key that an adaptive render would keep if every
    candidate scored as it did in the fixed run."""
    from verified_tts.selection.policy import choose, judge, round_targets, should_stop

    out = {}
    for u in fixed_manifest.utterances:
        judgements = [judge(c.scores, policy) for c in u.candidates]
        for target in round_targets(n, policy):
            if target == n or should_stop(judgements[:target], n, policy):
                out[u.key] = (choose(judgements[:target])[0], target)
                break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixed", type=Path, required=True, help="the fixed-N A/B output folder")
    parser.add_argument("--config", type=Path, default=None, help="render config TOML")
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work" / "adaptive")
    parser.add_argument(
        "--output", type=Path, default=ROOT / "benchmarks" / "results" / "adaptive_judged.json"
    )
    parser.add_argument("--note", default=None, help="conditions of the run, kept in the JSON")
    parser.add_argument(
        "--against", type=Path, default=None, help="another run's JSON: paired judge WER difference"
    )
    args = parser.parse_args()

    from verified_tts.config import build_config, read_config_file
    from verified_tts.output.manifest import read_manifest
    from verified_tts.workflows.judge import judge_clips, load_judge
    from verified_tts.workflows.render import render

    table = read_config_file(args.config) if args.config else {}
    config = build_config(table, candidates=args.n, adaptive=True, keep="all")
    fixed = read_manifest(args.fixed)
    if fixed.n < args.n or len(fixed.utterances) < args.sentences:
        raise SystemExit(
            f"{args.fixed} holds {len(fixed.utterances)} utterances at N={fixed.n}: run "
            f"ab_benchmark.py --sentences {args.sentences} with the same config first"
        )
    if args.work.exists():  # a fresh store: the time is this setting's alone
        shutil.rmtree(args.work)
    book = harvard_book(args.work / "harvard.md", args.sentences)
    started, cpu_started = time.perf_counter(), time.process_time()
    render(book, args.work / "out", config)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started  # every thread of this process
    rendered = read_manifest(args.work / "out")

    by_key = {u.key: u for u in fixed.utterances}
    known = judge_cache(args.fixed)
    wanted, rows = {}, []
    for u in rendered.utterances:
        twin = by_key.get(u.key)
        if twin is None or twin.text != u.text:
            raise SystemExit(f"utterance {u.key} is not in {args.fixed}: render the same book")
        for c in u.candidates:  # same seed, same audio: the durations must agree
            if abs((c.duration_s or 0.0) - (twin.candidates[c.index].duration_s or 0.0)) > 0.01:
                raise SystemExit(f"candidate {c.index} of {u.key} differs from the fixed run's")
        for index in (u.winner, 0):
            if (u.key, index) not in known:
                wanted[(u.key, index)] = (u.candidates[index].audio, u.text)
        rows.append((u, twin))
    judge_started = time.perf_counter()
    fresh = judge_clips(load_judge("bundled:base"), wanted, args.work / "out").transcripts
    known.update({key: wer for key, (wer, _) in fresh.items()})
    judge_seconds = time.perf_counter() - judge_started

    from verified_tts.selection.policy import choose, judge

    predicted = replayed(fixed, config.selection, args.n)
    adaptive_gains, fixed_gains, used, per_utterance = [], [], [], []
    same_winner = same_count = 0
    for u, twin in rows:
        full = choose([judge(c.scores, config.selection) for c in twin.candidates[: args.n]])[0]
        if (u.key, full) not in known:
            raise SystemExit(
                f"fixed N={args.n}'s winner of {u.key} was never judged: run "
                f"selection_rules.py {args.fixed} first"
            )
        base = known[(u.key, 0)]
        adaptive_gains.append(base - known[(u.key, u.winner)])
        fixed_gains.append(base - known[(u.key, full)])
        used.append(len(u.candidates))
        per_utterance.append(
            {
                "key": u.key,
                "winner": u.winner,
                "candidates": len(u.candidates),
                "judge_wer": known[(u.key, u.winner)],
                "candidate0_judge_wer": base,
            }
        )
        winner, count = predicted[u.key]
        same_winner += winner == u.winner
        same_count += count == len(u.candidates)
    speech = sum(u.candidates[u.winner].duration_s or 0.0 for u, _ in rows)
    load = rendered.stats["seconds"].get("load", 0.0)
    policy = config.selection
    result = {
        "fixed_run": str(args.fixed),
        "config": str(args.config) if args.config else "defaults",
        "verifiers": {k: v.get("identity") for k, v in rendered.verifiers.items()},
        "selection": rendered.selection,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "utterances": len(rows),
        "n": args.n,
        "candidates_per_utterance": round(statistics.fmean(used), 3),
        "wall_seconds": round(wall, 1),
        "load_seconds": round(load, 2),
        "speech_seconds": round(speech, 1),
        "real_time_factor": round((wall - load) / speech, 4),
        "cpu_seconds": round(cpu, 1),
        "cpu_real_time_factor": round(cpu / speech, 4),
        "seconds_per_stage": rendered.stats["seconds"],
        "judge": "Whisper base (bundled:base), beam 5",
        "judge_clips_run_here": len(wanted),
        "judge_seconds": round(judge_seconds, 1),
        "adaptive_gain_over_candidate0": paired_gain(adaptive_gains).as_dict("mean_gain"),
        "fixed_gain_over_candidate0": paired_gain(fixed_gains).as_dict("mean_gain"),
        "fixed_minus_adaptive": paired_gain(
            [f - a for f, a in zip(fixed_gains, adaptive_gains, strict=True)]
        ).as_dict("mean_gain"),
        "kept": round(sum(adaptive_gains) / sum(fixed_gains), 4) if sum(fixed_gains) else None,
        "replay_same_winner": round(same_winner / len(rows), 4),
        "replay_same_candidate_count": round(same_count / len(rows), 4),
        "stop": {
            "stop": policy.stop,
            "stop_gain": policy.stop_gain,
            "prior_spread": policy.prior_spread,
            "prior_weight": policy.prior_weight,
        },
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    if args.against:
        other = json.loads(args.against.read_text(encoding="utf-8"))
        theirs = {row["key"]: row["judge_wer"] for row in other["per_utterance"]}
        if set(theirs) != {row["key"] for row in per_utterance}:
            raise SystemExit(f"{args.against} rendered other sentences: compare like with like")
        result["against"] = {
            "run": str(args.against),
            "candidates_per_utterance": other["candidates_per_utterance"],
            "real_time_factor": other["real_time_factor"],
            "judge_wer_lower_here": paired_gain(
                [theirs[row["key"]] - row["judge_wer"] for row in per_utterance]
            ).as_dict("mean_gain"),
        }
    result["per_utterance"] = per_utterance
    if args.note:
        result["note"] = args.note
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "per_utterance"}, indent=2))


if __name__ == "__main__":
    main()
