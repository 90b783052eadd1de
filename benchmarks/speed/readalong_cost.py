"""What the read-along outputs cost a render: the assemble-and-deliver stage with and without them.

Renders a book (default examples/book.md) with one generator and its verifiers loaded once, N=1,
into fresh folders, each ``--repeats`` times (the median is reported): ``--format flac``
(timings.json only), ``flac,epub3,srt,vtt`` at sentence level, and the same with
``--read-along words`` (Piper's words come from its duration predictor; any other generator's
winners are force-aligned by the WER verifier's Whisper, so run it with ``--generator espeak``
too for that cost). Generation and verification are the same in all
three, so the difference is the stage ``assemble`` of the manifest's ``stats.seconds`` (assembly,
mastering, encoding, alignment, the EPUB). Reported per run: that stage's seconds, the book's audio
seconds, and the stage's seconds per hour of audio. Writes benchmarks/results/readalong_cost.json.
Timing figures: run on idle cores.

Usage: python -m benchmarks.speed.readalong_cost [--book examples/book.md] [--repeats 3]
       [--generator piper] [--work /tmp/readalong-cost]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results" / "readalong_cost.json"
RUNS = {
    "flac": {"formats": "flac"},
    "epub3_sentences": {"formats": "flac,epub3,srt,vtt"},
    "epub3_words": {"formats": "flac,epub3,srt,vtt", "read_along": "words"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--book", type=Path, default=ROOT / "examples" / "book.md")
    parser.add_argument("--generator", default="piper")
    parser.add_argument("--work", type=Path, default=Path("/tmp/readalong-cost"))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load_before = [round(x, 2) for x in os.getloadavg()]

    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.render import render

    loaded = Synthesizer.load(build_config({}, candidates=1, generator=args.generator))
    runs = {}
    for name, production in RUNS.items():
        config = build_config(
            {}, candidates=1, adaptive=False, generator=args.generator, production=production
        )
        samples = []
        for _ in range(args.repeats):
            # the loaded models under this run's production settings
            synthesizer = Synthesizer(loaded.generator, loaded.verifiers, config)
            folder = args.work / name
            shutil.rmtree(folder, ignore_errors=True)
            render(args.book, folder, config, synthesizer=synthesizer)
            manifest = json.loads((folder / "manifest.json").read_text())
            samples.append(manifest["stats"]["seconds"]["assemble"])
        seconds = statistics.median(samples)
        audio = manifest["book"]["duration_s"]
        runs[name] = {
            "assemble_s": seconds,
            "samples_assemble_s": samples,
            "audio_s": audio,
            "assemble_s_per_audio_hour": round(seconds / audio * 3600, 1),
            "utterances": len(manifest["utterances"]),
        }
    result = {"book": str(args.book.relative_to(ROOT)) if args.book.is_relative_to(ROOT)
              else str(args.book), "generator": args.generator, "runs": runs,
              "command": " ".join(["python", *sys.argv]),
              "machine": {"cpus": os.cpu_count(), "load_average_before": load_before}}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
