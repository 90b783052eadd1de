"""How many voices a cast can use: told apart by the speaker verifier, and heard as clearly.

Each voice (default: the embedded Piper and hibari voices, each also moved by 2 to 6 semitones
with ``@pitch``; espeak-ng's variants, judged less clear than the default in an earlier run, are
left out) reads the same Harvard sentences, one seeded take each. Distinctness: the speaker
verifier (Resemblyzer, the shipped default) embeds every clip, each voice's clips are averaged
into a unit centroid, and every pair of voices gets the cosine similarity of their centroids and,
more strictly, the highest similarity of a clip of one to the other's centroid. A pair is told
apart when that highest similarity is below the speaker gate's bound (the profiles'
``speaker_take`` minimum): a line of one voice would fail the gate of the other.
Intelligibility: the independent judge (Whisper base, ``bundled:base``) transcribes every clip; a
voice is as clear as the default when its mean WER is within ``--wer-margin`` (0.02) of the
default Piper voice's. Reported: the matrix, the pairs not told apart, each voice's judged WER,
and the largest set of voices that are told apart pairwise and as clear as the default (every
subset tried). With ``--package`` the centroid similarities are also written where
``verified-tts cast`` reads them, to give the most
distinct voices to the characters who speak most.

    python -m benchmarks.casting.voice_distinctness --package  # voice_distinctness.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.common.harvard import sentences
from verified_tts.storage.atomic import write_text_atomic

HERE = Path(__file__).resolve().parent
RESULT = HERE.parent / "results" / "voice_distinctness.json"
GATE = 0.8093  # verified_tts/profiles/*.toml speaker_take min
DEFAULT_VOICE = "piper:en_US-joe-medium"
VOICES = (
    DEFAULT_VOICE,
    *(f"{DEFAULT_VOICE}@pitch{s:+d}" for s in (-2, 3, 6)),
    "hibari:heart",
    *(f"hibari:heart@pitch{s:+d}" for s in (-6, -3, 3, 6)),
)


def _clips(name: str, texts: list[str]):
    from verified_tts.generators import load_generator
    from verified_tts.generators.base import SynthesisRequest
    from verified_tts.voices import find_voice

    voice = find_voice(name)
    config = voice.generator_config()
    generator = load_generator(config)
    requests = [
        SynthesisRequest(f"{name}-{i}", 0, 1234 + i, text, voice=config.voice)
        for i, text in enumerate(texts)
    ]
    return generator.sample(requests)


def _told_apart(worst: dict, names: list[str]) -> dict[tuple[str, str], bool]:
    return {(a, b): max(worst[a][b], worst[b][a]) < GATE for a in names for b in names if a < b}


def _largest_apart(clear: list[str], apart: dict, matrix: dict) -> list[str]:
    """The largest set of clear voices told apart pairwise (every subset is tried; a dozen voices
    is 4,096 sets), the least alike in sum of centroid similarities among the largest."""
    best: tuple[int, float, list[str]] = (0, 0.0, [])
    for mask in range(1, 1 << len(clear)):
        chosen = [v for i, v in enumerate(clear) if mask >> i & 1]
        if len(chosen) < best[0] or not all(
            apart[tuple(sorted((a, b)))] for a in chosen for b in chosen if a < b
        ):
            continue
        alike = sum(matrix[a][b] for a in chosen for b in chosen if a < b)
        if (len(chosen), -alike) > (best[0], -best[1]):
            best = (len(chosen), alike, chosen)
    return sorted(best[2], key=lambda n: sum(matrix[n].values()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--voices", nargs="*", default=list(VOICES))
    parser.add_argument("--wer-margin", type=float, default=0.02)
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument(
        "--cache", type=Path, default=Path("out/voice_distinctness"),
        help="each voice's embeddings and judged WER, kept so that a run with one more voice "
        "measures only that one (delete it after changing a voice, the verifier or the judge)",
    )  # fmt: skip
    parser.add_argument(
        "--package", action="store_true", help="also write the similarities cast reads"
    )
    args = parser.parse_args(argv)
    from verified_tts.casting.voice_order import PACKAGE_TABLE
    from verified_tts.workflows.judge import load_judge
    from verifiers import Clip
    from verifiers.speaker import load_speaker_verifier

    started = time.perf_counter()
    verifier = load_speaker_verifier()
    judge = load_judge("bundled:base")
    texts = sentences(0, args.sentences)
    embeddings, wer, genders = {}, {}, {}
    for name in args.voices:
        from verified_tts.voices import find_voice

        genders[name] = find_voice(name).gender
        kept = args.cache / f"{name.replace(':', '_')}-{args.sentences}.npz"
        if kept.exists():  # the same seeded takes, embedded and judged before
            with np.load(kept) as found:
                embeddings[name], wer[name] = found["embeddings"], float(found["wer"])
            print(name, "WER", wer[name], "(kept)", flush=True)
            continue
        candidates = _clips(name, texts)
        clips = [Clip(c.audio, c.sample_rate, t) for c, t in zip(candidates, texts, strict=True)]
        embeddings[name] = np.asarray(verifier.embed(clips))
        wer[name] = round(float(np.mean([w for w, _ in judge.transcribe(clips)])), 4)
        args.cache.mkdir(parents=True, exist_ok=True)
        np.savez(kept, embeddings=embeddings[name], wer=wer[name])
        print(name, "WER", wer[name], flush=True)
    centroids = {n: e.mean(axis=0) / np.linalg.norm(e.mean(axis=0)) for n, e in embeddings.items()}
    names = list(embeddings)
    matrix, worst = {}, {}
    for a in names:
        matrix[a], worst[a] = {}, {}
        for b in names:
            matrix[a][b] = round(float(centroids[a] @ centroids[b]), 4)
            if a != b:
                worst[a][b] = round(float(np.max(embeddings[a] @ centroids[b])), 4)
    apart = _told_apart(worst, names)
    reference = wer.get(DEFAULT_VOICE)
    clear = [n for n in names if reference is None or wer[n] <= reference + args.wer_margin]
    chosen = _largest_apart(clear, apart, matrix)
    report = {
        "what": "pairwise speaker-verifier similarity and judged WER of the voices a cast can use",
        "verifier": "resemblyzer (shipped default)",
        "judge": "bundled:base (Whisper base)",
        "gate": GATE,
        "sentences": args.sentences,
        "wer_margin": args.wer_margin,
        "default_voice": DEFAULT_VOICE,
        "judge_wer": wer,
        "gender": genders,
        "centroid_similarity": matrix,
        "highest_clip_to_centroid": worst,
        "not_told_apart": sorted(f"{a} ~ {b}" for (a, b), ok in apart.items() if not ok),
        "as_clear_as_default": clear,
        "told_apart_pairwise": chosen,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_text_atomic(args.out, json.dumps(report, indent=2) + "\n")
    if args.package:
        table = {"gate": GATE, "source": "benchmarks/casting/voice_distinctness.py",
                 "judge_wer": wer, "clear": clear, "told_apart": chosen,
                 "similarity": matrix}  # fmt: skip
        write_text_atomic(PACKAGE_TABLE, json.dumps(table, indent=1) + "\n")
    shown = ("judge_wer", "not_told_apart", "told_apart_pairwise")
    print(json.dumps({k: report[k] for k in shown}, indent=1))


if __name__ == "__main__":
    main()
