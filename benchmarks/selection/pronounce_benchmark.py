"""Book-level pronunciation decisions on held-out prose, judged by a second ASR model.

Question: when each doubtful word of a book gets one reading chosen by the WER verifier among
offline sources (verified_tts.pronounce), does the judge (Whisper base, never used for any
choice) hear the winners better, and does the pool of takes hold more (the oracle)?

Sample (fixed before it was read): every held-out chapter's utterances from the 231st on, after
its heading (headings left out), of the three real-prose books (benchmarks/real_prose.py's
split); no other sample has read them. ``--part``/``--start``/``--lines`` choose another (e.g.
``--part held_out_i --start 130`` for the 1,056-line ninth sample plus these).

Arms, per line, the same ``--n`` seeds in both: *before*, espeak-ng's readings; *after*, the
decided lexicon. A line without a changed word has the same phonemes and seeds in both arms, so
the same audio: only lines with a changed word are rendered twice. Per arm: candidate 0, the
verifier's pick (highest tiny.en mean log-probability of the reference text, the rule
docs/selection.md found least noisy), and the oracle (the take the judge itself hears best).
Paired bootstrap 95 % intervals over all lines. Per decided word: whether the judge's transcript
of the winner contains the word, before and after. Lines are processed one at a time and kept in
a JSONL file, so a long sample resumes and a stopped run still reports what it finished.

    .venv/bin/python benchmarks/selection/pronounce_benchmark.py --n 4
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "benchmarks", ROOT / "benchmarks" / "real_prose"):
    sys.path.insert(0, str(folder))

from real_prose import sample_segments  # noqa: E402

from verified_tts.paired import paired_bootstrap  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def _lines(part: str, start: int, limit: int | None) -> list[tuple[str, int, object]]:
    samples = sample_segments(part, per_chapter=100_000, chapters=99, start=start)  # type: ignore[arg-type]
    rows = []
    for book, chapter, segments in samples:
        rows += [(book, chapter.index, s) for s in segments if s.kind != "heading"]
    return rows[:limit] if limit else rows


def _pairs(spoken: str, chosen: dict[str, str]) -> tuple[tuple[str, str], ...]:
    out = []
    for word, phonemes in chosen.items():
        match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", spoken, re.IGNORECASE)
        if match:
            out.append((match.group(0), phonemes))
    return tuple(out)


def _render(generator, verifier, judge, segment, phonemes, n):  # type: ignore[no-untyped-def]
    from verified_tts.generators.base import SynthesisRequest
    from verifiers.base import Clip

    requests = [
        SynthesisRequest("line", k, k, segment.spoken, phonemes=tuple(segment.phonemes) + phonemes)
        for k in range(n)
    ]
    started = time.perf_counter()
    candidates = generator.sample(requests)
    piper_s = time.perf_counter() - started
    clips = [Clip(c.audio, c.sample_rate, text=segment.text, spoken=segment.spoken)
             for c in candidates]  # fmt: skip
    started = time.perf_counter()
    scores = verifier.score(clips)
    verify_s = time.perf_counter() - started
    judged = judge.transcribe(clips)
    pick = max(range(n), key=lambda k: (scores[k].metrics.get("asr_logprob", -99.0), -k))
    judge_wer = [w for w, _ in judged]
    return {
        "audio_s": round(sum(c.duration_s for c in candidates) / n, 3),
        "piper_s": round(piper_s, 3), "verify_s": round(verify_s, 3),
        "pick": pick, "judge_wer": judge_wer, "judge_text": [t for _, t in judged],
        "verifier_logprob": [round(s.metrics.get("asr_logprob", -99.0), 4) for s in scores],
    }  # fmt: skip


def _arm_figures(rows: list[dict], arm: str) -> dict[str, list[float]]:
    first = [r[arm]["judge_wer"][0] for r in rows]
    winner = [r[arm]["judge_wer"][r[arm]["pick"]] for r in rows]
    oracle = [min(r[arm]["judge_wer"]) for r in rows]
    return {"candidate_0": first, "winner": winner, "oracle": oracle}


def _interval(a: list[float], b: list[float]) -> dict[str, float]:
    mean, low, high = paired_bootstrap(a, b)
    return {"difference": round(mean, 4), "low": round(low, 4), "high": round(high, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="held_out_i")
    parser.add_argument("--start", type=int, default=230)
    parser.add_argument("--lines", type=int, default=None)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=2, help="takes per reading when deciding")
    parser.add_argument("--top", type=int, default=60, help="most doubtful words decided")
    parser.add_argument("--readings", type=int, default=3, help="readings tried per word")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pronounce_benchmark"))
    parser.add_argument("--out", type=Path, default=RESULTS / "pronounce_held_out_j.json")
    parser.add_argument("--minutes", type=float, default=None, help="stop after this long")
    args = parser.parse_args()
    deadline = time.time() + args.minutes * 60 if args.minutes else None

    from verified_tts.generators import GeneratorConfig, load_generator
    from verified_tts.options.verifiers import WerOptions
    from verified_tts.pronounce.decide import DecideOptions, Decision, Evidence, decide, summary
    from verified_tts.pronounce.lexicon_file import write_decisions
    from verified_tts.workflows.judge import load_judge
    from verifiers import load_wer_verifier
    from verifiers.textnorm import normalize

    lines = _lines(args.part, args.start, args.lines)
    args.work.mkdir(parents=True, exist_ok=True)
    generator = load_generator(GeneratorConfig())
    verifier = load_wer_verifier(WerOptions())
    judge = load_judge("bundled:base")
    decisions_path = args.work / "decisions.json"
    started = time.perf_counter()
    if decisions_path.is_file():
        stored = json.loads(decisions_path.read_text())
        decisions = [
            Decision(**{**d, "chosen_sources": tuple(d["chosen_sources"]),
                        "readings": tuple(Evidence(**{**e, "sources": tuple(e["sources"]),
                                                      "heard": tuple(e["heard"])})
                                          for e in d["readings"])})
            for d in stored["decisions"]
        ]  # fmt: skip
        decide_s = stored["seconds"]
    else:
        options = DecideOptions(seeds=args.seeds, top=args.top, max_readings=args.readings)
        decisions = decide([s.spoken for _, _, s in lines], generator, verifier, options=options)
        decide_s = time.perf_counter() - started
        write_decisions(args.work / "lexicon.toml", decisions)
        decisions_path.write_text(json.dumps(
            {"seconds": decide_s, "decisions": [d.as_dict() for d in decisions]},
            ensure_ascii=False))  # fmt: skip
    chosen = {d.word: d.chosen for d in decisions if d.changed}
    # lines with a changed word first: a run stopped early still holds every paired difference
    lines.sort(key=lambda row: not _pairs(row[2].spoken, chosen))
    done_path = args.work / "lines.jsonl"
    done = []
    if done_path.is_file():
        done = [json.loads(x) for x in done_path.read_text().splitlines()]
    with done_path.open("a", encoding="utf-8") as stream:
        for number, (book, chapter, segment) in enumerate(lines):
            if number < len(done):
                continue
            if deadline and time.time() > deadline:
                break
            row = {"book": book, "chapter": chapter, "line": segment.line, "text": segment.text}
            row["before"] = _render(generator, verifier, judge, segment, (), args.n)
            pairs = _pairs(segment.spoken, chosen)
            row["changed_words"] = [w for w, _ in pairs]
            row["after"] = (
                _render(generator, verifier, judge, segment, pairs, args.n) if pairs
                else row["before"]
            )
            stream.write(json.dumps(row, ensure_ascii=False) + "\n")
            stream.flush()
            done.append(row)
    rows = done
    before, after = _arm_figures(rows, "before"), _arm_figures(rows, "after")
    mean = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    changed_rows = [r for r in rows if r["changed_words"]]
    words = {}
    for decision in decisions:
        if not decision.changed:
            continue
        target = normalize(decision.word)
        hits = {"before": 0, "after": 0, "lines": 0}
        for r in rows:
            if decision.word in r["changed_words"] or any(
                w.lower() == decision.word.lower() for w in r["changed_words"]):
                hits["lines"] += 1
                for arm in ("before", "after"):
                    heard = normalize(r[arm]["judge_text"][r[arm]["pick"]])
                    hits[arm] += f" {target} " in f" {heard} "
        words[decision.word] = {"chosen": decision.chosen, "sources": decision.chosen_sources,
                                **hits}  # fmt: skip
    audio_s = sum(r["before"]["audio_s"] for r in rows)
    render_s = sum(r["before"]["piper_s"] + r["before"]["verify_s"] for r in rows)
    render_s += sum(r["after"]["piper_s"] + r["after"]["verify_s"] for r in changed_rows)
    report = {
        "command": " ".join(sys.argv),
        "sample": {"part": args.part, "start": args.start, "lines": len(rows),
                   "rendered_first": "lines with a changed word, then the rest in book order",
                   "lines_in_sample": len(lines), "n": args.n,
                   "lines_with_changed_word": len(changed_rows)},
        "judge": "bundled:base", "verifier": "bundled tiny.en (reference log-prob pick)",
        "decisions": summary(decisions), "decide_seconds": round(decide_s, 1),
        "all_lines": {
            arm: {k: mean(v) for k, v in figures.items()}
            for arm, figures in (("before", before), ("after", after))
        },
        "winner_vs_candidate_0_before": _interval(before["candidate_0"], before["winner"]),
        "winner_after_vs_candidate_0_before": _interval(before["candidate_0"], after["winner"]),
        "winner_after_vs_winner_before": _interval(before["winner"], after["winner"]),
        "oracle_after_vs_oracle_before": _interval(before["oracle"], after["oracle"]),
        "changed_lines": {
            arm: {k: mean([f[k][i] for i, r in enumerate(rows) if r["changed_words"]])
                  for k in ("candidate_0", "winner", "oracle")}
            for arm, f in (("before", before), ("after", after))
        },
        "words": words,
        "rtf": {"audio_s": round(audio_s, 1), "render_s": round(render_s, 1),
                "decide_s": round(decide_s, 1),
                "render_and_decide":
                    round((render_s + decide_s) / audio_s, 3) if audio_s else None},
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: report[k] for k in ("sample", "decisions", "all_lines", "rtf")}, indent=1))


if __name__ == "__main__":
    main()
