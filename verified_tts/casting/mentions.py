"""Where the narration names a character, and what its pronouns say of each one's gender.

:func:`mentions` finds the names of a stretch of narration in order, as
:func:`verified_tts.text.names.mentions` does, but a capitalised word that only opens the sentence
("When Harriet had", "Poor Emma") is not taken for part of the name, and a capitalised
description ("the Hatter", "the March Hare") counts when the book uses it as a name.
:func:`character_genders` votes each name's gender from the first subject pronoun after it in
sentences that name no one else.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from verified_tts.text.dialogue import SPEECH_VERBS, ParagraphQuotes
from verified_tts.text.names import (
    CAPITAL_WORD,
    NOT_NAMES,
    TITLE,
    clean_name,
    is_name,
    sole_mentions,
)

__all__ = ["NAME", "character_genders", "mentions", "names_no_one", "place_names"]

_CAPITAL = rf"(?!{TITLE}\s){CAPITAL_WORD}"
# a name: an optional title, then capitalised words, none of them a title ("Miss Woodhouse Miss
# Taylor", across a line break, is two people)
NAME = rf"(?:{TITLE}\s+)?{_CAPITAL}(?:\s+(?:de|De|von|van|la|du)?\s*{_CAPITAL})*"

_PLACE_BEFORE = re.compile(r"\b(?:in|into|near|across|through)\s+$", re.IGNORECASE)
_ARTICLE_BEFORE = re.compile(r"\b(?:the|a|an)\s+$", re.IGNORECASE)
_BARE_TITLE = re.compile(rf"(?:{TITLE}|Mr|Mrs|Dr|Ms|St)\.?")
_OPENERS = NOT_NAMES | frozenset(["Poor", "Dear", "Little", "Old", "Young", "Said", "Cried"])


def _titles_a_name(words: list[str]) -> bool:
    """Whether the first of ``words`` is a title of the capitalised word after it ("Sir Walter")."""
    return len(words) > 1 and words[1][:1].isupper() and re.fullmatch(TITLE, words[0]) is not None


def names_no_one(words: str) -> bool:
    """Whether capitalised ``words`` open with a word that names no one ("Then Emma", "Sir,"):
    "Sir", "Lord", "Mother" or "Father" before a name is that person's title ("Sir Walter")."""
    split = words.split()
    return bool(split) and split[0] in NOT_NAMES and not _titles_a_name(split)


def without_openers(words: str) -> str:
    """Capitalised ``words`` without the words that open a sentence before a name ("Then
    Freddy": Freddy); a title stays with its name ("Sir Walter")."""
    split = words.split()
    while (
        len(split) > 1
        and split[0] in NOT_NAMES
        and split[1][:1].isupper()  # "Her father" is a description, not "Her" before a name
        and not _titles_a_name(split)
    ):
        split = split[1:]
    return " ".join(split)


def mentions(
    text: str, names: frozenset[str], described: frozenset[str] = frozenset()
) -> list[str]:
    """Names (and capitalised descriptions in ``described``, "the Hatter") in ``text``, in the
    order they come; a name after "in", "near" or an article is a place."""
    found = []
    for match in re.finditer(NAME, text):
        words = match.group(0).split()
        before = text[max(0, match.start() - 12) : match.start()]
        if _ARTICLE_BEFORE.search(before) or words[0] == "The":
            described_as = "the " + clean_name(" ".join(words[words[0] == "The" :]))
            if described_as in described:  # the March Hare
                found.append(described_as)
                continue
        start = match.start()
        while words and words[0] in _OPENERS and not _titles_a_name(words):  # "When Harriet"
            start = text.index(words[0], start) + len(words[0])
            words = words[1:]
        if not words:
            continue
        who = clean_name(" ".join(words))
        before = text[max(0, start - 12) : start].rstrip() + " "
        if _ARTICLE_BEFORE.search(before):
            if "the " + who in described:
                found.append("the " + who)
            continue
        titled = re.match(TITLE, who)  # the Countess, in Mrs. Goddard's: a person
        if _PLACE_BEFORE.search(before) and not titled:
            continue
        if _BARE_TITLE.fullmatch(who):  # "Mr. and Mrs. Weston"
            continue
        if all(w.isupper() and len(w) > 1 for w in words):  # a label: "DRINK ME", "ORANGE"
            continue
        if is_name(who, names) and not names_no_one(who):
            found.append(who)
    return found


_LOCATIVE = re.compile(
    r"\b(?:at|in|into|near|through|across|towards|from|to|of|leave|left|reach|reached|quit|"
    r"quitted|round)\W*$",
    re.IGNORECASE,
)


def place_names(texts: Sequence[str], names: frozenset[str]) -> frozenset[str]:
    """Names that are places, not people: a word of this book's names that follows "at", "in",
    "to", "from", "of", "reached" ... in at least 30% of its uses (Hartfield 79%, Bath 73%, Italy
    31%; people 3-18%), and never speaks ("Tom answered", "said Tom": a person, whoever waves to
    him)."""
    uses: Counter[str] = Counter()
    located: Counter[str] = Counter()
    speaks: set[str] = set()
    for text in texts:
        for match in re.finditer(r"\b[A-Z][a-z]+\b", text):
            word = match.group(0)
            if word not in names:
                continue
            uses[word] += 1
            before = text[max(0, match.start() - 12) : match.start()]
            located[word] += bool(_LOCATIVE.search(before))
            after = re.match(r"\s+([a-z]+)", text[match.end() : match.end() + 16])
            verb = re.search(r"\b([a-z]+)\s+$", before)
            if any(m and m.group(1) in SPEECH_VERBS for m in (after, verb)):
                speaks.add(word)
    return frozenset(
        w for w, n in uses.items() if n >= 3 and located[w] >= 0.3 * n and w not in speaks
    )


def character_genders(
    chapters: Sequence[Sequence[tuple[str, ParagraphQuotes]]], names: frozenset[str]
) -> dict[str, str]:
    """Each name's gender where the text says: the first pronoun after the name in narration
    sentences that name that character alone, not as a possessive. A novel told close to its
    heroine has "she" everywhere ("George looked at her; she..."), so a name's share of "she"
    is weighed against the other names': well above it female, well below it male."""
    votes: dict[str, Counter[str]] = {}
    for name, after in sole_mentions(chapters, names, mentions):
        if re.match(r"(?:'|’| )s\b", after):  # "Emma's persuasion, he"
            continue
        word = re.search(r"\b(he|his|him|himself|she|her|herself)\b", after.lower())
        if word:
            female = word.group(1) in ("she", "her", "herself")
            votes.setdefault(name, Counter())["female" if female else "male"] += 1
    total = sum(sum(tally.values()) for tally in votes.values())
    female = sum(tally["female"] for tally in votes.values())
    genders = {}
    for name, tally in votes.items():
        count = sum(tally.values())
        share = tally["female"] / count
        others = total - count  # the book's share without this name's own votes
        base = (female - tally["female"]) / others if others else 0.5
        if share >= min(base + 0.05, 0.95):
            genders[name] = "female"
        elif share <= base - 0.1:
            genders[name] = "male"
    return genders
