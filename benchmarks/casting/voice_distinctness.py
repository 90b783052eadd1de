"""How distinct the voices a cast can use are, as the speaker verifier hears them.

Each voice (default: the embedded Piper and hibari voices and espeak-ng's en-us with eight of
its variants) reads the same Harvard sentences; the speaker verifier (Resemblyzer, the shipped
default) embeds every clip, each voice's clips are averaged into a unit centroid, and every pair
of voices gets the cosine similarity of their centroids and, more strictly, the highest similarity
of a clip of one to the other's centroid. A pair is told apart when that highest similarity is
below the speaker gate's bound (the profiles' ``speaker_take`` minimum, 0.8093): a line of one
voice would fail the gate of the other. Reported: the matrix, the pairs not told apart, and the
largest set of voices told apart pairwise (greedy, most distinct first). Intelligibility (judge
WER) is not measured here.

    PYTHONPATH=$PWD python -m benchmarks.casting.voice_distinctness  # voice_distinctness.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from harvard import sentences  # noqa: E402

from verified_tts.storage.atomic import write_text_atomic  # noqa: E402

RESULT = HERE.parent / "results" / "voice_distinctness.json"
GATE = 0.8093  # verified_tts/profiles/*.toml speaker_take min
VOICES = (
    "piper:en_US-joe-medium",
    "hibari:heart",
    *(f"espeak:en-us+{v}" for v in ("m1", "m3", "m5", "m7", "f1", "f2", "f3", "f4")),
)


def _clips(name: str, texts: list[str]):
    from verified_tts.generators import load_generator
    from verified_tts.generators.base import SynthesisRequest
    from verified_tts.voices import find_voice

    voice = find_voice(name)
    generator = load_generator(voice.generator_config())
    requests = [
        SynthesisRequest(f"{name}-{i}", 0, 1234 + i, text, voice=voice.generator_config().voice)
        for i, text in enumerate(texts)
    ]
    return generator.sample(requests)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=8)
    parser.add_argument("--voices", nargs="*", default=list(VOICES))
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    from verifiers import Clip
    from verifiers.speaker import load_speaker_verifier

    verifier = load_speaker_verifier()
    texts = sentences(0, args.sentences)
    embeddings = {}
    for name in args.voices:
        candidates = _clips(name, texts)
        clips = [Clip(c.audio, c.sample_rate, t) for c, t in zip(candidates, texts, strict=True)]
        embeddings[name] = np.asarray(verifier.embed(clips))
        print(name, "embedded", flush=True)
    centroids = {n: e.mean(axis=0) / np.linalg.norm(e.mean(axis=0)) for n, e in embeddings.items()}
    names = list(embeddings)
    matrix, worst = {}, {}
    for a in names:
        matrix[a], worst[a] = {}, {}
        for b in names:
            matrix[a][b] = round(float(centroids[a] @ centroids[b]), 4)
            if a != b:
                highest = float(np.max(embeddings[a] @ centroids[b]))
                worst[a][b] = round(highest, 4)
    apart = {
        (a, b): max(worst[a][b], worst[b][a]) < GATE for a in names for b in names if a < b
    }
    chosen: list[str] = []
    for name in sorted(names, key=lambda n: sum(matrix[n].values())):
        if all(apart[tuple(sorted((name, c)))] for c in chosen):
            chosen.append(name)
    report = {
        "what": "pairwise speaker-verifier similarity of the voices a cast can use",
        "verifier": "resemblyzer (shipped default)",
        "gate": GATE,
        "sentences": args.sentences,
        "centroid_similarity": matrix,
        "highest_clip_to_centroid": worst,
        "not_told_apart": sorted(f"{a} ~ {b}" for (a, b), ok in apart.items() if not ok),
        "told_apart_pairwise": chosen,
    }
    write_text_atomic(args.out, json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("not_told_apart", "told_apart_pairwise")}, indent=1))


if __name__ == "__main__":
    main()
