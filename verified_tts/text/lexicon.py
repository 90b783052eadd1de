"""The pronunciation lexicon: words or patterns -> a respelling, or -> phonemes, from a TOML file.

A producer fixes a name once instead of editing the book::

    [words]                                   # whole words, case-insensitive
    Hermione = "her-my-oh-nee"                # a respelling every generator can say
    Nguyen = { phonemes = "ŋwˈɪən" }          # IPA for a generator that takes phonemes (Piper)
    Reading = { say = "Redding", case = true }  # only the capitalised town
    Ravenel = { keep = true }                 # as the generator reads it; never doubted

    [patterns]                                # Python regular expressions
    '\\bSt\\.? John\\b' = "Sinjin"

Entries apply to each segment's spoken text (after number and abbreviation expansion), patterns
first, then words, in file order. A respelling replaces the matched text. Phonemes leave the
text alone and ride along as (word as spoken, phonemes) pairs on the segment and the synthesis
request, so a phoneme generator can splice them in while others read the word; they enter the
utterance's content key, so changing an entry re-renders only the sentences that contain the
word. A ``keep`` entry changes nothing: it says the word was checked and is read as the
generator reads it, so a render with pronunciation candidates never doubts it again (the lexicon
a render writes keeps each word whose own reading it kept this way). Phonemes are checked symbol
by symbol against the espeak-ng IPA inventory that Piper voices
are trained on; a bad regex or an unknown phoneme is one :class:`UserError` line. An EPUB's own
PLS entries (:mod:`verified_tts.text.epub_pls`) carry their file as ``source`` and come after the
producer's, which override them (:func:`merge_lexicons`).
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.text.book import Book, Chapter

__all__ = [
    "PHONEMES",
    "Lexicon",
    "LexiconEntry",
    "apply_lexicon",
    "load_lexicon",
    "make_entry",
    "merge_lexicons",
    "replaced_phonemes",
]

# The symbols of espeak-ng's IPA output as Piper's phoneme maps list them (one id per code point):
# letters, IPA letters, stress, length and tone marks, diacritics, and clause punctuation.
PHONEMES = frozenset(
    " !'(),-.:;?abcdefghijklmnopqrstuvwxyz"
    "æçðøħŋœǀǁǂǃɐɑɒɓɔɕɖɗɘəɚɛɜɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢ"
    "ʰʲʷˠˤˈˌːˑ˞βθχᵻⱱ↓↑→↗↘"
    "\u0303\u0329\u032a\u032f\u033a\u033b\u030a\u0308\u0361\u0325\u031a"
)
_TABLE_KEYS = {"say", "phonemes", "case", "keep"}


@dataclass(frozen=True)
class LexiconEntry:
    """One entry: what it matches, and the respelling and/or phonemes it gives."""

    pattern: str  # the word or regular expression as written in the file
    regex: bool
    say: str | None = None
    phonemes: str | None = None
    case: bool = False  # match case exactly (words are case-insensitive by default)
    source: str | None = None  # where a book's own entry came from (its PLS file); None: --lexicon
    keep: bool = False  # read as the generator reads it, and never doubted

    def compiled(self) -> re.Pattern[str]:
        flags = 0 if self.case else re.IGNORECASE
        if self.regex:
            return re.compile(self.pattern, flags)
        return re.compile(rf"(?<!\w){re.escape(self.pattern)}(?!\w)", flags)

    def as_dict(self) -> dict[str, Any]:
        data = {"match": self.pattern, "regex": self.regex, "say": self.say}
        data = {**data, "phonemes": self.phonemes, "case": self.case}
        if self.keep:
            data["keep"] = True
        return {**data, "source": self.source} if self.source else data


@dataclass(frozen=True)
class Lexicon:
    """Entries in the order they apply: patterns, then words."""

    entries: tuple[LexiconEntry, ...]
    source: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", tuple(e.compiled() for e in self.entries))

    def apply(self, spoken: str) -> tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]:
        """(new spoken text, (word, phonemes) pairs, patterns of the entries that matched)."""
        phonemes: list[tuple[str, str]] = []
        used: list[str] = []
        for entry, pattern in zip(self.entries, self._compiled, strict=True):  # type: ignore[attr-defined]
            if entry.say is None and not entry.phonemes:  # a kept word: nothing to change
                continue
            matches = [match.group(0) for match in pattern.finditer(spoken)]
            if not matches:
                continue
            used.append(entry.pattern)
            if entry.say is not None:
                say = entry.say
                # a pattern's respelling may use its groups (\\1); a word's is literal
                spoken = pattern.sub(say if entry.regex else say.replace("\\", "\\\\"), spoken)
                matches = [pattern.sub(say, m) if entry.regex else say for m in matches]
            if entry.phonemes:
                phonemes += [(word, entry.phonemes) for word in dict.fromkeys(matches)]
        return spoken, tuple(phonemes), tuple(used)


def _entry(pattern: str, value: Any, *, regex: bool, where: str) -> LexiconEntry:
    if isinstance(value, str):
        value = {"say": value}
    if not isinstance(value, Mapping):
        raise UserError(f"{where}: '{pattern}' must map to a respelling or a table, not {value!r}")
    unknown = set(value) - _TABLE_KEYS
    if unknown:
        raise UserError(
            f"{where}: '{pattern}' has unknown key(s) {', '.join(sorted(unknown))}; "
            "use say, phonemes, case and keep"
        )
    say, phonemes, keep = value.get("say"), value.get("phonemes"), value.get("keep", False)
    if not isinstance(keep, bool):
        raise UserError(f"{where}: '{pattern}' has keep = {keep!r}; write keep = true")
    if keep and (say is not None or phonemes):
        raise UserError(f"{where}: '{pattern}' keeps the word as it is read: drop say/phonemes")
    if say is None and not phonemes and not keep:
        raise UserError(
            f'{where}: \'{pattern}\' needs say = "...", phonemes = "..." or keep = true'
        )
    if phonemes:
        phonemes = unicodedata.normalize("NFD", str(phonemes))
        for symbol in phonemes:
            if symbol not in PHONEMES:
                raise UserError(
                    f"{where}: '{pattern}' has an unknown phoneme '{symbol}' "
                    f"(U+{ord(symbol):04X}); write espeak-ng IPA as Piper voices use it, "
                    'e.g. phonemes = "hˈɜːmaɪəni"'
                )
        phonemes = unicodedata.normalize("NFC", phonemes)
    entry = LexiconEntry(pattern, regex, say, phonemes or None, bool(value.get("case", False)),
                         keep=keep)  # fmt: skip
    try:
        entry.compiled()
    except re.error as error:
        raise UserError(
            f"{where}: '{pattern}' is not a valid regular expression ({error})"
        ) from None
    return entry


def make_entry(pattern: str, value: Any, *, regex: bool = False, where: str) -> LexiconEntry:
    """One entry (a respelling, or a table of say/phonemes/case), checked as a file's entries
    are; ``where`` names it in the one-line error."""
    return _entry(pattern, value, regex=regex, where=where)


def load_lexicon(path: str | Path) -> Lexicon:
    """Read a lexicon TOML file; every mistake is a one-line error naming the entry."""
    path = Path(path)
    if not path.is_file():
        state = "is a folder" if path.is_dir() else "does not exist"
        raise UserError(f"lexicon {path} {state}: pass a TOML file (see --help)")
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"lexicon {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"lexicon {path} is not valid TOML: {error}") from None
    unknown = set(table) - {"words", "patterns"}
    if unknown:
        raise UserError(
            f"lexicon {path}: unknown table(s) {', '.join(sorted(unknown))}; use [words] and "
            "[patterns]"
        )
    entries = [
        _entry(pattern, value, regex=True, where=f"lexicon {path} [patterns]")
        for pattern, value in table.get("patterns", {}).items()
    ]
    entries += [
        _entry(word, value, regex=False, where=f"lexicon {path} [words]")
        for word, value in table.get("words", {}).items()
    ]
    return Lexicon(tuple(entries), str(path))


def merge_lexicons(producer: Lexicon | None, book: tuple[LexiconEntry, ...]) -> Lexicon | None:
    """The producer's entries, then the book's own that no entry of the producer's matches: a
    producer's ``--lexicon`` overrides what the book says of the same word."""
    if not book:
        return producer
    if producer is None:
        return Lexicon(book, None)
    patterns = producer._compiled  # type: ignore[attr-defined]
    kept = tuple(e for e in book if not any(p.fullmatch(e.pattern) for p in patterns))
    return Lexicon(producer.entries + kept, producer.source)


def replaced_phonemes(
    phonemes: tuple[tuple[str, str], ...], new: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, str], ...]:
    """A segment's (word, phonemes) pairs with ``new`` ones added, each replacing the pair an
    earlier entry gave the same word (a later entry for a word overrules an earlier one, as an
    entry added in review overrules the book's decided reading)."""
    words = {word.lower() for word, _ in new}
    return tuple(p for p in phonemes if p[0].lower() not in words) + tuple(new)


def apply_lexicon(book: Book, lexicon: Lexicon | None) -> Book:
    """The book with every segment's spoken text (and phonemes) as the lexicon says."""
    if lexicon is None or not lexicon.entries:
        return book
    chapters = []
    for chapter in book.chapters:
        segments = []
        for segment in chapter.segments:
            spoken, phonemes, used = lexicon.apply(segment.spoken)
            if used:  # phonemes the book gave this text (ssml:ph) stay beside the lexicon's
                phonemes = segment.phonemes + phonemes
                used = segment.lexicon + used
                segment = replace(segment, spoken=spoken, phonemes=phonemes, lexicon=used)
            segments.append(segment)
        chapters.append(Chapter(chapter.index, chapter.title, tuple(segments)))
    return replace(book, chapters=tuple(chapters))
