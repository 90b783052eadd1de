"""Where the normaliser has to guess, and the other ways the line could be said.

:func:`~verified_tts.text.normalize.normalize_text` reads "St." before a name as Saint and after
one as Street, a four-digit number from 1100 to 2099 as a year (and one from 1000 to 1099 as a
number), a Roman numeral after a name as a king's ("Charles II" -> "Charles the Second"), and
leaves "I" after a name as the pronoun; each is
a guess the context usually, not always, settles. :func:`guesses` finds those places in a line as
written, each with the readings it could have (the normaliser's own among them), and
:func:`spoken_forms` turns them into the line's spoken forms: the normaliser's own first, then one
form per other reading of one place (the line is normalised again with that place written out as
the reading says it, so the rest of the line reads as before). A line whose spoken text is not the
normaliser's own (a lexicon respelled it, or it was spelled letter by letter) gets no other forms.
The forms become take candidates (:mod:`verified_tts.text.readings`): the verifiers decide, and the
manifest records which reading the winning take said.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from num2words import num2words

from verified_tts.text.normalize import (
    NUMBERED_WORDS,
    normalize_text,
    roman_to_int,
    spell_number,
    spell_year,
)
from verified_tts.text.readings import SpokenForm

__all__ = ["AMBIGUOUS_ABBREVIATIONS", "Guess", "guesses", "spoken_forms"]

# Abbreviations with more than one common expansion; the normaliser's own is among them.
AMBIGUOUS_ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "St.": ("Saint", "Street"),
    "Dr.": ("Doctor", "Drive"),
    "Co.": ("Company", "County"),
    "Ft.": ("Fort", "feet"),
    "Fr.": ("Father", "Friar"),
    "Sr.": ("Senior", "Sister"),
}
_CLOSERS = "\"'”’»)]"


@dataclass(frozen=True)
class Guess:
    """One place of a line as written where the normaliser guessed: the span and its readings
    (what could be written there instead, spelled out)."""

    kind: str  # "abbreviation", "year or number", "regnal numeral", "pronoun or numeral"
    start: int
    end: int
    readings: tuple[str, ...]

    def written(self, text: str) -> str:
        return text[self.start : self.end]


def _ends_sentence(text: str, end: int) -> bool:
    return not text[end:].strip().strip(_CLOSERS)


def _abbreviations(text: str) -> list[Guess]:
    out = []
    for written, readings in AMBIGUOUS_ABBREVIATIONS.items():
        stem = re.escape(written.rstrip("."))
        for match in re.finditer(rf"(?<![\w.]){stem}\b\.?", text):
            stop = "." if match.group(0).endswith(".") and _ends_sentence(text, match.end()) else ""
            out.append(Guess("abbreviation", match.start(), match.end(),
                             tuple(r + stop for r in readings)))  # fmt: skip
    return out


def _years(text: str) -> list[Guess]:
    out = []
    for match in re.finditer(r"(?<![\w.,/$£€¥₹#:-])(\d{4})(?![\w/%°:]|[.,]\d|\s?[–—-]\s?\d)", text):
        value = int(match.group(1))
        if 1000 <= value <= 2099:
            readings = (spell_year(value), spell_number(match.group(1)))
            out.append(Guess("year or number", match.start(1), match.end(1), readings))
    return out


def _ordinal(value: int) -> str:
    words = num2words(value, to="ordinal")
    return f"the {words[0].upper()}{words[1:]}"


def _regnal(text: str) -> list[Guess]:
    out = []
    for match in re.finditer(r"\b([A-Z][a-z]+)\s+([IVX]{2,}|V)\b", text):
        value = roman_to_int(match.group(2))
        if value is None or match.group(1).lower() in NUMBERED_WORDS:
            continue
        readings = (_ordinal(value), num2words(value))
        out.append(Guess("regnal numeral", match.start(2), match.end(2), readings))
    return out


def _numeral_i(text: str) -> list[Guess]:
    """ "I" right after a name inside a sentence: the pronoun ("then Tom I saw") or a king's
    numeral ("Charles I was beheaded")."""
    out = []
    for match in re.finditer(r"(?<=[a-z,;] )[A-Z][a-z]+ (I)\b(?!['’])", text):
        out.append(Guess("pronoun or numeral", match.start(1), match.end(1), ("I", "the First")))
    return out


FINDERS: tuple[Callable[[str], list[Guess]], ...] = (_abbreviations, _years, _regnal, _numeral_i)


def guesses(text: str) -> list[Guess]:
    """Every place of ``text`` (a line as written) where the normaliser guessed, in order."""
    found = [guess for finder in FINDERS for guess in finder(text)]
    found.sort(key=lambda g: g.start)
    kept: list[Guess] = []
    for guess in found:  # one reading per place: overlapping finds keep the first
        if not kept or guess.start >= kept[-1].end:
            kept.append(guess)
    return kept


def spoken_forms(text: str, spoken: str, limit: int = 3) -> tuple[SpokenForm, ...]:
    """The normaliser's own form of ``text`` (``spoken``) first, then the forms that read one
    guessed place another way, at most ``limit`` in all; () where there is no other form or
    ``spoken`` is not the normaliser's own."""
    if limit < 2 or normalize_text(text) != spoken:
        return ()
    places = []  # (written, the normaliser's own reading, [(other reading, its form)])
    seen = {spoken}
    for guess in guesses(text):
        own, others = "", []
        for reading in guess.readings:
            said = normalize_text(text[: guess.start] + reading + text[guess.end :])
            if said == spoken:
                own = reading.rstrip(".")
            elif said not in seen:
                seen.add(said)
                others.append((reading.rstrip("."), said))
        places.append((guess.written(text), own, others))
    own_choices = tuple((written, own) for written, own, _ in places if own)
    forms = [SpokenForm(spoken, own_choices)]
    for number, (_, _, others) in enumerate(places):
        for reading, said in others:
            choices = tuple(
                (w, reading if k == number else o)
                for k, (w, o, _) in enumerate(places)
                if o or k == number
            )
            forms.append(SpokenForm(said, choices))
    return tuple(forms[:limit]) if len(forms) > 1 else ()
