"""Which word of the text each phoneme a Piper voice reads belongs to.

espeak-ng returns a clause's phonemes with spaces between its words, but not one group per word
of the text: it joins short words ("in the" is one group, "ɪnðə"), spells a number or a roman
numeral as several groups, and reads a hyphenated word as one. So the words are found by
alignment: every word of a sentence is phonemized alone (one opening of espeak-ng for all of
them; a lexicon word is its lexicon IPA), the isolated phonemes are concatenated and aligned with
the sentence's phonemes by edit distance (``rapidfuzz``), spaces and clause punctuation left out,
and each phoneme of the sentence takes the word of the phoneme it is aligned with. A phoneme that
the isolated readings lack (context added it) takes the word of its neighbour in the same group,
and the labels are made to run in order, so every word covers one contiguous run of phonemes. A
word is a whitespace-separated token of the text with a letter or digit in it; its place is the
span of characters it covers, so a later stage can map it back to the text it was made from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from verified_tts.generators.espeak_ng import EspeakLibrary
from verified_tts.generators.piper_phonemes import PhonemeMapper, Sentence, espeak_clauses_many

__all__ = ["SentenceWords", "id_words", "label_phonemes", "sentence_words", "text_words"]

# Phonemes that belong to no word: the space between words and the punctuation Piper appends.
_NOT_WORDS = frozenset({" ", ".", ",", "?", "!", ":", ";"})
_TOKEN = re.compile(r"\S+")
_SPOKEN = re.compile(r"[^\W_]")


@dataclass(frozen=True)
class SentenceWords:
    """One sentence: its phonemes, and per phoneme the index of its word in ``words`` (-1: a
    space or punctuation); ``words`` holds (start, end) character spans of the whole text."""

    phonemes: list[str]
    labels: list[int]
    words: tuple[tuple[int, int], ...]


def text_words(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) character spans of the words of ``text`` that begin in ``[start, end)``."""
    end = len(text) if end is None else end
    return [
        m.span()
        for m in _TOKEN.finditer(text)
        if start <= m.start() < end and _SPOKEN.search(m.group())
    ]


def label_phonemes(phonemes: Sequence[str], isolated: Sequence[Sequence[str]]) -> list[int]:
    """Per phoneme of a sentence, the index into ``isolated`` (each word's phonemes read alone)
    of the word it belongs to; -1 for spaces and punctuation. See the module docstring."""
    from rapidfuzz.distance import Levenshtein

    # Spaces stay in both sequences, so the alignment keeps word boundaries on espeak-ng's
    # spaces; punctuation belongs to no word and is left out.
    kept = [i for i, p in enumerate(phonemes) if p == " " or p not in _NOT_WORDS]
    source: list[str] = []
    owner: list[int | None] = []
    for word, phones in enumerate(isolated):
        if source:
            source.append(" ")
            owner.append(None)
        for phone in phones:
            if phone not in _NOT_WORDS:
                source.append(phone)
                owner.append(word)
    labels = [-1] * len(phonemes)
    if not any(o is not None for o in owner):
        return labels
    target = [phonemes[i] for i in kept]
    found: list[int | None] = [None] * len(target)
    for tag, s0, s1, d0, d1 in Levenshtein.opcodes(source, target):
        if tag in ("equal", "replace"):
            for k in range(d1 - d0):
                found[d0 + k] = owner[min(s0 + k, s1 - 1)]
    spoken = [k for k, i in enumerate(kept) if phonemes[i] != " "]
    groups = [sum(1 for i in kept[:k] if phonemes[i] == " ") for k in spoken]
    words = [found[k] for k in spoken]
    _fill_gaps(words, groups, next(o for o in owner if o is not None))
    running = 0
    for k, word in zip(spoken, words, strict=True):
        running = max(running, word or 0)  # words run in order
        labels[kept[k]] = running
    return labels


def _fill_gaps(found: list[int | None], groups: Sequence[int], first: int) -> None:
    """Phonemes the alignment left without a word take a neighbour's word: the previous one in
    the same space-delimited group, else the next one there, else the nearest before (after)."""
    for position in range(len(found)):
        if found[position] is not None:
            continue
        same = [k for k in range(len(found)) if groups[k] == groups[position] and k != position]
        before = [found[k] for k in same if k < position and found[k] is not None]
        after = [found[k] for k in same if k > position and found[k] is not None]
        if before or after:
            found[position] = before[-1] if before else after[0]
            continue
        earlier = [f for f in found[:position] if f is not None]
        later = [f for f in found[position + 1 :] if f is not None]
        found[position] = earlier[-1] if earlier else (later[0] if later else first)


def sentence_words(
    mapper: PhonemeMapper,
    text: str,
    sentences: Sequence[Sentence],
    lexicon: Sequence[tuple[str, str]] = (),
    library: EspeakLibrary | None = None,
) -> list[SentenceWords]:
    """Label the phonemes of ``sentences`` (``mapper.sentences_with(text, lexicon)``) with the
    words of ``text`` they read; each word belongs to the sentence it begins in."""
    words = text_words(text)
    per_sentence = []
    for number, sentence in enumerate(sentences):
        end = sentences[number + 1].start if number + 1 < len(sentences) else len(text)
        start = 0 if number == 0 else sentence.start
        per_sentence.append([k for k, (a, _) in enumerate(words) if start <= a < end])
    isolated = _isolated(mapper, [text[a:b] for a, b in words], lexicon, library)
    out = []
    for sentence, indices in zip(sentences, per_sentence, strict=True):
        local = label_phonemes(sentence.phonemes, [isolated[k] for k in indices])
        labels = [indices[k] if k >= 0 else -1 for k in local]
        out.append(SentenceWords(list(sentence.phonemes), labels, tuple(words)))
    return out


def _isolated(
    mapper: PhonemeMapper,
    words: Sequence[str],
    lexicon: Sequence[tuple[str, str]],
    library: EspeakLibrary | None,
) -> list[list[str]]:
    """Each word's phonemes read alone (its lexicon IPA where it has one)."""
    given = {word.lower(): mapper.lexicon_phonemes(ipa) for word, ipa in lexicon}
    cores = [re.sub(r"^\W+|\W+$", "", word) for word in words]
    if mapper.phoneme_type == "text":
        return [(mapper.phonemize(word) or [[]])[0] for word in words]
    wanted = sorted({core for core in cores if core.lower() not in given})
    read = espeak_clauses_many(wanted, mapper.espeak_voice, library) if wanted else []
    alone: dict[str, list[str]] = {}
    for core, clauses in zip(wanted, read, strict=True):
        joined = " ".join(c.phonemes for c in clauses if c.phonemes)
        alone[core] = mapper.lexicon_phonemes(joined)
    return [given.get(core.lower()) or alone.get(core, []) for core in cores]


def id_words(mapper: PhonemeMapper, phonemes: Sequence[str], labels: Sequence[int]) -> list[int]:
    """Per id of ``mapper.ids(phonemes)``, the word it reads: each phoneme's ids and the pad
    after them take the phoneme's word; the start, end and leading pad take -1."""
    from verified_tts.generators.piper_phonemes import BOS, EOS, PAD

    pad = len(mapper.id_map[PAD])
    out = [-1] * (len(mapper.id_map[BOS]) + pad)
    for phoneme, label in zip(phonemes, labels, strict=True):
        mapped = mapper.id_map.get(phoneme)
        if mapped is None:
            continue  # skipped by ids() too
        out.extend([label] * (len(mapped) + pad))
    out.extend([-1] * len(mapper.id_map[EOS]))
    return out
