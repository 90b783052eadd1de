"""The duration model of a text for a voice without a prediction: fitted, then tested held out.

``verified-tts calibrate`` fits the signal verifier's text model (verifiers/duration_model.py:
letters, words, clause pauses, ! ? ... and a trailing comma) on a voice's clean takes. This
benchmark measures what the fit buys on the embedded espeak-ng generator, which gives no length
of its own: clean takes of the development cue set (benchmarks/data/dub_calibration_development.srt:
120 short lines and 60 longer ones from the first halves of the books) with the render's seeds
fit the model; clean takes of the held-out short lines (benchmarks/data/short_lines_held_out.srt)
test it. Per line-length bin (words) and per ending (! ? ... , .): the median and the spread of
log(duration / expected) under the letters alone (13 a second, the default) and under the fitted
model, and the share of held-out takes outside the bounds that keep 95 % of the development takes
(what a calibrated duration gate would reject). Writes
benchmarks/results/duration_model_espeak.json.

Usage: python -m benchmarks.flags.duration_model [--candidates 4] [--generator espeak]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DEVELOPMENT = ROOT / "benchmarks" / "data" / "dub_calibration_development.srt"
HELD_OUT = ROOT / "benchmarks" / "data" / "short_lines_held_out.srt"
WORD_BINS = ((1, 1), (2, 2), (3, 5), (6, 14))


def takes(generator, path: Path, candidates: int) -> list[tuple[str, float]]:
    """(spoken text, seconds) of every clean take of every cue, the render's seeds."""
    import srt

    from verified_tts.generators import SynthesisRequest
    from verified_tts.storage.keys import candidate_seed
    from verified_tts.text.normalize import normalize_text

    out = []
    for cue in srt.parse(path.read_text(encoding="utf-8")):
        spoken = normalize_text(cue.content)
        key = f"duration:{spoken}"
        requests = [
            SynthesisRequest(key, k, candidate_seed(key, k), spoken) for k in range(candidates)
        ]
        out.extend((spoken, c.duration_s) for c in generator.sample(requests))
    return out


def ending(text: str) -> str:
    end = text.rstrip("\"') ")
    if end.endswith(("...", "\u2026")):
        return "..."
    return end[-1] if end and end[-1] in "!?,." else "other"


def describe(rows: list[tuple[str, float]], model, bounds: tuple[float, float]) -> dict:
    logs = np.array([math.log(seconds / max(model.seconds(text), 0.02)) for text, seconds in rows])
    outside = (logs < bounds[0]) | (logs > bounds[1])
    return {
        "takes": len(rows),
        "median_log_ratio": round(float(np.median(logs)), 4),
        "sd_log_ratio": round(float(np.std(logs)), 4),
        "outside_development_95pct": round(float(outside.mean()), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generator", default="espeak")
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from verified_tts.generators import GeneratorConfig, load_generator
    from verifiers.duration_model import TextDurationModel, fit

    generator = load_generator(GeneratorConfig(name=args.generator))
    development = takes(generator, DEVELOPMENT, args.candidates)
    held_out = takes(generator, HELD_OUT, args.candidates)
    models = {
        "letters": TextDurationModel(),
        "fitted": fit([t for t, _ in development], [s for _, s in development]),
    }
    record = {
        "benchmark": "duration_model",
        "generator": generator.identity(),
        "candidates": args.candidates,
        "development": str(DEVELOPMENT.relative_to(ROOT)),
        "held_out": str(HELD_OUT.relative_to(ROOT)),
        "fitted_options": models["fitted"].as_options(),
        "models": {},
    }
    for name, model in models.items():
        logs = [math.log(s / max(model.seconds(t), 0.02)) for t, s in development]
        bounds = (float(np.quantile(logs, 0.025)), float(np.quantile(logs, 0.975)))
        entry = {
            "development_bounds_ratio": [round(math.exp(b), 4) for b in bounds],
            "held_out": describe(held_out, model, bounds),
            "held_out_by_words": {},
            "held_out_by_ending": {},
        }
        for low, high in WORD_BINS:
            group = [r for r in held_out if low <= len(r[0].split()) <= high]
            if group:
                entry["held_out_by_words"][f"{low}-{high}"] = describe(group, model, bounds)
        for end in ("!", "?", "...", ",", ".", "other"):
            group = [r for r in held_out if ending(r[0]) == end]
            if group:
                entry["held_out_by_ending"][end] = describe(group, model, bounds)
        record["models"][name] = entry
    path = args.out or ROOT / "benchmarks" / "results" / f"duration_model_{args.generator}.json"
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(record["models"], indent=1))


if __name__ == "__main__":
    main()
