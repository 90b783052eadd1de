"""Would a learned ranking of the candidates beat the turn-taking rules? Development novels only.

The lines the sieve gives by turn-taking (no tag, no name: "turn-taking: ..." in ``cast --json``)
are most of what it still gets wrong on PDNC. This measures how much of that the local evidence a
rule could read holds, beyond what the rules read already. For every such line of the development
novels, the candidates are the speakers of the lines the sieve tells without turns (tags,
pronouns, subjects) within ``--window`` lines on either side in the same chapter, the two
neighbouring lines' speakers and the sieve's own pick. Each candidate gets the features in
``FEATURES`` (the sieve's pick, how far back and ahead they speak, the parity of those distances,
the neighbours' speakers, who the quotes call or name, who the narration just before names, how
much they speak in the book, a question in the line before), and a conditional logit (softmax over
a line's candidates, L2-regularised, fitted by gradient descent) is trained on five development
novels and scored on the sixth, in turn. Reported: the share of turn-taking quotes whose
speaker is right, the rules' pick against the learned pick, per novel and pooled; how well the
rules' confidence and the learned probability of the rules' pick sort right from wrong (AUC); what
each commits to and gets right at several thresholds; and the weights fitted on all six. The
held-out novels are not read. Only derived counts are written, never the corpus text.

    python -m benchmarks.casting.turn_ranker

Writes: ``turn_ranker_dev.json``
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.casting.attribution_accuracy import (
    DEVELOPMENT,
    PDNC,
    _aliases,
    _annotated,
    _gold,
    _ours_to_theirs,
)
from verified_tts.casting.report import THRESHOLD, cast_report
from verified_tts.storage.atomic import write_text_atomic

RESULT = Path(__file__).resolve().parents[1] / "results" / "turn_ranker_dev.json"
_DISTANCES = ("1 line", "2 lines", "3 lines", "4-5 lines", "6+ lines")
FEATURES = (
    "the sieve's pick",
    *(f"last told {d} before" for d in _DISTANCES),
    "not told in the window before",
    *(f"next told {d} after" for d in _DISTANCES),
    "not told in the window after",
    "last told an even number of lines before",
    "next told an even number of lines after",
    "said the line before",
    "said the line two before",
    "says the line after",
    "says the line two after",
    "called by the line before",
    "called by their own line",
    "named in the narration just before",
    "the last one told before",
    "the next one told after",
    "the narrator",
    "the sieve's pick in a scene of three or more",
    "how much they speak in the book (log)",
    "named in the line before",
    "named in their own line",
    "the line before asks and is another's",
)


def _bucket(distance: int | None) -> list[bool]:
    if distance is None:
        return [False] * 5 + [True]
    return [distance == 1, distance == 2, distance == 3, distance in (4, 5), distance >= 6, False]


def _lines(text: str, report: dict) -> list[dict]:
    """The report's quotes joined into lines: a paragraph's quotes with one speaker and reason."""
    lines: list[dict] = []
    for quote in sorted(report["quotes"], key=lambda q: q["start"]):
        last = lines[-1] if lines else None
        if (
            last
            and last["chapter"] == quote["chapter"]
            and last["why"] == quote["why"]
            and "\n\n" not in text[last["end"] : quote["start"]]
        ):
            last["end"] = quote["end"]
            last["quotes"].append(quote)
            continue
        lines.append({
            "start": quote["start"], "end": quote["end"], "chapter": quote["chapter"],
            "why": quote["why"], "who": quote["speaker"] or quote.get("guess"),
            "confidence": quote["confidence"], "called": quote.get("addressees", []),
            "quotes": [quote],
        })  # fmt: skip
    return lines


def _gold_of(lines: list[dict], novel: str) -> None:
    names = _aliases(novel)
    golds = sorted(_annotated(novel), key=lambda g: g["start"])
    starts = [g["start"] for g in golds]
    for line in lines:
        line["gold"] = []
        for quote in line["quotes"]:
            at = bisect.bisect_right(starts, quote["end"] - 1) - 1
            found = [
                golds[k]
                for k in range(max(at - 1, 0), at + 1)
                if golds[k]["start"] < quote["end"] and quote["start"] < golds[k]["end"]
            ]
            line["gold"].append(_gold(found[-1]["speaker"], names) if found else None)


def _turn(line: dict) -> bool:
    return line["why"].startswith("turn-taking")


def _told(line: dict) -> bool:
    return not _turn(line) and bool(line["who"]) and line["confidence"] >= THRESHOLD


def _mention(who: str, aliases: list[str]) -> re.Pattern[str] | None:
    names = sorted({n for n in (who, *aliases) if n[:1].isupper() and n != "I"}, key=len)
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in reversed(names))
    return re.compile(rf"\b(?:{alternatives})\b")


def examples(novel: str, window: int) -> list[dict]:
    """One entry per turn-taking line with two or more candidates: their features, which are
    right, and the rules' pick and confidence."""
    text = (PDNC / novel / "novel_text.txt").read_text(encoding="utf-8")
    report = cast_report(text, threshold=0)
    mapped = _ours_to_theirs(report, _aliases(novel))
    aliases = {c["name"]: c.get("aliases", []) for c in report["characters"]}
    lines = _lines(text, report)
    _gold_of(lines, novel)
    spoken = Counter(line["who"] for line in lines if _told(line))
    speakers = {line["who"] for line in lines if line["who"]}
    patterns = {who: _mention(who, aliases.get(who, [])) for who in speakers}
    found = []
    for i, line in enumerate(lines):
        if not _turn(line) or not line["gold"][0]:
            continue

        def near(step: int, i: int = i, chapter: int = line["chapter"]) -> list[int]:
            span = range(i + step, i + step * (window + 1), step)
            return [j for j in span if 0 <= j < len(lines) and lines[j]["chapter"] == chapter]

        before, after = near(-1), near(1)
        candidates = {lines[j]["who"] for j in before + after if _told(lines[j])}
        candidates |= {lines[j]["who"] for j in before[:1] + after[:1]} | {line["who"]}
        candidates = sorted(c for c in candidates if c)
        if len(candidates) < 2:
            continue
        said = [text[q["start"] : q["end"]] for q in line["quotes"]]
        said_before = [text[q["start"] : q["end"]] for q in lines[i - 1]["quotes"]] if i else []
        narration = text[lines[i - 1]["end"] : line["start"]][-400:] if i else ""
        told_before = next((lines[j]["who"] for j in before if _told(lines[j])), None)
        told_after = next((lines[j]["who"] for j in after if _told(lines[j])), None)

        def who_at(j: int) -> str | None:
            return lines[j]["who"] if 0 <= j < len(lines) else None

        asks = bool(said_before) and said_before[-1].rstrip("\"”’' ").endswith("?")
        rows = []
        for who in candidates:
            back = next((i - j for j in before if _told(lines[j]) and lines[j]["who"] == who), None)
            ahead = next((j - i for j in after if _told(lines[j]) and lines[j]["who"] == who), None)
            named = patterns.get(who)
            rows.append([
                who == line["who"], *_bucket(back), *_bucket(ahead),
                back is not None and back % 2 == 0, ahead is not None and ahead % 2 == 0,
                who_at(i - 1) == who, who_at(i - 2) == who, who_at(i + 1) == who,
                who_at(i + 2) == who,
                i > 0 and who in lines[i - 1]["called"], who in line["called"],
                bool(named and named.search(narration)), who == told_before, who == told_after,
                who == "the narrator", len(candidates) >= 3 and who == line["who"],
                math.log1p(spoken[who]) / 5,
                bool(named and any(named.search(s) for s in said_before)),
                bool(named and any(named.search(s) for s in said)),
                asks and who != who_at(i - 1),
            ])  # fmt: skip
        gold = line["gold"][0]
        found.append({
            "features": np.array(rows, dtype=float),
            "right": np.array([bool(gold & mapped.get(c, set())) for c in candidates], float),
            "quotes": sum(1 for g in line["gold"] if g),
            "pick": candidates.index(line["who"]),
            "confidence": line["confidence"],
        })  # fmt: skip
    return found


def fit(lines: list[dict], l2: float, steps: int, rate: float) -> np.ndarray:
    """Weights of a conditional logit over each line's candidates (lines with a right one)."""
    usable = [line for line in lines if line["right"].sum() > 0]
    features = np.concatenate([line["features"] for line in usable])
    target = np.concatenate([line["right"] / line["right"].sum() for line in usable])
    starts = np.cumsum([0] + [len(line["right"]) for line in usable[:-1]])
    group = np.repeat(np.arange(len(usable)), [len(line["right"]) for line in usable])
    weights = np.zeros(features.shape[1])
    for _ in range(steps):
        score = features @ weights
        score -= np.maximum.reduceat(score, starts)[group]
        odds = np.exp(score)
        chance = odds / np.add.reduceat(odds, starts)[group]
        gradient = features.T @ (chance - target) / len(usable) + l2 * weights
        weights -= rate * gradient
    return weights


def _chances(line: dict, weights: np.ndarray) -> np.ndarray:
    score = line["features"] @ weights
    odds = np.exp(score - score.max())
    return odds / odds.sum()


def _auc(scores: list[float], right: list[float]) -> float:
    wrong = sorted(s for s, r in zip(scores, right, strict=True) if not r)
    hits = [s for s, r in zip(scores, right, strict=True) if r]
    below = [bisect.bisect_left(wrong, s) for s in hits]
    tied = [bisect.bisect_right(wrong, s) - b for s, b in zip(hits, below, strict=True)]
    ranked = sum(below) + 0.5 * sum(tied)
    return ranked / (len(hits) * len(wrong))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=int, default=8, help="lines each side for candidates")
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rate", type=float, default=0.5)
    parser.add_argument("--output", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    data = {novel: examples(novel, args.window) for novel in DEVELOPMENT}
    per_novel, confidence, chance, right, quotes = {}, [], [], [], []
    rules_total = learned_total = quotes_total = 0.0
    for novel in DEVELOPMENT:
        weights = fit(
            [x for n in DEVELOPMENT if n != novel for x in data[n]], args.l2, args.steps, args.rate
        )
        rules = learned = count = 0.0
        for line in data[novel]:
            chances = _chances(line, weights)
            rules += line["quotes"] * line["right"][line["pick"]]
            learned += line["quotes"] * line["right"][int(np.argmax(chances))]
            count += line["quotes"]
            confidence.append(line["confidence"])
            chance.append(float(chances[line["pick"]]))
            right.append(float(line["right"][line["pick"]]))
            quotes.append(line["quotes"])
        per_novel[novel] = {
            "lines": len(data[novel]), "quotes": int(count),
            "rules": round(rules / count, 4), "learned": round(learned / count, 4),
        }  # fmt: skip
        rules_total, learned_total, quotes_total = (
            rules_total + rules,
            learned_total + learned,
            quotes_total + count,
        )

    def commits(scores: list[float], threshold: float) -> dict:
        kept = [(q, r) for s, q, r in zip(scores, quotes, right, strict=True) if s >= threshold]
        committed = sum(q for q, _ in kept)
        hit = sum(q * r for q, r in kept)
        return {"committed": int(committed), "right": int(hit),
                "precision": round(hit / committed, 4) if committed else None}  # fmt: skip

    weights = fit([x for n in DEVELOPMENT for x in data[n]], args.l2, args.steps, args.rate)
    result = {
        "what": "a learned ranking of turn-taking candidates against the sieve's turn rules, "
        "trained on five development novels and scored on the sixth, in turn",
        "command": "python -m benchmarks.casting.turn_ranker "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "novels": list(DEVELOPMENT),
        "settings": {"window": args.window, "l2": args.l2, "steps": args.steps, "rate": args.rate},
        "turn_taking_quotes": int(quotes_total),
        "right": {
            "rules": round(rules_total / quotes_total, 4),
            "learned": round(learned_total / quotes_total, 4),
            "quotes_gained": int(learned_total - rules_total),
        },
        "per_novel": per_novel,
        "auc_of_the_rules_pick": {
            "rules_confidence": round(_auc(confidence, right), 4),
            "learned_chance": round(_auc(chance, right), 4),
        },
        "at_thresholds": {
            str(t): {
                "rules_confidence": commits(confidence, t),
                "learned_chance": commits(chance, t),
            }
            for t in (0.4, 0.5, 0.6, 0.7)
        },
        "weights_on_all_six": {
            name: round(float(w), 3) for name, w in zip(FEATURES, weights, strict=True)
        },
    }
    write_text_atomic(args.output, json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["right"]), json.dumps(result["auc_of_the_rules_pick"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
