"""A book's own pronunciations: W3C PLS lexicons and inline ``ssml:ph``, as lexicon entries.

EPUB 3 lets a publisher link Pronunciation Lexicon Specification files from the XHTML
(``<link rel="pronunciation" type="application/pls+xml">``). Each ``<lexeme>`` becomes one
:class:`~verified_tts.text.lexicon.LexiconEntry` a grapheme: its ``<alias>`` is a respelling,
its ``<phoneme>`` (the preferred one, else the first) phonemes for a generator that takes them.
Publishers write IPA as dictionaries print it, while Piper voices know the symbols espeak-ng
writes, so :func:`espeak_ipa` maps the usual differences (ASCII ``g`` for ``ɡ``, stress and
length typed as ``'`` ``,`` ``:``, syllable dots, ligatures such as ``ʧ``; in English, ``r`` for
``ɹ`` and the American ``y`` for ``j``) and reports what is still unknown. Nothing a book gets
wrong refuses it: a malformed lexicon, an alphabet other than IPA or an unknown symbol is a
warning naming the file and the entry, and that entry is left out.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from xml.etree import ElementTree

from verified_tts.text.lexicon import PHONEMES, LexiconEntry

__all__ = ["PlsLexicon", "espeak_ipa", "read_pls", "to_espeak_ipa", "xsampa_to_ipa"]

_PLS = "{http://www.w3.org/2005/01/pronunciation-lexicon}"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
# Characters that IPA as typed uses for what espeak-ng writes otherwise; "" drops the character.
_SUBSTITUTES = {
    "g": "ɡ", "'": "ˈ", "’": "ˈ", "ʼ": "ˈ", ",": "ˌ", ":": "ː", ".": "", "ʧ": "tʃ", "ʤ": "dʒ",
    "ʦ": "ts", "ʣ": "dz", "ʨ": "tɕ", "ʥ": "dʑ", "ǝ": "ə", "ε": "ɛ", "α": "ɑ", "ɩ": "ɪ",
    "ɷ": "ʊ", "ɝ": "ɜː", "\u035c": "", "‿": "", "|": "", "‖": "", "ˀ": "ʔ", "ɼ": "ɹ",
}  # fmt: skip
# English dictionaries write the approximant r as "r" and, in America, the glide j as "y";
# English has neither the trill nor the rounded vowel those letters are in strict IPA.
_ENGLISH = {"r": "ɹ", "y": "j"}


# X-SAMPA (J. C. Wells' ASCII rendering of the IPA), longest symbols matched first.
_XSAMPA = {
    "b_<": "ɓ", "d`": "ɖ", "d_<": "ɗ", "g_<": "ɠ", "h\\": "ɦ", "j\\": "ʝ", "l`": "ɭ", "l\\": "ɺ",
    "n`": "ɳ", "p\\": "ɸ", "r`": "ɽ", "r\\`": "ɻ", "r\\": "ɹ", "s`": "ʂ", "s\\": "ɕ", "t`": "ʈ",
    "v\\": "ʋ", "x\\": "ɧ", "z`": "ʐ", "z\\": "ʑ", "A": "ɑ", "B\\": "ʙ", "B": "β", "C": "ç",
    "D": "ð", "E": "ɛ", "F": "ɱ", "G\\_<": "ʛ", "G\\": "ɢ", "G": "ɣ", "H\\": "ʜ", "H": "ɥ",
    "I\\": "ᵻ", "I": "ɪ", "J\\_<": "ʄ", "J\\": "ɟ", "J": "ɲ", "K\\": "ɮ", "K": "ɬ", "L\\": "ʟ",
    "L": "ʎ", "M\\": "ɰ", "M": "ɯ", "N\\": "ɴ", "N": "ŋ", "O\\": "ʘ", "O": "ɔ", "P": "ʋ",
    "Q": "ɒ", "R\\": "ʀ", "R": "ʁ", "S": "ʃ", "T": "θ", "U\\": "ᵿ", "U": "ʊ", "V": "ʌ", "W": "ʍ",
    "X\\": "ħ", "X": "χ", "Y": "ʏ", "Z": "ʒ", "\"": "ˈ", "%": "ˌ", ":\\": "ˑ", ":": "ː",
    "@\\": "ɘ", "@`": "ɚ", "@": "ə", "{": "æ", "}": "ʉ", "1": "ɨ", "2": "ø", "3\\": "ɞ", "3": "ɜ",
    "4": "ɾ", "5": "ɫ", "6": "ɐ", "7": "ɤ", "8": "ɵ", "9": "œ", "&": "ɶ", "?\\": "ʕ", "?": "ʔ",
    "<\\": "ʢ", ">\\": "ʡ", "!\\": "ǃ", "|\\|\\": "ǁ", "|\\": "ǀ", "=\\": "ǂ", "-\\": "",
    "`": "˞", "~": "\u0303", "=": "\u0329", "_=": "\u0329", "_0": "\u0325", "_^": "\u032f",
    "_}": "\u031a", "_~": "\u0303", "_a": "\u033a", "_d": "\u032a", "_m": "\u033b", "_h": "ʰ",
    "_j": "ʲ", "_w": "ʷ", "_G": "ˠ", "_?\\": "ˤ", "_\"": "\u0308", "_X": "\u0306", "_o": "\u031e",
    "_r": "\u031d", "_v": "\u032c", "_t": "\u0324", "_k": "\u0330", "_>": "ʼ", "_n": "ⁿ",
    "_l": "ˡ", "_x": "\u033d", "_+": "\u031f", "_-": "\u0320", "_c": "\u031c", "_O": "\u0339",
    ".": ".", "-": "", " ": " ",
}  # fmt: skip
_XSAMPA_LONGEST = max(len(symbol) for symbol in _XSAMPA)
_LETTERS = set("abcdefghijklmnopqrstuvwxyz")


def xsampa_to_ipa(text: str) -> tuple[str, tuple[str, ...]]:
    """X-SAMPA as IPA, and the characters that are no X-SAMPA symbol. A ``'`` that opens a word
    or syllable is read as the stress mark publishers mean by it (in X-SAMPA it palatalises the
    sound before it, and there is none)."""
    out: list[str] = []
    unknown: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "'":
            out.append("ˈ" if not out or out[-1] in (" ", ".") else "ʲ")
            i += 1
            continue
        for size in range(min(_XSAMPA_LONGEST, len(text) - i), 0, -1):
            symbol = text[i : i + size]
            if symbol in _XSAMPA:
                out.append(_XSAMPA[symbol])
                i += size
                break
        else:
            char = text[i]
            (out if char in _LETTERS else unknown).append(char)
            i += 1
    return "".join(out), tuple(dict.fromkeys(unknown))


def to_espeak_ipa(
    written: str, alphabet: str, language: str | None
) -> tuple[str | None, str | None]:
    """(espeak-ng IPA, None) for phonemes in ``alphabet``, or (None, why they are unusable)."""
    kind = alphabet.strip().lower()
    if kind in ("x-sampa", "xsampa"):
        written, unknown = xsampa_to_ipa(written)
        if unknown:
            return None, f"unknown X-SAMPA symbol(s) {_symbols(unknown)}"
    elif kind != "ipa":
        return None, f"alphabet '{alphabet}' is neither IPA nor X-SAMPA"
    ipa, unknown = espeak_ipa(written, language)
    if unknown:
        return None, f"unknown IPA symbol(s) {_symbols(unknown)}"
    return ipa, None


def espeak_ipa(ipa: str, language: str | None = None) -> tuple[str, tuple[str, ...]]:
    """``ipa`` in the symbols espeak-ng writes, and the symbols that still have no Piper id."""
    substitutes = dict(_SUBSTITUTES)
    if (language or "").lower().split("-")[0].split("_")[0] == "en":
        substitutes.update(_ENGLISH)
    text = unicodedata.normalize("NFD", " ".join(ipa.split()))
    converted = "".join(substitutes.get(char, char) for char in text)
    unknown = tuple(dict.fromkeys(char for char in converted if char not in PHONEMES))
    return unicodedata.normalize("NFC", converted), unknown


@dataclass(frozen=True)
class PlsLexicon:
    entries: tuple[LexiconEntry, ...]
    warnings: tuple[str, ...]


def _symbols(unknown: tuple[str, ...]) -> str:
    return ", ".join(f"'{char}' (U+{ord(char):04X})" for char in unknown)


def _preferred(elements: list[ElementTree.Element]) -> ElementTree.Element | None:
    preferred = [e for e in elements if e.get("prefer") == "true"]
    return (preferred or elements or [None])[0]


def read_pls(data: bytes, where: str, language: str | None) -> PlsLexicon:
    """Entries of the PLS document ``data`` (``where`` names it in warnings); never raises."""
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as error:
        return PlsLexicon(
            (), (f"{where} is not well-formed XML ({error}): its entries are left out",)
        )
    if root.tag != f"{_PLS}lexicon":
        return PlsLexicon((), (f"{where} is not a PLS lexicon (its root is {root.tag}): left out",))
    alphabet = root.get("alphabet", "ipa")
    language = root.get(_XML_LANG) or language
    entries: list[LexiconEntry] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for number, lexeme in enumerate(root.iter(f"{_PLS}lexeme"), 1):
        graphemes = [
            " ".join("".join(g.itertext()).split()) for g in lexeme.iter(f"{_PLS}grapheme")
        ]
        graphemes = [g for g in graphemes if g]
        name = f"{where} entry {number} ({graphemes[0] if graphemes else 'no grapheme'})"
        if not graphemes:
            warnings.append(f"{name}: a lexeme without a grapheme is left out")
            continue
        alias = _preferred(list(lexeme.iter(f"{_PLS}alias")))
        say = " ".join("".join(alias.itertext()).split()) or None if alias is not None else None
        phoneme = _preferred(list(lexeme.iter(f"{_PLS}phoneme")))
        phonemes = None
        if phoneme is not None:
            written = " ".join("".join(phoneme.itertext()).split())
            if written:
                phonemes, why = to_espeak_ipa(written, phoneme.get("alphabet", alphabet), language)
                if why:
                    warnings.append(f"{name}: {why} in '{written}'; the entry is left out")
                    continue
        if say is None and phonemes is None:
            continue
        for grapheme in graphemes:
            if grapheme.casefold() in seen:
                continue
            seen.add(grapheme.casefold())
            entries.append(LexiconEntry(grapheme, False, say, phonemes, False, source=where))
    return PlsLexicon(tuple(entries), tuple(warnings))
