"""Piper's own durations: are the timings exact, and which length should a candidate be held to?

Part 1 (exactness): the embedded voice renders texts with the render's seeds; for every candidate
the frames per phoneme id its run drew, times the voice's samples per frame, plus the pauses
between sentences, must be the audio's length to the sample; its words must lie in order inside
the audio; the duration predictor cut out of the graph must draw the same frames from the same
noise as the full run; and at ``noise_w`` 0 every seed must draw the same frames, which are the
predictor's.

Part 2 (the expected length): for each text, candidate k's length under the render's seeds (from
the duration predictor fed each candidate's own duration noise, which part 1 shows is exact) is
compared with candidates for "what the voice meant": its prediction at ``noise_w`` 0 (one
deterministic run) and the mean over 16 (the generator's ``PREDICTION_DRAWS``) and 64 noise
draws. Per text-length bucket: the bias of the
log ratio, its spread within a text (the seeds' noise, the same for both) and between texts (what
a fixed gate cannot absorb), and the 2.5-97.5 % range of the ratio. Texts: Harvard sentences
1-60 and the development short lines (benchmarks/data/short_lines_development.srt), the tuning
side of the team's split. Writes benchmarks/results/piper_durations.json.

Usage: python -m benchmarks.flags.piper_durations [--harvard 60] [--exact 24]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DEV_LINES = ROOT / "benchmarks" / "data" / "short_lines_development.srt"
DRAWS = (16, 64)  # the shipped mean (PREDICTION_DRAWS) and a finer one
SEEDS = 8
BUCKETS = ((0, 20), (20, 40), (40, 80), (80, 10_000))  # phoneme ids of the text


def texts(harvard: int) -> list[str]:
    import srt

    from verified_tts.workflows.calibrate import builtin_sentences

    lines = [c.content for c in srt.parse(DEV_LINES.read_text(encoding="utf-8"))]
    return [*builtin_sentences()[:harvard], *lines]


def exactness(generator, sample_texts: list[str]) -> dict:
    from dataclasses import replace

    from verified_tts.generators import SynthesisRequest
    from verified_tts.generators.piper import draw_noise
    from verified_tts.storage.keys import candidate_seed

    checked = exact = ordered = same_as_cut = 0
    for text in sample_texts:
        requests = [
            SynthesisRequest(f"u:{text}", k, candidate_seed(f"u:{text}", k), text) for k in range(4)
        ]
        for candidate in generator.sample(requests):
            timing = candidate.info["timing"]
            frames = timing["frames"]
            length = sum(map(sum, frames)) * timing["hop"] + timing["pause"] * (len(frames) - 1)
            checked += 1
            exact += length == candidate.audio.size
            times = [(w[5], w[6]) for w in timing["words"]]
            ordered += (
                all(a <= b for a, b in times)
                and all(times[i][1] <= times[i + 1][0] + 1e-9 for i in range(len(times) - 1))
                and (not times or times[-1][1] <= candidate.duration_s + 1e-9)
            )
            predictor = generator.voice.predictor
            dims = predictor.noise_dims
            cut = [
                predictor.run(ids, generator.scales, 0,
                              draw_noise(candidate.seed, s, 0, dims, len(ids))).reshape(-1)
                for s, ids in enumerate(generator.phonemize(text).ids)
            ]  # fmt: skip
            same_as_cut += all(
                np.array_equal(np.round(c).astype(int), f) for c, f in zip(cut, frames, strict=True)
            )
    quiet = replace(generator.options, noise_w=0.0)
    from verified_tts.generators.piper import PiperGenerator

    still = PiperGenerator(generator.voice, quiet, generator.speaker)
    steady = 0
    for text in sample_texts:
        runs = still.sample([SynthesisRequest("q", k, 1000 + k, text) for k in range(3)])
        frames = [c.info["timing"]["frames"] for c in runs]
        predicted = [c.info["timing"]["predicted_s"] for c in runs]
        steady += all(f == frames[0] for f in frames) and math.isclose(
            predicted[0], runs[0].duration_s, abs_tol=1e-4
        )
    return {
        "candidates": checked,
        "length_equals_frames_times_hop": exact,
        "words_in_order_inside_audio": ordered,
        "predictor_cut_draws_the_same_frames": same_as_cut,
        "texts_at_noise_w_0": len(sample_texts),
        "noise_w_0_same_frames_every_seed_and_equal_to_prediction": steady,
    }


def expected_lengths(generator, all_texts: list[str]) -> dict:
    from verified_tts.generators.piper import draw_noise
    from verified_tts.storage.keys import candidate_seed

    predictor = generator.voice.predictor
    rows = []
    for text in all_texts:
        ids_per_sentence = generator.phonemize(text).ids
        sampled = np.zeros(SEEDS)
        for s, ids in enumerate(ids_per_sentence):
            noise = np.concatenate(
                [
                    draw_noise(candidate_seed(f"u:{text}", k), s, 0, predictor.noise_dims, len(ids))
                    for k in range(SEEDS)
                ]
            )
            runs = predictor.run(ids, generator.scales, 0, noise)
            sampled += np.maximum(np.round(runs).sum(axis=1), 1.0)
        scales = generator.scales
        deterministic = sum(predictor.frames(ids, scales, 0, 0) for ids in ids_per_sentence)
        row = {
            "text": text,
            "ids": sum(map(len, ids_per_sentence)),
            "log_ratio_noise_w_0": np.log(sampled / deterministic).tolist(),
        }
        for draws in DRAWS:
            mean = sum(predictor.frames(ids, scales, 0, draws) for ids in ids_per_sentence)
            row[f"log_ratio_mean_{draws}"] = np.log(sampled / mean).tolist()
        rows.append(row)
    summary = {}
    for low, high in (*BUCKETS, (0, 10_000)):
        group = [r for r in rows if low <= r["ids"] < high]
        if not group:
            continue
        entry = {"texts": len(group)}
        for name in ("noise_w_0", *(f"mean_{d}" for d in DRAWS)):
            values = np.array([r[f"log_ratio_{name}"] for r in group])
            per_text = values.mean(axis=1)
            ratios = np.exp(values.reshape(-1))
            entry[name] = {
                "bias_log": round(float(values.mean()), 4),
                "within_text_sd_log": round(float(values.std(axis=1, ddof=1).mean()), 4),
                "between_text_sd_log": round(float(per_text.std(ddof=1)), 4)
                if len(group) > 1
                else None,
                "ratio_2.5_97.5": [round(float(np.quantile(ratios, q)), 4) for q in (0.025, 0.975)],
            }
        summary[f"{low}-{high if high < 10_000 else 'up'} ids"] = entry
    return {"draws_for_mean": list(DRAWS), "seeds_per_text": SEEDS, "by_length": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harvard", type=int, default=60)
    parser.add_argument("--exact", type=int, default=24, help="texts checked for exactness")
    default_out = ROOT / "benchmarks/results/piper_durations.json"
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args()

    from verified_tts.generators import GeneratorConfig, load_generator

    generator = load_generator(GeneratorConfig(name="piper"))
    all_texts = texts(args.harvard)
    half = args.exact // 2
    sample_texts = [*all_texts[:half], *all_texts[args.harvard : args.harvard + half]]
    record = {
        "benchmark": "piper_durations",
        "voice": generator.model,
        "sampling": dict(generator.identity()["sampling"]),
        "texts": {
            "harvard": args.harvard,
            "development_short_lines": len(all_texts) - args.harvard,
        },
        "exactness": exactness(generator, sample_texts),
        "expected_length": expected_lengths(generator, all_texts),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in record.items() if k != "texts"}, indent=2))


if __name__ == "__main__":
    main()
