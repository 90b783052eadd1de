"""The reference the WER verifier scores: the words a listener hears, written as Whisper writes.

A book's text carries marks nobody hears: quotation marks, parentheses, the typewriter dash
("--"), a colon that introduces speech, underscores and brackets. Forced decoding scores every
token of the reference, and Whisper almost never writes those marks in a transcript, so a take
read word for word right lost its worst-token score on a colon or an opening parenthesis
(DESIGN.md, "Facts for this round"). :func:`heard_text` rewrites the text as written into what a
transcript of a good reading would hold: quotes, brackets and markup dropped, dashes, colons and
semicolons as the comma (or, at the end, the full stop) a transcript puts there, and numerals that
the front-end reads as numbers in headings ("Chapter IV", "II. The Fox") as the digits Whisper
writes. Everything else stays as written, because that is what Whisper expects: "Mr.", digits,
"good-tempered". The same text is the reference of the transcript's word error rate.
"""

from __future__ import annotations

import re

from verified_tts.text.normalize import NUMBERED_WORDS, roman_to_int

__all__ = ["heard_text"]

_DOUBLE_QUOTES = re.compile(r"[\"“”„«»‟]")
# A single quote that opens or closes a quotation, not an apostrophe ("don't", "boys'", "'em").
_SINGLE_QUOTES = re.compile(r"(?:(?<![\w])[‘'](?=[A-Z])|(?<=[,.;:!?])[’'](?!\w)|‘)")
_BRACKETS = re.compile(r"[()\[\]{}]")
_MARKUP = re.compile(r"[_*=|~#<>^]")
_DASH = re.compile(r"\s*(?:-{2,}|[—―]|\s–\s|\s-\s)\s*")
_CLAUSE = re.compile(r"\s*[:;]\s*")
_NUMBERED = re.compile(
    r"\b(" + "|".join(w.capitalize() for w in sorted(NUMBERED_WORDS)) + r")\s+([IVXLCDM]+)\b"
)
_OPENING_NUMERAL = re.compile(r"^([IVXLCDM]+)\.(?=\s|$)")


def _digits(match: re.Match[str]) -> str:
    value = roman_to_int(match.group(2))
    return match.group(0) if value is None else f"{match.group(1)} {value}"


def _opening(match: re.Match[str]) -> str:
    value = roman_to_int(match.group(1))
    return match.group(0) if value is None else f"{value}."


def heard_text(text: str) -> str:
    """``text`` as a transcript of a good reading of it would be written (module docstring)."""
    heard = _DOUBLE_QUOTES.sub(" ", text)
    heard = _SINGLE_QUOTES.sub(" ", heard)
    heard = _BRACKETS.sub(" ", heard)
    heard = _MARKUP.sub(" ", heard)
    heard = _DASH.sub(", ", heard)
    heard = _CLAUSE.sub(", ", heard)
    heard = _NUMBERED.sub(_digits, heard)
    heard = _OPENING_NUMERAL.sub(_opening, heard.strip())
    # the comma a dash or colon left before other punctuation, or at either end, is not heard
    heard = re.sub(r",(\s*[,.!?…])", r"\1", heard)
    heard = re.sub(r"\s+([,.!?…])", r"\1", " ".join(heard.split()))
    heard = heard.strip(" ,")
    if heard and text.rstrip().rstrip("\"'”’)]").endswith((":", ";", "--", "—")):
        heard += "."
    return heard
