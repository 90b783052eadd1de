"""Which ranking signal finds the candidates an independent judge prefers?

Takes a fixed-N run (an `ab` or `render --no-adaptive` output folder that kept every candidate),
transcribes every candidate once with the judge (Whisper base, `bundled:base`), and reports the
judge's mean WER of the winners each selection rule picks: candidate 0 (N=1), the project's
policy (gates, then the weighted score), the weighted score without its speaker term, reference
log-probability alone, the verifier's plain WER alone, and the oracle (the judge picks). Writes
benchmarks/results/selection_rules.json.

Usage: python benchmarks/selection_rules.py OUT_DIR
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    from verified_tts.output.manifest import read_manifest
    from verified_tts.selection import SelectionPolicy, choose, judge
    from verified_tts.workflows.judge import load_judge
    from verifiers import Clip

    out = Path(sys.argv[1])
    manifest = read_manifest(out)
    judge_model = load_judge("bundled:base")
    clips, owners = [], []
    for u_index, utterance in enumerate(manifest.utterances):
        for candidate in utterance.candidates:
            audio, rate = sf.read(out / candidate.audio, dtype="float32")
            clips.append(Clip(audio=audio, sample_rate=rate, text=utterance.text))
            owners.append((u_index, candidate.index))
    started = time.perf_counter()
    judged: dict[tuple[int, int], float] = {}
    for start in range(0, len(clips), 32):
        batch = judge_model.transcribe(clips[start : start + 32])
        for owner, (wer, _) in zip(owners[start : start + 32], batch, strict=True):
            judged[owner] = wer
    judge_seconds = time.perf_counter() - started

    policy = SelectionPolicy()
    no_speaker = SelectionPolicy(weights={**policy.weights, "speaker": 0.0})

    def by_policy(p: SelectionPolicy):
        return lambda u: choose([judge(c.scores, p) for c in u.candidates])[0]

    def best(metric: str, sign: float):
        return lambda u: max(
            range(len(u.candidates)),
            key=lambda i: (sign * u.candidates[i].scores.get(metric, float("-inf")), -i),
        )

    rules = {
        "candidate 0 (N=1)": lambda u: 0,
        "policy: gates, then weighted score (default)": by_policy(policy),
        "policy without the speaker term": by_policy(no_speaker),
        "highest asr_logprob alone": best("asr_logprob", 1.0),
        "lowest verifier WER alone": best("wer", -1.0),
        "oracle: the judge picks": None,
    }
    rows = []
    for name, rule in rules.items():
        values = []
        for u_index, utterance in enumerate(manifest.utterances):
            n = len(utterance.candidates)
            if rule is None:
                values.append(min(judged[(u_index, k)] for k in range(n)))
            else:
                values.append(judged[(u_index, rule(utterance))])
        rows.append({"rule": name, "judge_wer": round(statistics.fmean(values), 4)})
        print(rows[-1], flush=True)
    result = {
        "input": str(out),
        "n": manifest.n,
        "utterances": len(manifest.utterances),
        "judge": "Whisper base (bundled:base), beam 5",
        "verifier": "Whisper tiny.en, beam 5",
        "judge_seconds": round(judge_seconds, 1),
        "rules": rows,
    }
    path = ROOT / "benchmarks" / "results" / "selection_rules.json"
    path.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
