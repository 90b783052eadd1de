"""Two calibrations of the same cases, compared per fault kind with sentence-paired intervals.

Reads the ``calibrate.json`` of two ``verified-tts calibrate --out DIR`` runs made with the same
sentences, candidates and seed but different verifier settings (e.g. per-clip against packed
Whisper scoring), judges every case of each run by the gates that run used (its "current" gates),
and reports per kind the share rejected (false alarms for clean candidates, recall for faults) in
each run and the difference B minus A with a 95 % bootstrap interval that resamples sentences,
because the cases of one sentence share its words and so its errors. Writes
benchmarks/results/compare_calibrations.json (or --out).

Usage: python -m benchmarks.flags.compare_calibrations A/calibrate.json B/calibrate.json
       [--labels per-clip packed] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.selection.policy import Gate, SelectionPolicy, judge

ROOT = Path(__file__).resolve().parents[2]
RESAMPLES = 4000


def rejected_by_sentence(path: Path) -> tuple[dict[str, dict[int, list[bool]]], list[dict]]:
    """kind -> sentence -> whether each case failed a gate, and the gates used."""
    data = json.loads(path.read_text(encoding="utf-8"))
    gates = data["gates"]["current"]
    policy = SelectionPolicy(gates=tuple(Gate(**gate) for gate in gates))
    out: dict[str, dict[int, list[bool]]] = {}
    for case in data["cases"]:
        failed = not judge(case["metrics"], policy).passed
        out.setdefault(case["kind"], {}).setdefault(case["utterance"], []).append(failed)
    return out, gates


def compare(a: dict[str, dict[int, list[bool]]], b: dict[str, dict[int, list[bool]]]) -> dict:
    rng = np.random.default_rng(0)
    result: dict[str, Any] = {}
    for kind in a:
        sentences = sorted(set(a[kind]) & set(b.get(kind, {})))
        if not sentences:
            continue
        count = np.array([len(a[kind][s]) for s in sentences], dtype=np.float64)
        rate_a = np.array([np.mean(a[kind][s]) for s in sentences])
        rate_b = np.array([np.mean(b[kind][s]) for s in sentences])
        draws = rng.integers(0, len(sentences), size=(RESAMPLES, len(sentences)))
        weights = count[draws]
        diffs = ((rate_b - rate_a)[draws] * weights).sum(axis=1) / weights.sum(axis=1)
        result[kind] = {
            "cases": int(count.sum()),
            "sentences": len(sentences),
            "rejected_a": round(float((rate_a * count).sum() / count.sum()), 4),
            "rejected_b": round(float((rate_b * count).sum() / count.sum()), 4),
            "difference_b_minus_a": round(
                float(((rate_b - rate_a) * count).sum() / count.sum()), 4
            ),
            "interval_95": [
                round(float(np.percentile(diffs, 2.5)), 4),
                round(float(np.percentile(diffs, 97.5)), 4),
            ],
            # sentences where B rejects more of the cases than A: where a difference comes from
            "sentences_b_rejects_more": [
                s for s, x, y in zip(sentences, rate_a, rate_b, strict=True) if y > x
            ],
            "sentences_a_rejects_more": [
                s for s, x, y in zip(sentences, rate_a, rate_b, strict=True) if x > y
            ],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--labels", nargs=2, default=["a", "b"])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/compare_calibrations.json"
    )
    args = parser.parse_args()
    a, gates_a = rejected_by_sentence(args.a)
    b, gates_b = rejected_by_sentence(args.b)
    results = {
        "a": {"label": args.labels[0], "file": str(args.a), "gates": gates_a},
        "b": {"label": args.labels[1], "file": str(args.b), "gates": gates_b},
        "by_kind": compare(a, b),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    for kind, row in results["by_kind"].items():
        low, high = row["interval_95"]
        print(
            f"{kind:11s} {args.labels[0]} {row['rejected_a']:.3f}  {args.labels[1]} "
            f"{row['rejected_b']:.3f}  difference {row['difference_b_minus_a']:+.3f} "
            f"({low:+.3f}..{high:+.3f})"
        )


if __name__ == "__main__":
    main()
