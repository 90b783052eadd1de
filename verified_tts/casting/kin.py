"""A possessive relation in a speech tag ("said her father", "his wife answered") to the named
character it is, by the family name a reader expects a father, mother, brother, sister, son,
daughter, husband or wife to share.

:func:`kin_of` takes the relation, the people the tag's possessive can stand for (the likeliest
first: whom the quote calls by name, those named just before it, those talking) and the book's
:class:`verified_tts.casting.characters.Characters`. The first of them of the possessive's gender
who has a family name and one relation of that kind names the speaker: another character of the
relation's gender with that family name and a title that fits it (a mother or wife is a "Mrs.", a
father or husband a "Mr.", a daughter or sister not a "Mrs."), so "Emma Woodhouse" and "her
father" give Mr. Woodhouse, "Mrs. Weston" and "her husband" Mr. Weston, and "her mother" beside
Mrs. Dale is not Mrs. Dale's daughter. Where that person has two such relations, nobody is named
and the turns settle the tag; an aunt, a cousin or a friend may bear any name, so they stay
unnamed too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from verified_tts.casting.characters import NARRATOR, Characters, descriptor_gender
from verified_tts.text.names import TITLE

__all__ = ["kin_of"]

# relations that share the family name, and the titles they go by: a mother or wife is a
# "Mrs.", a father or husband a "Mr.", a daughter or sister of that name is unmarried
_FAMILY = {
    "father": ("Mr.", "Sir", "Lord", "Monsieur", "Dr."),
    "husband": ("Mr.", "Sir", "Lord", "Monsieur", "Dr."),
    "brother": (),
    "son": (),
    "mother": ("Mrs.", "Lady", "Madame"),
    "wife": ("Mrs.", "Lady", "Madame"),
    "sister": (),
    "daughter": (),
}
_UNMARRIED = ("sister", "daughter")
_OWNER_GENDER = {"his": "male", "her": "female"}


def _surnames(people: Characters) -> dict[str, set[str]]:
    """Each character's family names: the last word of each of their names that has a title or
    more than one word ("Emma Woodhouse", "Mr. Woodhouse": Woodhouse)."""
    found: dict[str, set[str]] = {}
    for name, character in people.canonical.items():
        words = name.split()
        if character in people.described or character == NARRATOR:
            continue
        found.setdefault(character, set())
        if len(words) > 1 and not re.fullmatch(TITLE, words[-1]):
            found[character].add(words[-1])
    return found


def _titles(people: Characters, character: str) -> set[str]:
    return {a.split()[0] for a, c in people.canonical.items() if c == character and " " in a}


def _fits(people: Characters, character: str, noun: str) -> bool:
    """Whether ``character``'s titles fit the relation ``noun`` (a mother is a "Mrs.")."""
    titles = _titles(people, character)
    if noun in _UNMARRIED:
        return "Mrs." not in titles
    return not _FAMILY[noun] or bool(titles & set(_FAMILY[noun]))


def kin_of(relation: str, owners: Iterable[str], people: Characters) -> tuple[str, str] | None:
    """(speaker, whose relation they are) for ``relation`` ("her father"), or None."""
    possessive, noun = relation.split()
    if noun not in _FAMILY:
        return None
    gender = descriptor_gender(noun)
    owner_gender = _OWNER_GENDER.get(possessive)
    surnames = _surnames(people)
    for owner in dict.fromkeys(owners):
        family = surnames.get(owner)
        if not family or (owner_gender and people.gender(owner) != owner_gender):
            continue
        same = [
            c for c, names in surnames.items()
            if c != owner and names & family and people.gender(c) == gender
            and _fits(people, c, noun)
        ]  # fmt: skip
        if len(same) > 1:  # a relation of theirs, but which one?
            return None
        if same:
            return same[0], owner
    return None
