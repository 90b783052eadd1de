"""Sentence splitting and chunking for the text front-end.

:func:`split_sentences` cuts a block of prose into sentences with a small rule-based scanner
that knows the usual traps of English text: title abbreviations (Dr. Mr. Mrs. St.), Latin
abbreviations (e.g. i.e. etc. vs.), dotted acronyms and initials (U.S., J. R. R.), decimals,
ellipses, closing quotes after the full stop, and runs such as "?!". :func:`split_long` then
cuts any sentence that is too long for the generator at clause boundaries (``; : —``, then
commas, then before conjunctions) and, only as a last resort, at word boundaries, never inside
a word. Every returned piece is a substring of its input, so callers can locate it again.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["split_long", "split_sentences", "split_text"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Abbreviations after which a full stop never ends a sentence: a name or noun always follows.
_TITLES = _words(
    "mr mrs ms mx dr prof rev fr st mt capt col gen lt sgt cpl maj adm gov sen rep hon "
    "messrs mme mlle vs cf viz approx fig figs vol vols ch pp esp dept"
)
# These often end a sentence ("and so on, etc. Then"); they do when the next word is capitalised.
_SOFT_ABBREVIATIONS = frozenset({"etc", "jr", "sr", "inc", "ltd", "co", "corp"})
# Words that almost always open a sentence: used to decide after initials and acronyms
# ("U.S. Army" keeps going, "in the U.S. Then" ends).
_SENTENCE_STARTERS = _words(
    "a an the this that these those i he she it we they you my his her its our their "
    "there then but and so yet or nor if when while after before as at in on by for from "
    "to with however meanwhile now still later soon once what who why how where yes no "
    "oh ah"
)

# A candidate boundary: terminal punctuation, optional closers, then whitespace.
_BOUNDARY = re.compile(r"(?:[.!?]+|…)[\"'”’»)\]]*(?=\s+\S)")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")
_NEXT_WORD = re.compile(r"\s+[\"'“‘«(\[]*([^\s\"'“‘«(\[]*)")


def _is_boundary(text: str, match: re.Match[str]) -> bool:
    """Decide whether the punctuation run in ``match`` really ends a sentence."""
    nxt = _NEXT_WORD.match(text, match.end())
    next_word = nxt.group(1) if nxt else ""
    if not next_word:
        return True
    # A lower-case continuation ('"Why?" he asked', 'wait... and') is never a new sentence.
    if next_word[0].islower():
        return False
    if not match.group(0).startswith(".") or match.group(0).startswith(".."):
        return True
    # A short window keeps this linear on huge paragraphs; abbreviations are short.
    before = _WORD_BEFORE.search(text, max(0, match.start() - 32), match.start())
    if before is None:
        return True
    word = before.group(1)
    bare = word.rstrip(".").lower()
    starts_sentence = next_word.lower().strip(".,;:!?") in _SENTENCE_STARTERS
    if bare in _TITLES and "." not in bare:
        return False
    if bare == "no" and next_word[0].isdigit():
        return False
    if bare in _SOFT_ABBREVIATIONS:
        return True
    if bare in {"e.g", "i.e"}:
        return False
    # Initials ("J.", "F.") and dotted acronyms ("U.S.", "p.m.") end a sentence only before
    # a word that usually starts one.
    if (len(word) == 1 and word.isupper()) or re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word):
        return starts_sentence and not re.fullmatch(r"[A-Z]\.", next_word)
    return True


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences; each is a stripped substring of ``text``."""
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if _is_boundary(text, match):
            piece = text[start : match.end()].strip()
            if piece:
                sentences.append(piece)
            start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


# Cut points, best first. Punctuation tiers cut after the mark (and any closing quote);
# the conjunction tier cuts before the word, so the conjunction opens the next piece.
_CLAUSE_TIERS: tuple[re.Pattern[str], ...] = (
    re.compile(r"[;:][\"'”’)]*(?=\s)|[—―]+[\"'”’)]*|\s[–-]{1,2}\s"),
    re.compile(r",[\"'”’)]*(?=\s)"),
    re.compile(
        r"(?<=\s)(?=(?:and|but|or|nor|so|yet|because|although|though|while|whereas|which|"
        r"who|when|where|until|unless|since|if|then)\s)",
        re.IGNORECASE,
    ),
    re.compile(r"(?<=\S)\s+(?=\S)"),
)


def _cuts(text: str, pattern: re.Pattern[str]) -> list[int]:
    """Positions where ``pattern`` allows a cut, excluding the very ends of ``text``."""
    first = len(text) - len(text.lstrip())
    positions = {m.end() if m.end() > m.start() else m.start() for m in pattern.finditer(text)}
    return sorted(p for p in positions if first < p < len(text))


def split_long(sentence: str, max_chars: int, *, length: Callable[[str], int] = len) -> list[str]:
    """Cut ``sentence`` into pieces whose ``length`` is at most ``max_chars``.

    ``length`` measures a piece (pass the length of its normalised form when the limit is the
    generator's). Each cut is the boundary of the best available tier nearest the middle, and
    both halves are cut again until they fit. A single word longer than the limit is kept whole
    rather than broken.
    """
    sentence = sentence.strip()
    if not sentence or length(sentence) <= max_chars:
        return [sentence] if sentence else []
    for tier in _CLAUSE_TIERS:
        cuts = _cuts(sentence, tier)
        if not cuts:
            continue
        # Balance on raw characters: measuring every cut with ``length`` (a normaliser) would be
        # quadratic on a long unpunctuated run, and the recursion enforces the limit anyway.
        best = min(cuts, key=lambda p: abs(len(sentence) - 2 * p))
        left, right = sentence[:best].strip(), sentence[best:].strip()
        if not left or not right:
            continue
        return split_long(left, max_chars, length=length) + split_long(
            right, max_chars, length=length
        )
    return [sentence]


def split_text(text: str, max_chars: int, *, length: Callable[[str], int] = len) -> list[list[str]]:
    """Sentences of ``text``, each as the list of its chunks no longer than ``max_chars``."""
    return [split_long(s, max_chars, length=length) for s in split_sentences(text)]
