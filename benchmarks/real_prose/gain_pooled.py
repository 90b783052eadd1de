"""The judge's gain of the N=8 winners over candidate 0, read over several held-out samples at once.

Each held-out sample of real prose (benchmarks/real_prose/real_books.py) reports the judge's paired
gain of the winners over candidate 0 with a bootstrap 95 % interval over its own lines. Samples
rendered with the same selection (the same gates, stop setting and Whisper window layout) estimate
the same gain on disjoint lines, so they can be read together: this pools them by inverse variance
(each sample's standard error taken from its interval, as half its width over 1.96), tests whether
they agree with one common gain (Cochran's Q), and asks how often a single sample of n lines would
show an interval above 0 if the true gain were the pooled one (the per-line spread taken from the
samples), and how many lines a sample needs for that to happen 80 % and 90 % of the time. It reads
only the result files, so no line is rendered or judged again; the normal approximation to each
bootstrap interval is the method's one assumption.

Usage: python -m benchmarks.real_prose.gain_pooled [--samples STEM ...] [--sizes 300 414 ...]
--output JSON
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
Z95 = NormalDist().inv_cdf(0.975)
# every held-out sample rendered with today's selection (stop gain 0.08, prior spread 0.1, the
# layout in book order); the eighth sample in its render with the shipped code
SAMPLES = (
    "real_books_held_out_e",
    "real_books_held_out_f",
    "real_books_held_out_g",
    "real_books_held_out_h_book_order",
)
SIZES = (300, 414, 500, 616, 800, 1000, 1500)


@dataclass(frozen=True)
class SampleGain:
    """One sample's paired gain: its mean, 95 % interval and number of lines."""

    stem: str
    lines: int
    mean: float
    low: float
    high: float

    @property
    def standard_error(self) -> float:
        return (self.high - self.low) / (2 * Z95)

    @property
    def per_line_sd(self) -> float:
        return self.standard_error * math.sqrt(self.lines)


def read_sample(stem: str) -> SampleGain:
    data = json.loads((RESULTS / f"{stem}.json").read_text(encoding="utf-8"))
    after = data["after"]
    paired = after["judge_gain_n8_over_candidate0"]
    low, high = paired["ci95"]
    return SampleGain(stem, int(after["utterances"]), float(paired["mean_gain"]), low, high)


def pool(samples: Sequence[SampleGain]) -> dict[str, Any]:
    """Inverse-variance pooled gain, its interval, and Cochran's Q of the samples around it."""
    from scipy.stats import chi2

    weights = [1 / s.standard_error**2 for s in samples]
    total = sum(weights)
    mean = sum(w * s.mean for w, s in zip(weights, samples, strict=True)) / total
    error = 1 / math.sqrt(total)
    q = sum(w * (s.mean - mean) ** 2 for w, s in zip(weights, samples, strict=True))
    return {
        "lines": sum(s.lines for s in samples),
        "mean_gain": mean,
        "standard_error": error,
        "ci95": [mean - Z95 * error, mean + Z95 * error],
        "cochran_q": q,
        "degrees_of_freedom": len(samples) - 1,
        "p_common_gain": float(chi2.sf(q, len(samples) - 1)),
    }


def per_line_sd(samples: Sequence[SampleGain]) -> float:
    """The spread of one line's gain, pooled over the samples (weighted by their lines)."""
    lines = sum(s.lines for s in samples)
    return math.sqrt(sum(s.lines * s.per_line_sd**2 for s in samples) / lines)


def chance_above_zero(gain: float, sd: float, lines: int) -> float:
    """How often a sample of ``lines`` lines shows a 95 % interval above 0 at this true gain."""
    return NormalDist().cdf(gain / (sd / math.sqrt(lines)) - Z95)


def lines_needed(gain: float, sd: float, chance: float) -> int:
    """The fewest lines for which :func:`chance_above_zero` reaches ``chance``."""
    return math.ceil((sd * (Z95 + NormalDist().inv_cdf(chance)) / gain) ** 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", nargs="+", default=list(SAMPLES))
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from verified_tts.storage.atomic import write_json_atomic

    samples = [read_sample(stem) for stem in args.samples]
    pooled = pool(samples)
    sd = per_line_sd(samples)
    gain = pooled["mean_gain"]
    data = {
        "command": " ".join(["python", "-m", "benchmarks.real_prose.gain_pooled", *sys.argv[1:]]),
        "method": (
            "inverse-variance pooling of each sample's paired gain, its standard error from its "
            "bootstrap 95% interval (half width / 1.96); Cochran's Q for a common gain; the chance "
            "of a single sample's interval above 0 at the pooled gain, normal approximation"
        ),
        "samples": [
            {
                "stem": s.stem,
                "lines": s.lines,
                "mean_gain": s.mean,
                "ci95": [s.low, s.high],
                "standard_error": s.standard_error,
                "per_line_sd": s.per_line_sd,
                "chance_above_zero_at_pooled_gain": chance_above_zero(gain, sd, s.lines),
            }
            for s in samples
        ],
        "pooled": pooled,
        "per_line_sd": sd,
        "chance_above_zero": [
            {"lines": n, "chance": chance_above_zero(gain, sd, n)} for n in args.sizes
        ],
        "lines_needed": [
            {"chance": chance, "lines": lines_needed(gain, sd, chance)} for chance in (0.8, 0.9)
        ],
    }
    write_json_atomic(args.output, data)
    print(json.dumps({k: data[k] for k in ("pooled", "lines_needed")}, indent=1))


if __name__ == "__main__":
    main()
