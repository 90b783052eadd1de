"""Which words of a book are worth other readings, and which readings: the candidates' source.

A word is doubtful when the book uses it, English rarely does (Zipf frequency below
``max_zipf``), no producer's lexicon entry covers it, and espeak-ng either guessed it by rule with
no dictionary reading like its guess, or reads it unlike every dictionary that knows it; or when
the ASR model doubted it in every take of a line (``heard``: found after a render; any word but
a common one, :data:`HEARD_MAX_ZIPF`). Readings are compared after
:func:`~verified_tts.pronounce.sources.fold`, so a
dictionary that writes espeak-ng's reading in another notation agrees with it and no take is spent
on a difference no listener hears. A doubtful word's readings are espeak-ng's own first, then the
dictionaries' (most sources first), then the stress moved to another syllable, then espeak-ng's
other English dialects (only those named in ``dialects``: a US voice reading a British vowel is an
accent, not a correction), at most ``max_readings`` in all. Pure data in, pure data out, apart
from espeak-ng's own lookups (:mod:`verified_tts.pronounce.espeak_words`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from verified_tts.pronounce.sources import SOURCES, Variant, available_sources, fold, proposals

__all__ = ["HEARD_MAX_ZIPF", "DoubtOptions", "WordReadings", "doubtful", "word_key", "words_of"]

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*[A-Za-z]|[A-Za-z]")
# A word the ASR model doubted in every take is doubted only when it is this rare at least: a
# common word ("in", doubted in every take of one line of the development render) is one
# espeak-ng reads from its dictionary, and its doubt comes from the line, not its pronunciation.
HEARD_MAX_ZIPF = 4.5  # "salmon" 4.0, "in" 7.3


@dataclass(frozen=True)
class DoubtOptions:
    """What makes a word doubtful and how many readings it gets."""

    max_zipf: float = 3.0  # rarer than about once per million words
    max_readings: int = 3  # espeak-ng's own and at most two others
    sources: tuple[str, ...] | None = None  # dictionaries (those installed); None: every one
    dialects: tuple[str, ...] = ()  # espeak-ng's other English dialects offered as readings
    stresses: int = 1  # stress variants of espeak-ng's reading offered
    top: int = 500  # most doubtful words per book (most frequent first)


@dataclass(frozen=True)
class WordReadings:
    """A doubtful word: how the book spells it, how often, why it is doubted, its readings."""

    word: str
    count: int
    why: str  # "by rule", "dictionaries disagree", "heard otherwise"
    readings: tuple[Variant, ...]  # espeak-ng's own first


def word_key(word: str) -> str:
    """The form two spellings of one word share: lower case, a straight apostrophe."""
    return word.lower().replace("’", "'")


def words_of(text: str) -> list[str]:
    """The words of a spoken text, as :func:`doubtful` counts them."""
    return _WORD.findall(text)


def _rank(readings: Sequence[Variant], sources: Sequence[str], limit: int) -> list[Variant]:
    """espeak-ng's own reading, then the dictionaries' (most dictionaries first), then stress
    variants, then other dialects; readings that fold to one already kept are left out."""
    first, rest = readings[0], list(readings[1:])

    def order(variant: Variant) -> tuple[int, int]:
        dictionaries = sum(s in sources for s in variant.sources)
        kind = 0 if dictionaries else 1 if "stress" in variant.sources else 2
        return kind, -dictionaries

    kept, seen = [first], {fold(first.phonemes)}
    for variant in sorted(rest, key=order):
        folded = fold(variant.phonemes)
        if folded not in seen:
            kept.append(variant)
            seen.add(folded)
    return kept[:limit]


def doubtful(
    texts: Iterable[str],
    covered: Sequence[re.Pattern[str]] = (),
    options: DoubtOptions | None = None,
    heard: Iterable[str] = (),
) -> list[WordReadings]:
    """The doubtful words of the spoken ``texts`` with their readings, most frequent first;
    ``covered``: the producer's lexicon patterns (never doubted); ``heard``: words the ASR model
    doubted in every take of some line (doubted whatever their frequency)."""
    from wordfreq import zipf_frequency

    from verified_tts.pronounce.espeak_words import DIALECTS, by_rule, dialect_readings

    options = options or DoubtOptions()
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    for text in texts:
        for token in words_of(text):
            key = word_key(token)
            counts[key] += 1
            spelling.setdefault(key, token)
    heard_keys = {
        key for key in {word_key(w) for w in heard} & set(counts)
        if zipf_frequency(key, "en") < HEARD_MAX_ZIPF
    }  # fmt: skip
    wanted = [
        key
        for key in counts
        if (key in heard_keys or zipf_frequency(key, "en") < options.max_zipf)
        and len(key.strip("'")) > 1
        and not any(p.fullmatch(spelling[key]) or p.fullmatch(key) for p in covered)
    ]
    wanted.sort(key=lambda k: (k not in heard_keys, -counts[k], k))
    words = [spelling[k] for k in wanted[: options.top * 4]]
    rule = by_rule(words)
    voices = ("en-us", *(d for d in options.dialects if d != "en-us" and d in DIALECTS))
    espeak = dialect_readings(words, voices)
    sources = available_sources(SOURCES if options.sources is None else options.sources)
    out = []
    for word in words:
        if not espeak[word] or espeak[word][0][0] != "en-us":
            continue  # espeak-ng gave the voice's own dialect nothing: no reading to vary
        readings = proposals(word, espeak[word], sources, options.stresses)
        own = fold(readings[0].phonemes)
        dictionary = [v for v in readings if set(v.sources) & set(sources)]
        agrees = any(fold(v.phonemes) == own for v in dictionary)
        key = word_key(word)
        if key in heard_keys:
            why = "heard otherwise"
        elif rule[word] and not agrees:
            why = "by rule"
        elif dictionary and not agrees:
            why = "dictionaries disagree"
        else:
            continue
        ranked = _rank(readings, sources, options.max_readings)
        if len(ranked) > 1:
            out.append(WordReadings(word, counts[key], why, tuple(ranked)))
        if len(out) >= options.top:
            break
    return out
