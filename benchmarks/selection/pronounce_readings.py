"""Which reading of a doubtful word does the judge hear as the word, and which signal finds it?

Development prose only (benchmarks/real_prose/real_prose.py's ``dev`` part: the first half of
every real-prose book's chapters; tune on it, never on held-out lines). The doubtful words of the
whole development part (verified_tts.pronounce.candidates) are ranked by count; the ``--frequent``
most frequent and every ``--every``-th of the rest are probed, each in up to ``--lines`` of its own
lines (the first and the last it occurs in). Every reading any source proposes (every espeak-ng
English dialect, the dictionaries, two stress variants) is spoken by the default Piper voice in
the whole line with ``--seeds`` seeds (the same seeds for every reading, so only the pronunciation
differs), scored by the default WER verifier (tiny.en: the line's mean reference log-probability,
the word's own tokens' log-probability, whether its transcript holds the word) and transcribed by
the judge (Whisper base, never used for a choice).

Reported: per word, the judge's share of takes that hold the word per reading; whether some
reading beats espeak-ng's own (the ceiling of pronunciation candidates); per source, how often
its reading is the judge's best; per decision rule over the verifier's signals (the rule a render
would use to choose one reading for the book), the judge's share for the reading it chooses,
against espeak-ng's own and the judge's own best. Takes are kept in a JSONL file, so a stopped run
resumes.

    nice -n 10 python -m benchmarks.selection.pronounce_readings [--frequent 30 --every 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from benchmarks.real_prose.real_prose import BOOKS, chapters_of

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def _dev_lines() -> list[object]:
    lines = []
    for book in BOOKS:
        for chapter in chapters_of(book, "dev"):
            lines += [s for s in chapter.segments if s.kind != "heading"]
    return lines


def _probe_words(doubts: list, frequent: int, every: int) -> list:
    return doubts[:frequent] + doubts[frequent::every]


def _takes(generator, verifier, judge, line, word, readings, seeds):  # type: ignore[no-untyped-def]
    """Every reading of ``word`` spoken in ``line`` with each seed, scored and judged."""
    import re

    from verified_tts.generators.base import SynthesisRequest
    from verified_tts.pronounce.heard import heard_word, word_logprob
    from verified_tts.storage.keys import candidate_seed
    from verifiers.base import Clip

    spoken = line.spoken
    match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", spoken, re.IGNORECASE)
    said = match.group(0) if match else word
    requests = []
    for r, reading in enumerate(readings):
        pairs = tuple(line.phonemes) + (((said, reading.phonemes),) if r else ())
        for k in range(seeds):
            seed = candidate_seed(f"pronounce-readings:{spoken}", k)
            requests.append(SynthesisRequest(f"r{r}", k, seed, spoken, phonemes=pairs))
    candidates = generator.sample(requests)
    clips = [Clip(c.audio, c.sample_rate, text=line.text, spoken=spoken) for c in candidates]
    scores = verifier.score(clips)
    judged = judge.transcribe(clips)
    rows = []
    for request, score, (judge_wer, judge_text) in zip(requests, scores, judged, strict=True):
        transcript = str(score.detail.get("transcript", ""))
        rows.append({
            "reading": int(request.utterance_key[1:]), "seed": request.index,
            "logprob": round(float(score.metrics.get("asr_logprob", -99.0)), 4),
            "word_logprob": word_logprob(score.detail, word),
            "wer": round(float(score.metrics.get("wer", 1.0)), 4),
            "heard": heard_word(transcript, word), "transcript": transcript,
            "judge_heard": heard_word(judge_text, word), "judge_wer": judge_wer,
            "judge_text": judge_text,
        })  # fmt: skip
    return rows


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


# rules a render could use to choose a word's reading from the verifier's takes: a score per
# reading (higher is better) and the margin by which another reading must beat espeak-ng's
RULES = {
    "sentence_logprob": lambda takes: _mean([t["logprob"] for t in takes]),
    "word_logprob": lambda takes: _mean(
        [t["word_logprob"] if t["word_logprob"] is not None else -20.0 for t in takes]
    ),
    "heard_then_word_logprob": lambda takes: (
        _mean([float(t["heard"]) for t in takes]) * 10.0
        + _mean([t["word_logprob"] if t["word_logprob"] is not None else -20.0 for t in takes])
    ),
}
MARGINS = (0.0, 0.25, 0.5, 1.0)


def summarise(words: list[dict]) -> dict:
    """Per word, per reading: the judge's share; the ceiling; each rule's choice."""
    shares, sources_best, sources_offered = [], defaultdict(int), defaultdict(int)
    rules = {f"{name}@{margin}": [] for name in RULES for margin in MARGINS}
    per_word = []
    for item in words:
        by_reading = defaultdict(list)
        for take in item["takes"]:
            by_reading[take["reading"]].append(take)
        judge = {
            r: _mean([float(t["judge_heard"]) for t in takes]) for r, takes in by_reading.items()
        }
        best = max(judge, key=lambda r: (judge[r], -r))
        for r, reading in enumerate(item["readings"]):
            for source in reading["sources"]:
                sources_offered[source] += 1
                if r == best and judge[best] > judge[0]:
                    sources_best[source] += 1
        row = {"word": item["word"], "count": item["count"], "why": item["why"],
               "espeak": judge[0], "best": judge[best], "best_reading": best,
               "best_sources": item["readings"][best]["sources"]}  # fmt: skip
        for name, rule in RULES.items():
            score = {r: rule(takes) for r, takes in by_reading.items()}
            for margin in MARGINS:
                top = max(score, key=lambda r: (score[r], -r))
                chosen = top if score[top] > score[0] + margin else 0
                rules[f"{name}@{margin}"].append(judge[chosen])
                if margin == 0.5:
                    row[f"{name}_chose"] = chosen
        shares.append((judge[0], judge[best]))
        per_word.append(row)
    count = len(shares)
    return {
        "words": count,
        "judge_heard_share": {
            "espeak_ng_own": round(_mean([a for a, _ in shares]), 4),
            "judges_best_reading": round(_mean([b for _, b in shares]), 4),
            **{rule: round(_mean(values), 4) for rule, values in rules.items()},
        },
        "words_heard_at_least_half": {
            "espeak_ng_own": sum(a >= 0.5 for a, _ in shares),
            "judges_best_reading": sum(b >= 0.5 for _, b in shares),
            **{rule: sum(v >= 0.5 for v in values) for rule, values in rules.items()},
        },
        "words_where_another_reading_is_heard_better": sum(b > a for a, b in shares),
        "source_is_judges_best": dict(sorted(sources_best.items(), key=lambda kv: -kv[1])),
        "source_offered": dict(sorted(sources_offered.items(), key=lambda kv: -kv[1])),
        "per_word": per_word,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frequent", type=int, default=30)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--lines", type=int, default=2, help="lines per word")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/pronounce_readings"))
    parser.add_argument("--out", type=Path, default=RESULTS / "pronounce_readings_dev.json")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long")
    args = parser.parse_args()
    deadline = time.time() + args.minutes * 60 if args.minutes else None

    from verified_tts.generators import GeneratorConfig, load_generator
    from verified_tts.options.verifiers import WerOptions
    from verified_tts.pronounce.candidates import DoubtOptions, doubtful, word_key, words_of
    from verified_tts.pronounce.espeak_words import DIALECTS
    from verified_tts.workflows.judge import load_judge
    from verifiers import load_wer_verifier

    lines = _dev_lines()
    options = DoubtOptions(max_readings=12, dialects=DIALECTS, stresses=2, top=100_000)
    doubts = doubtful([s.spoken for s in lines], options=options)
    probe = _probe_words(doubts, args.frequent, args.every)
    args.work.mkdir(parents=True, exist_ok=True)
    done_path = args.work / "words.jsonl"
    done = (
        [json.loads(x) for x in done_path.read_text().splitlines()] if done_path.is_file() else []
    )
    finished = {d["word"] for d in done}
    generator = load_generator(GeneratorConfig())
    verifier = load_wer_verifier(WerOptions())
    judge = load_judge("bundled:base")
    started = time.perf_counter()
    with done_path.open("a", encoding="utf-8") as stream:
        for doubt in probe:
            if doubt.word in finished:
                continue
            if deadline and time.time() > deadline:
                break
            key = word_key(doubt.word)
            where = [s for s in lines if key in {word_key(t) for t in words_of(s.spoken)}]
            chosen = [where[0], where[-1]][: args.lines] if len(where) > 1 else where[:1]
            takes = []
            for number, line in enumerate(chosen):
                for row in _takes(generator, verifier, judge, line, doubt.word, doubt.readings,
                                  args.seeds):  # fmt: skip
                    takes.append({"line": number, **row})
            item = {"word": doubt.word, "count": doubt.count, "why": doubt.why,
                    "lines": [s.text for s in chosen],
                    "readings": [{"phonemes": v.phonemes, "sources": list(v.sources)}
                                 for v in doubt.readings],
                    "takes": takes}  # fmt: skip
            stream.write(json.dumps(item, ensure_ascii=False) + "\n")
            stream.flush()
            done.append(item)
    report = {
        "command": " ".join(["python", "-m", "benchmarks.selection.pronounce_readings",
                             *sys.argv[1:]]),
        "sample": {"part": "dev", "doubtful_words_in_part": len(doubts), "probed": len(probe),
                   "done": len(done), "lines_per_word": args.lines, "seeds": args.seeds},
        "judge": "bundled:base", "verifier": "bundled tiny.en (packed, default)",
        "seconds_this_run": round(time.perf_counter() - started, 1),
        **summarise(done),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "per_word"}, indent=1))


if __name__ == "__main__":
    main()
