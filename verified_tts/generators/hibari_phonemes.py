"""Lexicon phonemes for hibari voices: espeak-ng IPA to the misaki alphabet, spliced into the text.

Lexicon entries carry phonemes in espeak-ng IPA (:mod:`verified_tts.text.lexicon`), the alphabet
Piper voices read. hibari's voices read misaki's alphabet (Kokoro's): the same IPA letters for most
consonants and vowels, one capital letter per diphthong (``A`` eɪ, ``I`` aɪ, ``O`` oʊ, ``W`` aʊ,
``Y`` ɔɪ), ``ʤ``/``ʧ`` for the affricates, ``T`` for the American flap, ``ɜɹ``/``əɹ`` for the
r-coloured vowels, and no length marks in American English. :func:`misaki_from_ipa` rewrites IPA
with a table that covers every symbol the lexicon accepts (longest sequences first), so no entry is
silently dropped; symbols English lacks become their nearest English sound. :func:`splice_lexicon`
then marks each lexicon word in the text as hibari's grapheme-to-phoneme front end takes an inline
pronunciation, ``[word](/phonemes/)``, so the word is spoken as given wherever it stands, in
context, and the rest of the sentence keeps hibari's own reading.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

__all__ = ["misaki_from_ipa", "splice_lexicon"]

# espeak-ng IPA sequence -> misaki (American) phonemes, applied longest first. Symbols that are the
# same in both alphabets are not listed; an IPA symbol English does not use becomes its nearest
# English phoneme, and marks misaki has no use for (length, tone, most diacritics) are dropped.
# fmt: off
_SEQUENCES = {
    # r-coloured vowels and diphthongs
    "ɜːɹ": "ɜɹ", "ɜː": "ɜɹ", "ɝ": "ɜɹ", "ɚɹ": "əɹ", "ɚ": "əɹ", "ɹɹ": "ɹ",
    "oʊ": "O", "əʊ": "O", "eɪ": "A", "aɪ": "I", "aʊ": "W", "ɔɪ": "Y",
    "d͡ʒ": "ʤ", "t͡ʃ": "ʧ", "dʒ": "ʤ", "tʃ": "ʧ", "t͡s": "ts", "d͡z": "dz",
    # syllabic consonants: misaki writes a small schwa before them
    "l̩": "ᵊl", "n̩": "ᵊn", "m̩": "ᵊm", "ɹ̩": "əɹ",
}
_SYMBOLS = {
    # American flap and glottal stop, as hibari's own front end writes them
    "ɾ": "T", "ʔ": "t",
    # vowels English lacks or misaki writes otherwise
    "ɐ": "ə", "ɨ": "ᵻ", "ɘ": "ə", "ɵ": "ə", "ɞ": "ʌ", "ɤ": "ʌ", "ɯ": "u", "ʉ": "u",
    "y": "u", "ʏ": "ʊ", "ø": "ɜ", "œ": "ɛ", "ɶ": "æ", "e": "A", "o": "O", "a": "ɑ", "ɒ": "ɑ",
    # consonants English lacks
    "r": "ɹ", "ʀ": "ɹ", "ʁ": "ɹ", "ɻ": "ɹ", "ɺ": "l", "ɽ": "T", "ʙ": "b",
    "ɫ": "l", "ɬ": "l", "ɮ": "l", "ɭ": "l", "ʎ": "j", "ʟ": "l",
    "x": "k", "ç": "h", "χ": "h", "ħ": "h", "ɦ": "h", "ʜ": "h", "ɧ": "ʃ", "ɕ": "ʃ", "ʑ": "ʒ",
    "ʂ": "ʃ", "ʐ": "ʒ", "ɣ": "ɡ", "ʕ": "h", "ʢ": "h", "ʡ": "t",
    "g": "ɡ", "c": "k", "q": "k", "ɢ": "ɡ", "ɟ": "ʤ", "ʝ": "j", "ɥ": "w", "ɰ": "w", "ʍ": "w",
    "β": "v", "ɸ": "f", "ʋ": "v", "ⱱ": "v",
    "ɖ": "d", "ʈ": "t", "ɳ": "n", "ɲ": "n", "ɴ": "ŋ", "ɱ": "m",
    "ɓ": "b", "ɗ": "d", "ɠ": "ɡ", "ʄ": "ʤ", "ʛ": "ɡ",
    "ǀ": "t", "ǁ": "l", "ǂ": "t", "ǃ": "k", "ʘ": "p",
    # marks misaki does not write in American English
    "ː": "", "ˑ": "", "ʰ": "", "ʲ": "", "ʷ": "", "ˠ": "", "ˤ": "", "˞": "",
    "↓": "", "↑": "", "→": "", "↗": "", "↘": "", "'": "", "-": "",
}
# fmt: on
_COMBINING_KEPT = {"\u0303": ""}  # nasal vowels: drop the tilde, keep the vowel


def _table() -> list[tuple[str, str]]:
    pairs = {unicodedata.normalize("NFD", k): v for k, v in _SEQUENCES.items()}
    pairs.update({unicodedata.normalize("NFD", k): v for k, v in _SYMBOLS.items()})
    return sorted(pairs.items(), key=lambda pair: -len(pair[0]))


_TABLE = _table()
_PATTERN = re.compile("|".join(re.escape(source) for source, _ in _TABLE))
_REPLACEMENT = dict(_TABLE)


# A word-final unstressed "əl"/"ən" after a consonant is syllabic: misaki writes a small schwa.
_SYLLABIC = re.compile(r"(?<=[^\sˈˌəɪiuʊɛæɑɔʌAIOWYᵻ])ə(?=[ln](?:\s|$|[;:,.!?]))")


def misaki_from_ipa(ipa: str) -> str:
    """espeak-ng IPA (as lexicon entries write it) in misaki's American alphabet."""
    text = _PATTERN.sub(
        lambda match: _REPLACEMENT[match.group(0)], unicodedata.normalize("NFD", ipa)
    )
    # the remaining combining marks (dental, syllabic, ...) have no misaki symbol
    text = "".join(_COMBINING_KEPT.get(c, "") if unicodedata.combining(c) else c for c in text)
    text = _SYLLABIC.sub("ᵊ", re.sub(r"\s+", " ", text).strip())
    return unicodedata.normalize("NFC", text)


def splice_lexicon(text: str, entries: Sequence[tuple[str, str]]) -> tuple[str, list[str]]:
    """``text`` with each lexicon word written ``[word](/phonemes/)``; also the words not found.

    ``entries`` are (word as it appears in the text, espeak-ng IPA) pairs. Words are matched
    whole and exactly (the lexicon already chose which spelling matched); longer words first, so
    an entry for "St John" wins over one for "John".
    """
    if not entries:
        return text, []
    given = {word: misaki_from_ipa(ipa) for word, ipa in entries if word}
    words = sorted(given, key=len, reverse=True)
    # brackets would end hibari's inline pronunciation early; a word with them is read as written
    usable = [w for w in words if not set(w) & set("[]()/")]
    if not usable:
        return text, list(given)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, usable)) + r")(?!\w)")
    found: set[str] = set()

    def mark(match: re.Match[str]) -> str:
        found.add(match.group(0))
        return f"[{match.group(0)}](/{given[match.group(0)]}/)"

    spliced = pattern.sub(mark, text)
    return spliced, [word for word, _ in entries if word not in found]
