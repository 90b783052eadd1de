"""Which titled short names and once-written full names are one character, as a reader links them.

A novel calls one person by several names: "Mrs. Rachel", "Mrs. Lynde" and "Mrs. Rachel Lynde";
"Charlotte" and "Miss Bartlett", which the book joins only once, in "Charlotte Bartlett".
:func:`written_full_names` finds the full names a book writes at least once anywhere (a quote
included) whose first word the narration names alone and whose last it names with a title, so the
two short names meet in one character; the caller may add chapter headings to the texts searched
("Chapter VI: Miss Clara Pryor Walks Out", a title before the full name).
:func:`titled_first_name` gives "Mrs. Rachel" or "Miss Daisy"
to the one fuller name that opens with that first name (not where the word is a surname: "Mr.
Ravenel" beside "Frank Ravenel"), and :func:`titled_surname` gives "Mrs. Lynde" or "Miss Barry" to
the one character whose fuller name ends in that surname with the same title ("Miss Josephine
Barry"), else, for Miss, to the woman of that surname without a title who is named most ("Miss
Morland" is Catherine Morland, the eldest daughter). Such a surname form stays a person of its own
when it is named far more often than the titled fuller name (Miss Bates beside Miss Jane Bates),
and "Mr." with a surname always does: "Mr. Emerson" and "Mr. Knightley" are a father and an elder
brother beside "Mr. George Emerson" and "Mr. John Knightley" as often as "Mr. Tilney" is Henry
Tilney. :class:`verified_tts.casting.characters.Characters` asks these questions while it links
names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from verified_tts.text.names import NOT_NAMES, TITLE, title_gender


class Characters(Protocol):
    """What these rules read of :class:`verified_tts.casting.characters.Characters`."""

    counts: Counter[str]
    canonical: dict[str, str]

    def name_gender(self, name: str) -> str | None: ...


__all__ = ["titled_first_name", "titled_surname", "written_full_names"]

_SURNAME_TITLES = ("Mrs.", "Miss")  # "Mr. Emerson" is as often the father as the son
_RARER = 3  # a surname form named this many times more than the fuller name is someone else
# a first name and a surname, after any title ("Miss Clara Pryor": not "Miss Clara")
_FULL = re.compile(
    rf"(?<![\w.'’])(?:{TITLE}\s+)?([A-Z][a-z]+)[ \t]*\n?[ \t]*([A-Z][a-z]+)\b(?!['’]?[\w-])"
)


def _split(name: str) -> tuple[str | None, tuple[str, ...]]:
    words = name.split()
    if len(words) > 1 and re.fullmatch(TITLE, words[0]):
        return words[0], tuple(words[1:])
    return None, tuple(words)


def written_full_names(texts: Iterable[str], named: Counter[str]) -> list[str]:
    """Full names ("Charlotte Bartlett") written anywhere in ``texts`` that the narration's
    ``named`` lacks, whose first word the narration names alone and whose last word it names with
    a title ("Charlotte" and "Miss Bartlett")."""
    firsts = {n for n in named if len(n.split()) == 1 and n not in NOT_NAMES}
    surnames = {
        n.split()[1] for n in named if len(n.split()) == 2 and re.fullmatch(TITLE, n.split()[0])
    }
    found: dict[str, None] = {}
    for text in texts:
        for match in _FULL.finditer(text):
            first, last = match.groups()
            name = f"{first} {last}"
            if first in firsts and last in surnames and first != last and name not in named:
                found[name] = None
    return list(found)


def titled_first_name(people: Characters, name: str, full: dict) -> str | None:
    """The one fuller name a title and a first name ("Mrs. Rachel", "Miss Daisy") is short for:
    a first name and a surname with the same title, else without a title and of the title's
    gender; never where the word is some name's surname ("Mr. Ravenel" beside "Frank Ravenel")."""
    title, core = _split(name)
    if title is None or len(core) != 1:
        return None
    if any(len(c) > 1 and c[-1] == core[0] for c in full):  # Mr. Ravenel: a surname
        return None
    gender = title_gender(name)
    same, untitled = [], []
    for other_core, forms in full.items():
        if len(other_core) != 2 or other_core[0] != core[0]:
            continue
        for form in forms:
            other_title = _split(form)[0]
            if other_title == title:
                same.append(form)
            elif other_title is None and gender and people.name_gender(form) == gender:
                untitled.append(form)
    return _one(people, same or untitled)


def titled_surname(people: Characters, name: str) -> str | None:
    """The one character a title and a surname ("Mr. Tilney", "Mrs. Lynde", "Miss Barry") is
    short for (see the module docstring), or None."""
    title, core = _split(name)
    if title not in _SURNAME_TITLES or len(core) != 1:
        return None
    gender = title_gender(name)
    same, untitled = [], []
    for form in people.counts:
        other_title, other_core = _split(form)
        if len(other_core) < 2 or other_core[-1] != core[0] or form == name:
            continue
        if other_title == title:
            same.append(form)
        elif other_title is None and title != "Mrs." and people.name_gender(form) == gender:
            untitled.append(form)  # Mrs. Morland is not Catherine Morland, Miss Morland is
    owner = _one(people, same or untitled, most=not same and title == "Miss")
    if owner is None:
        return None
    forms = {a for a, c in people.canonical.items() if c == owner} | {owner}
    if same and people.counts[name] > _RARER * sum(people.counts[f] for f in forms):
        return None  # Miss Bates beside Miss Jane Bates
    return owner


def _one(people: Characters, forms: list[str], most: bool = False) -> str | None:
    """The character ``forms`` name, if they name one; ``most``: the most named of them (Miss
    Thorpe of several untitled Thorpe women is the eldest daughter, the one named most)."""
    owners = {people.canonical.get(f, f) for f in forms}
    if len(owners) == 1 or (owners and most):
        return max(owners, key=lambda o: people.counts[o])
    return None
