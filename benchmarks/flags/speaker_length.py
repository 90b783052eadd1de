"""Speaker similarity against clip length: where does a Resemblyzer embedding stop telling voices?

Clean candidates of the embedded voice (Piper joe-medium, the render's seeds) for the development
short lines (benchmarks/data/short_lines_development.srt) and Harvard sentences 1-40 (long
takes, as in a book), plus one ``voice`` fault of each (pitch and formants shifted 4-7 semitones,
the calibration's wrong-voice fault). Every clip is embedded as the speaker verifier embeds it,
and its similarity is taken three ways:

- ``book``: against the centroid of the long clean takes (what a render's reference is);
- ``length_matched``: against the centroid of the other texts' clean takes of about the same speech
  length (the bin's, leaving out the clip's own text), the voice's other short takes;
- ``short_reference``: against the centroid of every other text's clean takes shorter than
  ``--short-s`` (one reference for all short clips, which a render keeps beside the book one;
  default the speaker verifier's own ``short_speech_s``, the bound a render uses);
- ``short_reference_3``: the same with only 3 other short takes (the fewest a render starts
  from, ``pipeline.MIN_SHORT_TAKES``), chosen at random for each clip.

Per speech-length bin (seconds of speech the encoder sees, after its silence trimming): the clean
similarity's quantiles, the share of clean takes below the shipped speaker gate (false alarms),
the voice faults' similarity, the AUC of clean against faulted, and the bound at 5 % false alarms
with the voice faults it catches. Writes benchmarks/results/speaker_length.json.

Usage: python -m benchmarks.flags.speaker_length [--harvard 40] [--seeds 4]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DEV_LINES = ROOT / "benchmarks" / "data" / "short_lines_development.srt"
BINS = (0.0, 0.5, 0.8, 1.1, 1.4, 1.8, 2.4, 100.0)


def auc(clean: np.ndarray, faulted: np.ndarray) -> float | None:
    """P(a clean take scores above a faulted one), ties half."""
    if clean.size == 0 or faulted.size == 0:
        return None
    above = (clean[:, None] > faulted[None, :]).mean() + 0.5 * (
        clean[:, None] == faulted[None, :]
    ).mean()
    return round(float(above), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harvard", type=int, default=40)
    parser.add_argument("--lines", type=int, default=120)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--short-s", type=float, default=None, help="default: the verifier's")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/speaker_length.json")
    parser.add_argument("--cache", type=Path, help="keep the embeddings here (npz) and reuse them")
    args = parser.parse_args()

    import srt

    from verified_tts.calibration.faults import audio_fault
    from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
    from verified_tts.selection.policy import PER_CLIP_GATES
    from verified_tts.storage.keys import candidate_seed
    from verified_tts.workflows.calibrate import builtin_sentences
    from verifiers import Clip
    from verifiers.speaker import SpeakerOptions, load_speaker_verifier

    if args.short_s is None:
        args.short_s = SpeakerOptions().short_speech_s
    lines = [c.content for c in srt.parse(DEV_LINES.read_text(encoding="utf-8"))][: args.lines]
    texts = [*builtin_sentences()[: args.harvard], *lines]
    generator = load_generator(GeneratorConfig(name="piper"))
    speaker = load_speaker_verifier()
    gate = next(g.min for g in PER_CLIP_GATES if g.metric in ("speaker", "speaker_take"))

    rows = []  # (text index, kind, speech seconds, embedding)
    if args.cache and args.cache.is_file():
        kept = np.load(args.cache)
        columns = (kept["index"], kept["kind"], kept["speech"], kept["embedding"])
        rows = [(int(i), str(k), float(s), e) for i, k, s, e in zip(*columns, strict=True)]
    for number, text in enumerate(texts if not rows else []):
        key = f"speaker:{text}"
        requests = [
            SynthesisRequest(key, k, candidate_seed(key, k), text) for k in range(args.seeds)
        ]
        candidates = generator.sample(requests)
        rng = np.random.default_rng([number, 7])
        clips = [(number, "clean", c.audio) for c in candidates]
        fault = audio_fault("voice", candidates[0].audio, candidates[0].sample_rate, rng)
        clips.append((number, "voice", fault.audio))
        batch = [Clip(audio, generator.sample_rate, text) for _, _, audio in clips]
        embeddings, speech = speaker.embed_with_speech(batch)
        for (index, kind, _audio), embedding, seconds in zip(
            clips, embeddings, speech, strict=True
        ):
            rows.append((index, kind, seconds, np.asarray(embedding, np.float64)))
    if args.cache and not args.cache.is_file():
        np.savez(args.cache, index=[r[0] for r in rows], kind=[r[1] for r in rows],
                 speech=[r[2] for r in rows], embedding=np.stack([r[3] for r in rows]))  # fmt: skip

    def unit(vector: np.ndarray) -> np.ndarray:
        return vector / (np.linalg.norm(vector) or 1.0)

    long_ref = unit(
        np.mean([e for i, k, _, e in rows if k == "clean" and i < args.harvard], axis=0)
    )
    bins = np.digitize([r[2] for r in rows], BINS) - 1
    results = {"book": [], "length_matched": [], "short_reference": [], "short_reference_3": []}
    picker = np.random.default_rng(3)
    similarity = {name: [] for name in results}
    for position, (index, _kind, _seconds, embedding) in enumerate(rows):
        same_bin = [e for (i, k, _, e), b in zip(rows, bins, strict=True)
                    if k == "clean" and i != index and b == bins[position]]  # fmt: skip
        short = [e for i, k, s, e in rows if k == "clean" and i != index and s < args.short_s]
        similarity["book"].append(float(embedding @ long_ref))
        similarity["length_matched"].append(
            float(embedding @ unit(np.mean(same_bin, axis=0))) if same_bin else float("nan")
        )
        similarity["short_reference"].append(float(embedding @ unit(np.mean(short, axis=0))))
        three = np.mean([short[j] for j in picker.choice(len(short), 3, replace=False)], axis=0)
        similarity["short_reference_3"].append(float(embedding @ unit(three)))
    kinds = np.array([r[1] for r in rows])
    for name, values in similarity.items():
        values = np.array(values)
        for b in range(len(BINS) - 1):
            in_bin = bins == b
            clean = values[in_bin & (kinds == "clean")]
            voice = values[in_bin & (kinds == "voice")]
            clean, voice = clean[~np.isnan(clean)], voice[~np.isnan(voice)]
            if clean.size == 0:
                continue
            bound = float(np.quantile(clean, 0.05))
            results[name].append(
                {
                    "speech_s": [BINS[b], BINS[b + 1]],
                    "clean": int(clean.size),
                    "voice_faults": int(voice.size),
                    "clean_quantiles_5_50_95": [round(float(q), 4)
                                                for q in np.quantile(clean, [0.05, 0.5, 0.95])],
                    "false_alarm_at_shipped_gate": round(float((clean < gate).mean()), 4),
                    "voice_median": round(float(np.median(voice)), 4) if voice.size else None,
                    "auc_clean_vs_voice": auc(clean, voice),
                    "bound_at_5pct": round(bound, 4),
                    "voice_caught_at_5pct": round(float((voice < bound).mean()), 4)
                    if voice.size
                    else None,
                }
            )  # fmt: skip
    record = {
        "benchmark": "speaker_length",
        "voice": generator.model,
        "verifier": dict(speaker.identity()),
        "shipped_gate": gate,
        "texts": {"harvard": args.harvard, "development_short_lines": len(lines)},
        "seeds": args.seeds,
        "short_reference_below_s": args.short_s,
        "by_reference": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    for name, entries in results.items():
        print(name)
        for entry in entries:
            print("  ", json.dumps(entry))


if __name__ == "__main__":
    main()
