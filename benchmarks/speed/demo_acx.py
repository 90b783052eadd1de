"""ACX figures and M4B chapter accuracy of the demo book (examples/book.md).

Renders the demo with the embedded default (espeak-ng, N=1) to M4B and ACX MP3 with opening and
closing credits, then records each MP3's ACX measurements (from ``acx.json``), the M4B's chapter
starts read back from the file against the chapter files' offsets (in samples at 44.1 kHz), and
the ACX check of the M4B itself. Writes benchmarks/results/demo_acx.json.

    python -m benchmarks.speed.demo_acx
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    # no options; --help says what it measures instead of running it and rewriting the result
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    import av
    import soundfile as sf

    from verified_tts.config import build_config
    from verified_tts.output.acx import check, measure
    from verified_tts.workflows.render import render

    config = build_config(
        {},
        candidates=1,
        generator="espeak",
        production={"formats": "m4b,mp3", "credits": True, "narrator": "eSpeak NG"},
    )
    with tempfile.TemporaryDirectory(prefix="demo-acx-") as work:
        out = Path(work) / "out"
        started = time.perf_counter()
        render(ROOT / "examples" / "book.md", out, config)
        wall = time.perf_counter() - started
        manifest = json.loads((out / "manifest.json").read_text())
        acx = json.loads((out / "acx.json").read_text())
        offsets, total = [], 0
        for chapter in manifest["chapters"]:
            info = sf.info(str(out / chapter["flac"]))
            offsets.append(total * 44100 // info.samplerate)
            total += info.frames
        with av.open(str(out / "book.m4b")) as container:
            marks = container.chapters()
            starts = [int(m["start"] * 44100 * m["time_base"]) for m in marks]
            titles = [m["metadata"].get("title") for m in marks]
        m4b_check = check(measure(out / "book.m4b")).as_dict()
    result = {
        "input": "examples/book.md",
        "generator": "espeak (N=1)",
        "wall_seconds": round(wall, 1),
        "acx": acx,
        "m4b": {
            "chapter_titles": titles,
            "chapter_starts_samples": starts,
            "chapter_file_offsets_samples": offsets,
            "max_error_samples": max(abs(a - b) for a, b in zip(starts, offsets, strict=True)),
            "acx_check_of_the_m4b": m4b_check,
        },
    }
    path = ROOT / "benchmarks" / "results" / "demo_acx.json"
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for record in acx["files"]:
        verdict = "pass" if record["passed"] else record["failures"]
        figures = [record[k] for k in ("rms_db", "peak_db", "noise_floor_db", "head_s", "tail_s")]
        print(record["path"], *figures, verdict)
    print("m4b chapter error (samples):", result["m4b"]["max_error_samples"])
    print("m4b ACX:", m4b_check["failures"] or "pass")


if __name__ == "__main__":
    main()
