"""Long books: peak memory and time of assembly for a 10-hour book against a 1-hour one.

What is measured is assembly and delivery (chapter mastering, chapter files, the book FLAC and
the M4B with chapters), so the utterance audio is made cheaply but honestly: espeak-ng (N=1)
renders real winners of Harvard sentences into a real store, and the synthetic book places those
stored clips again and again, in 30-minute chapters, each read from the store when assembly
reaches it, exactly as a render does. Every size runs in a fresh process so its peak resident
memory (ru_maxrss) is its own. Also written: the M4B chapter accuracy (chapter starts read back
from the file against the chapter files' offsets, in samples) and the ACX figures of the
chapters. Writes benchmarks/results/long_book.json.

    nice -n 10 python -m benchmarks.speed.long_book            # 1 h and 10 h
    python -m benchmarks.speed.long_book --hours 0.2 --hours 1  # a quicker look
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CHAPTER_MINUTES = 30.0
SENTENCES = 40


def _store_winners(store_dir: Path) -> list:
    from benchmarks.common.harvard import sentences
    from verified_tts.generators import SynthesisRequest
    from verified_tts.generators.espeak import EspeakGenerator
    from verified_tts.storage.keys import candidate_key, candidate_seed
    from verified_tts.storage.store import Store

    texts = sentences(0, SENTENCES)
    generator = EspeakGenerator()
    stored = []
    with Store(store_dir) as store:
        for number, text in enumerate(texts):
            key = f"long-book-{number:03d}"
            existing = store.get_candidate(candidate_key(key, 0))
            if existing is None:
                request = SynthesisRequest(key, 0, candidate_seed(key, 0), text)
                (candidate,) = generator.sample([request])
                existing = store.put_candidate(
                    candidate_key(key, 0), utterance=key, index=0, seed=request.seed,
                    audio=candidate.audio, sample_rate=candidate.sample_rate, info={},
                )  # fmt: skip
            stored.append(existing)
    return stored, generator.sample_rate


def child(hours: float, work: Path) -> dict:
    """Assemble and deliver a book of ``hours`` in this process; returns the figures."""
    import av
    import soundfile as sf

    from verified_tts.options import AssemblyOptions, ProductionOptions
    from verified_tts.output.assembly import Placed, assemble_book
    from verified_tts.output.deliver import deliver
    from verified_tts.output.encode import BookTags
    from verified_tts.storage.store import Store

    stored, rate = _store_winners(work / "store")
    options = AssemblyOptions()
    store = Store(work / "store")
    placed = []
    chapters = max(1, round(hours * 60 / CHAPTER_MINUTES))
    for chapter in range(chapters):
        seconds, position = 0.0, 0
        while seconds < CHAPTER_MINUTES * 60:
            clip = stored[position % len(stored)]
            pause = "paragraph" if position % 5 == 4 else "sentence"
            placed.append(
                Placed(
                    functools.partial(store.load_audio, clip),
                    chapter,
                    f"Chapter {chapter + 1}",
                    pause,
                )  # fmt: skip
            )
            seconds += clip.duration_s + options.sentence_pause
            position += 1
        placed[-1] = Placed(placed[-1].audio, chapter, placed[-1].chapter_title, "chapter")
    out = work / f"out-{hours:g}h"
    production = ProductionOptions(formats=("flac", "m4b"))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    files = assemble_book(placed, rate, out, options, formats=production.formats)
    assembled = time.perf_counter()
    delivery = deliver(files, out, production, BookTags(title="Long Book", author="Bench"))
    finished = time.perf_counter()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    store.close()
    chapter_files = [f for f in files if f.index is not None]
    offsets, total = [], 0
    for f in chapter_files:
        info = sf.info(str(out / f.flac))
        offsets.append(total * 44100 // info.samplerate)
        total += info.frames
    with av.open(str(out / "book.m4b")) as container:
        starts = [int(m["start"] * 44100 * m["time_base"]) for m in container.chapters()]
    errors = [abs(a - b) for a, b in zip(starts, offsets, strict=True)]
    acx = delivery["acx"]["files"]
    return {
        "hours": hours,
        "audio_hours": round(total / rate / 3600, 3),
        "chapters": len(chapter_files),
        "utterances": len(placed),
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "rss_before_assembly_mib": round(before / 1024, 1),
        "seconds_assemble_master_flac": round(assembled - started, 1),
        "seconds_deliver_m4b_and_acx_check": round(finished - assembled, 1),
        "seconds_total": round(finished - started, 1),
        "m4b_bytes": (out / "book.m4b").stat().st_size,
        "m4b_chapter_start_error_samples_max": max(errors),
        "acx_passed": delivery["acx"]["passed"],
        "acx_rms_db_range": [min(f["rms_db"] for f in acx), max(f["rms_db"] for f in acx)],
        "acx_peak_db_max": max(f["peak_db"] for f in acx),
        "acx_noise_floor_db_max": max(f["noise_floor_db"] for f in acx),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, action="append")
    parser.add_argument("--child", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/long_book.json")
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.work)))
        return
    runs = []
    with tempfile.TemporaryDirectory(prefix="long-book-") as work:
        for hours in args.hours or [1.0, 10.0]:
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.speed.long_book", "--child", str(hours),
                 "--work", work],
                cwd=ROOT, capture_output=True, text=True, check=True,
            )  # fmt: skip
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(runs[-1]), flush=True)
            for path in Path(work).glob("out-*"):  # keep the disk free for the next size
                subprocess.run(["rm", "-rf", str(path)], check=True)
    result = {
        "what": "assembly + delivery of a synthetic book from stored espeak winners (N=1), "
        f"{CHAPTER_MINUTES:g}-minute chapters, formats flac + m4b, each size in a fresh process",
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
