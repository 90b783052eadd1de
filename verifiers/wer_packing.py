"""Packing short clips of different utterances into shared 30 s Whisper windows.

Whisper's encoder always hears 30 s, so a 2.5 s candidate scored alone pays for twelve times the
audio it holds. This module lays several clips out in one window, separated by silence, and takes
the window's timestamped transcript apart again; :mod:`verifiers.wer` does the model calls. The
layout follows two rules that keep the comparison between candidates of one utterance fair:
candidates of one utterance (clips with the same text) never share a window, because the decoder
would hear the repeated words in its context and an error in one candidate could hide behind
another; and the utterances of a group sit in the same order at the same offsets in every window
of the group, one candidate each, so every candidate of an utterance is heard after the same
preceding text and silence. Utterances are grouped by how many candidates they have, in the order
they first appear, until the window's seconds, clip count or token budget is full; an utterance
longer than half a window is not packed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PackedWindow",
    "Slot",
    "assemble",
    "assign_segments",
    "assign_words",
    "plan_windows",
    "tail",
    "tidy",
    "timestamped_segments",
    "word_times",
]


_SLACK = 0.3  # seconds a transcript segment may run into a neighbouring clip


@dataclass(frozen=True)
class Slot:
    """One clip's place in a packed window, in samples."""

    clip: int  # index of the clip in the scored batch
    start: int
    end: int


@dataclass(frozen=True)
class PackedWindow:
    """Clips of different utterances, in layout order, that share one encoder row."""

    slots: tuple[Slot, ...]
    samples: int  # end of the last slot


def plan_windows(
    texts: Sequence[str],
    sizes: Sequence[int],
    tokens: Sequence[int],
    *,
    capacity: int,
    gap: int,
    max_clips: int,
    max_tokens: int,
) -> tuple[list[PackedWindow], list[int]]:
    """Lay the clips out in windows; returns (windows, clips left to score alone).

    ``texts`` identify the utterance of each clip (candidates of one utterance share it),
    ``sizes`` are clip lengths in samples and ``tokens`` the reference token counts. Every clip
    lands in exactly one window or in the returned list.
    """
    order: dict[str, list[int]] = {}
    for index, text in enumerate(texts):
        order.setdefault(text, []).append(index)
    alone: list[int] = []
    by_count: dict[int, list[list[int]]] = {}
    for members in order.values():
        if max(sizes[i] for i in members) > capacity // 2:
            alone.extend(members)
        else:
            by_count.setdefault(len(members), []).append(members)
    windows: list[PackedWindow] = []
    for count, utterances in by_count.items():
        group: list[list[int]] = []
        used = used_tokens = 0
        for members in [*utterances, None]:
            if members is not None:
                width = max(sizes[i] for i in members)
                need = width + (gap if group else 0)
                room = used + need <= capacity and len(group) < max_clips
                room = room and used_tokens + tokens[members[0]] <= max_tokens
                if room:
                    group.append(members)
                    used += need
                    used_tokens += tokens[members[0]]
                    continue
            windows.extend(_layers(group, count, sizes, gap))
            group, used, used_tokens = [], 0, 0
            if members is not None:
                group = [members]
                used, used_tokens = max(sizes[i] for i in members), tokens[members[0]]
    alone.sort()
    return windows, alone


def _layers(
    group: list[list[int]], count: int, sizes: Sequence[int], gap: int
) -> list[PackedWindow]:
    """One window per candidate: candidate k of every utterance of the group, at fixed offsets
    (each utterance's slot is as wide as its longest candidate)."""
    if not group:
        return []
    offsets, position = [], 0
    for members in group:
        offsets.append(position)
        position += max(sizes[i] for i in members) + gap
    windows = []
    for k in range(count):
        slots = tuple(
            Slot(members[k], offset, offset + sizes[members[k]])
            for members, offset in zip(group, offsets, strict=True)
        )
        windows.append(PackedWindow(slots, slots[-1].end))
    return windows


def tail(window: PackedWindow, first: int) -> PackedWindow:
    """The window's slots from ``first`` on, moved to start at 0 (same gaps between them)."""
    shift = window.slots[first].start
    slots = tuple(Slot(s.clip, s.start - shift, s.end - shift) for s in window.slots[first:])
    return PackedWindow(slots, window.samples - shift)


def assemble(window: PackedWindow, audio: Sequence[np.ndarray]) -> np.ndarray:
    """The window's audio: every clip at its offset, silence elsewhere."""
    out = np.zeros(window.samples, dtype=np.float32)
    for slot in window.slots:
        out[slot.start : slot.end] = audio[slot.clip]
    return out


def timestamped_segments(
    tokens: Sequence[int], timestamp_begin: int, seconds_per_step: float = 0.02
) -> list[tuple[float, float, list[int]]]:
    """(start s, end s, text tokens) of each segment of a timestamped Whisper decode. Text after
    the last timestamp gets an open end (infinity)."""
    segments: list[tuple[float, float, list[int]]] = []
    start, text = 0.0, []
    for token in tokens:
        if token >= timestamp_begin:
            time = (token - timestamp_begin) * seconds_per_step
            if text:
                segments.append((start, time, text))
                text = []
            start = time
        else:
            text.append(int(token))
    if text:
        segments.append((start, float("inf"), text))
    return segments


def _owner(start: float, end: float, bounds: Sequence[tuple[float, float]]) -> int | None:
    """The slot whose clip a time span covers, or None when it covers speech of more than one.

    Whisper's segment timestamps are coarse (a segment often starts where the previous one
    ended, in the silence before its clip, or ends a little into the next clip), so overlaps
    under ``_SLACK`` seconds do not count; a span that overlaps no clip goes to the nearest."""
    end = min(end, bounds[-1][1])  # an unclosed last segment runs to the end of the window
    overlaps = [min(end, b) - max(start, a) for a, b in bounds]
    covered = [i for i, overlap in enumerate(overlaps) if overlap > _SLACK]
    if len(covered) > 1:
        return None
    if covered:
        return covered[0]
    middle = (start + end) / 2
    return int(np.argmin([abs(middle - (a + b) / 2) for a, b in bounds]))


def assign_segments(
    segments: Sequence[tuple[float, float, list[int]]], bounds: Sequence[tuple[float, float]]
) -> tuple[list[list[int]], bool]:
    """Text tokens per slot from timestamped segments; the flag is False when some segment
    spans more than one slot (then the caller splits by word times instead)."""
    per_slot: list[list[int]] = [[] for _ in bounds]
    for start, end, text in segments:
        owner = _owner(start, end, bounds)
        if owner is None:
            return per_slot, False
        per_slot[owner].extend(text)
    return per_slot, True


def assign_words(
    words: Sequence[tuple[str, float, float]], bounds: Sequence[tuple[float, float]]
) -> list[str]:
    """Words (text, start s, end s) to slots by their midpoint: the slot whose share of the
    window (clip plus half of the silence on each side) holds it."""
    edges = [(bounds[i][1] + bounds[i + 1][0]) / 2 for i in range(len(bounds) - 1)]
    per_slot: list[list[str]] = [[] for _ in bounds]
    for word, start, end in words:
        middle = (start + end) / 2
        per_slot[int(np.searchsorted(edges, middle))].append(word)
    return [tidy("".join(words)) for words in per_slot]


def tidy(text: str) -> str:
    """A slot's transcript without the punctuation that Whisper put after the previous clip's
    last word but timed into this clip's stretch (". Cats and dogs ...")."""
    return text.strip().lstrip(".,;:!?").strip()


def word_times(
    text_tokens: Sequence[int],
    alignments: Sequence[tuple[int, int]],
    split: Callable[[list[int]], tuple[list[str], list[list[int]]]],
    eot: int,
    seconds_per_step: float = 0.02,
) -> list[tuple[str, float, float]]:
    """Word start/end times from CTranslate2's cross-attention alignment of ``text_tokens``,
    the way faster-whisper computes word timestamps (jumps of the DTW path between tokens)."""
    words, word_tokens = split([*text_tokens, eot])
    if len(word_tokens) <= 1:
        return []
    text_indices = np.array([pair[0] for pair in alignments])
    time_indices = np.array([pair[1] for pair in alignments])
    boundaries = np.pad(np.cumsum([len(t) for t in word_tokens[:-1]]), (1, 0))
    jumps = np.pad(np.diff(text_indices), (1, 0), constant_values=1).astype(bool)
    jump_times = time_indices[jumps] * seconds_per_step
    starts = jump_times[boundaries[:-1]]
    ends = jump_times[boundaries[1:]]
    return [
        (word, float(start), float(end))
        for word, start, end in zip(words[:-1], starts, ends, strict=False)
    ]
