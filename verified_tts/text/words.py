"""``words``: what a producer should check before a long render.

Two lists over the spoken text of a parsed book: tokens the normaliser left unexpanded (digits,
symbols, all-capital abbreviations, dotted initialisms: a generator guesses at those), and the
rare and proper words, ranked by how often the book uses them and how rare they are in English
(Zipf frequency from the ``wordfreq`` package; below 3.0 is about once per million words or less).
Each word comes with its count and the first sentence it appears in, as written, and whether a
lexicon entry already covers it, so the lexicon can be written before hours of audio are.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from verified_tts.text.book import Book
from verified_tts.text.lexicon import Lexicon

__all__ = ["WordReport", "WordRow", "list_words"]

_TOKEN = re.compile(r"[^\s\"“”‘’«»()\[\]{},;:!?]+")
_WORD = re.compile(r"^[A-Za-zÀ-ÖØ-öø-ÿ]+(?:['’-][A-Za-zÀ-ÖØ-öø-ÿ]+)*$")
_SYMBOLS = set("0123456789%&@#$£€¥/+=<>^~_|\\*§¶†‡°")
_EDGE = "'’.-"


@dataclass(frozen=True)
class WordRow:
    word: str
    count: int
    example: str  # the first sentence (as written) that contains it
    zipf: float | None = None  # English frequency, for rare words
    why: str = ""  # for unexpanded tokens: what the generator will have to guess
    in_lexicon: bool = False


@dataclass(frozen=True)
class WordReport:
    unexpanded: tuple[WordRow, ...]
    rare: tuple[WordRow, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "unexpanded": [asdict(row) for row in self.unexpanded],
            "rare": [asdict(row) for row in self.rare],
        }


def _unexpanded_reason(token: str) -> str | None:
    if any(char.isdigit() for char in token):
        return "digits"
    if set(token) & _SYMBOLS:
        return "symbol"
    core = token.strip(_EDGE)
    if re.fullmatch(r"(?:[A-Za-z]\.){2,}[A-Za-z]?\.?", token):
        return "initialism"
    if len(core) >= 2 and core.isupper() and core.isalpha():
        return "capitals (spelled or read as a word?)"
    return None


def list_words(
    book: Book,
    *,
    lexicon: Lexicon | None = None,
    max_zipf: float = 3.0,
    top: int = 100,
    language: str = "en",
) -> WordReport:
    """Unexpanded tokens and rare/proper words of ``book``'s spoken text, most frequent first."""
    from wordfreq import zipf_frequency

    covered = [entry.compiled() for entry in (lexicon.entries if lexicon else ())]
    unexpanded: Counter[str] = Counter()
    words: Counter[str] = Counter()
    spelling: dict[str, Counter[str]] = {}
    examples: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for segment in book.segments:
        for token in _TOKEN.findall(segment.spoken):
            reason = _unexpanded_reason(token)
            if reason:
                if reason != "initialism":  # "H2O." is "H2O"; "U.S.A." keeps its dots
                    token = token.strip(_EDGE) or token
                unexpanded[token] += 1
                reasons.setdefault(token, reason)
                examples.setdefault(token, segment.text)
                continue
            word = token.strip(_EDGE)
            if not _WORD.match(word):
                continue
            key = word.lower()
            words[key] += 1
            spelling.setdefault(key, Counter())[word] += 1
            examples.setdefault(key, segment.text)

    def in_lexicon(word: str) -> bool:
        return any(pattern.search(word) for pattern in covered)

    rare = []
    for key, count in words.items():
        zipf = zipf_frequency(key, language)
        if zipf < max_zipf:
            shown = spelling[key].most_common(1)[0][0]
            rare.append(WordRow(shown, count, examples[key], round(zipf, 2), "", in_lexicon(shown)))
    rare.sort(key=lambda row: (-row.count, row.zipf, row.word.lower()))
    rows = [
        WordRow(token, count, examples[token], None, reasons[token], in_lexicon(token))
        for token, count in unexpanded.most_common()
    ]
    return WordReport(tuple(rows[:top]), tuple(rare[:top]))
