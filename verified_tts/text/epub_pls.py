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

__all__ = ["PlsLexicon", "espeak_ipa", "read_pls"]

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
            kind = phoneme.get("alphabet", alphabet)
            if kind.lower() != "ipa":
                warnings.append(f"{name}: alphabet '{kind}' is not IPA; its phonemes are left out")
            elif written:
                phonemes, unknown = espeak_ipa(written, language)
                if unknown:
                    warnings.append(
                        f"{name}: unknown IPA symbol(s) {_symbols(unknown)} in '{written}'; the "
                        "entry is left out"
                    )
                    continue
        if say is None and phonemes is None:
            continue
        for grapheme in graphemes:
            if grapheme.casefold() in seen:
                continue
            seen.add(grapheme.casefold())
            entries.append(LexiconEntry(grapheme, False, say, phonemes, False, source=where))
    return PlsLexicon(tuple(entries), tuple(warnings))
