"""Figures replayed from committed candidate judgements, with today's selection code.

Input: the ``candidate_judgements*.json`` files that benchmarks/selection/selection_rules.py writes
from a fixed N=8 run (every candidate's verifier scores and, where judged, its judge WER, Whisper
base). The selection policy is a pure function of those scores, so these figures need no model and
no render, and they move whenever the policy does:

- ``speaker_term``: per input, how many winners change when the ranking drops its speaker term
  (and also the ``asr_min_logprob`` weight), and the judge's WER of both winner sets with the
  paired interval of the difference.
- ``per_clip_default_on_101_300``: the shipped per-clip adaptive settings (tuned on Harvard 51-100)
  replayed on Harvard 101-300, sentences no setting was tuned on.
- ``all_rejected``: sentences of the first 40 where every candidate fails a gate of the run's
  policy (the render flags them), with the gates they fail.

Writes benchmarks/results/judgement_replays.json. Usage: python -m
benchmarks.selection.judgement_replays
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from dataclasses import replace
from pathlib import Path

from benchmarks.selection import adaptive_replay
from verified_tts.paired import paired_gain
from verified_tts.selection.policy import SelectionPolicy, choose, judge

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
INPUTS = (
    "candidate_judgements.json",
    "candidate_judgements_per_clip_300.json",
    "candidate_judgements_packed_300.json",
)


def _winner(candidates: list[dict], policy: SelectionPolicy) -> int:
    return choose([judge(c["scores"], policy) for c in candidates])[0]


def speaker_term(path: Path) -> dict:
    policy = adaptive_replay.scored_policy(path)
    no_speaker = replace(policy, weights={**policy.weights, "speaker": 0.0})
    neither = replace(no_speaker, weights={**no_speaker.weights, "asr_min_logprob": 0.0})
    utterances = json.loads(path.read_text(encoding="utf-8"))["utterances"]
    with_term, without, differ, differ_neither = [], [], 0, 0
    for u in utterances:
        kept, dropped = _winner(u["candidates"], policy), _winner(u["candidates"], no_speaker)
        differ += kept != dropped
        differ_neither += kept != _winner(u["candidates"], neither)
        with_term.append(u["candidates"][kept]["judge_wer"])
        without.append(u["candidates"][dropped]["judge_wer"])
    judged = all(w is not None for w in with_term + without)
    result = {
        "input": f"benchmarks/results/{path.name}",
        "utterances": len(utterances),
        "winners_differ_without_speaker": differ,
        "winners_differ_without_speaker_and_min_logprob_weight": differ_neither,
        "every_winner_judged": judged,
    }
    if judged:
        result |= {
            "judge_wer_policy": round(statistics.fmean(with_term), 4),
            "judge_wer_without_speaker": round(statistics.fmean(without), 4),
            "gain_of_the_speaker_term": paired_gain(
                [b - a for a, b in zip(with_term, without, strict=True)]
            ).as_dict("mean_gain"),
        }
    return result


def per_clip_default_on_101_300() -> dict:
    path = RESULTS / "candidate_judgements_per_clip_300.json"
    policy = adaptive_replay.scored_policy(path)
    utterances = adaptive_replay.load(path, policy)[100:]
    result = adaptive_replay.evaluate(utterances, 8, policy)
    return {
        "input": f"benchmarks/results/{path.name}",
        "sentences": "Harvard 101-300",
        "utterances": len(utterances),
        **adaptive_replay._public(result),
        **adaptive_replay._bootstrap(result["_gains"], result["_fixed"]),
    }


def all_rejected(path: Path, first: int = 40) -> dict:
    policy = adaptive_replay.scored_policy(path)
    utterances = json.loads(path.read_text(encoding="utf-8"))["utterances"][:first]
    found = []
    for number, u in enumerate(utterances, 1):
        judgements = [judge(c["scores"], policy) for c in u["candidates"]]
        if not any(j.passed for j in judgements):
            failed = Counter(metric for j in judgements for metric in j.failed)
            found.append({"sentence": number, "text": u["text"], "failed_gates": dict(failed)})
    return {
        "input": f"benchmarks/results/{path.name}",
        "sentences": f"Harvard 1-{first}",
        "every_candidate_rejected": len(found),
        "cases": found,
    }


def main() -> None:
    # no options; --help says what it measures instead of running it and rewriting the result
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    result = {
        "note": "replayed with today's verified_tts.selection.policy on committed candidate scores",
        "speaker_term": [speaker_term(RESULTS / name) for name in INPUTS],
        "per_clip_default_on_101_300": per_clip_default_on_101_300(),
        "all_rejected": all_rejected(RESULTS / "candidate_judgements.json"),
    }
    text = json.dumps(result, indent=2) + "\n"
    (RESULTS / "judgement_replays.json").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
