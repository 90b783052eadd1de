"""Pronunciation and text-form candidates in a render: do the words to check end heard as words?

A sample of the real-prose books (benchmarks/real_prose/real_prose.py; ``--part dev`` while the
feature is tuned, a held-out part only once it is fixed) is written as the plain-text book a user
would give and rendered twice with the defaults (Piper joe-medium, N=8 adaptive, every take
kept): *before*, ``[pronunciation]`` off; *after*, on (``--config`` adds anything else), rendered
into a copy of the first render's folder so that every line the feature does not touch is
decided from the same store exactly as before (its takes, scores and winner are the first
render's) and the two renders differ only where the feature acts. The words to check are the
words the second render doubted (rare and read by espeak-ng's spelling rules, or unlike every
dictionary, or doubted by the ASR model in every take of a line). The judge (Whisper base,
``bundled:base``, never used for a choice) transcribes the winner of every line whose winner
differs between the renders or that says a word to check, in both renders.

Reported: per word to check, the share of its lines whose winner the judge hears the word in,
before and after, and the reading the book chose (its sources); how many words end heard in at
least half their lines, before and after; the judge WER of the lines that say a word to check,
before and after, with the paired bootstrap 95 % interval, and of every line (lines the feature
leaves alone count as equal, which they are); the text-form lines and which form won; no word
read two ways in the second render (checked from its manifest: every line that says a decided
word gives it the one decided reading); the wall time of both renders and the real-time factor
(timings on a shared machine are inflated: the load average is recorded).

    nice -n 10 python -m benchmarks.selection.pronounce_render --part dev [--per-chapter 35]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.real_prose.real_prose import CHAPTERS, PARTS, PER_CHAPTER, START, write_sample
from verified_tts.paired import paired_bootstrap

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
ON = {"pronunciation": {"candidates": True, "text_forms": True}}


def _render(book: Path, out: Path, table: dict[str, Any]) -> dict[str, Any]:
    from verified_tts.config import build_config
    from verified_tts.output.manifest import read_manifest
    from verified_tts.workflows.render import render

    config = build_config(table, candidates=8, adaptive=True, keep="all")
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    render(book, out, config)
    wall = time.perf_counter() - started
    manifest = read_manifest(out)
    speech = sum(u.winner_candidate.duration_s or 0.0 for u in manifest.utterances)
    load = manifest.stats["seconds"].get("load", 0.0)
    return {
        "wall_seconds": round(wall, 1),
        "load_seconds": round(load, 1),
        "speech_seconds": round(speech, 1),
        "real_time_factor": round((wall - load) / speech, 4) if speech else None,
        "candidates_generated": manifest.stats.get("candidates_generated"),
        "candidates_reused": manifest.stats.get("candidates_reused"),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def _interval(before: list[float], after: list[float], means: bool = True) -> dict[str, Any]:
    """after - before over paired lines, with its 95 % interval (and each arm's mean)."""
    if not before:
        return {"lines": 0}
    mean, low, high = paired_bootstrap(before, after)
    out: dict[str, Any] = {"lines": len(before)}
    if means:
        out |= {"before": round(sum(before) / len(before), 4),
                "after": round(sum(after) / len(after), 4)}  # fmt: skip
    return out | {"difference": round(mean, 4), "low": round(low, 4), "high": round(high, 4)}


def _one_way(manifest: dict[str, Any]) -> dict[str, Any]:
    """Whether every line of the render that says a decided word gives it one reading, and
    that no take kept for those lines read it another way."""
    from verified_tts.pronounce.candidates import word_key, words_of

    decided = {word_key(d["word"]): d for d in manifest["pronunciations"]["decisions"]}
    readings: dict[str, set[str]] = defaultdict(set)
    other_takes = 0
    for u in manifest["utterances"]:
        pairs = {word_key(w): p for w, p in u.get("phonemes", ())}
        for key in {word_key(t) for t in words_of(u["spoken"])} & set(decided):
            readings[key].add(pairs.get(key, "espeak-ng's own"))
            for c in u["candidates"]:
                said = (c["info"].get("reading") or {}).get("words") or {}
                other_takes += any(word_key(w) == key for w in said)
    two_ways = sorted(k for k, r in readings.items() if len(r) > 1)
    return {"decided_words": len(decided), "words_read_two_ways": two_ways,
            "takes_of_book_lines_reading_a_decided_word_otherwise": other_takes}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="dev", choices=PARTS)
    parser.add_argument("--per-chapter", type=int, default=None)
    parser.add_argument("--chapters", type=int, default=None)
    parser.add_argument("--config", type=Path, default=None, help="TOML on top of [pronunciation]")
    parser.add_argument("--work", type=Path, default=Path("/tmp/pronounce_render"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from verified_tts.config import read_config_file
    from verified_tts.options.tables import overlay
    from verified_tts.pronounce.candidates import word_key, words_of
    from verified_tts.pronounce.heard import heard_word
    from verified_tts.workflows.judge import judge_clips, load_judge

    out_path = args.out or RESULTS / f"pronounce_render_{args.part}.json"
    per_chapter = args.per_chapter or PER_CHAPTER[args.part]
    chapters = args.chapters or CHAPTERS.get(args.part, 3)
    args.work.mkdir(parents=True, exist_ok=True)
    book = args.work / f"{args.part}.txt"
    write_sample(book, args.part, per_chapter=per_chapter, chapters=chapters,
                 start=START.get(args.part, 0))  # fmt: skip
    table = overlay(ON, read_config_file(args.config)) if args.config else ON
    before_out, after_out = args.work / "before", args.work / "after"
    for folder in (before_out, after_out):  # fresh folders: each render's time is its own
        if folder.exists():
            shutil.rmtree(folder)
    timing = {"before": _render(book, before_out, {})}
    shutil.copytree(before_out, after_out)
    timing["after"] = _render(book, after_out, table)
    timing["after"]["note"] = (
        "rendered into a copy of the first render's folder: its time is the feature's own cost "
        "on top of the first render's"
    )
    before = json.loads((before_out / "manifest.json").read_text(encoding="utf-8"))
    after = json.loads((after_out / "manifest.json").read_text(encoding="utf-8"))
    block = after["pronunciations"]
    decisions = {word_key(d["word"]): d for d in block["decisions"]}
    lines = list(zip(before["utterances"], after["utterances"], strict=True))
    saying = [{word_key(t) for t in words_of(a["spoken"])} & set(decisions) for _, a in lines]
    judged_lines = [i for i, ((b, a), said) in enumerate(zip(lines, saying, strict=True))
                    if said or b["audio"] != a["audio"]]  # fmt: skip
    judge = load_judge("bundled:base")
    wanted = {}
    for i in judged_lines:
        b, a = lines[i]
        wanted[("before", i)] = (b["audio"], b["text"])
        wanted[("after", i)] = (a["audio"], a["text"])
    judged = {}
    for arm, out in (("before", before_out), ("after", after_out)):
        part = {k: v for k, v in wanted.items() if k[0] == arm}
        found = judge_clips(judge, part, out).transcripts
        judged.update(found)

    words = {}
    for key, decision in decisions.items():
        where = [i for i in judged_lines if key in saying[i]]
        heard = {arm: [heard_word(judged[(arm, i)][1], decision["word"]) for i in where]
                 for arm in ("before", "after")}  # fmt: skip
        words[decision["word"]] = {
            "why": decision["why"], "lines": len(where),
            "heard_before": round(sum(heard["before"]) / len(where), 3) if where else None,
            "heard_after": round(sum(heard["after"]) / len(where), 3) if where else None,
            "changed": decision["changed"], "chosen": decision["chosen"],
            "sources": decision["chosen_sources"] if decision["changed"] else ["espeak-ng (kept)"],
            "readings": len(decision["readings"]),
        }  # fmt: skip
    counted = [w for w in words.values() if w["lines"]]
    resolved = {arm: sum((w[f"heard_{arm}"] or 0) >= 0.5 for w in counted)
                for arm in ("before", "after")}  # fmt: skip
    with_words = [i for i in judged_lines if saying[i]]
    # a line the judge did not hear has the same winner in both renders: a difference of 0
    all_before = [judged[("before", i)][0] if i in judged_lines else 0.0 for i in range(len(lines))]
    all_after = [judged[("after", i)][0] if i in judged_lines else 0.0 for i in range(len(lines))]
    forms = [
        a for a in after["utterances"]
        if any((c["info"].get("reading") or {}).get("forms") for c in a["candidates"])
    ]  # fmt: skip
    form_winners = [
        {"text": a["text"], "won": a["candidates"][a["winner"]]["info"]["reading"]["forms"]}
        for a in forms
    ]
    report = {
        "command": " ".join(["python", "-m", "benchmarks.selection.pronounce_render",
                             *sys.argv[1:]]),
        "sample": {"part": args.part, "per_chapter": per_chapter, "chapters_per_book": chapters,
                   "lines": len(lines), "lines_judged": len(judged_lines),
                   "lines_saying_a_word_to_check": len(with_words)},
        "judge": "bundled:base",
        "after_config": table,
        "words_to_check": len(counted),
        "words_heard_in_at_least_half_their_lines": resolved,
        "share_of_words_heard": {arm: round(resolved[arm] / len(counted), 4) if counted else None
                                 for arm in resolved},
        "judge_wer_lines_saying_a_word_to_check": _interval(
            [judged[("before", i)][0] for i in with_words],
            [judged[("after", i)][0] for i in with_words]),
        "judge_wer_all_lines_difference": _interval(all_before, all_after, means=False),
        "decisions": {k: v for k, v in block.items() if k != "decisions"},
        "one_way": _one_way(after),
        "text_forms": form_winners,
        "timing": timing,
        "words": dict(sorted(words.items(), key=lambda kv: -kv[1]["lines"])),
    }  # fmt: skip
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k not in ("words", "text_forms")},
                     indent=1, ensure_ascii=False))  # fmt: skip


if __name__ == "__main__":
    main()
