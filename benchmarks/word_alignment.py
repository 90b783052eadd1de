"""How far Whisper's word boundaries lie from the exact ones, on Piper reading held-out prose.

The read-along path for every generator force-aligns the written words with the WER verifier's
Whisper (verified_tts.output.word_timing.WordAligner). Piper knows where its words are: its
duration predictor gives every phoneme id a whole number of frames (the output of the graph's
``Ceil`` node, which this script exposes as an extra output of its own copy of the voice;
verified_tts/generators/piper.py is untouched). Each sentence is synthesised exactly as the
generator does it (same phoneme ids, scales and seeded noise; the audio is checked sample for
sample against ``PiperGenerator.sample``), so the frames give exact word bounds: a word runs from
the first frame of its first phoneme to the end of the pad after its last (clause punctuation
left out). espeak-ng sometimes joins unstressed words ("in the"), so written words are matched to
espeak-ng's phoneme words by a small alignment on their phonemes, and a joined group is compared
at its outer edges.

Prose: /work/shared/data/books/*.txt, cut into chapters at their "CHAPTER I." (or bare roman
numeral) headings; the held-out chapters are each book's last floor(n/2); ``--sentences`` of
them per book (5 to 40 words) are drawn with a fixed seed. The aligner's ``lag_s`` is chosen on
``--calibration`` sentences per book from the other chapters (the lag with the least median
boundary error); the held-out figures are of the aligner as it ships and of the raw
cross-attention bounds (no refinement). Reported: median, 95th percentile and mean of the start
and end errors (ms), both together, and a gap-aware boundary error (where a word meets the next,
the exact bounds leave a gap between them, and a boundary inside the gap counts as 0), by the
aligner's word source (placed, interpolated). Writes benchmarks/results/word_alignment.json.
Quality figures only: no timing is reported.

Usage: nice -n 10 python benchmarks/word_alignment.py [--sentences 40] [--calibration 15]
       [--whisper MODEL]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import unicodedata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BOOKS = Path("/work/shared/data/books")
OUT = ROOT / "benchmarks" / "results" / "word_alignment.json"
_CHAPTER = re.compile(r"^\s*CHAPTER\s+[IVXLC]+\.?\s*$")
_ROMAN = re.compile(r"^\s*[IVXLC]+\.?\s*$")
_PUNCTUATION = set(".,;:!?")
_STRESS = "ˈˌ"
LAGS = (0.0, 0.02, 0.04, 0.06, 0.08)  # seconds tried on the calibration half


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


class PiperWithDurations:
    """The default Piper voice, run as the generator runs it, also returning frame durations."""

    def __init__(self) -> None:
        import onnx
        import onnxruntime

        from verified_tts.config import build_config
        from verified_tts.generators import load_generator
        from verified_tts.generators.piper import _voice_files
        from verified_tts.generators.piper_graph import seed_noise

        self.generator = load_generator(build_config({}, generator="piper").generator)
        graph = onnx.load(str(_voice_files(None)[0]))
        seed_noise(graph)
        (ceil,) = [n for n in graph.graph.node if n.op_type == "Ceil"]
        self.durations = ceil.output[0]
        graph.graph.output.append(
            onnx.helper.make_tensor_value_info(self.durations, onnx.TensorProto.FLOAT, None)
        )
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(
            graph.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        self.names = [o.name for o in self.session.get_outputs()]

    def run(self, ids: list[int], seed: int, sentence: int) -> tuple[np.ndarray, np.ndarray]:
        from verified_tts.generators.piper import _FIRST_FRAMES_PER_ID, _feeds, draw_noise

        generator, voice = self.generator, self.generator.voice
        feeds = _feeds(voice, ids, generator.scales, 0)
        frames = math.ceil(len(ids) * _FIRST_FRAMES_PER_ID * max(generator.scales[1], 1.0)) + 32
        for _ in range(len(voice.sites) + 1):
            for k, site in enumerate(voice.sites):
                feeds[site.input] = draw_noise(seed, sentence, k, voice.fixed_dims[k], frames)
            outputs = self.session.run(None, feeds)
            needed = max(int(outputs[self.names.index(s.shape_output)][-1]) for s in voice.sites)
            if needed <= frames:
                audio = np.clip(np.asarray(outputs[0], dtype=np.float32).reshape(-1), -1.0, 1.0)
                return audio, outputs[self.names.index(self.durations)].reshape(-1)
            frames = needed
        raise AssertionError("the noise never sufficed")

    def utterance(
        self, spoken: str, seed: int
    ) -> tuple[np.ndarray, list[tuple[list[str], float, float]]]:
        """Audio of ``spoken`` and each espeak-ng phoneme word with its exact bounds (s)."""
        generator = self.generator
        mapper, rate = generator.voice.mapper, generator.sample_rate
        pause = round(generator.options.sentence_pause * rate)
        pieces, words, offset = [], [], 0
        for number, phonemes in enumerate(mapper.phonemize(spoken, generator._library)):
            ids, _ = mapper.ids(phonemes)
            audio, durations = self.run(ids, seed, number)
            hop = len(audio) // int(durations.sum())
            assert hop * int(durations.sum()) == len(audio)
            edges = np.concatenate([[0], np.cumsum(durations)]) * hop
            # where each phoneme's ids start and its trailing pad ends, as PhonemeMapper.ids lays
            # them out: BOS, PAD, then each mapped phoneme's ids and a PAD, then EOS
            position, spans = 2, []
            for phoneme in phonemes:
                mapped = mapper.id_map.get(phoneme)
                if mapped is None:
                    spans.append(None)
                    continue
                spans.append((position, position + len(mapped) + 1))
                position += len(mapped) + 1
            current: list[int] = []
            for index, phoneme in enumerate([*phonemes, " "]):
                if phoneme == " ":
                    kept = [k for k in current if phonemes[k] not in _PUNCTUATION and spans[k]]
                    if kept:
                        first, last = spans[kept[0]], spans[kept[-1]]
                        start = (offset + edges[first[0]]) / rate
                        end = (offset + edges[last[1]]) / rate
                        words.append(([phonemes[k] for k in kept], float(start), float(end)))
                    current = []
                else:
                    current.append(index)
            if number:
                pieces.append(np.zeros(pause, dtype=np.float32))
                offset += pause
            pieces.append(audio)
            offset += len(audio)
        return np.concatenate(pieces), words


def _plain(phonemes: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", phonemes) if c not in _STRESS + " ")


def _distance(a: str, b: str) -> float:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            row.append(min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = row
    return previous[-1] / max(len(a), len(b), 1)


def match_words(written: list[str], alone: list[str], phoneme_words: list[str]) -> list[tuple]:
    """Groups (written a..b, phoneme words c..d) covering both in order, 1-3 of each, by the
    least edit distance between their phonemes."""
    n, m = len(written), len(phoneme_words)
    best = {(0, 0): (0.0, None)}
    for i in range(n + 1):
        for j in range(m + 1):
            if (i, j) not in best:
                continue
            for di in range(1, 4):
                for dj in range(1, 4):
                    if i + di > n or j + dj > m:
                        continue
                    cost = _distance("".join(alone[i : i + di]), "".join(phoneme_words[j : j + dj]))
                    total = best[(i, j)][0] + cost + 0.2 * (di + dj - 2)
                    if (i + di, j + dj) not in best or total < best[(i + di, j + dj)][0]:
                        best[(i + di, j + dj)] = (total, (i, j))
    if (n, m) not in best:
        return []
    groups, at = [], (n, m)
    while at != (0, 0):
        before = best[at][1]
        groups.append((before[0], at[0], before[1], at[1]))
        at = before
    return groups[::-1]


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


def prepare(piper: PiperWithDurations, texts: list[str], seed: int) -> tuple[list[tuple], int]:
    """Each sentence synthesised, its exact phoneme words, and its written words matched to
    them; also how many came out identical to the generator's own audio."""
    from verified_tts.generators import SynthesisRequest
    from verified_tts.text.normalize import normalize_text

    library, mapper = piper.generator._library, piper.generator.voice.mapper
    prepared, identical = [], 0
    for number, text in enumerate(texts):
        spoken = normalize_text(text)
        audio, exact = piper.utterance(spoken, seed + number)
        (candidate,) = piper.generator.sample([SynthesisRequest("b", 0, seed + number, spoken)])
        identical += int(np.array_equal(candidate.audio, audio))
        alone = [
            _plain("".join("".join(p) for p in mapper.phonemize(normalize_text(w), library)))
            for w in text.split()
        ]
        groups = match_words(text.split(), alone, [_plain("".join(p)) for p, _, _ in exact])
        if groups:
            prepared.append((text, spoken, audio, exact, groups))
    return prepared, identical


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=40, help="held-out, per book")
    parser.add_argument("--calibration", type=int, default=15, help="first-half, per book")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--whisper", default=None, help="[verifiers.wer] model (default tiny.en)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    from verified_tts.output.word_timing import WordAligner, load_aligner
    from verifiers import WerOptions

    piper = PiperWithDurations()
    rate = piper.generator.sample_rate
    shipped = load_aligner(None, WerOptions(model=args.whisper))
    verifier = shipped._verifier
    held, calibration, books, identical, total = [], [], {}, 0, 0
    for path in sorted(BOOKS.glob("*.txt")):
        texts, info = book_sentences(path, args.sentences, args.seed, held_out=True)
        prepared, same = prepare(piper, texts, 10_000 * args.seed)
        held += prepared
        identical, total = identical + same, total + len(texts)
        first, first_info = book_sentences(path, args.calibration, args.seed, held_out=False)
        calibration += prepare(piper, first, 20_000 + 10_000 * args.seed)[0]
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
        "voice": piper.generator.model,
        "whisper": dict(shipped.identity()),
        "books": books,
        "seed": args.seed,
        "audio_identical_to_generator": f"{identical} of {total}",
        "held_out": {
            "shipped": measure(held, shipped, rate),
            "raw_dtw": measure(held, WordAligner(verifier, refine=False), rate),
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
