"""Quotes to speakers, in stages like a deterministic sieve, each guess with a reason and a
confidence.

:func:`attribute` takes a book's chapters as paragraphs scanned for quotes and gives each paragraph
with dialogue a :class:`Guess` (a paragraph is one speaker's, as printers set dialogue). The
stages, strongest first: a speech that goes on from the paragraph before keeps its speaker; an
explicit tag next to a quote in either order ("said Emma", "Emma said", "cried Mr. Weston", "said
I", "the boatman answered", "Anne turned to him and said:"); a pronoun tag ("she said") resolved to
the person of that gender named in the latest sentence before it in the paragraph that names one,
else in the conversation, else the last of that gender named nearby; a character who is the subject
of the paragraph's narration ("Emma laughed. "Yes.""); for a line no stage nor turn tells, the one
who opens the last sentence of the narration just before it. The lines these stages tell are
anchors, from which :mod:`verified_tts.casting.turns` fills the untagged lines of each scene by
turn-taking (and settles a pronoun tag by whose turn it is); a quote that names someone is
addressed to them and is not theirs, nor a pronoun tag's ('"Emma," said she' is not Emma's). A
narration that ends a paragraph of dialogue in a speech verb ("... he began with,") hands the next
quote on. A quote after the first of a paragraph that a name tags ('"What happened?" asked Gilbert.
"We were playing," explained Anne') is that one's, and the next line answers them; a short
narration between two lines in which someone speaks ("Emma was obliged to ask what they had told
her.") is a turn of theirs, which the next line answers. A quote that is a name and little more,
the name the line before said ("Baedeker?"), echoes it and calls no one. "Said the latter" is the
last of the people the narration just before names. A possessive description of a relation ("said
her father") is the one character of that gender who shares the
family name of the one it belongs to (:mod:`verified_tts.casting.kin`), else a tag of that gender
whose speaker the turns settle, as a pronoun's; so is a description by sex, age or family alone
("the girl said") that no one person in the scene fits. A description the text links to a named
character is that character: the narration calls them by its adjective ("old Mr. Emerson" for "the
old man"), or they were the one person of its gender in the scene at most of its tags (a first pass
over the book finds these, a second reads the tags with them). Reading a tag's words is
:mod:`verified_tts.casting.tags`' business; names, descriptions and the narrator are
:mod:`verified_tts.casting.characters`'.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from verified_tts.casting.aliases import written_full_names
from verified_tts.casting.characters import KIN, NARRATOR, Characters, descriptor_gender
from verified_tts.casting.kin import kin_of
from verified_tts.casting.mentions import (
    NAME,
    character_genders,
    mentions,
    names_no_one,
    place_names,
)
from verified_tts.casting.tags import PRONOUNS, SENTENCE_END, SUBJECT, speech_tag
from verified_tts.casting.turns import Guess, Line, fill_turns
from verified_tts.text.dialogue import ParagraphQuotes
from verified_tts.text.names import NOT_NAMES, TITLE, clean_name, proper_names

__all__ = ["OWN_TAG", "Guess", "attribute"]

_LINKED = 0.85  # a tag whose description the text links to a named character
_KIN = 0.8  # "said her father": the one of that family name
_LINK_USES = 3  # tags a description needs before the scenes around them can link it
_LINK_SHARE = 0.6  # ... and the share of them with the same one person of its gender in sight
_REPORTED = 0.8  # who speaks in reported speech between two lines: a turn of theirs
OWN_TAG = 0.95  # a quote's own tag, later in a paragraph another speaks
_SUBJECT_BEFORE = 0.58  # the subject of the narration just before a line: 7 of 12 right
_GENERIC_NOUNS = (
    frozenset(
        ["man", "woman", "girl", "boy", "lady", "gentleman", "youth", "lad", "lass", "fellow"]
    )
    | KIN
)
_AGE_WORDS = frozenset(["old", "elder"])  # "young Mr. Emerson" is the son, not "Mr. Emerson"
_ECHO_WORDS = 2  # words beside a name in a quote that echoes it ("Baedeker?", "Oh, Cecil!")


_VOCATIVE = re.compile(
    rf"(?:^[\"“‘']?|[,!?;—-]\s*|\b(?:dear|Dear|my|My|oh|Oh|O)\s+)(?P<who>{NAME})"
    r"(?=\s*[,!?.;—-]|\s*[\"”’']?\s*$)"
)


# "sir" and "ma'am" call the listener a man or a woman ("Sir Harry" is a name, not a call)
_SIR = re.compile(r"\b[Ss]ir\b(?!\s+[A-Z])")
_MADAM = re.compile(r"\b(?:[Mm]a['’ ]?am|[Mm]adam)\b(?!\s+[A-Z])")


def _courtesy(quotes: Sequence[str]) -> str | None:
    """The gender of whom the quotes call "sir" or "ma'am", if they call anyone so and not both."""
    said = " ".join(quotes)
    male, female = bool(_SIR.search(said)), bool(_MADAM.search(said))
    return "male" if male and not female else "female" if female and not male else None


def _addressees(quotes: Sequence[str], people: Characters, before: str = "") -> tuple[str, ...]:
    """Whom the quotes call by name, in order: "Mrs. Lynde!", "..., Marilla, ...", "my dear
    Emma" (each quote read on its own, so a name just inside its opening mark counts). A quote
    that is a name and little more, the name the line ``before`` said ("...taken away
    Baedeker." "Baedeker?"), echoes it and calls no one."""
    found = []
    for quote in quotes:
        for match in _VOCATIVE.finditer(quote):
            who = match.group("who")
            if who.split()[0] in NOT_NAMES and len(who.split()) == 1:
                continue
            if _echo(quote, who, before):
                continue
            character = people.canonical.get(who)
            if character and character not in found:
                found.append(character)
    return tuple(found)


def _echo(quote: str, who: str, before: str) -> bool:
    """Whether ``quote`` is ``who`` and at most a word or two more, and the line before named
    them: an echo or an answer ("Who found you out?" "Charlotte."), not a call."""
    rest = re.findall(r"[A-Za-z]+", quote.replace(who, " ", 1))
    last = who.split()[-1]
    return len(rest) <= _ECHO_WORDS and re.search(rf"\b{re.escape(last)}\b", before) is not None


class _Conversation:
    """Who has spoken lately in a chapter, and who was named, for pronouns and turns."""

    def __init__(self, people: Characters, heard: dict[str, list[set[str]]] | None = None) -> None:
        self.people = people
        self.heard = heard  # description -> for each tag, who of its gender was in the scene
        self.speakers: list[str | None] = []  # per dialogue paragraph since the last break
        self.mentioned: list[str] = []
        self.last_addressees: tuple[str, ...] = ()
        self.last_said = ""  # the quotes of the last paragraph of dialogue
        self.narration_before: list[str] | None = None  # names of the narration paragraph before
        self.subject_before: str | None = None  # who opens that paragraph's last sentence

    def pair(self) -> list[str]:
        return list(dict.fromkeys(s for s in reversed(self.speakers[-6:]) if s))[:2]

    def describe(self, description: str) -> tuple[str | None, str, float]:
        """A described speaker: "the other" is whoever did not speak last; a description of
        one gender is the one of that gender talking ("said the young man" between Emma and
        Frank is Frank); one of no gender is the other unnamed one talking ("the sculler"
        beside "my waterman"); else the description itself, surer once used twice."""
        pair = self.pair()
        if description in ("the other", "the latter"):
            if len(pair) == 2:
                return pair[1], f"the other of {pair[0]} and {pair[1]}", 0.75
            return None, "'the other', but no two people are talking", 0.0
        gender = self.people.described.get(description)
        if description.split()[-1][:1].isupper():  # the Hatter: a name, not a description
            return description, f"{description}, so called", 0.9
        titled = self.people.titled(description.split()[-1].capitalize())
        if titled:  # "the general" is General Tilney
            return titled, f"{description} is {titled}, the one so titled", 0.85
        self.hear(description)
        if gender:
            recent = [s for s in reversed(self.speakers[-8:]) if s] + self.mentioned[:-7:-1]
            same = [
                p
                for p in dict.fromkeys(recent)
                if p not in (description, *pair[:1])
                and p not in self.people.described
                and self.people.gender(p) == gender
            ]
        else:
            same = [p for p in pair[1:] if p != description and p in self.people.described]
        if len(same) == 1 and description not in pair:
            return same[0], f"{description} is {same[0]}, the one like that in the scene", 0.8
        uses = self.people.uses[description]
        return description, f"{description}, described, not named", 0.9 if uses > 1 else 0.6

    def hear(self, description: str) -> None:
        """Note who of the description's gender is in the scene at a tag that uses it, for
        :func:`_link_descriptions` (all named people of that gender but the last speaker)."""
        gender = self.people.described.get(description)
        if not gender or self.heard is None:
            return
        last = self.pair()[:1]
        recent = [s for s in self.speakers[-8:] if s] + self.mentioned[-12:]
        self.heard.setdefault(description, []).append({
            p for p in recent
            if p not in (description, *last, NARRATOR)
            and p not in self.people.described
            and self.people.gender(p) == gender
        })  # fmt: skip

    def pronoun(
        self, pronoun: str, before: list[str], addressed: Sequence[str] = ()
    ) -> tuple[str | None, str, float]:
        """Whom a pronoun tag stands for; never someone the quote calls by name ("Emma," said
        she: not Emma)."""
        gender = PRONOUNS[pronoun]

        def of_gender(name: str) -> bool:
            return self.people.gender(name) == gender and name not in addressed

        # each confidence is how often such a resolution was right on the development novels
        here = [n for n in before if of_gender(n)]
        if here:
            return here[0], f"'{pronoun}' with a speech verb: {here[0]}, named just before", 0.83
        if self.narration_before is not None:  # a paragraph of narration just before
            there = [n for n in self.narration_before if of_gender(n)]
            if there:
                return (
                    there[0],
                    f"'{pronoun}' with a speech verb: {there[0]}, named in the narration before",
                    0.87,
                )
        pair = self.pair()
        matching = [s for s in pair if of_gender(s)]
        if len(matching) == 1:
            return matching[0], f"'{pronoun}' with a speech verb: the one {gender} talking", 0.82
        if len(pair) == 2 and not matching:
            unknown = [s for s in pair if self.people.gender(s) is None and s != NARRATOR]
            if len(unknown) == 1:
                return unknown[0], f"'{pronoun}' with a speech verb: the other one talking", 0.6
        for name in reversed(self.mentioned[-15:]):
            if of_gender(name):
                return name, f"'{pronoun}' with a speech verb: the last {gender} named", 0.71
        return None, f"'{pronoun}' with a speech verb, but no {gender} character is in sight", 0.0


def _named(text: str, people: Characters, keep: bool = False) -> list[str]:
    """The characters ``text`` names, in order (``keep``: also names no character owns yet)."""
    described = frozenset(d for d in people.described if d.split()[-1][:1].isupper())
    found = []
    for name in mentions(text, people.names, described):
        if name in described:
            found.append(name)
        elif name in people.canonical or keep:
            found.append(people.canonical.get(name, name))
    return found


def _antecedents(text: str, people: Characters) -> list[str]:
    """The characters ``text`` names, for a pronoun after it: those of its last sentence that
    names anyone first (in their order there), then those of the sentences before it."""
    sentences = reversed(SENTENCE_END.split(text))
    return [name for sentence in sentences for name in _named(sentence, people)]


def _explicit(
    text: str, quotes: ParagraphQuotes, talk: _Conversation, addressees: tuple[str, ...] = ()
) -> tuple[str | None, str, float, str | None] | None:
    spans = quotes.spans
    people = talk.people
    unresolved = None
    for index, span in enumerate(spans):
        if span.dialogue:
            continue
        narration = text[span.start : span.end]
        # the narration of the paragraph before the tag: where a pronoun's antecedent is
        earlier = " ".join(text[s.start : s.end] for s in spans[:index] if not s.dialogue)
        found = []
        if index > 0 and spans[index - 1].dialogue:
            found.append((speech_tag(narration, True), earlier))
        if index + 1 < len(spans) and spans[index + 1].dialogue:
            found.append((speech_tag(narration, False), f"{earlier} {narration}"))
        for tag, before in found:
            if tag is None:
                continue
            who, verb = tag
            if who in PRONOUNS:
                named = _antecedents(before, people)
                speaker, reason, confidence = talk.pronoun(who, named, addressees)
                if speaker:  # named in the paragraph: as sure as a name; else a turn may tell
                    return speaker, reason, confidence, None if speaker in named else PRONOUNS[who]
                unresolved = unresolved or (None, reason, 0.0, PRONOUNS[who])
                continue
            relation = re.fullmatch(r"(?P<owner>.+)'s (?P<noun>\w+)", who)
            if relation:  # "answered Daisy's mamma": the mother of that family
                owner = people.canonical.get(relation.group("owner"))
                noun = relation.group("noun")
                kin = kin_of(f"their {noun}", [owner], people) if owner else None
                if kin:
                    reason = f"'{who} {verb}': {kin[0]}, who shares {kin[1]}'s family name"
                    return kin[0], reason, _KIN, None
                gender = descriptor_gender(noun)
                unresolved = unresolved or (None, f"'{who} {verb}': not named", 0.0, gender)
                continue
            speaker = people.resolve(who)
            linked = people.linked_from(who)
            if linked:
                why = people.reasons[linked]
                return speaker, f"'{who} {verb}' tags the quote: {why}", _LINKED, None
            if speaker in people.described and speaker.split()[0] in ("his", "her", "their"):
                owners = [*addressees, *_antecedents(before, people)]
                owners += [*(talk.narration_before or []), *talk.pair(), *talk.mentioned[::-1]]
                kin = kin_of(speaker, owners, people)
                if kin:
                    reason = f"'{who} {verb}': {kin[0]}, who shares {kin[1]}'s family name"
                    return kin[0], reason, _KIN, None
                # "her mother" whom the text never links: a turn of that gender, like "she"
                reason = f"'{who} {verb}': {speaker}, not named"
                talk.hear(speaker)
                unresolved = unresolved or (None, reason, 0.0, people.described[speaker])
                continue
            ordered = _latter_or_former(who.lower(), before, talk)
            if ordered:
                return ordered[0], f"'{who} {verb}': {ordered[1]}", _LINKED, None
            if speaker in people.described or who.lower() in ("the other", "the latter"):
                described = speaker or who.lower()
                speaker, reason, confidence = talk.describe(described)
                gender = people.described.get(described)
                if speaker == described and gender and _generic(described):
                    # "the girl said" that names no one in sight: a tag of that gender that
                    # the turns settle, as "she said" is, not a stranger of the book's
                    unresolved = unresolved or (None, f"'{who} {verb}': not named", 0.0, gender)
                    continue
                if speaker:
                    return speaker, f"'{who} {verb}' tags the quote: {reason}", confidence, None
                continue
            if speaker:
                reason = (
                    f"'{who} {verb}' tags the quote"
                    if speaker != NARRATOR
                    else (f"'{verb} I' / 'I {verb}': the narrator speaks")
                )
                return speaker, reason, 0.95, None
    return unresolved


def _generic(description: str) -> bool:
    """A description by sex, age or family alone ("the girl", "the young man", "the mother"),
    which a novel uses for the people it names, unlike a calling ("the cabman", "the maid")."""
    return description.split()[-1] in _GENERIC_NOUNS


def _latter_or_former(words: str, before: str, talk: _Conversation) -> tuple[str, str] | None:
    """(speaker, why) for "said the latter" or "the former replied" where the narration just
    before names two or more people ("Mrs. Weston and Miss Bates met them at the door."): the
    last of them or the first; else None, and "the latter" is the other one talking."""
    if words not in ("the latter", "the former"):
        return None
    named = list(dict.fromkeys(_named(before, talk.people)))
    if len(named) < 2:
        named = list(dict.fromkeys(talk.narration_before or []))
    if len(named) < 2:
        return None
    speaker = named[-1] if words == "the latter" else named[0]
    return speaker, f"{speaker}, {words[4:]} of {named[0]} and {named[-1]}"


def _subject(text: str, quotes: ParagraphQuotes, people: Characters) -> str | None:
    """The character who opens the paragraph's narration or a sentence of it, if one does."""
    for span in quotes.spans:
        if span.dialogue:
            continue
        narration = text[span.start : span.end]
        match = re.match(
            rf"^\W*(?:(?:And|But|Then|Now|Here|At last)\s+)?(?P<who>{NAME})\b", narration
        )
        if match:
            who = match.group("who")
            if not names_no_one(who) and who in people.canonical:
                return people.canonical[who]
        break
    return None


def _last_subject(narration: str, people: Characters) -> str | None:
    """The character who opens the last sentence of a paragraph of narration ("Anne ran
    downstairs singing."), if one does: the one a quote straight after it is likeliest from."""
    sentence = SENTENCE_END.split(narration.strip())[-1]
    match = re.match(rf"^\W*(?:(?:And|But|Then|Now|Here|At last)\s+)?(?P<who>{NAME})\b", sentence)
    if match is None:
        return None
    who = match.group("who")
    if names_no_one(who) or who not in people.canonical:
        return None
    return people.canonical[who]


def _title_case(text: str) -> bool:
    """A heading set in title case ("Lucy Honeychurch Drives Out"), not narration."""
    words = re.findall(r"[A-Za-z]+", text)
    return len(words) < 12 and all(w[0].isupper() or len(w) < 4 for w in words)


def attribute(
    chapters: Sequence[Sequence[tuple[str, ParagraphQuotes]]], headings: Sequence[str] = ()
) -> tuple[list[list[Guess | None]], Characters]:
    """A :class:`Guess` for each paragraph with dialogue (None for the others), per chapter, and
    the book's characters; the chapter ``headings`` may write a full name that joins two short
    ones ("Miss Clara Pryor": "Clara" and "Miss Pryor")."""
    texts = [text for chapter in chapters for text, _ in chapter]
    names = proper_names(texts)
    names -= place_names(texts, names)
    genders = character_genders(chapters, names)
    narrations = [
        " ".join(text[s.start : s.end] for s in q.spans if not s.dialogue)
        for chapter in chapters
        for text, q in chapter
    ]
    every = [m for n in narrations if not _title_case(n) for m in mentions(n, names)]
    every.extend(written_full_names([*texts, *headings], Counter(every)))
    people = Characters.from_mentions(every, names, genders)
    heard: dict[str, list[set[str]]] = {}
    result = [_chapter(chapter, people, heard) for chapter in chapters]
    if _link_descriptions(people, heard, narrations):
        people.uses.clear()
        result = [_chapter(chapter, people) for chapter in chapters]
    return result, people


def _link_descriptions(
    people: Characters, heard: dict[str, list[set[str]]], narrations: Sequence[str]
) -> bool:
    """Link descriptions used in tags to the named character they are, where the text says so:
    the narration calls a character by the description's adjective ("old Mr. Emerson" is "the
    old man"), or the one named character of the description's gender was in the scene at
    nearly every tag that uses it ("the young girl" beside Winterbourne is Daisy Miller)."""
    found = False
    for description, gender in list(people.described.items()):
        if not gender or description in people.linked:
            continue
        words = description.split()
        if len(words) == 3 and words[1] in _AGE_WORDS:
            called: Counter[str] = Counter()
            adjective = f"[{words[1][0].upper()}{words[1][0]}]{words[1][1:]}"  # old, Old
            pattern = re.compile(rf"\b{adjective}\s+({TITLE}\s+{NAME})")
            for narration in narrations:
                for match in pattern.finditer(narration):
                    who = people.canonical.get(clean_name(match.group(1)))
                    if who and people.gender(who) == gender:
                        called[who] += 1
            ranked = called.most_common(2) + [("", 0)]
            if ranked[0][1] >= 2 and ranked[0][1] > 2 * ranked[1][1]:
                who = ranked[0][0]
                people.link(description, who, f"{description} is {who}, called '{words[1]} {who}'")
                found = True
                continue
        if words[0] in ("his", "her", "their"):  # whose mother? the scene does not say
            continue
        uses = heard.get(description, [])
        votes = Counter(who for scene in uses for who in scene).most_common(2)
        if len(uses) < _LINK_USES or not votes:
            continue
        (who, count), runner_up = votes[0], (votes[1][1] if len(votes) > 1 else 0)
        if count >= _LINK_SHARE * len(uses) and count >= 2 * runner_up:
            why = f"{description} is {who}, in the scene at {count} of its {len(uses)} tags"
            people.link(description, who, why)
            found = True
    return found


def _chapter(
    chapter: Sequence[tuple[str, ParagraphQuotes]],
    people: Characters,
    heard: dict[str, list[set[str]]] | None = None,
) -> list[Guess | None]:
    talk = _Conversation(people, heard)
    lines: list[Line] = []
    fallback: dict[int, str] = {}  # line -> the subject of the narration just before it
    extras: set[int] = set()  # lines that are no paragraph: the last quote of one, another's
    # "... he could not help saying:" before a quote: (speaker, reason, a pronoun's gender)
    introduced: tuple[str, str, str | None] | None = None
    for text, quotes in chapter:
        narration = " ".join(text[s.start : s.end] for s in quotes.spans if not s.dialogue)
        named = _named(narration, people, keep=True)
        if not quotes.has_dialogue:
            talking = talk.speakers[-1:] not in ([], [None])
            reported = _reported(narration, talk) if talking else None
            # "Emma was obliged to ask what they had told her.": a turn of Emma's, no quote
            why = f"{reported} speaks in the narration"
            turn = Guess(reported, why, _REPORTED) if reported else None
            lines.append(Line(turn, len(narration), tuple(named), reported=turn is not None))
            talk.mentioned.extend(named)
            introduced = _introduction(narration, talk) if _opens_speech(narration) else None
            talk.narration_before = named
            talk.subject_before = _last_subject(narration, people)
            if len(narration) > 400 or len(set(named)) != 1:  # the scene moves on
                talk.speakers.append(None)
                talk.speakers.append(None)
            continue
        said = [text[s.start : s.end] for s in quotes.spans if s.dialogue]
        addressees = _addressees(said, people, talk.last_said)
        guess = _guess(text, quotes, talk, addressees)
        if introduced and not guess.tagged and quotes.spans[0].dialogue:
            guess = Guess(introduced[0], introduced[1], 0.75, addressees, True, introduced[2])
        if not guess.speaker and talk.subject_before not in (None, *addressees):
            fallback[len(lines)] = talk.subject_before
        introduced = None
        talk.narration_before = None
        talk.subject_before = None
        continues = quotes.spans[0].dialogue and quotes.spans[0].continues
        last = quotes.spans[-1]
        trail = 0 if last.dialogue else last.end - last.start
        line = Line(
            guess, len(narration), tuple(named), continues, _courtesy(said), trail,
            said=tuple(_named(" ".join(said), people)),  # not who says them
        )  # fmt: skip
        lines.append(line)
        talk.mentioned.extend(named)
        talk.speakers.append(guess.speaker)
        own = _own_tags(text, quotes, people, guess.speaker) if guess.speaker else ()
        if own and own[-1][0] == max(i for i, s in enumerate(quotes.spans) if s.dialogue):
            # the paragraph ends with another's quote ('... asked Gilbert. "...," explained
            # Anne'): a turn of theirs, which the next line answers
            lines.append(Line(Guess(own[-1][1], own[-1][2], OWN_TAG), 0, reported=True))
            extras.add(len(lines) - 1)
            talk.speakers.append(own[-1][1])
        talk.last_addressees = guess.addressees
        talk.last_said = " ".join(said)
        if guess.speaker:
            talk.mentioned.append(guess.speaker)
        # '"Ah!" said he ... after a while he began with,' hands the next quote on, as a
        # paragraph of narration that ends so does
        tail = text[quotes.spans[-1].start : quotes.spans[-1].end]
        if not quotes.spans[-1].dialogue and _opens_speech(tail):
            introduced = _introduction(tail, talk)
            if introduced and introduced[0] == guess.speaker:  # he who spoke goes on: no turn
                introduced = (*introduced[:2], None)
    filled = fill_turns(lines, people.gender)
    # a line the turns leave without a speaker (no tag in its scene) is likeliest the one's
    # whom the narration just before is about
    for index, who in fallback.items():
        guess = filled[index]
        if guess is not None and not guess.speaker:
            why = f"{who} is the subject of the narration just before"
            filled[index] = Guess(who, why, _SUBJECT_BEFORE, guess.addressees)
    filled = [
        None if line.reported else guess
        for index, (line, guess) in enumerate(zip(lines, filled, strict=True))
        if index not in extras
    ]
    result = _continued(filled, chapter)
    for index, (guess, (text, quotes)) in enumerate(zip(result, chapter, strict=True)):
        if guess is not None and guess.speaker:
            own = _own_tags(text, quotes, people, guess.speaker)
            if own:
                result[index] = replace(guess, own=own)
    return result


def _own_tags(
    text: str, quotes: ParagraphQuotes, people: Characters, speaker: str
) -> tuple[tuple[int, str, str], ...]:
    """The quotes after the first of a paragraph that a name tagging them gives to someone other
    than the paragraph's speaker ('"What has happened?" asked Gilbert. "We were playing,"
    explained Anne'): (span, speaker, why) for each."""
    spans = quotes.spans
    dialogue = [i for i, span in enumerate(spans) if span.dialogue]
    found = []
    for index in dialogue[1:]:
        tag = None
        if index + 1 < len(spans) and not spans[index + 1].dialogue:
            tag = speech_tag(text[spans[index + 1].start : spans[index + 1].end], True)
        between = text[spans[index - 1].start : spans[index - 1].end]
        if tag is None and not spans[index - 1].dialogue and not speech_tag(between, True):
            tag = speech_tag(between, False)  # '... to hear it say, as it turned, "..."'
        if tag is None or tag[0] in PRONOUNS or tag[0] == "I":
            continue
        who = people.canonical.get(clean_name(tag[0]))
        if who and who != speaker:
            found.append((index, who, f"'{tag[0]} {tag[1]}' tags this quote"))
    return tuple(found)


def _continued(
    guesses: list[Guess | None], chapter: Sequence[tuple[str, ParagraphQuotes]]
) -> list[Guess | None]:
    """A speech that goes on from the paragraph before keeps that paragraph's speaker, also when
    turn-taking found it."""
    result = list(guesses)
    for index in range(1, len(result)):
        guess, before = result[index], result[index - 1]
        spans = chapter[index][1].spans
        if guess and before and before.speaker and not guess.speaker and spans[0].continues:
            reason = "the speech goes on from the paragraph before"
            result[index] = Guess(before.speaker, reason, before.confidence, guess.addressees)
    return result


_REPORTED_SPEECH = re.compile(
    rf"(?:^|[.;]\s+|\b(?:and|but|then)\s+)(?P<who>{NAME}|he|she|He|She)\s+"
    r"(?:(?:was|were)\s+obliged\s+to\s+|could\s+not\s+help\s+|(?:\w+ly|then|now|at last)\s+)?"
    r"(?P<verb>asked|ask|said|replied|answered|inquired|enquired|assured|declared|protested|"
    r"observed|added|begged|suggested|whispered|explained|owned|confessed|agreed|promised|told|"
    r"warned|reminded|informed)\s+"
    r"(?:(?:him|her|them|me|it)\s+)?(?:that|what|whether|how|if|why|where|who|when)\b"
)


def _reported(narration: str, talk: _Conversation) -> str | None:
    """Who speaks in a short narration between two lines of a conversation, in reported speech
    ("Emma was obliged to ask what they had told her.", "She replied that she had."): their
    turn, which the next line answers."""
    if len(narration) > 400:
        return None
    match = _REPORTED_SPEECH.search(narration.strip())
    if match is None:
        return None
    who = match.group("who")
    if who in PRONOUNS:
        speaker, _, _ = talk.pronoun(
            who, _antecedents(narration[: match.start("who")], talk.people)
        )
        return speaker
    if names_no_one(who):
        return None
    return talk.people.canonical.get(who)


def _opens_speech(narration: str) -> bool:
    return bool(re.search(r"(?:[:,—-]|\bsay|\bsaying)\s*$", narration.rstrip()))


def _introduction(narration: str, talk: _Conversation) -> tuple[str, str, str | None] | None:
    """Who a narration paragraph that ends in a speech verb hands the next quote to."""
    tag = speech_tag(re.sub(r"\s*[-—:,]+\s*$", ":", narration.rstrip()), False)
    if tag is None:
        sentence = re.split(r"(?<=[.!?])\s+", narration.strip())[-1]
        speech = re.search(r"\b(say|said|saying|ask|asked|cry|cried|exclaim|exclaimed|reply)\b",
                           sentence)  # fmt: skip
        if speech is None and re.search(r"(?::|:?-+|\bwith,)\s*$", sentence):
            speech = re.search(r"\b(\w+)[,:;]?\W*$", sentence)  # "thus moralised to herself:--"
        subject = SUBJECT.search(sentence[: speech.start()]) if speech else None
        if subject is None:
            return None
        tag = subject.group("who"), speech.group(1)
    who, verb = tag
    if who in PRONOUNS:
        named = _antecedents(narration, talk.people)
        speaker, reason, _ = talk.pronoun(who, named)
        reason = f"the narration before hands it on: {reason}"
        return (speaker, reason, PRONOUNS[who]) if speaker else None
    speaker = talk.people.resolve(who)
    return (speaker, f"the narration before ends '{who} ... {verb}'", None) if speaker else None


def _guess(
    text: str,
    quotes: ParagraphQuotes,
    talk: _Conversation,
    addressees: tuple[str, ...],
) -> Guess:
    spans = quotes.spans
    last = talk.speakers[-1] if talk.speakers else None
    if spans[0].dialogue and spans[0].continues and last:
        return Guess(last, "the speech goes on from the paragraph before", 0.95, addressees, True)
    explicit = _explicit(text, quotes, talk, addressees)
    if explicit and explicit[0]:
        return Guess(explicit[0], explicit[1], explicit[2], addressees, True, explicit[3])
    subject = _subject(text, quotes, talk.people)
    if subject and subject not in addressees:
        return Guess(subject, f"{subject} is the subject of the narration", 0.75, addressees)
    reason = explicit[1] if explicit else "no tag, name or exchange to tell the speaker by"
    return Guess(None, reason, 0.0, addressees, pronoun=explicit[3] if explicit else None)
