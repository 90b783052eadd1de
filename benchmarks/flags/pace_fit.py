"""How long a voice takes to read a text: the fit behind ``pace_ratio`` (verifiers/signal.py).

Reads a finished render's manifest (the development chapters of the real-prose books, rendered
with the defaults: benchmarks/real_prose/real_books.py --part dev, or any render) and fits each
take's length in seconds as seconds per letter or digit, per comma, colon or semicolon, per sentence
end inside the text and for the end that closes it (dashes and brackets are counted too, to show
that the voice does not pause there), by least squares over the takes that pass the worst-token gate
(the ones read right). Reports the coefficients and, for the fitted pace and for
the letters-only expectation of ``duration_ratio`` (13 a second), the spread of the log of the
take's length over the expected one and its 1st and 99th percentiles: the narrower, the fewer
clean takes a duration gate must reject. Writes benchmarks/results/pace_fit.json (or --output).

Usage: python -m benchmarks.flags.pace_fit OUT_DIR [--output JSON]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("letter_s", "clause_pause_s", "dash_or_bracket_s", "sentence_pause_s", "final_pause_s")
_LETTERS = re.compile(r"[^\W_]")
_CLAUSE = re.compile(r"[,;:]")
_DASHES = re.compile(r"-{2,}|[—–―()]")
_INNER = re.compile(r"[.!?…]+(?=[\"'”’)\]]*\s+\S)")
_FINAL = re.compile(r"[.!?…][\"'”’)\]]*\s*$")


def _spread(actual: np.ndarray, expected: np.ndarray) -> dict:
    ratio = np.log(actual / expected)
    low, high = np.exp(np.percentile(ratio, [1, 99]))
    return {
        "sd_log_ratio": round(float(ratio.std()), 4),
        "p1": round(float(low), 3),
        "p99": round(float(high), 3),
        "median": round(float(np.exp(np.median(ratio))), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks/results/pace_fit.json")
    parser.add_argument("--min-logprob", type=float, default=-7.011)
    args = parser.parse_args()

    from verified_tts.output.manifest import read_manifest

    manifest = read_manifest(args.out)
    from verifiers.signal import expected_reading_s

    rows, seconds, shipped = [], [], []
    for u in manifest.utterances:
        said = u.spoken or u.text
        counts = [
            len(_LETTERS.findall(said)),
            len(_CLAUSE.findall(said)),
            len(_DASHES.findall(said)),
            len(_INNER.findall(said)),
            1 if _FINAL.search(said) else 0,
        ]
        for c in u.candidates:
            if (c.metric("asr_min_logprob") or -99.0) >= args.min_logprob and c.duration_s:
                rows.append(counts)
                seconds.append(c.duration_s)
                shipped.append(expected_reading_s(said))
    x, y = np.array(rows, dtype=float), np.array(seconds)
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    result = {
        "input": str(args.out),
        "takes": len(y),
        "utterances": len(manifest.utterances),
        "fit": dict(zip(NAMES, (round(float(c), 4) for c in coef), strict=True)),
        "pace": _spread(y, x @ coef),
        "pace_without_dashes_and_brackets": _spread(
            y, np.delete(x, 2, axis=1) @ np.delete(coef, 2)
        ),
        "shipped_constants": _spread(y, np.array(shipped)),
        "letters_only_13_per_s": _spread(y, x[:, 0] / 13.0),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
