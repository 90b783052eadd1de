"""How different are the takes of one line? Length, pitch and pauses of Piper's takes, by setting.

Best-of-N can only choose among readings that differ. For each setting of the Piper generator's
per-take variation (``LENGTH/DURATION/PAUSE``: the spread of the log of each take's length scale,
of each phoneme's duration and of each punctuation pause, ``[generator.piper]`` length_jitter,
duration_jitter, pause_jitter; ``0/0/0`` is today's seeded noise alone), makes 8 takes of every
line of a development sample with the generator alone (no verifier) and measures, per line, then
averaged over lines:

- length: the coefficient of variation of the takes' durations;
- pitch: the spread (sd, semitones) of the takes' median F0 and of their F0 range (10th to 90th
  percentile of voiced frames, librosa's YIN);
- pauses: a pause is a gap of at least 0.1 s between two words (the voice's own word timings);
  the spread of the takes' pause count and total pause seconds, and how often two takes pause
  at different places (mean Jaccard distance between their sets of pause positions).

Usage: nice -n 10 python -m benchmarks.selection.take_diversity [--per-chapter 6]
       [--settings 0/0/0 0.04/0.1/0.3] --output JSON
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TAKES = 8
PAUSE_S = 0.1


def lines(per_chapter: int) -> list[str]:
    """The spoken text of the development sample's lines (headings left out)."""
    from benchmarks.real_prose.real_prose import sample_segments

    return [
        s.spoken or s.text
        for _, _, segments in sample_segments("dev", per_chapter=per_chapter)
        for s in segments
        if s.kind != "heading"
    ]


def pitch(audio: np.ndarray, rate: int) -> tuple[float, float] | None:
    """(median F0, 10th-90th percentile range), in semitones, of the voiced frames."""
    import librosa

    f0 = librosa.yin(audio, fmin=60, fmax=320, sr=rate, frame_length=1024)
    energy = librosa.feature.rms(y=audio, frame_length=1024, hop_length=256)[0][: len(f0)]
    voiced = f0[: len(energy)][energy > 0.3 * float(np.median(energy))]
    voiced = voiced[(voiced > 62) & (voiced < 315)]
    if voiced.size < 5:
        return None
    semitones = 12 * np.log2(voiced / 100.0)
    return float(np.median(semitones)), float(
        np.percentile(semitones, 90) - np.percentile(semitones, 10)
    )


def pauses(info: dict[str, Any]) -> dict[int, float]:
    """Word index -> the pause after it (seconds), for gaps of at least PAUSE_S."""
    words = (info.get("timing") or {}).get("words") or []
    out = {}
    for index, (row, after) in enumerate(itertools.pairwise(words)):
        gap = float(after[5]) - float(row[6])
        if gap >= PAUSE_S:
            out[index] = gap
    return out


def sd(values: list[float]) -> float:
    return statistics.pstdev(values) if len(values) > 1 else 0.0


def measure(generator: Any, texts: list[str]) -> dict[str, Any]:
    """The diversity figures of 8 takes of every text (module docstring)."""
    from verified_tts.generators.base import SynthesisRequest
    from verified_tts.storage.keys import candidate_seed

    per_line: dict[str, list[float]] = {k: [] for k in (
        "length_cv", "median_f0_sd", "f0_range_sd", "pause_count_sd", "pause_seconds_sd",
        "pause_place_distance", "length_s",
    )}  # fmt: skip
    for number, text in enumerate(texts):
        key = f"diversity-{number}"
        requests = [SynthesisRequest(key, k, candidate_seed(key, k), text) for k in range(TAKES)]
        takes = generator.sample(requests)
        lengths = [t.duration_s for t in takes]
        pitches = [p for t in takes if (p := pitch(t.audio, t.sample_rate)) is not None]
        gaps = [pauses(dict(t.info)) for t in takes]
        per_line["length_s"].append(statistics.fmean(lengths))
        per_line["length_cv"].append(sd(lengths) / statistics.fmean(lengths))
        if len(pitches) > 1:
            per_line["median_f0_sd"].append(sd([p[0] for p in pitches]))
            per_line["f0_range_sd"].append(sd([p[1] for p in pitches]))
        per_line["pause_count_sd"].append(sd([float(len(g)) for g in gaps]))
        per_line["pause_seconds_sd"].append(sd([sum(g.values()) for g in gaps]))
        distances = [
            1 - len(set(a) & set(b)) / len(set(a) | set(b))
            for a, b in itertools.combinations(gaps, 2)
            if set(a) | set(b)
        ]
        per_line["pause_place_distance"].append(statistics.fmean(distances) if distances else 0.0)
    return {name: round(statistics.fmean(v), 4) for name, v in per_line.items() if v}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-chapter", type=int, default=6)
    parser.add_argument("--settings", nargs="+", default=["0/0/0"])
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()

    from verified_tts.config import build_config
    from verified_tts.generators import load_generator
    from verified_tts.storage.atomic import write_json_atomic

    texts = lines(args.per_chapter)
    rows = []
    for setting in args.settings:
        length, duration, pause = (float(x) for x in setting.split("/"))
        options = {"length_jitter": length, "duration_jitter": duration, "pause_jitter": pause}
        config = build_config({"generator": {"piper": options}}, candidates=TAKES)
        generator = load_generator(config.generator)
        rows.append({"setting": setting, **options, **measure(generator, texts)})
        print(json.dumps(rows[-1]), file=sys.stderr)
    write_json_atomic(
        args.output,
        {
            "command": " ".join(["python -m benchmarks.selection.take_diversity", *sys.argv[1:]]),
            "lines": len(texts),
            "takes": TAKES,
            "sample": f"the first {args.per_chapter} utterances of three development chapters "
            "of each real-prose book, headings left out (benchmarks/real_prose/real_prose.py)",
            "settings": rows,
        },
    )


if __name__ == "__main__":
    main()
