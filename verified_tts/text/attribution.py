"""Who speaks each quote: rule-based attribution, every guess with its reason in words.

:func:`attribute_book` takes a book's chapters as paragraphs already scanned for quotes
(:func:`verified_tts.text.dialogue.scan_paragraph`) and gives each paragraph with dialogue an
:class:`Attribution`: the character who speaks it, or None, and why. The rules, in the order they
are tried: a speech that goes on from the previous paragraph's open quote keeps its speaker; a
name with a speech verb next to a quote ("said Anne", "Anne replied", "the captain asked"); a
pronoun with a speech verb ("she said"), resolved to the one person of that gender in the
exchange, else the one of unknown gender there when the other is of the other gender, else the
last one of that gender named; a name that starts the paragraph's narration ("Anne looked up.
"Yes.""); and alternation: a line with no tag after two people's turns goes to whoever spoke the
line before last, and in a run of dialogue whose tagged lines are two people taking turns, each
untagged line goes to whoever's turn it is. A quote none of them explains has no speaker, and a
render gives it the book's default dialogue voice. A paragraph is one speaker's, as printers set
dialogue. What counts as a name, a gender and a character's one full name is
:mod:`verified_tts.text.names`' business."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from verified_tts.text.dialogue import SPEECH_VERBS, ParagraphQuotes
from verified_tts.text.names import (
    NAME,
    NOT_NAMES,
    PRONOUNS,
    character_genders,
    clean_name,
    full_names,
    gender_of,
    is_name,
    mentions,
    proper_names,
)

__all__ = ["Attribution", "attribute_book"]

# the captain, the old chief, the Countess, the Little Colonel
_DESCRIPTOR = r"the\s+(?:[A-Z][a-z]+\s+[A-Z][a-z]+|(?:[a-z]+\s+)?[A-Za-z][a-z]+)"
_SPEAKER = rf"(?P<who>{NAME}|{_DESCRIPTOR}|he|she|He|She)"
_VERB = r"(?P<verb>[a-z]+)"
# After a quote: ", said Anne", ", Anne said", ", was the answer"; before one: "Anne said:".
_GLOSS = r"^\W*(?:\([^)]*\)\W*)?"  # a gloss in brackets after a quote: "Kamooks" (dog), said
_AFTER = (
    re.compile(rf"{_GLOSS}{_VERB}\s+{_SPEAKER}\b"),
    re.compile(rf"{_GLOSS}{_SPEAKER}\s+(?:\w+ly\s+)?{_VERB}\b"),
)
_BEFORE = (
    re.compile(rf"{_SPEAKER}\s+(?:\w+ly\s+)?{_VERB}\b[^.!?]*[:,]?\s*$"),
    re.compile(rf"{_VERB}\s+{_SPEAKER}\b[^.!?]*[:,]?\s*$"),
    # the subject opens the sentence, the speech verb ends it: "Anne looked at Tom and said,"
    re.compile(rf"(?:^|[.!?]\s+){_SPEAKER}\s[^.!?\"“”]*?\b{_VERB}(?:\s+to\s+\w+)?[,:]\s*$"),
)
_START = re.compile(rf"^{NAME}\b")


@dataclass(frozen=True)
class Attribution:
    """Who speaks a paragraph's quotes (None: nobody the rules can tell), and why."""

    speaker: str | None
    reason: str
    gender: str | None = None  # the speaker's, where the book says it (a title, pronouns)
    confidence: float | None = None  # how sure the guess is, where the rules that made it say
    guess: str | None = None  # whom a guess too unsure to keep named (``speaker`` is then None)


def _tag(narration: str, after: bool, names: frozenset[str]) -> str | None:
    """The speaker named or pronoun in a speech tag at the start (``after``) or end of narration."""
    text = narration if after else narration[-160:]
    for pattern in _AFTER if after else _BEFORE:
        for match in pattern.finditer(text):
            who, verb = clean_name(match.group("who")), match.group("verb").lower()
            if verb in SPEECH_VERBS and is_name(who, names):
                return who
    return None


class _Exchange:
    """Who has spoken lately in a chapter, and who was named, to resolve pronouns and turns."""

    def __init__(self, genders: dict[str, str]) -> None:
        self.genders = genders
        self.speakers: list[str] = []  # speakers of recent dialogue paragraphs, last last
        self.mentioned: list[str] = []  # names in recent narration, last last
        self.previous_dialogue = False  # was the paragraph before this one dialogue
        self.before_previous_dialogue = False

    def resolve(self, pronoun: str) -> tuple[str | None, str]:
        gender = PRONOUNS[pronoun.lower()]
        pair = list(dict.fromkeys(reversed(self.speakers[-4:])))[:2]
        genders = [gender_of(s, self.genders) for s in pair]
        matching = [s for s, g in zip(pair, genders, strict=True) if g == gender]
        if len(pair) == 2 and len(matching) == 1:
            return matching[0], f"'{pronoun}' with a speech verb: the one {gender} in the exchange"
        other = [s for s, g in zip(pair, genders, strict=True) if g is None]
        if len(pair) == 2 and not matching and len(other) == 1:
            return other[0], f"'{pronoun}' with a speech verb: the other one in the exchange"
        for name in reversed(self.mentioned[-12:]):
            if gender_of(name, self.genders) == gender:
                return name, f"'{pronoun}' with a speech verb: the last {gender} named, {name}"
        return None, f"'{pronoun}' with a speech verb, but no {gender} character is in sight"

    def turn(self) -> tuple[str | None, str]:
        if not self.previous_dialogue or len(self.speakers) < 2:
            return None, "no name, pronoun or exchange to tell the speaker by"
        last, before = self.speakers[-1], self.speakers[-2]
        if last != before and self.before_previous_dialogue:
            return before, f"alternation: {before} and {last} take turns"
        return None, "no tag, and the lines before are not a two-person exchange"


# a name after these is a place or a thing: in Paris, the Columbia, an Indian
def _attribute(
    text: str, quotes: ParagraphQuotes, exchange: _Exchange, names: frozenset[str]
) -> Attribution:
    spans = quotes.spans
    unresolved = None  # a pronoun tag that named nobody: said instead of a vaguer reason
    if spans[0].dialogue and spans[0].continues and exchange.speakers:
        return Attribution(exchange.speakers[-1], "the speech goes on from the paragraph before")
    for index, span in enumerate(spans):
        if span.dialogue:
            continue
        narration = text[span.start : span.end]
        tags = []
        if index > 0 and spans[index - 1].dialogue:
            tags.append(_tag(narration, True, names))
        if index + 1 < len(spans) and spans[index + 1].dialogue:
            tags.append(_tag(narration, False, names))
        for who in filter(None, tags):
            if who.lower() in PRONOUNS:
                speaker, reason = exchange.resolve(who)
                if speaker:
                    return Attribution(speaker, reason)
                unresolved = unresolved or reason
            else:
                return Attribution(who, f"'{who}' with a speech verb next to the quote")
    if not spans[0].dialogue:
        start = _START.match(text[spans[0].start : spans[0].end])
        if start and is_name(clean_name(start.group(0)), names):
            who = clean_name(start.group(0))
            if who.split()[0] not in NOT_NAMES:
                return Attribution(who, f"'{who}' starts the paragraph")
    speaker, reason = exchange.turn()
    return Attribution(speaker, reason if speaker or not unresolved else unresolved)


def attribute_book(
    chapters: Sequence[Sequence[tuple[str, ParagraphQuotes]]],
) -> list[list[Attribution | None]]:
    """An :class:`Attribution` for each paragraph with dialogue (None for the others), per chapter.

    ``chapters`` holds each chapter's paragraphs as (text, its scanned quotes), in order. The
    exchange starts afresh at each chapter."""
    names = proper_names(text for chapter in chapters for text, _ in chapter)
    genders = character_genders(chapters, names)
    result: list[list[Attribution | None]] = []
    named: set[str] = set()  # every name the narration uses, for the full names of speakers
    for chapter in chapters:
        exchange = _Exchange(genders)
        found: list[Attribution | None] = []
        for text, quotes in chapter:
            narration = " ".join(text[s.start : s.end] for s in quotes.spans if not s.dialogue)
            if not quotes.has_dialogue:
                found.append(None)
                exchange.mentioned.extend(mentions(narration, names))
                exchange.before_previous_dialogue = exchange.previous_dialogue
                exchange.previous_dialogue = False
                continue
            attribution = _attribute(text, quotes, exchange, names)
            if attribution.speaker:
                gender = gender_of(attribution.speaker, genders)
                attribution = Attribution(attribution.speaker, attribution.reason, gender)
            found.append(attribution)
            exchange.mentioned.extend(mentions(narration, names))
            if attribution.speaker:
                exchange.speakers.append(attribution.speaker)
                exchange.mentioned.append(attribution.speaker)
            exchange.before_previous_dialogue = exchange.previous_dialogue
            exchange.previous_dialogue = attribution.speaker is not None
        result.append(_fill_exchanges(chapter, found, genders))
        named.update(exchange.mentioned)
    return _one_name_each(result, genders, named)


def _one_name_each(
    chapters: list[list[Attribution | None]], genders: dict[str, str], named: set[str]
) -> list[list[Attribution | None]]:
    """The attributions with each character under one name, so they keep one voice."""
    speakers = {a.speaker for chapter in chapters for a in chapter if a and a.speaker}
    full = full_names(speakers, named, genders)
    renamed = []
    for chapter in chapters:
        found: list[Attribution | None] = []
        for a in chapter:
            if a and a.speaker in full:
                name = full[a.speaker]
                reason = f"{a.reason} ({a.speaker} is {name})"
                a = Attribution(name, reason, a.gender or gender_of(name, genders))
            found.append(a)
        renamed.append(found)
    return renamed


def _runs(found: list[Attribution | None]) -> list[list[int]]:
    """Runs of consecutive dialogue paragraphs (a paragraph of narration alone ends one)."""
    runs: list[list[int]] = [[]]
    for index, attribution in enumerate(found):
        if attribution is None:
            runs.append([])
        else:
            runs[-1].append(index)
    return [run for run in runs if len(run) > 1]


def _fill_exchanges(
    chapter: Sequence[tuple[str, ParagraphQuotes]],
    found: list[Attribution | None],
    genders: dict[str, str],
) -> list[Attribution | None]:
    """Lines left without a speaker in a run of dialogue whose tagged lines are two people taking
    turns (every tagged line where the alternation puts it) go to whoever's turn it is."""
    found = list(found)
    for run in _runs(found):
        turns, turn = [], -1
        for index in run:
            continues = chapter[index][1].spans[0].continues
            turn += 0 if continues and turn >= 0 else 1
            turns.append(turn)
        by_parity: dict[int, str] = {}
        consistent = True
        for index, turn in zip(run, turns, strict=True):
            attribution = found[index]
            if attribution is None or attribution.speaker is None:
                continue
            if attribution.reason.startswith("alternation"):
                continue
            known = by_parity.setdefault(turn % 2, attribution.speaker)
            consistent = consistent and known == attribution.speaker
        if not consistent or len(by_parity) != 2 or by_parity[0] == by_parity[1]:
            continue
        first, second = by_parity[0], by_parity[1]
        for index, turn in zip(run, turns, strict=True):
            attribution = found[index]
            if attribution is not None and attribution.speaker is None:
                speaker = by_parity[turn % 2]
                reason = f"alternation: {first} and {second} take turns in this exchange"
                found[index] = Attribution(speaker, reason, gender_of(speaker, genders))
    return found
