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

from verified_tts.text.dialogue import ParagraphQuotes
from verified_tts.text.names import NAME, NOT_NAMES, TITLE, clean_name, is_name

__all__ = ["character_genders", "mentions"]

_PLACE_BEFORE = re.compile(r"\b(?:in|into|near|across|through)\s+$", re.IGNORECASE)
_ARTICLE_BEFORE = re.compile(r"\b(?:the|a|an)\s+$", re.IGNORECASE)
_OPENERS = NOT_NAMES | frozenset(["Poor", "Dear", "Little", "Old", "Young", "Said", "Cried"])


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
        while words and words[0] in _OPENERS:  # "When Harriet" is Harriet
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
        if is_name(who, names) and who.split()[0] not in NOT_NAMES:
            found.append(who)
    return found


def character_genders(
    chapters: Sequence[Sequence[tuple[str, ParagraphQuotes]]], names: frozenset[str]
) -> dict[str, str]:
    """Each name's gender where the text says: the first subject pronoun after the name in
    narration sentences that name that character alone ("Anne turned; she smiled"), kept where one
    gender outvotes the other two to one."""
    votes: dict[str, Counter[str]] = {}
    for chapter in chapters:
        for text, quotes in chapter:
            narration = " ".join(text[s.start : s.end] for s in quotes.spans if not s.dialogue)
            for sentence in re.split(r"(?<=[.!?])\s+", narration):
                named = set(mentions(sentence, names))
                if len(named) != 1:
                    continue
                name = named.pop()
                after = sentence[sentence.find(name) + len(name) :].lower()
                # the first he, his or she after the name is most often the name's own ("him"
                # and "her" are more often someone else: "Frank kissed her")
                word = re.search(r"\b(he|his|she)\b", after)
                if word:
                    male = word.group(1) != "she"
                    votes.setdefault(name, Counter())["male" if male else "female"] += 1
    genders = {}
    for name, tally in votes.items():
        gender, count = tally.most_common(1)[0]
        if count >= 2 * (sum(tally.values()) - count):
            genders[name] = gender
    return genders
