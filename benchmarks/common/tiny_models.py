"""Write tiny random-weight models of the Orpheus, Llasa and Spark-TTS layouts and their codecs.

    python -m benchmarks.common.tiny_models OUT [--only orpheus,llasa,spark]

writes ``OUT/orpheus``, ``OUT/llasa`` and ``OUT/spark``, each with ``lm/`` (the LM and its
tokenizer) and ``codec/`` (SNAC, X-codec2 or BiCodec with random weights), so every generator
runs end to end without downloading anything, e.g.::

    python -m verified_tts render book.md --generator llasa \\
        --model OUT/llasa/lm --codec OUT/llasa/codec

The models speak noise; they exist to exercise the real loading, engine and codec code.
The builders are :mod:`verified_tts.testing.tiny_models` (the tests use the same ones).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write OUT/{orpheus,llasa,spark}")
    parser.add_argument("--only", default="orpheus,llasa,spark", help="comma-separated layouts")
    args = parser.parse_args()
    from verified_tts.testing.tiny_models import build_all

    layouts = tuple(name.strip() for name in args.only.split(",") if name.strip())
    unknown = set(layouts) - {"orpheus", "llasa", "spark"}
    if unknown:
        parser.error(f"unknown layout(s) {', '.join(sorted(unknown))}: use orpheus, llasa, spark")
    start = time.perf_counter()
    for name, paths in build_all(args.out, only=layouts).items():
        print(f"{name}: --model {paths['lm']} --codec {paths['codec']}")
    print(f"built in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
