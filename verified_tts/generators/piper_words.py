"""Exact word timings of a Piper run, from the frames its duration predictor gave each phoneme.

A VITS voice rounds each phoneme id's predicted duration up to whole frames (the graph's
``Ceil`` node); :func:`expose_durations` adds that tensor to the graph's outputs at load, so every
run also says how many frames each id got, and a frame is ``hop`` samples of audio. The ids are
laid out as :meth:`PhonemeMapper.ids` lays them (BOS, PAD, then each mapped phoneme's ids and a
PAD, then EOS), so a phoneme word (phonemes between spaces) runs from the first frame of its first
phoneme to the end of the pad after its last, clause punctuation left out
(:func:`phoneme_word_spans`). espeak-ng's words are not always the text's: it joins unstressed
words ("in the" is one phoneme word) and may split one. :func:`match_words` pairs the spoken
words with the phoneme words by the least edit distance between their phonemes (each word's
phonemes said alone), in groups of one to three of each; :func:`spoken_word_timings` turns the
groups into the ``[words, start_s, end_s]`` entries that
:func:`verified_tts.output.word_timing.exact_word_timings` reads (an entry of several joined words
is shared among them there, and marked so).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "PhonemeWord",
    "candidate_word_timings",
    "expose_durations",
    "match_words",
    "phoneme_word_spans",
    "plain_phonemes",
    "spoken_word_timings",
]

PhonemeWord = tuple[str, float, float]  # plain phonemes, start and end (s)
_IGNORED = set("ˈˌ .,;:!?")  # stress, spaces and the clause punctuation Piper appends
_MOST = 3  # words on either side of one group


def expose_durations(model: Any) -> str | None:
    """Add the duration predictor's frames per id (``Ceil``'s output) to ``model``'s outputs;
    its name, or None when the graph has no single ``Ceil`` (no exact timings then)."""
    from onnx import TensorProto, helper

    ceilings = [node for node in model.graph.node if node.op_type == "Ceil"]
    if len(ceilings) != 1:
        return None
    name = ceilings[0].output[0]
    if name not in {output.name for output in model.graph.output}:
        model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    return name


def plain_phonemes(phonemes: Sequence[str]) -> str:
    """Phonemes without stress, spaces or clause punctuation, decomposed, for comparing."""
    text = unicodedata.normalize("NFD", "".join(phonemes))
    return "".join(c for c in text if c not in _IGNORED)


def phoneme_word_spans(
    phonemes: Sequence[str],
    durations: np.ndarray,
    id_map: Mapping[str, Sequence[int]],
    hop: int,
    offset: int,
    rate: int,
) -> list[PhonemeWord]:
    """Each phoneme word of one run with its bounds in seconds, ``offset`` samples added."""
    edges = np.concatenate([[0], np.cumsum(np.asarray(durations, dtype=np.int64))]) * hop
    spans: list[tuple[int, int] | None] = []
    position = 2  # after BOS and its PAD
    for phoneme in phonemes:
        mapped = id_map.get(phoneme)
        if mapped is None:
            spans.append(None)
            continue
        spans.append((position, position + len(mapped) + 1))
        position += len(mapped) + 1
    words: list[PhonemeWord] = []
    current: list[int] = []
    for index, phoneme in enumerate([*phonemes, " "]):
        if phoneme != " ":
            current.append(index)
            continue
        kept = [k for k in current if spans[k] and plain_phonemes([phonemes[k]])]
        if kept:
            first, last = spans[kept[0]], spans[kept[-1]]
            assert first is not None and last is not None
            words.append(
                (
                    plain_phonemes([phonemes[k] for k in kept]),
                    float(offset + edges[first[0]]) / rate,
                    float(offset + edges[last[1]]) / rate,
                )
            )
        current = []
    return words


def match_words(alone: Sequence[str], phoneme_words: Sequence[str]) -> list[tuple[int, ...]]:
    """Groups ``(a, b, c, d)``: spoken words ``a..b`` are phoneme words ``c..d``, covering both
    in order; ``alone`` is each spoken word's plain phonemes said on its own. Empty when they
    cannot be paired."""
    from rapidfuzz.distance import Levenshtein

    n, m = len(alone), len(phoneme_words)
    best: dict[tuple[int, int], tuple[float, tuple[int, int] | None]] = {(0, 0): (0.0, None)}
    for i in range(n + 1):
        for j in range(m + 1):
            if (i, j) not in best:
                continue
            for di in range(1, min(_MOST, n - i) + 1):
                said = "".join(alone[i : i + di])
                for dj in range(1, min(_MOST, m - j) + 1):
                    heard = "".join(phoneme_words[j : j + dj])
                    cost = Levenshtein.normalized_distance(said, heard) + 0.2 * (di + dj - 2)
                    total = best[(i, j)][0] + cost
                    if (i + di, j + dj) not in best or total < best[(i + di, j + dj)][0]:
                        best[(i + di, j + dj)] = (total, (i, j))
    if n == 0 or m == 0 or (n, m) not in best:
        return []
    groups, at = [], (n, m)
    while at != (0, 0):
        before = best[at][1]
        assert before is not None
        groups.append((before[0], at[0], before[1], at[1]))
        at = before
    return groups[::-1]


def spoken_word_timings(
    spoken_words: Sequence[str], alone: Sequence[str], phoneme_words: Sequence[PhonemeWord]
) -> list[list[Any]] | None:
    """``[words, start_s, end_s]`` per group of spoken words, from the phoneme words' bounds;
    None when the words cannot be paired with the phoneme words."""
    groups = match_words(alone, [word for word, _, _ in phoneme_words])
    if not groups:
        return None
    return [
        [
            " ".join(spoken_words[a:b]),
            round(phoneme_words[c][1], 4),
            round(phoneme_words[d - 1][2], 4),
        ]
        for a, b, c, d in groups
    ]


def candidate_word_timings(
    spoken_words: Sequence[str],
    alone: Sequence[str],
    sentences: Sequence[Sequence[str]],
    runs: Sequence[tuple[np.ndarray, np.ndarray | None]],
    id_map: Mapping[str, Sequence[int]],
    pause: int,
    rate: int,
) -> list[list[Any]] | None:
    """The entries of one candidate made of ``runs`` (audio, frames per id), one per sentence's
    phonemes, joined by ``pause`` samples; None when a run's audio is not a whole number of its
    frames (then its words are aligned like any generator's)."""
    words: list[PhonemeWord] = []
    offset = 0
    for phonemes, (audio, durations) in zip(sentences, runs, strict=True):
        if durations is None:
            return None
        frames = np.asarray(durations, dtype=np.float64).reshape(-1)
        total = int(frames.sum())
        hop = len(audio) // total if total else 0
        if not hop or hop * total != len(audio):
            return None
        words += phoneme_word_spans(phonemes, frames, id_map, hop, offset, rate)
        offset += len(audio) + pause
    return spoken_word_timings(spoken_words, alone, words) if words else None
