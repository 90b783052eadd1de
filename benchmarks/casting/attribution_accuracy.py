"""Quotation attribution measured on the Project Dialogism Novel Corpus (PDNC).

For each novel in ``/work/shared/data/pdnc/`` (its text, every quotation's speaker, type and
spans, and the characters with their aliases), runs the attribution as ``verified-tts cast BOOK
--json`` does (:func:`verified_tts.casting.report.cast_report`) on the decoded text and scores its
quotes against the annotation: an annotated quote is found by the quote whose span overlaps its
first sub-quotation, and is right when the speaker given is one of the annotated speaker's names
(its main name or an alias; a speaker of ours that names no PDNC character is right when one of
its own aliases names the annotated speaker and no other). A quote not found, or given no speaker,
counts as wrong. Reported per novel, per quote type (Explicit, Anaphoric, Implicit) and for the
development and held-out groups: accuracy over all annotated quotes, precision over the quotes
given a speaker, and the share given one, at the confidence threshold ``cast`` uses and, for the
whole of each group, at other thresholds (what a stricter or looser threshold trades), and the
wall time of ``verified-tts cast NOVEL --json`` on each novel.
``--rules baseline`` scores the paragraph rules of :mod:`verified_tts.text.attribution` (before
the sieve) on the same quotes, every guess committed. The split is fixed here: the sieve was
written and tuned on DEVELOPMENT only; HELD_OUT was scored, never read for errors. Only derived
counts are written, never the corpus text.

    PYTHONPATH=$PWD python -m benchmarks.casting.attribution_accuracy --rules baseline
    PYTHONPATH=$PWD python -m benchmarks.casting.attribution_accuracy  # both rules
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from verified_tts.storage.atomic import write_text_atomic

HERE = Path(__file__).resolve().parent
PDNC = Path("/work/shared/data/pdnc")
RESULT = HERE.parent / "results" / "attribution_pdnc.json"
DEVELOPMENT = (
    "ARoomWithAView",
    "AlicesAdventuresInWonderland",
    "AnneOfGreenGables",
    "DaisyMiller",
    "Emma",
    "NorthangerAbbey",
)
HELD_OUT = ("HardTimes", "Persuasion", "TheAwakening")
TYPES = ("Explicit", "Anaphoric", "Implicit")


def _aliases(novel: str) -> dict[str, set[str]]:
    """Annotated main name -> its names, lower case."""
    names = {}
    with (PDNC / novel / "character_info.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            aliases = ast.literal_eval(row["Aliases"]) if row["Aliases"].strip() else set()
            names[row["Main Name"]] = {row["Main Name"].lower(), *(a.lower() for a in aliases)}
    return names


def _annotated(novel: str) -> list[dict]:
    csv.field_size_limit(1 << 30)
    with (PDNC / novel / "quotation_info.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [
        {"start": ast.literal_eval(r["quoteByteSpans"])[0][0],
         "end": ast.literal_eval(r["quoteByteSpans"])[0][1],
         "speaker": r["speaker"], "type": r["quoteType"]}
        for r in rows
    ]  # fmt: skip


def baseline_report(text: str) -> dict:
    """The paragraph rules of :mod:`verified_tts.text.attribution` on the same quotes as the
    sieve, in the same shape as ``cast --json``: every guess committed (confidence 1)."""
    from verified_tts.casting.quotes import quote_bounds, scan_text
    from verified_tts.text.attribution import attribute_book

    chapters = scan_text(text)
    guesses = attribute_book([[(p.text, p.quotes) for p in chapter] for chapter in chapters])
    quotes = []
    for chapter, found in zip(chapters, guesses, strict=True):
        for paragraph, guess in zip(chapter, found, strict=True):
            for index, span in enumerate(paragraph.quotes.spans):
                if span.dialogue:
                    start, end = quote_bounds(paragraph, index)
                    speaker = guess.speaker if guess else None
                    quotes.append({"start": start, "end": end, "speaker": speaker,
                                   "confidence": 1.0 if speaker else 0.0,
                                   "why": guess.reason if guess else ""})  # fmt: skip
    return {"quotes": quotes, "characters": []}


def _ours_to_theirs(report: dict, names: dict[str, set[str]]) -> dict[str, set[str]]:
    """Our speaker -> the annotated characters it can stand for."""
    owners: dict[str, set[str]] = {}
    for main, aliases in names.items():
        for alias in aliases:
            owners.setdefault(alias, set()).add(main)
    mapped: dict[str, set[str]] = {}
    ours = {c["name"]: c.get("aliases", []) for c in report["characters"]}
    for quote in report["quotes"]:
        who = quote["speaker"]
        if who is None or who in mapped:
            continue
        if who.lower() in owners:
            mapped[who] = owners[who.lower()]
            continue
        unique = [
            owners[a.lower()] for a in ours.get(who, []) if len(owners.get(a.lower(), ())) == 1
        ]
        mapped[who] = set().union(*unique) if len({frozenset(u) for u in unique}) == 1 else set()
    return mapped


def _gold(speaker: str, names: dict[str, set[str]]) -> set[str]:
    """The annotated characters a quote's speaker names: the annotation names a speaker by its
    main name or, in some novels, by an alias (A Room with a View's "Lucy" is Miss Honeychurch)."""
    if speaker in names:
        return {speaker}
    return {main for main, aliases in names.items() if speaker.lower() in aliases} or {speaker}


def score(novel: str, report: dict) -> dict:
    names = _aliases(novel)
    mapped = _ours_to_theirs(report, names)
    ours = sorted(report["quotes"], key=lambda q: q["start"])
    starts = [q["start"] for q in ours]
    import bisect

    tally: dict[str, Counter[str]] = {t: Counter() for t in (*TYPES, "all")}
    for gold in _annotated(novel):
        at = bisect.bisect_right(starts, gold["start"]) - 1
        found = None
        for quote in ours[max(at, 0) : at + 2]:
            if quote["start"] < gold["end"] and gold["start"] < quote["end"]:
                found = quote
                break
        kind = gold["type"] if gold["type"] in TYPES else None
        for key in filter(None, (kind, "all")):
            counts = tally[key]
            counts["quotes"] += 1
            if found is None:
                counts["not found"] += 1
            elif found["speaker"] is None:
                counts["no speaker"] += 1
            else:
                counts["committed"] += 1
                right = bool(_gold(gold["speaker"], names) & mapped.get(found["speaker"], set()))
                counts["correct" if right else "wrong"] += 1
    return {key: _rates(counts) for key, counts in tally.items()}


def _rates(counts: Counter[str]) -> dict:
    quotes, committed = counts["quotes"], counts["committed"]
    return {
        **{k: counts[k] for k in ("quotes", "correct", "wrong", "no speaker", "not found")},
        "accuracy": round(counts["correct"] / quotes, 4) if quotes else None,
        "precision": round(counts["correct"] / committed, 4) if committed else None,
        "committed_share": round(committed / quotes, 4) if quotes else None,
    }


def _pool(results: dict[str, dict], novels: tuple[str, ...]) -> dict:
    pooled = {}
    for key in (*TYPES, "all"):
        counts: Counter[str] = Counter()
        for novel in novels:
            r = results[novel][key]
            counts.update({k: r[k] for k in ("quotes", "correct", "wrong", "no speaker",
                                              "not found")})  # fmt: skip
            counts["committed"] += r["correct"] + r["wrong"]
        pooled[key] = _rates(counts)
    return pooled


CURVE = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _at(report: dict, threshold: float) -> dict:
    """``report`` (every guess given) as ``cast --json`` prints it at ``threshold``."""
    quotes = [
        q if q["speaker"] is None or q["confidence"] >= threshold else {**q, "speaker": None}
        for q in report["quotes"]
    ]
    return {**report, "quotes": quotes}


def _command_seconds(book: Path) -> float:
    """Wall time of ``verified-tts cast BOOK --json`` as a user runs it, start-up included."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "verified_tts", "cast", str(book), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"cast failed on {book}: {done.stderr.strip()[-300:]}")
    return round(time.perf_counter() - began, 2)


def run(rules: str) -> dict:
    from verified_tts.casting.report import THRESHOLD, cast_report

    results, seconds, curves, command = {}, {}, {}, {}
    for novel in (*DEVELOPMENT, *HELD_OUT):
        text = (PDNC / novel / "novel_text.txt").read_text(encoding="utf-8")
        began = time.perf_counter()
        report = baseline_report(text) if rules == "baseline" else cast_report(text, threshold=0)
        seconds[novel] = round(time.perf_counter() - began, 2)
        if rules == "baseline":
            results[novel] = score(novel, report)
            continue
        results[novel] = score(novel, _at(report, THRESHOLD))
        command[novel] = _command_seconds(PDNC / novel / "novel_text.txt")
        curves[novel] = {str(t): score(novel, _at(report, t)) for t in CURVE}
    found = {
        "novels": results,
        "development": _pool(results, DEVELOPMENT),
        "held_out": _pool(results, HELD_OUT),
        "seconds": seconds,
    }
    if curves:
        found["command_seconds"] = command
        found["threshold"] = THRESHOLD
        found["by_threshold"] = {
            group: {
                str(t): _pool({n: curves[n][str(t)] for n in novels}, novels)["all"] for t in CURVE
            }
            for group, novels in (("development", DEVELOPMENT), ("held_out", HELD_OUT))
        }
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", choices=["sieve", "baseline", "both"], default="both")
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    report = {
        "what": "quotation attribution against PDNC annotations (cast --json), by novel and type",
        "corpus": "PDNC development novels in /work/shared/data/pdnc (commit 6fda0a78)",
        "development": list(DEVELOPMENT),
        "held_out": list(HELD_OUT),
        "split": "the sieve was written and tuned on the development novels only; the held-out "
        "ones were scored, not read for errors",
        "measure": "accuracy: right speaker over all annotated quotes (a null or a quote not "
        "found is wrong); precision: right over quotes given a speaker",
        "results": previous.get("results", {}),
    }
    for rules in ("baseline", "sieve") if args.rules == "both" else (args.rules,):
        report["results"][rules] = run(rules)
        for group in ("development", "held_out"):
            print(rules, group, json.dumps(report["results"][rules][group]["all"]))
    write_text_atomic(args.out, json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
