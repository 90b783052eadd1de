"""A finished render's takes held to their voice's own predicted length, and the flags that gives.

A render that started from an earlier store's takes (benchmarks/real_prose/real_books.py
``--seed-store``) keeps what those takes were scored with: takes made before Piper reported the
length it means a text to last carry no prediction, so their ``pace_ratio`` is the punctuation
formula's even under today's signal verifier. This script asks the voice (the configured default
generator, candidate 0 of each utterance's spoken text) for its predicted length, sets every stored
take's ``pace_ratio`` and
``duration_ratio`` to its length over that, judges each take again under the shipped gates
(:func:`verified_tts.selection.policy.judge`; the render's winner is kept while it still passes,
else its best-scored passing take) and reports the figures of :func:`real_books.analyse_rows`, with
the judge's view of each kept take where the render's run judged it (``--judged``: its judged.json;
a take that becomes the winner here and was not judged there has no judge figure). The takes are the
render's own; what the adaptive rounds would have generated differently under the new gate is not:
the same takes under today's pace gate, not a new render.

Usage: python -m benchmarks.flags.repace_render OUT_DIR --judged JUDGED_JSON --output JSON
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.real_prose.real_books import analyse_rows

__all__ = ["predicted_lengths", "regate"]

NOTE = (
    "the render's takes, each held to the length the default voice predicts for its text, judged "
    "again under today's shipped gates; the judge's figures are the render's own judgements (a "
    "take that became the winner here and was not judged there has none)"
)


def predicted_lengths(rows: list[Any]) -> dict[str, float | None]:
    """The voice's predicted length of each utterance's spoken text (None: it gives none)."""
    from verified_tts.config import build_config
    from verified_tts.generators import load_generator
    from verified_tts.generators.base import SynthesisRequest
    from verifiers.signal import voice_predicted_s

    generator = load_generator(build_config({}).generator)
    requests = [
        SynthesisRequest(u.key, 0, 0, u.spoken or u.text, u.voice, u.emotion, tuple(u.phonemes))
        for u in rows
    ]
    out: dict[str, float | None] = {}
    for start in range(0, len(requests), 16):
        batch = requests[start : start + 16]
        for request, candidate in zip(batch, generator.sample(batch), strict=True):
            out[request.utterance_key] = voice_predicted_s(candidate.info)
    return out


def regate(rows: list[Any], predicted: dict[str, float | None]) -> list[Any]:
    """Every take's duration gates against its voice's prediction, every utterance judged again."""
    from verified_tts.output.run_manifest import gate_bounds
    from verified_tts.selection.policy import default_policy, judge
    from verified_tts.selection.reasons import utterance_reasons

    policy = default_policy()
    bounds = gate_bounds(policy.gates)
    again = []
    for u in rows:
        expected = predicted.get(u.key)
        takes = []
        for c in u.candidates:
            scores = dict(c.scores)
            if expected and c.duration_s:
                held = c.duration_s / expected  # as signal verifier 6 holds a predicting voice
                scores["pace_ratio"] = scores["voice_pace_ratio"] = scores["duration_ratio"] = held
            verdict = judge(scores, policy)
            takes.append(replace(c, scores=scores, passed=verdict.passed,
                                 failed_gates=verdict.failed, score=verdict.score))  # fmt: skip
        winner, flagged = _keep(u.winner, takes)
        reasons = utterance_reasons(
            [(c.scores, c.detail, c.failed_gates) for c in takes], winner, flagged, text=u.text,
            bounds=bounds,
        )  # fmt: skip
        again.append(replace(u, candidates=tuple(takes), winner=winner, flagged=flagged,
                             reasons=tuple(r.as_dict() for r in reasons)))  # fmt: skip
    return again


def _keep(winner: int, takes: list[Any]) -> tuple[int, bool]:
    """(winner, flagged): the render's winner while it still passes, else the best-scored take
    (the render's own score) that passes, else the one failing the fewest gates."""
    if takes[winner].passed:
        return winner, False
    passing = [i for i, c in enumerate(takes) if c.passed]
    if passing:
        return max(passing, key=lambda i: (takes[i].score, -i)), False
    best = min(range(len(takes)), key=lambda i: (len(takes[i].failed_gates), -takes[i].score, i))
    return best, True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("render", type=Path)
    parser.add_argument("--judged", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    from verified_tts.output.manifest import read_manifest

    rows = list(read_manifest(args.render).utterances)
    cache = json.loads(args.judged.read_text(encoding="utf-8"))
    judged = {key: (wer, heard) for key, (wer, heard, _) in cache["clips"].items()}
    predicted = predicted_lengths(rows)
    figures = analyse_rows(regate(rows, predicted), judged)
    data = {
        "command": " ".join(["python", "-m", "benchmarks.flags.repace_render", *sys.argv[1:]]),
        "render": str(args.render),
        "judge": cache["judge"],
        "utterances_with_a_prediction": sum(1 for v in predicted.values() if v),
        "note": NOTE,
        "after": figures,
    }
    args.output.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    print(json.dumps({k: v for k, v in figures.items() if k != "flagged_utterances"}, indent=2))


if __name__ == "__main__":
    main()
