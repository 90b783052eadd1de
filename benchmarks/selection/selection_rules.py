"""Which ranking signal finds the candidates an independent judge prefers?

Takes a fixed-N run (an `ab` or `render --no-adaptive` output folder that kept every candidate)
and transcribes with the judge (Whisper base, `bundled:base`) every candidate that some rule
below keeps: each rule's pick, and the policy's winner of every prefix (the first k candidates,
k = 1..N), which is every winner an adaptive render can keep. Winners the A/B already judged
(its ``ab.json``) are reused. It reports the judge's mean WER of the winners each rule picks:
candidate 0 (N=1), the project's policy (gates, then the weighted score), the weighted score
without its speaker term, reference log-probability alone, and the verifier's plain WER alone,
each with the paired bootstrap 95% interval of its gain over candidate 0. With ``--all`` every
candidate is judged and the oracle (the judge picks) is added; on 2 shared cores that costs about
3 s a clip. Writes benchmarks/results/selection_rules.json, and every candidate's verifier
scores with its judge WER (null where not judged) to
benchmarks/results/candidate_judgements.json, the input of benchmarks/selection/adaptive_replay.py.

Timings are wall seconds and CPU seconds (process time of all threads); on a shared machine the
wall seconds are inflated by other work, the CPU seconds are not.

Judge WERs are cached in OUT_DIR/judge_cache.json. ``--while-ab-judges`` judges now only what
the A/B's own judge will not (the winners of N=1, 2, 4, 8), to run beside it, and stops there.

Usage: python -m benchmarks.selection.selection_rules OUT_DIR [--all] [--while-ab-judges] [--suffix
_packed]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import asdict, replace
from pathlib import Path

from verified_tts.paired import paired_gain

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def already_judged(out: Path) -> dict[tuple[str, int], float]:
    """Judge WERs an A/B run already wrote into ``ab.json`` (its arms' winners)."""
    path = out / "ab.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    found = {}
    for row in data["utterances"]:
        for entry in row["arms"].values():
            if entry.get("judge_wer") is not None:
                found[(row["key"], entry["winner"])] = float(entry["judge_wer"])
    return found


def main() -> None:
    from verified_tts.output.manifest import read_manifest
    from verified_tts.selection.policy import Gate, SelectionPolicy, choose, judge
    from verified_tts.workflows.judge import judge_clips, load_judge

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, metavar="OUT_DIR", help="a fixed-N run's output folder")
    parser.add_argument("--all", action="store_true", help="judge every candidate (the oracle)")
    parser.add_argument(
        "--while-ab-judges", action="store_true", help="judge only what the A/B's judge will not"
    )
    # results of a non-default run go beside the default's: --suffix _packed
    parser.add_argument("--suffix", default="", help="added to the result files' names")
    args = parser.parse_args()
    out, judge_all, while_ab, suffix = args.out, args.all, args.while_ab_judges, args.suffix
    manifest = read_manifest(out)
    cache = out / "judge_cache.json"
    judged = already_judged(out)
    if cache.is_file():
        for key, index, wer in json.loads(cache.read_text(encoding="utf-8")):
            judged.setdefault((key, index), wer)

    # the gates the run chose its winners by: they depend on its WER scorer (per-clip or packed)
    gates = tuple(Gate(**gate) for gate in manifest.selection.get("gates", ()))
    policy = SelectionPolicy(gates=gates) if gates else SelectionPolicy()
    no_speaker = replace(policy, weights={**policy.weights, "speaker": 0.0})
    wer_identity = dict(manifest.verifiers.get("wer", {}).get("identity") or {})
    scoring = "packed" if wer_identity.get("packing") else "per clip"

    def by_policy(p: SelectionPolicy):
        return lambda u: choose([judge(c.scores, p) for c in u.candidates])[0]

    def best(metric: str, sign: float):
        return lambda u: max(
            range(len(u.candidates)),
            key=lambda i: (sign * u.candidates[i].scores.get(metric, float("-inf")), -i),
        )

    def oracle(u):
        return min(range(len(u.candidates)), key=lambda i: (judged[(u.key, i)], i))

    def prefix_winners(u) -> set[int]:
        judgements = [judge(c.scores, policy) for c in u.candidates]
        return {choose(judgements[:k])[0] for k in range(1, len(judgements) + 1)}

    rules = {
        "candidate 0 (N=1)": lambda u: 0,
        "policy: gates, then weighted score (default)": by_policy(policy),
        "policy without the speaker term": by_policy(no_speaker),
        "highest asr_logprob alone": best("asr_logprob", 1.0),
        "lowest verifier WER alone": best("wer", -1.0),
    }
    needed = {}
    for u in manifest.utterances:
        picks = set(range(len(u.candidates))) if judge_all else prefix_winners(u)
        picks |= {rule(u) for rule in rules.values()}
        if while_ab:
            judgements = [judge(c.scores, policy) for c in u.candidates]
            picks -= {choose(judgements[:k])[0] for k in (1, 2, 4, 8) if k <= len(judgements)}
        for index in picks:
            if (u.key, index) not in judged:
                needed[(u.key, index)] = (u.candidates[index].audio, u.text)
    started, cpu_started = time.perf_counter(), time.process_time()
    judge_model = load_judge("bundled:base")
    fresh = judge_clips(judge_model, needed, out).transcripts
    judge_wall = time.perf_counter() - started
    judge_cpu = time.process_time() - cpu_started
    judged.update({key: wer for key, (wer, _) in fresh.items()})
    cache.write_text(json.dumps([[k, i, w] for (k, i), w in judged.items()]) + "\n")
    if while_ab:
        print(f"judged {len(fresh)} clips in {judge_wall:.0f} s; rerun after the A/B", flush=True)
        return
    if judge_all:
        rules["oracle: the judge picks"] = oracle
    base = [judged[(u.key, 0)] for u in manifest.utterances]
    rows = []
    for name, rule in rules.items():
        values = [judged[(u.key, rule(u))] for u in manifest.utterances]
        mean, first = statistics.fmean(values), statistics.fmean(base)
        rows.append(
            {
                "rule": name,
                "judge_wer": round(mean, 4),
                "change_vs_candidate0": round((mean - first) / first, 4) if first else None,
                "gain_over_candidate0": paired_gain(
                    [b - v for b, v in zip(base, values, strict=True)]
                ).as_dict("mean_gain"),
            }
        )
        print(rows[-1], flush=True)
    result = {
        "input": str(out.relative_to(ROOT) if out.is_relative_to(ROOT) else out),
        "generator": manifest.generator,
        "n": manifest.n,
        "utterances": len(manifest.utterances),
        "candidates_judged": len(judged),
        "judge": "Whisper base (bundled:base), beam 5",
        "verifier": f"Whisper {wer_identity.get('model', 'tiny.en')}, beam "
        f"{wer_identity.get('beam_size', 5)}, {scoring}",
        "judge_clips_run_here": len(needed),
        "judged": "every candidate"
        if judge_all
        else "every rule's pick and the policy's winner of every prefix",
        "judge_wall_seconds": round(judge_wall, 1),
        "judge_cpu_seconds": round(judge_cpu, 1),
        "timing_note": "wall seconds on a shared 2-core machine; CPU seconds are process time",
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "rules": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"selection_rules{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    candidates = {
        "source": result["input"],
        "generator": manifest.generator,
        "judge": result["judge"],
        "gates": [asdict(gate) for gate in policy.gates],
        "wer_packing": bool(wer_identity.get("packing")),
        "utterances": [
            {
                "key": u.key,
                "text": u.text,
                "candidates": [
                    {
                        "index": c.index,
                        "scores": dict(c.scores),
                        "duration_s": c.duration_s,
                        "judge_wer": judged.get((u.key, c.index)),
                    }
                    for c in u.candidates
                ],
            }
            for u in manifest.utterances
        ],
    }
    (RESULTS / f"candidate_judgements{suffix}.json").write_text(
        json.dumps(candidates, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
