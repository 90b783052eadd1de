"""How far Whisper's word boundaries lie from the exact ones, on Piper reading held-out prose.

The read-along path for every generator but Piper force-aligns the written words with the WER
verifier's Whisper (verified_tts.output.word_timing.WordAligner). Piper knows where its words
are: its duration predictor gives every phoneme id a whole number of frames, which the loaded
voice exposes (verified_tts.generators.piper_words), so each candidate carries exact word bounds
in ``info["word_timings"]``. This script has the default voice speak each sentence as a render
would and compares the aligner's bounds on that same audio with the exact ones. espeak-ng
sometimes joins unstressed words ("in the" is one entry) and a written word may be several
spoken ones ("1984"), so written words and exact entries are compared in the least groups that
hold the same spoken words, at the groups' outer edges.

Prose: /work/shared/data/books/*.txt, cut into chapters at their "CHAPTER I." (or bare roman
numeral) headings; the held-out chapters are each book's last floor(n/2); ``--sentences`` of
them per book (5 to 40 words) are drawn with a fixed seed. The aligner's ``lag_s`` is chosen on
``--calibration`` sentences per book from the other chapters (the lag with the least median
boundary error); the held-out figures are of the aligner as it ships, of it at the calibrated
lag, and of the raw cross-attention bounds (no refinement). Reported: median, 95th percentile
and mean of the start and end errors (ms), both together, and a gap-aware boundary error (where
a word meets the next, the exact bounds leave a gap between them, and a boundary inside the gap
counts as 0), by the aligner's word source (placed, interpolated). The shipped aligner packs
several sentences into one Whisper window, as the WER verifier packs clips; the same sentences
aligned one to a window are reported beside it, with the wall seconds each layout took here (the
encoder is the cost; the seconds depend on the machine, the comparison does not). Writes
benchmarks/results/word_alignment.json.

Usage: nice -n 10 python -m benchmarks.real_prose.word_alignment [--sentences 40] [--calibration 15]
       [--whisper MODEL]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOKS = Path("/work/shared/data/books")
OUT = ROOT / "benchmarks" / "results" / "word_alignment.json"
_CHAPTER = re.compile(r"^\s*CHAPTER\s+[IVXLC]+\.?\s*$")
_ROMAN = re.compile(r"^\s*[IVXLC]+\.?\s*$")
LAGS = (0.0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12)  # seconds tried on the calibration half


def chapters(text: str) -> list[str]:
    """The book's chapters: text between chapter headings (blank lines around them)."""
    lines = text.splitlines()
    marked = [i for i, line in enumerate(lines) if _CHAPTER.match(line)]
    if len(marked) < 3:
        marked = [
            i
            for i, line in enumerate(lines)
            if _ROMAN.match(line) and i and not lines[i - 1].strip()
            and i + 1 < len(lines) and not lines[i + 1].strip()
        ]  # fmt: skip
    bounds = [*marked, len(lines)]
    return ["\n".join(lines[a + 1 : b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def book_sentences(path: Path, count: int, seed: int, *, held_out: bool) -> tuple[list[str], dict]:
    """``count`` sentences of 5-40 words from the book's held-out chapters (its last
    floor(n/2)), or from the others (for calibration)."""
    from verified_tts.text.sentences import split_sentences

    parts = chapters(path.read_text(encoding="utf-8"))
    cut = len(parts) - len(parts) // 2
    chosen = parts[cut:] if held_out else parts[:cut]
    pool = []
    for chapter in chosen:
        for paragraph in re.split(r"\n\s*\n", chapter):
            text = " ".join(paragraph.split())
            if not text or text.startswith("[") or text.isupper():
                continue
            text = text.replace("_", "")
            for sentence in split_sentences(text):
                if 5 <= len(sentence.split()) <= 40:
                    pool.append(sentence)
    picked = random.Random(seed).sample(pool, min(count, len(pool)))
    return picked, {"chapters": len(parts), "used_chapters": len(chosen), "pool": len(pool)}


def groups_of(written: list[str], entries: list[list]) -> list[tuple[int, int, int, int]]:
    """Groups ``(a, b, c, d)``: written words ``a..b`` are the generator's entries ``c..d``, the
    least runs in which both hold the same spoken words ("1984" is two entries, one entry "in
    the" two written words)."""
    from verified_tts.text.normalize import normalize_text

    counts = [len(normalize_text(word).split()) for word in written]
    sizes = [len(str(entry[0]).split()) for entry in entries]
    groups, a, c, said, heard, i, j = [], 0, 0, 0, 0, 0, 0
    while i < len(counts) or j < len(sizes):
        if said <= heard and i < len(counts):
            said, i = said + counts[i], i + 1
        elif j < len(sizes):
            heard, j = heard + sizes[j], j + 1
        else:
            return []
        if said == heard and said and (i == len(counts) or counts[i]):
            groups.append((a, i, c, j))
            a, c, said, heard = i, j, 0, 0
    return groups if a == len(counts) and c == len(sizes) else []


def _stats(values: list[float]) -> dict:
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {
        "count": len(values),
        "median_ms": round(statistics.median(values), 1),
        "p95_ms": round(p95, 1),
        "mean_ms": round(statistics.fmean(values), 1),
        "within_50ms": round(sum(v <= 50 for v in values) / len(values), 3),
        "within_100ms": round(sum(v <= 100 for v in values) / len(values), 3),
    }


def prepare(generator, texts: list[str], seed: int, counts: dict) -> list[tuple]:  # noqa: ANN001
    """Each sentence spoken by the generator, its exact word bounds and its written words
    grouped with them; ``counts`` tallies sentences without exact bounds."""
    from verified_tts.generators import SynthesisRequest
    from verified_tts.output.word_timing import INFO_KEY
    from verified_tts.text.normalize import normalize_text

    prepared = []
    for number, text in enumerate(texts):
        spoken = normalize_text(text)
        (candidate,) = generator.sample([SynthesisRequest("b", 0, seed + number, spoken)])
        entries = candidate.info.get(INFO_KEY)
        groups = groups_of(text.split(), entries) if entries else []
        counts["sentences"] += 1
        if groups:
            prepared.append((text, spoken, candidate.audio, entries, groups))
        else:
            counts["without_exact_words"] += 1
    return prepared


def measure(prepared: list[tuple], aligner, rate: int) -> dict:  # noqa: ANN001
    """The aligner's errors against the exact bounds, on the prepared sentences."""
    from verified_tts.output.word_timing import TimedClip

    starts, ends, gaps, by_source = [], [], [], {"asr": [], "interpolated": []}
    words = interpolated = groups_total = joined = 0
    timed_all = aligner.align([TimedClip(t, s, a, rate) for t, s, a, _, _ in prepared])
    for (_, _, _, exact, groups), timed in zip(prepared, timed_all, strict=True):
        words += len(timed)
        interpolated += sum(t.interpolated for t in timed)
        for a, b, c, d in groups:
            groups_total += 1
            joined += int(b - a > 1)
            first, last = timed[a], timed[b - 1]
            start_error = abs(first.start_s - exact[c][1]) * 1000
            end_error = abs(last.end_s - exact[d - 1][2]) * 1000
            starts.append(start_error)
            ends.append(end_error)
            source = "interpolated" if first.interpolated or last.interpolated else "asr"
            by_source[source] += [start_error, end_error]
            if d < len(exact):  # where this group meets the next: the gap-aware error
                low, high = exact[d - 1][2], exact[d][1]
                gaps.append(max(0.0, low - last.end_s, last.end_s - high) * 1000)
    return {
        "sentences": len(prepared),
        "words": words,
        "words_interpolated": interpolated,
        "groups": groups_total,
        "groups_of_joined_words": joined,
        "start_error": _stats(starts),
        "end_error": _stats(ends),
        "boundary_error": _stats(starts + ends),
        "gap_aware_boundary_error": _stats(gaps),
        "by_source": {k: _stats(v) for k, v in by_source.items()},
    }


def _seconds(prepared: list[tuple], aligner, rate: int) -> float:  # noqa: ANN001
    from verified_tts.output.word_timing import TimedClip

    clips = [TimedClip(t, s, a, rate) for t, s, a, _, _ in prepared]
    started = time.perf_counter()
    aligner.align(clips)
    return round(time.perf_counter() - started, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=40, help="held-out, per book")
    parser.add_argument("--calibration", type=int, default=15, help="first-half, per book")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--whisper", default=None, help="[verifiers.wer] model (default tiny.en)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    from verified_tts.config import build_config
    from verified_tts.generators import load_generator
    from verified_tts.output.word_timing import WordAligner, load_aligner
    from verifiers import WerOptions

    piper = load_generator(build_config({}, generator="piper").generator)
    rate = piper.sample_rate
    shipped = load_aligner(None, WerOptions(model=args.whisper))
    verifier = shipped._verifier
    held, calibration, books = [], [], {}
    counts = {"sentences": 0, "without_exact_words": 0}
    for path in sorted(BOOKS.glob("*.txt")):
        texts, info = book_sentences(path, args.sentences, args.seed, held_out=True)
        held += prepare(piper, texts, 10_000 * args.seed, counts)
        first, first_info = book_sentences(path, args.calibration, args.seed, held_out=False)
        calibration += prepare(piper, first, 20_000 + 10_000 * args.seed, counts)
        books[path.name] = {
            **info, "held_out_sentences": len(texts), "calibration_chapters":
            first_info["used_chapters"], "calibration_sentences": len(first),
        }  # fmt: skip
    lags = {}
    for lag in LAGS:
        errors = measure(calibration, WordAligner(verifier, lag_s=lag), rate)
        lags[f"{lag:.2f}"] = {k: errors[k] for k in ("boundary_error", "gap_aware_boundary_error")}
    best = min(lags, key=lambda k: lags[k]["boundary_error"]["median_ms"])
    result = {
        "what": "Whisper forced-alignment word bounds against Piper's exact ones (ms)",
        "voice": piper.model,
        "whisper": dict(shipped.identity()),
        "books": books,
        "seed": args.seed,
        "exact_words": counts,
        "held_out": {
            "shipped": measure(held, shipped, rate),
            "one_clip_a_window": measure(held, WordAligner(verifier, packed=False), rate),
            "calibrated_lag": measure(held, WordAligner(verifier, lag_s=float(best)), rate),
            "raw_dtw": measure(held, WordAligner(verifier, refine=False), rate),
        },
        "align_seconds": {
            "what": "wall seconds to align the held-out sentences on this machine",
            "packed": _seconds(held, shipped, rate),
            "one_clip_a_window": _seconds(held, WordAligner(verifier, packed=False), rate),
        },
        "calibration": {
            "by_lag_s": lags,
            "best_lag_s": float(best),
            "shipped_lag_s": shipped.lag_s,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
