"""The characters of a book as a reader finds them: named ones with their aliases, unnamed ones
by their description, and the first-person narrator, each with a gender where the text says it.

:class:`Characters` is built from every name the narration uses (:mod:`verified_tts.text.names`
decides what looks like a name and what a title says of gender). A titled name keeps its title
(Mr. Knightley and Mrs. Knightley are two people); "Mr. Frank Churchill" and "Frank Churchill" are
one; a bare first or last name ("Emma", "Frank") belongs to the most often named fuller name that
contains it and agrees with its gender, and the reason is kept (:attr:`Character.why`); a title
with one name ("Mrs. Rachel", "Mrs. Lynde", "Miss Bartlett") goes to a fuller name as
:mod:`verified_tts.casting.aliases` decides, and "Hatter" is "the Hatter" of the tags. A
description in a speech tag ("the boatman", "my waterman", "the old woman", "the Hatter") is a
character of its own, its gender from its noun (-man, woman, girl...); unnamed speakers a chapter
describes in different words are one person when they take the same side of one conversation,
which :mod:`verified_tts.casting.sieve` decides; the sieve also links a description to the named
character it is (:meth:`Characters.link`) where the text says so. "I" in a tag ("said I", "I
replied") is the narrator, a character called ``the narrator``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from verified_tts.casting.aliases import titled_first_name, titled_surname
from verified_tts.text.names import TITLE, clean_name, is_name, title_gender

__all__ = ["KIN", "NARRATOR", "Character", "Characters", "descriptor_gender"]

NARRATOR = "the narrator"

_MALE_NOUNS = frozenset(
    [
        "man",
        "boy",
        "gentleman",
        "fellow",
        "father",
        "son",
        "brother",
        "uncle",
        "husband",
        "king",
        "prince",
        "lord",
        "sir",
        "duke",
        "count",
        "master",
        "squire",
        "captain",
        "colonel",
        "major",
        "general",
        "sailor",
        "soldier",
        "monk",
        "priest",
        "parson",
        "waiter",
        "footman",
        "butler",
        "groom",
        "nephew",
        "grandfather",
        "lad",
        "youth",
        "hatter",
        "knave",
    ]
)
_FEMALE_NOUNS = frozenset(
    [
        "woman",
        "girl",
        "lady",
        "mother",
        "daughter",
        "sister",
        "aunt",
        "wife",
        "queen",
        "princess",
        "duchess",
        "countess",
        "mistress",
        "maid",
        "nurse",
        "governess",
        "niece",
        "grandmother",
        "lass",
        "widow",
        "housekeeper",
        "dame",
        "duchess",
    ]
)


# a possessive description of a relation ("her mother", "his sister") names a person in a tag
KIN = frozenset(
    [
        "mother",
        "father",
        "sister",
        "brother",
        "aunt",
        "uncle",
        "husband",
        "wife",
        "son",
        "daughter",
        "cousin",
        "niece",
        "nephew",
        "companion",
        "friend",
        "hostess",
        "guardian",
    ]
)


def descriptor_gender(description: str) -> str | None:
    """The gender a description's noun says: "the boatman" male, "the old woman" female."""
    noun = description.lower().split()[-1].split("-")[-1]  # the station-master: a master
    if noun in _FEMALE_NOUNS or noun.endswith(("woman", "women", "ess")):
        return "female"
    if noun in _MALE_NOUNS or noun.endswith(("man", "men")):
        return "male"
    return None


@dataclass(frozen=True)
class Character:
    """A person who speaks: their name, the other names they go by, gender and why."""

    name: str
    aliases: tuple[str, ...] = ()
    gender: str | None = None
    kind: str = "named"  # named | described | narrator
    why: str = ""


def _core(name: str) -> tuple[str | None, tuple[str, ...]]:
    words = name.split()
    if len(words) > 1 and re.fullmatch(TITLE, words[0]):
        return words[0], tuple(words[1:])
    return None, tuple(words)


@dataclass
class Characters:
    """Who can speak in a book, and which name each mention of them resolves to."""

    names: frozenset[str]  # what counts as a name in this book
    genders: dict[str, str]  # name -> gender from pronouns near it
    counts: Counter[str] = field(default_factory=Counter)  # name -> mentions
    canonical: dict[str, str] = field(default_factory=dict)  # alias -> character name
    reasons: dict[str, str] = field(default_factory=dict)  # alias -> why it is that character
    described: dict[str, str | None] = field(default_factory=dict)  # description -> gender
    uses: Counter[str] = field(default_factory=Counter)  # description -> tags that use it
    linked: dict[str, str] = field(default_factory=dict)  # description -> the character it is

    @classmethod
    def from_mentions(
        cls, mentions: Iterable[str], names: frozenset[str], genders: dict[str, str]
    ) -> Characters:
        found = cls(names, dict(genders), Counter(mentions))
        found._link()
        return found

    def name_gender(self, name: str) -> str | None:
        """A name's gender from its title or pronouns, else its first name's (Henry Tilney's
        from Henry's)."""
        found = title_gender(name) or self.genders.get(name)
        if found is None and not _core(name)[0] and len(name.split()) > 1:
            found = self.genders.get(name.split()[0])
        return found

    def _link(self) -> None:
        """Each mentioned name -> the character it names (see the module docstring)."""
        full: dict[tuple[str, ...], list[str]] = {}
        for name, _ in self.counts.most_common():
            title, core = _core(name)
            if len(core) > 1 or title:
                full.setdefault(core, []).append(name)
        for name, _ in self.counts.most_common():
            title, core = _core(name)
            if title is None and len(core) > 1 and full.get(core):
                titled = [n for n in full[core] if _core(n)[0]]
                if titled and self.name_gender(titled[0]) in (None, self.name_gender(name)):
                    self._alias(name, titled[0], f"{name} is {titled[0]}, with the title")
                    continue
            if title is None and len(core) == 1:
                owner = self._owner(core[0], name, full)
                if owner:
                    owner = self.canonical.get(owner, owner)
                    self._alias(name, owner, f"{name} is short for {owner}, the {name} most named")
                    continue
            owner = titled_first_name(self, name, full)
            if owner:
                why = f"{name} is {owner}, the one fuller name with that title and first name"
                self._alias(name, owner, why)
                continue
            self.canonical.setdefault(name, name)
        self._follow()
        for name, _ in self.counts.most_common():  # Mr. Tilney, Mrs. Lynde, Miss Morland
            if self.canonical.get(name) != name:
                continue
            owner = titled_surname(self, name)
            if owner:
                self._alias(name, owner, f"{name} is {owner}, named with that surname in full")
        self._follow()

    def _follow(self) -> None:
        for alias in self.canonical:  # George -> George Emerson -> Mr. George Emerson
            seen = {alias}
            while self.canonical.get(self.canonical[alias], alias) not in seen:
                seen.add(self.canonical[alias])
                self.canonical[alias] = self.canonical[self.canonical[alias]]

    def _owner(self, word: str, name: str, full: dict) -> str | None:
        """The most named fuller name ``word`` is short for: as a first name, the one it opens;
        as a surname, a man's ("said Thorpe" is John Thorpe, not Mrs. Thorpe) unless only women
        bear it."""
        first, last = [], []
        for core, forms in full.items():
            if core[0] == word and len(core) > 1:
                first.append(forms[0])
            elif core[-1] == word:
                last.append(forms[0])
        if first:
            return max(first, key=lambda n: self.counts[n])
        # a bare surname is a man's, else anyone's but a titled woman's
        men = [n for n in last if self.name_gender(n) == "male"]
        untitled = [n for n in last if title_gender(n) != "female"]
        last = men or untitled or last
        return max(last, key=lambda n: self.counts[n]) if last else None

    def _alias(self, alias: str, owner: str, why: str) -> None:
        self.canonical[alias] = self.canonical.get(owner, owner)
        self.canonical.setdefault(owner, owner)
        self.reasons[alias] = why

    def resolve(self, who: str) -> str | None:
        """The character a tag's words name: a name, a description, "I"; None if not a person."""
        who = clean_name(who)
        if who in _NOT_PEOPLE:
            return None
        if who == "I":
            return NARRATOR
        lowered = who.lower()
        if _kin(lowered):  # "her mother": her own, not "the mother" of the book
            description = lowered
            self.described.setdefault(description, descriptor_gender(description))
            self.uses[description] += 1
            return self.linked.get(description, description)
        if lowered.startswith(("the ", "my ", "our ")) and not re.match(rf"the {TITLE}", who):
            if not is_name("the " + who.split(" ", 1)[1], self.names):
                return None
            description = "the " + who.split(" ", 1)[1]
            if description.split()[-1][:1].isupper():  # the Hatter, the Mock Turtle
                self.described.setdefault(description, descriptor_gender(description))
                self.uses[description] += 1
                bare = description[4:]  # "Hatter said" and "March Hare" name it too
                if self.canonical.get(bare, bare) == bare:
                    self.canonical[bare] = description
                    self.reasons.setdefault(bare, f"{bare} is {description}, without 'the'")
                return description
            gender = descriptor_gender(description)
            if gender is None and description.split()[-1] not in _PERSON_WORDS:
                return None
            self.described.setdefault(description, gender)
            self.uses[description] += 1
            return self.linked.get(description, description)
        if lowered.startswith("the "):
            who = who[4:]
        if who in self.canonical:
            return self.canonical[who]
        if is_name(who, self.names):
            self.canonical[who] = who
            self.counts[who] += 1
            return who
        return None

    def linked_from(self, who: str) -> str | None:
        """The description a tag's words ("the old man", "My Waterman") give when it is linked
        to a named character, else None."""
        lowered = clean_name(who).lower()
        if _kin(lowered):
            return lowered if lowered in self.linked else None
        if lowered.startswith(("the ", "my ", "our ")):
            description = "the " + clean_name(who).split(" ", 1)[1]
            return description if description in self.linked else None
        return None

    def link(self, description: str, character: str, why: str) -> None:
        """``description`` ("the old man") is ``character`` from now on, for ``why``."""
        self.linked[description] = character
        self.canonical[description] = character
        self.reasons[description] = why

    def gender(self, character: str) -> str | None:
        if character == NARRATOR:
            return None
        if character in self.described:
            return self.described[character]
        votes = Counter()
        aliases = self.aliases(character)
        surnames = {a.split()[-1] for a in aliases if len(a.split()) > 1}
        for alias in aliases:
            g = self.name_gender(alias)
            if g and alias not in surnames:  # "Thorpe" is John, Isabella and Mrs. Thorpe
                votes[g] += 1 + self.counts[alias]
        return votes.most_common(1)[0][0] if votes else None

    def titled(self, title: str) -> str | None:
        """The one character named with ``title`` ("General" -> General Tilney), if just one."""
        # "the little old lady" is any lady, not Lady Otway: "lady" names no rank in a tag
        if not re.fullmatch(TITLE, title) or title in ("Miss", "Mr.", "Mrs.", "Lady"):
            return None
        found = {c for a, c in self.canonical.items() if a.startswith(title + " ")}
        return found.pop() if len(found) == 1 else None

    def aliases(self, character: str) -> list[str]:
        return sorted(a for a, c in self.canonical.items() if c == character)

    def character(self, name: str, kind: str) -> Character:
        aliases = tuple(a for a in self.aliases(name) if a != name)
        why = "; ".join(self.reasons[a] for a in aliases if a in self.reasons)
        if kind == "narrator":
            why = "'I' in a speech tag: the first-person narrator speaks"
        elif kind == "described":
            why = f"described as '{name}' in a speech tag, not named"
        return Character(name, aliases, self.gender(name), kind, why)


def _kin(lowered: str) -> bool:
    words = lowered.split()
    return len(words) == 2 and words[0] in ("his", "her", "their") and words[1] in KIN


_NOT_PEOPLE = frozenset(
    ["Mr", "Mrs", "Dr", "Miss", "Ms", "St", "Mr.", "Mrs.", "Dr.", "Sir", "Madam"]
)
_PERSON_WORDS = frozenset(
    [
        "stranger",
        "child",
        "visitor",
        "traveller",
        "traveler",
        "driver",
        "guide",
        "doctor",
        "clerk",
        "servant",
        "host",
        "hostess",
        "cabman",
        "sculler",
        "rower",
        "coachman",
        "landlord",
        "landlady",
        "porter",
        "guard",
        "officer",
        "judge",
        "chief",
        "speaker",
        "other",
        "first",
        "second",
        "third",
        "last",
        "elder",
        "younger",
        "old",
        "young",
    ]
)
