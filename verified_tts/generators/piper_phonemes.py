"""Text to the phoneme ids a Piper voice reads: espeak-ng IPA, clause punctuation kept.

Piper voices were trained on phonemes from Piper's own espeak-ng build, whose extra
``espeak_TextToPhonemesWithTerminator`` also reports how each clause ended; Piper appends that
punctuation (``.`` ``?`` ``!``, or ``,`` ``:`` ``;`` plus a space) to the clause's phonemes and
starts a new sentence after ``.`` ``?`` ``!``. The espeak-ng of the ``espeakng-loader`` wheel has
only ``espeak_TextToPhonemes``, which reads one clause per call and advances a pointer into the
text; the text it consumed tells which punctuation ended the clause. The phonemes are read with
a separator between them, because one phoneme, the glide espeak-ng puts after /i/ before a vowel,
has no IPA symbol in the wheel's build and "ʲ" in Piper's: it shows as an empty phoneme and is
written as Piper writes it. Phonemes are then split
into Unicode codepoints (NFD), optionally merged into the voice's vowel clusters, and mapped
through the voice's ``phoneme_id_map`` with Piper's conventions: BOS, then each phoneme's ids
followed by PAD, then EOS. The result is compared id for id with Piper's own phonemizer on
Harvard sentences in the tests (``tests/data/piper_phoneme_ids.json``).
"""

from __future__ import annotations

import ctypes
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from verified_tts.errors import UserError
from verified_tts.generators.espeak_ng import CHARS_UTF8, PHONEMES_IPA, EspeakLibrary

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "Clause",
    "PhonemeMapper",
    "Sentence",
    "espeak_clauses",
    "espeak_clauses_many",
    "espeak_sentences",
    "phonemize_espeak",
]

PAD, BOS, EOS = "_", "^", "$"

# How espeak-ng classifies the punctuation that ends a clause, reduced to what Piper appends:
# "." "?" "!" end a sentence; "," ":" ";" end a clause and are followed by a space. espeak-ng
# gives en and em dashes the semicolon's clause type, so Piper writes ";" for them. An ellipsis
# ("..." or U+2026) and anything else end a clause without punctuation.
_TERMINATORS = {
    ".": ".",
    "?": "?",
    "!": "!",
    ",": ",",
    ":": ":",
    ";": ";",
    "\u2013": ";",
    "\u2014": ";",
}
_SENTENCE_ENDS = {".", "?", "!"}
_CLAUSE_SPACE = {",", ":", ";"}
# Closing quotes and brackets may follow the punctuation that ends a clause.
_CLOSERS = set("\"')]}\u2019\u201d\u00bb")
_LANGUAGE_FLAGS = re.compile(r"\([^)]+\)")  # "(fr)...(en)" around words of another language
# Phonemes come back separated by this character, so that phonemes without an IPA symbol show.
_SEPARATOR = "|"
# espeak-ng appends its glide phoneme ";" after /i/-type vowels before a vowel ("the evening"):
# Piper's build writes it as "ʲ", espeak-ng 1.52.0 writes nothing, so it shows only as an empty
# phoneme between separators. Pauses are empty phonemes too, and stay empty.
_GLIDE = "\u02b2"
_GLIDE_AFTER = {"i", "i\u02d0", "\u026a", "a\u026a"}  # i iː ɪ aɪ (not eɪ ɔɪ)
_STRESS = "\u02c8\u02cc"
_MODE = PHONEMES_IPA | (ord(_SEPARATOR) << 8)


@dataclass(frozen=True)
class Clause:
    """One clause as espeak-ng reads it: IPA phonemes and the punctuation Piper appends."""

    phonemes: str
    terminator: str  # one of . ? ! , : ; or ""
    start: int = 0  # characters of the text espeak-ng read for it: text[start:end]
    end: int = 0

    @property
    def ends_sentence(self) -> bool:
        return self.terminator in _SENTENCE_ENDS


@dataclass(frozen=True)
class Sentence:
    """One sentence's phonemes (what the voice reads) and the characters of the text it covers."""

    phonemes: list[str]
    start: int
    end: int


def _terminator(consumed: str, at_end: bool) -> str:
    """The punctuation that ended a clause, from the text espeak-ng consumed to read it.

    espeak-ng reads one character past a clause (the first of the next one) unless the text
    ended; that character is dropped before looking for the punctuation.
    """
    text = consumed if at_end else consumed[:-1]
    text = text.rstrip()
    while text and text[-1] in _CLOSERS:
        text = text[:-1].rstrip()
    if not text:
        return ""
    if text.endswith(".."):  # espeak-ng reads "..." as an ellipsis: no terminator
        return ""
    if text.endswith("\u2026") and text[:-1].rstrip()[-1:] in _TERMINATORS:
        text = text[:-1].rstrip()  # "end.…": the full stop ends the clause
    return _TERMINATORS.get(text[-1], "")


def _join(separated: str) -> str:
    """Separated phonemes of a clause to one IPA string, the glide written as Piper writes it."""
    words = []
    for word in _LANGUAGE_FLAGS.sub("", separated).split(" "):
        phones = word.split(_SEPARATOR)
        for k in range(1, len(phones)):
            # two empty phonemes in a row are a pause, which is no vowel: no glide before it
            before_pause = k + 1 < len(phones) and not phones[k + 1]
            if not phones[k] and not before_pause and phones[k - 1].strip(_STRESS) in _GLIDE_AFTER:
                phones[k] = _GLIDE
        words.append("".join(phones))
    return " ".join(words)


def espeak_clauses(text: str, voice: str, library: EspeakLibrary | None = None) -> list[Clause]:
    """Read ``text`` clause by clause with espeak-ng's ``espeak_TextToPhonemes`` (IPA)."""
    return espeak_clauses_many([text], voice, library)[0]


def espeak_clauses_many(
    texts: Sequence[str], voice: str, library: EspeakLibrary | None = None
) -> list[list[Clause]]:
    """:func:`espeak_clauses` of several texts in one opening of the library."""
    library = library or EspeakLibrary.find()
    with library.session() as (lib, _rate):
        if lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise UserError(
                f"espeak-ng has no voice '{voice}' for this Piper voice: check the voice config's "
                "espeak.voice"
            )
        return [_read_clauses(lib, text) for text in texts]


def _read_clauses(lib: ctypes.CDLL, text: str) -> list[Clause]:
    encoded = text.encode("utf-8")
    clauses = []
    buffer = ctypes.create_string_buffer(encoded + b"\0")
    start = ctypes.addressof(buffer)
    pointer = ctypes.c_void_p(start)
    first = 0  # the character the clause starts at
    while pointer.value:
        before = pointer.value - start
        result = lib.espeak_TextToPhonemes(ctypes.byref(pointer), CHARS_UTF8, _MODE)
        at_end = not pointer.value
        after = len(encoded) if at_end else pointer.value - start
        phonemes = _join(ctypes.string_at(result).decode("utf-8")) if result else ""
        consumed = encoded[before:after].decode("utf-8", errors="replace")
        # espeak-ng reads one character past a clause unless the text ended: that character
        # starts the next clause
        read = len(encoded[:after].decode("utf-8", errors="replace"))
        last = read if at_end else max(first, read - 1)
        clauses.append(Clause(phonemes, _terminator(consumed, at_end), first, last))
        first = last
    return clauses


def espeak_sentences(
    text: str,
    voice: str,
    vowel_clusters: frozenset[tuple[str, ...]] = frozenset(),
    library: EspeakLibrary | None = None,
) -> list[Sentence]:
    """Text to phonemes grouped by sentence, as Piper's espeak phonemizer groups them, with the
    characters of the text each sentence covers."""
    sentences: list[Sentence] = []
    current: list[str] = []
    first = None
    for clause in espeak_clauses(text, voice, library):
        first = clause.start if first is None else first
        phonemes = clause.phonemes + clause.terminator
        if clause.terminator in _CLAUSE_SPACE:
            phonemes += " "
        current.extend(unicodedata.normalize("NFD", phonemes))
        if clause.ends_sentence:
            sentences.append(Sentence(_merge_clusters(current, vowel_clusters), first, clause.end))
            current, first = [], None
    if current:
        sentences.append(Sentence(_merge_clusters(current, vowel_clusters), first or 0, len(text)))
    return [sentence for sentence in sentences if sentence.phonemes]


def phonemize_espeak(
    text: str,
    voice: str,
    vowel_clusters: frozenset[tuple[str, ...]] = frozenset(),
    library: EspeakLibrary | None = None,
) -> list[list[str]]:
    """Text to phonemes grouped by sentence, as Piper's espeak phonemizer groups them."""
    return [s.phonemes for s in espeak_sentences(text, voice, vowel_clusters, library)]


def _word_only(phones: Sequence[str]) -> list[str]:
    """A word's phonemes without the clause's closing punctuation and space."""
    phones = list(phones)
    while phones and (phones[-1] == " " or phones[-1] in _TERMINATORS.values()):
        phones.pop()
    return phones


def _replace_word(
    phones: list[str], target: Sequence[str], given: Sequence[str]
) -> tuple[list[str], int]:
    """``phones`` with each whole-word run equal to ``target`` replaced by ``given``."""
    if not target:
        return phones, 0
    out: list[str] = []
    hits, i, n = 0, 0, len(target)
    while i < len(phones):
        before_ok = i == 0 or phones[i - 1] == " "
        after = phones[i + n] if i + n < len(phones) else None
        after_ok = after is None or after == " " or after in _TERMINATORS.values()
        if before_ok and after_ok and phones[i : i + n] == list(target):
            out.extend(given)
            hits += 1
            i += n
        else:
            out.append(phones[i])
            i += 1
    return out, hits


def _merge_clusters(phones: list[str], clusters: frozenset[tuple[str, ...]]) -> list[str]:
    """Merge runs of codepoints that the voice treats as one phoneme (longest match first)."""
    if not clusters:
        return phones
    longest = max(len(cluster) for cluster in clusters)
    merged, i = [], 0
    while i < len(phones):
        for n in range(min(longest, len(phones) - i), 1, -1):
            if tuple(phones[i : i + n]) in clusters:
                merged.append("".join(phones[i : i + n]))
                i += n
                break
        else:
            merged.append(phones[i])
            i += 1
    return merged


@dataclass(frozen=True)
class PhonemeMapper:
    """A voice's phoneme conventions: how text becomes phonemes, and phonemes become ids."""

    id_map: Mapping[str, Sequence[int]]
    phoneme_type: str = "espeak"  # "espeak" (IPA from espeak-ng) or "text" (codepoints)
    espeak_voice: str = "en-us"
    vowel_clusters: frozenset[tuple[str, ...]] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        missing = [symbol for symbol in (PAD, BOS, EOS) if symbol not in self.id_map]
        if missing:
            raise UserError(
                f"the voice's phoneme_id_map lacks {' '.join(missing)} (pad, start, end): "
                "the JSON config is not a Piper voice config"
            )
        if self.phoneme_type not in ("espeak", "text"):
            raise UserError(
                f"phoneme_type '{self.phoneme_type}' is not supported: choose a Piper voice "
                "whose config says 'espeak' or 'text'"
            )

    def phonemize(self, text: str, library: EspeakLibrary | None = None) -> list[list[str]]:
        """Text to phonemes, one list per sentence."""
        return [sentence.phonemes for sentence in self.sentences(text, library)]

    def sentences(self, text: str, library: EspeakLibrary | None = None) -> list[Sentence]:
        """Text to :class:`Sentence` s: phonemes and the characters they cover."""
        if self.phoneme_type == "text":
            phones = list(unicodedata.normalize("NFD", text))
            return [Sentence(phones, 0, len(text))] if phones else []
        return espeak_sentences(text, self.espeak_voice, self.vowel_clusters, library)

    def phonemize_with(
        self,
        text: str,
        replacements: Sequence[tuple[str, str]],
        library: EspeakLibrary | None = None,
    ) -> tuple[list[list[str]], list[str]]:
        """Text to phonemes with each ``(word, IPA)`` of a lexicon spoken as given.

        The word is phonemized alone and its phonemes are replaced, wherever they stand as a
        whole word in the text's phonemes, by the lexicon's IPA. Returns the sentences and the
        words whose phonemes were not found (context changed them), which keep espeak-ng's.
        """
        sentences, unmatched = self.sentences_with(text, replacements, library)
        return [sentence.phonemes for sentence in sentences], unmatched

    def sentences_with(
        self,
        text: str,
        replacements: Sequence[tuple[str, str]],
        library: EspeakLibrary | None = None,
    ) -> tuple[list[Sentence], list[str]]:
        """:meth:`phonemize_with` as :class:`Sentence` s (phonemes and the characters covered)."""
        sentences = self.sentences(text, library)
        unmatched = []
        for word, ipa in replacements:
            heard = self.phonemize(word, library)
            target = _word_only(heard[0]) if heard else []
            given = self.lexicon_phonemes(ipa)
            found = False
            for number, sentence in enumerate(sentences):
                phonemes, hits = _replace_word(sentence.phonemes, target, given)
                sentences[number] = Sentence(phonemes, sentence.start, sentence.end)
                found = found or hits > 0
            if not found:
                unmatched.append(word)
        return sentences, unmatched

    def lexicon_phonemes(self, ipa: str) -> list[str]:
        """A lexicon entry's IPA as the voice's phonemes (codepoints, vowel clusters merged)."""
        return _merge_clusters(list(unicodedata.normalize("NFD", ipa)), self.vowel_clusters)

    def ids(self, phonemes: Sequence[str]) -> tuple[list[int], list[str]]:
        """Phonemes to ids (BOS, phoneme+PAD each, EOS); also the phonemes the map lacks.

        Phonemes missing from the map are skipped, as Piper skips them, and returned so a caller
        can report them.
        """
        ids = [*self.id_map[BOS], *self.id_map[PAD]]
        missing = []
        for phoneme in phonemes:
            mapped = self.id_map.get(phoneme)
            if mapped is None:
                missing.append(phoneme)
                continue
            ids.extend(mapped)
            ids.extend(self.id_map[PAD])
        ids.extend(self.id_map[EOS])
        return ids, missing

    def sentence_ids(self, text: str, library: EspeakLibrary | None = None) -> list[list[int]]:
        """Text to one id sequence per sentence."""
        return [self.ids(sentence)[0] for sentence in self.phonemize(text, library)]
