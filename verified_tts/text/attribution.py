"""Who speaks each quote: rule-based attribution, every guess with its reason in words.

:func:`attribute_book` takes a book's chapters as paragraphs already scanned for quotes
(:func:`verified_tts.text.dialogue.scan_paragraph`) and gives each paragraph with dialogue an
:class:`Attribution`: the character who speaks it, or None, and why. The rules, in the order they
are tried: a speech that goes on from the previous paragraph's open quote keeps its speaker; a
name with a speech verb next to a quote ("said Anne", "Anne replied", "the captain asked"); a
pronoun with a speech verb ("she said"), resolved to the one person of that gender in the
exchange, else the last one named; a name that starts the paragraph's narration ("Anne looked
up. "Yes.""); and alternation, a line with no tag in a two-person exchange going to whoever
spoke the line before last. A quote none of them explains has no speaker, and a render gives it
the book's default dialogue voice. A paragraph is one speaker's, as printers set dialogue. Names
must look like names in this book (capitalised in the middle of a sentence somewhere), so
"Then," said nobody. :func:`character_genders` reads each character's gender where the text
says it (a title such as Mrs. or Sir, or the pronouns that follow the character's own tags).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from verified_tts.text.dialogue import SPEECH_VERBS, ParagraphQuotes

__all__ = ["Attribution", "attribute_book", "character_genders", "proper_names", "title_gender"]

_FEMALE = (
    "mrs mrs. miss madame mademoiselle lady countess duchess queen princess aunt mother "
    "grandmother sister mistress ma'am madam dame"
)
_FEMALE_TITLES = frozenset(_FEMALE.split())
_MALE = (
    "mr mr. monsieur sir lord count duke king prince uncle father grandfather brother "
    "captain colonel major general parson rev. dr. doctor judge squire master"
)
_MALE_TITLES = frozenset(_MALE.split())
_TITLE = (
    r"(?:Mr\.|Mrs\.|Miss|Dr\.|Rev\.|Madame|Mademoiselle|Monsieur|Lady|Lord|Sir|Countess|Count|"
    r"Uncle|Aunt|Father|Mother|Parson|Captain|Colonel|Major|General|Judge|Squire|Cousin|"
    r"Grandfather|Grandmother|Grandma|Grandpa|Brother|Sister)"
)
_CAPITAL = r"(?:Mc|Mac|O')?[A-Z][a-z'A-Z]+"
_NAME = rf"(?:{_TITLE}\s+)?{_CAPITAL}(?:\s+(?:de|De|von|van|la|du)?\s*{_CAPITAL})*"
# the captain, the old chief, the Countess, the Little Colonel
_DESCRIPTOR = r"the\s+(?:[A-Z][a-z]+\s+[A-Z][a-z]+|(?:[a-z]+\s+)?[A-Za-z][a-z]+)"
_SPEAKER = rf"(?P<who>{_NAME}|{_DESCRIPTOR}|he|she|He|She)"
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
)
_START = re.compile(rf"^{_NAME}\b")
_PRONOUNS = {"he": "male", "she": "female"}
_CAPITALISED_WORDS = """
    The Then But And It He She They I We You This That There When As Yes No Oh Ah Well So If
    Why What Who How Now Here Her His Its Our Their Not Nor Or At In On Of To By For With Still
    After Before Afterward All Some One Once Perhaps Presently Suddenly Again Even Only Just Let
    Do Don't Good God Heaven Lord Sir Madam Mother Father Dear My Your Mine O A An Is Are Was
    Come Go See Look Never Ever Every Each Both Yet Though Although While Till Until Because
"""
_CALENDAR = """
    January February March April May June July August September October November December
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday North South East West Christmas
"""
# capitalised at a sentence's start or in a date, no names
_NOT_NAMES = frozenset(_CAPITALISED_WORDS.split() + _CALENDAR.split())


@dataclass(frozen=True)
class Attribution:
    """Who speaks a paragraph's quotes (None: nobody the rules can tell), and why."""

    speaker: str | None
    reason: str
    gender: str | None = None  # the speaker's, where the book says it (a title, pronouns)


def _sentences_words(text: str) -> Iterable[tuple[bool, str]]:
    """(starts a sentence, word) for each word of ``text``."""
    start = True
    for word in re.findall(r"[\w'’.-]+|[.!?\"“”]", text):
        if word in ".!?":
            start = True
            continue
        if word in '"“”':
            continue
        yield start, word
        start = word.endswith((".", "!", "?")) and not re.fullmatch(rf"{_TITLE}", word)


def proper_names(texts: Iterable[str]) -> frozenset[str]:
    """Words capitalised in the middle of a sentence at least twice: this book's names."""
    counts: Counter[str] = Counter()
    for text in texts:
        for starts, word in _sentences_words(text):
            word = word.strip(".'’")
            if not starts and word[:1].isupper() and word not in _NOT_NAMES:
                counts[word] += 1
    return frozenset(word for word, count in counts.items() if count >= 2)


def _clean(who: str) -> str:
    return re.sub(r"['’]s$", "", re.sub(r"\s+", " ", who).strip())


def _is_name(who: str, names: frozenset[str]) -> bool:
    if who.lower() in _PRONOUNS:
        return True
    if who.startswith("the "):  # the captain, the old chief; not "the boy on", "the courtly"
        last = who.split()[-1]
        return last.lower() not in _FUNCTION_WORDS and not last.endswith("ly")
    if who.split()[-1] in _PLACE_WORDS:
        return False
    words = [w for w in who.split() if not re.fullmatch(_TITLE, w) and w[0].isupper()]
    titled = who.split()[0] != (words[0] if words else "")
    return bool(words) and all(w in names or titled for w in words) and words[0] not in _NOT_NAMES


def _tag(narration: str, after: bool, names: frozenset[str]) -> str | None:
    """The speaker named or pronoun in a speech tag at the start (``after``) or end of narration."""
    text = narration if after else narration[-160:]
    for pattern in _AFTER if after else _BEFORE:
        for match in pattern.finditer(text):
            who, verb = _clean(match.group("who")), match.group("verb").lower()
            if verb in SPEECH_VERBS and _is_name(who, names):
                return who
    return None


def title_gender(name: str) -> str | None:
    """The gender a name's title says ("Mrs. Woods", "the Countess", "Uncle Tom"), or None."""
    words = name.lower().split()
    word = words[-1] if words[0] == "the" else words[0]
    if word in _FEMALE_TITLES:
        return "female"
    if word in _MALE_TITLES:
        return "male"
    return None


def _gender_of_name(name: str, genders: dict[str, str]) -> str | None:
    return title_gender(name) or genders.get(name)


class _Exchange:
    """Who has spoken lately in a chapter, and who was named, to resolve pronouns and turns."""

    def __init__(self, genders: dict[str, str]) -> None:
        self.genders = genders
        self.speakers: list[str] = []  # speakers of recent dialogue paragraphs, last last
        self.mentioned: list[str] = []  # names in recent narration, last last
        self.previous_dialogue = False  # was the paragraph before this one dialogue
        self.before_previous_dialogue = False

    def resolve(self, pronoun: str) -> tuple[str | None, str]:
        gender = _PRONOUNS[pronoun.lower()]
        pair = list(dict.fromkeys(reversed(self.speakers[-4:])))[:2]
        genders = [_gender_of_name(s, self.genders) for s in pair]
        matching = [s for s, g in zip(pair, genders, strict=True) if g == gender]
        if len(pair) == 2 and len(matching) == 1:
            return matching[0], f"'{pronoun}' with a speech verb: the one {gender} in the exchange"
        other = [s for s, g in zip(pair, genders, strict=True) if g is None]
        if len(pair) == 2 and not matching and len(other) == 1:
            return other[0], f"'{pronoun}' with a speech verb: the other one in the exchange"
        for name in reversed(self.mentioned[-12:]):
            if _gender_of_name(name, self.genders) == gender:
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
_PLACE_BEFORE = re.compile(r"\b(?:in|into|near|across|through|the|a|an)\s+$", re.IGNORECASE)
_PLACES = (
    "Harbor Harbour River Street Hill Mountain Mountains Island Park Lake City Bay Cove Valley"
)
_PLACE_WORDS = frozenset(_PLACES.split())
_FUNCTION = "on of to in at by for with from into upon as and or but that who which than latter"
_FUNCTION_WORDS = frozenset(_FUNCTION.split())


def _mentions(text: str, names: frozenset[str]) -> list[str]:
    """Names in ``text`` in the order they come; one after "in", "near", "the" is a place."""
    found = []
    for match in re.finditer(_NAME, text):
        before = text[max(0, match.start() - 12) : match.start()]
        titled = re.match(_TITLE, match.group(0))  # the Countess is a person
        if _PLACE_BEFORE.search(before) and not titled:
            continue
        who = _clean(match.group(0))
        if _is_name(who, names) and who.split()[0] not in _NOT_NAMES:
            found.append(who)
    return found


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
            if who.lower() in _PRONOUNS:
                speaker, reason = exchange.resolve(who)
                if speaker:
                    return Attribution(speaker, reason)
                unresolved = unresolved or reason
            else:
                return Attribution(who, f"'{who}' with a speech verb next to the quote")
    if not spans[0].dialogue:
        start = _START.match(text[spans[0].start : spans[0].end])
        if start and _is_name(_clean(start.group(0)), names):
            who = _clean(start.group(0))
            if who.split()[0] not in _NOT_NAMES:
                return Attribution(who, f"'{who}' starts the paragraph")
    speaker, reason = exchange.turn()
    return Attribution(speaker, reason if speaker or not unresolved else unresolved)


def character_genders(
    chapters: Sequence[Sequence[tuple[str, ParagraphQuotes]]], names: frozenset[str]
) -> dict[str, str]:
    """Each character's gender where the text says: the first subject pronoun after the name in
    narration sentences that name that character alone ("Anne turned; she smiled"), kept where one
    gender outvotes the other two to one."""
    votes: dict[str, Counter[str]] = {}
    for chapter in chapters:
        for text, quotes in chapter:
            narration = " ".join(text[s.start : s.end] for s in quotes.spans if not s.dialogue)
            for sentence in re.split(r"(?<=[.!?])\s+", narration):
                named = set(_mentions(sentence, names))
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
        if tally:
            gender, count = tally.most_common(1)[0]
            if count >= 2 * (sum(tally.values()) - count):
                genders[name] = gender
    return genders


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
                exchange.mentioned.extend(_mentions(narration, names))
                exchange.before_previous_dialogue = exchange.previous_dialogue
                exchange.previous_dialogue = False
                continue
            attribution = _attribute(text, quotes, exchange, names)
            if attribution.speaker:
                gender = _gender_of_name(attribution.speaker, genders)
                attribution = Attribution(attribution.speaker, attribution.reason, gender)
            found.append(attribution)
            exchange.mentioned.extend(_mentions(narration, names))
            if attribution.speaker:
                exchange.speakers.append(attribution.speaker)
                exchange.mentioned.append(attribution.speaker)
            exchange.before_previous_dialogue = exchange.previous_dialogue
            exchange.previous_dialogue = attribution.speaker is not None
        result.append(_fill_exchanges(chapter, found, genders))
        named.update(exchange.mentioned)
    return _one_name_each(result, genders, named)


def _core(name: str) -> tuple[str | None, frozenset[str]]:
    """A name's title (if any) and its other words: ("Mr.", {"McDermott"})."""
    words = name.split()
    title = words[0] if re.fullmatch(_TITLE, words[0]) and len(words) > 1 else None
    return title, frozenset(words[1:] if title else words)


def _owners(name: str, candidates: list[str], genders: dict[str, str]) -> list[str]:
    """The fuller names ``name`` could be short for."""
    title, words = _core(name)
    owners = []
    for other in candidates:
        other_title, other_words = _core(other)
        if other == name or not words <= other_words:
            continue
        if words == other_words and title is not None:  # Mr. Jewett is not short for Jewett
            continue
        if title and other_title and title != other_title:
            continue
        if title and not other_title and title_gender(name) != _gender_of_name(other, genders):
            continue
        owners.append(other)
    return owners


def _full_names(speakers: set[str], named: set[str], genders: dict[str, str]) -> dict[str, str]:
    """Each short name of a character -> the one fuller name it belongs to, where there is just
    one: Dermott and Mr. McDermott -> Dermott McDermott, Jewett -> Mr. Jewett. A title must agree
    (Mrs. Ravenel is not Mr. Ravenel, nor a man named Frank Ravenel); descriptions stay as they
    are; a name two people could own (Ravenel: Mrs. Ravenel or Frank Ravenel) stays as it is."""
    people = sorted(s for s in speakers if not s.startswith("the "))
    candidates = people + sorted(n for n in named if len(n.split()) > 1 and n not in speakers)
    full: dict[str, str] = {}
    for titled in (True, False):  # titled names first, so McDermott sees Mr. McDermott's owner
        for name in people:
            if (_core(name)[0] is not None) != titled:
                continue
            owners = {full.get(o, o) for o in _owners(name, candidates, genders)}
            owners.discard(name)
            if len(owners) == 1:  # one person it can be short for
                full[name] = owners.pop()
    for name in list(full):  # follow chains: Dermott -> McDermott -> Dermott McDermott
        seen = {name}
        while full[name] in full and full[name] not in seen:
            seen.add(full[name])
            full[name] = full[full[name]]
    return full


def _one_name_each(
    chapters: list[list[Attribution | None]], genders: dict[str, str], named: set[str]
) -> list[list[Attribution | None]]:
    """The attributions with each character under one name, so they keep one voice."""
    speakers = {a.speaker for chapter in chapters for a in chapter if a and a.speaker}
    full = _full_names(speakers, named, genders)
    renamed = []
    for chapter in chapters:
        found: list[Attribution | None] = []
        for a in chapter:
            if a and a.speaker in full:
                name = full[a.speaker]
                reason = f"{a.reason} ({a.speaker} is {name})"
                a = Attribution(name, reason, a.gender or _gender_of_name(name, genders))
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
                found[index] = Attribution(speaker, reason, _gender_of_name(speaker, genders))
    return found
