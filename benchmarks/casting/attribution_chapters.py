"""Attribution accuracy on hand-annotated held-out chapters, and how many quotes fall back.

Reads each book of ``benchmarks/data/attribution/`` (``BOOK.tsv``: who speaks each quote, by
hand; ``aliases.toml``: the other names of each speaker) with the benchmark's chapter reader
(``attribution_books.py``) and through the text front-end a render uses
(``book_from_document(..., dialogue=True)``: :mod:`verified_tts.text.dialogue`,
:mod:`verified_tts.text.attribution`), over the whole book so names and genders are learnt as in
a render, and scores the annotated chapters, which are all held
out. Per book and overall: quotes annotated and found, speech quotes, correct, wrong, fallbacks
(no speaker: the default dialogue voice), accuracy (correct over speech quotes), precision (correct
over those attributed), and the same per rule; quotations the annotator marked as no character's
speech that the reader took as dialogue are counted too. ``--part development`` scores the
annotated development chapter instead (results/attribution_development.json: what the rules were
tuned on, not a result); ``--show dev`` prints the rules' guesses on every development chapter.

    PYTHONPATH=$PWD python -m benchmarks.casting.attribution_chapters   # ->
    results/attribution.json
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import tomllib
from collections import Counter
from pathlib import Path

from benchmarks.casting.attribution_books import (
    Chapter,
    development,
    document,
    held_out,
    read_chapters,
)
from verified_tts.storage.atomic import write_text_atomic
from verified_tts.text.attribution import Attribution, attribute_book
from verified_tts.text.book import book_from_document
from verified_tts.text.dialogue import ParagraphQuotes, quote_style, scan_paragraph

HERE = Path(__file__).resolve().parents[1]  # benchmarks/
DATA = HERE / "data" / "attribution"
RESULT = HERE / "results" / "attribution.json"
DEVELOPMENT_RESULT = HERE / "results" / "attribution_development.json"


def _scan(chapters: list[Chapter]) -> list[list[tuple[str, ParagraphQuotes]]]:
    style = quote_style(p.text for c in chapters for p in c.paragraphs)
    scanned = []
    for chapter in chapters:
        after, found = False, []
        for paragraph in chapter.paragraphs:
            quotes = scan_paragraph(paragraph.text, style=style, after_open=after)
            after = quotes.open_at_end
            found.append((paragraph.text, quotes))
        scanned.append(found)
    return scanned


def _opening(text: str) -> str:
    return re.sub(r"[^\w]+$", "", " ".join(re.sub(r"^\W+", "", text).split()[:5]))


def _found_quotes(book: str) -> dict[tuple[str, int, str], Attribution | None]:
    """(chapter, file line, first words) of each dialogue utterance of ``book`` -> who the book
    reader says speaks it: the whole book read as a render reads it (``book_from_document``).
    An annotated quote is found by the utterance its first sentence starts."""
    chapters = read_chapters(book)
    parsed = book_from_document(document(chapters), dialogue=True)
    quotes: dict[tuple[str, int, str], Attribution | None] = {}
    for chapter, read in zip(chapters, parsed.chapters, strict=True):
        for segment in read.segments:
            if segment.kind == "dialogue":
                key = (chapter.number, segment.line, _opening(segment.text))
                quotes.setdefault(key, Attribution(segment.speaker, segment.speaker_reason or ""))
    return quotes


_MISSING = Attribution(None, "not found")


def _lookup(found: dict, row: dict) -> Attribution:
    """The attribution of the utterance at the annotated line whose text starts the annotated
    quote (an utterance is one sentence, the annotation's first words may run past it)."""
    for (chapter, line, opening), attribution in found.items():
        here = chapter == row["chapter"] and line == int(row["line"]) and opening
        if here and (row["opens"].startswith(opening) or opening.startswith(row["opens"])):
            return attribution
    return _MISSING


def _rule(reason: str) -> str:
    """The stage of the casting sieve (:mod:`verified_tts.casting`) a guess's reason names."""
    for marker, rule in (
        ("goes on", "continued speech"),
        ("with a speech verb", "pronoun and speech verb"),
        ("the narrator speaks", "first-person narrator"),
        ("tags the quote", "speech tag"),
        ("turn-taking", "turn-taking"),
        ("addressed by name", "answers the one addressed"),
        ("narration", "narration before"),
    ):
        if marker in reason:
            return rule
    return "other"


def score(book: str, aliases: dict[str, list[str]], part: str = "held_out") -> dict:
    name = book.removesuffix(".txt")
    folder = DATA if part == "held_out" else DATA / "development"
    with (folder / f"{name}.tsv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    chapters = {row["chapter"] for row in rows}
    allowed = {c.number for c in (held_out(book) if part == "held_out" else development(book))}
    if not chapters <= allowed:
        raise SystemExit(f"{name}: annotated chapters {sorted(chapters - allowed)} are not {part}")
    found = _found_quotes(book)
    known = {who: {who.lower(), *(a.lower() for a in other)} for who, other in aliases.items()}
    tally: Counter[str] = Counter()
    rules: dict[str, Counter[str]] = {}
    errors = []
    for row in rows:
        attribution = _lookup(found, row)
        tally["annotated"] += 1
        if attribution is _MISSING:
            tally["not found"] += 1
            continue
        if row["speaker"] == "-":
            tally["quotation taken for speech"] += 1
            continue
        tally["speech"] += 1
        guess = attribution.speaker if attribution else None
        rule = _rule(attribution.reason) if attribution and attribution.reason else "fallback"
        counts = rules.setdefault(rule, Counter())
        counts["quotes"] += 1
        if guess is None:
            tally["fallback"] += 1
            continue
        right = guess.lower() in known.get(row["speaker"], {row["speaker"].lower()})
        tally["correct" if right else "wrong"] += 1
        counts["correct" if right else "wrong"] += 1
        if not right:
            errors.append({**row, "guess": guess, "reason": attribution.reason})
    attributed = tally["correct"] + tally["wrong"]
    return {
        "chapters": sorted(chapters, key=lambda c: [r["chapter"] for r in rows].index(c)),
        **{
            key: tally[key]
            for key in (
                "annotated",
                "not found",
                "quotation taken for speech",
                "speech",
                "correct",
                "wrong",
                "fallback",
            )
        },  # fmt: skip
        "accuracy": round(tally["correct"] / tally["speech"], 4) if tally["speech"] else None,
        "precision": round(tally["correct"] / attributed, 4) if attributed else None,
        "by_rule": {rule: dict(counts) for rule, counts in sorted(rules.items())},
        "errors": errors,
    }


def show_development(book: str) -> None:
    chapters = read_chapters(book)
    scanned = _scan(chapters)
    wanted = {c.number for c in development(book)}
    for chapter, paragraphs, found in zip(chapters, scanned, attribute_book(scanned), strict=True):
        if chapter.number not in wanted:
            continue
        print(f"=== {book} {chapter.number}")
        for (text, _), attribution in zip(paragraphs, found, strict=True):
            if attribution:
                print(f"[{attribution.speaker}] ({attribution.reason}) {text[:110]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", choices=["dev"], help="print guesses on development chapters")
    parser.add_argument(
        "--part",
        choices=["held_out", "development"],
        default="held_out",
        help="score the held-out annotations (the reported figures) or the development ones "
        "(data/attribution/development/, the chapter the rules were written on)",
    )
    parser.add_argument("--out", type=Path, help="default results/attribution[_development].json")
    args = parser.parse_args(argv)
    aliases = tomllib.loads((DATA / "aliases.toml").read_text(encoding="utf-8"))
    folder = DATA if args.part == "held_out" else DATA / "development"
    books = sorted(f"{p.stem}.txt" for p in folder.glob("*.tsv"))
    if args.show:
        for book in books:
            show_development(book)
        return
    results = {
        book: score(book, aliases.get(book.removesuffix(".txt"), {}), args.part) for book in books
    }
    total: Counter[str] = Counter()
    for result in results.values():
        for key in ("annotated", "speech", "correct", "wrong", "fallback",
                    "quotation taken for speech", "not found"):  # fmt: skip
            total[key] += result[key]
    attributed = total["correct"] + total["wrong"]
    summary = {
        **dict(total),
        "accuracy": round(total["correct"] / total["speech"], 4),
        "precision": round(total["correct"] / attributed, 4) if attributed else None,
        "fallback_share": round(total["fallback"] / total["speech"], 4),
    }
    report = {
        "what": "rule-based dialogue attribution against hand annotations of held-out chapters",
        "split": (
            "held out: the last floor(n/2) chapters of each book (benchmarks/real_prose/prose.py)"
        ),
        "annotations": "benchmarks/data/attribution/",
        "overall": summary,
        "books": results,
    }
    if args.part == "development":
        report["split"] = "development: chapters the rules were written on (not a result)"
        report["annotations"] = "benchmarks/data/attribution/development/"
    out = args.out or (RESULT if args.part == "held_out" else DEVELOPMENT_RESULT)
    write_text_atomic(out, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
