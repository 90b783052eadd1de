"""Which reference words belong to which 30 s window of a clip longer than Whisper hears at once.

A clip longer than 30 s is cut into windows at its quiet moments (:func:`split_windows`), and each
window's share of the reference is force-decoded against it. Sharing the words in proportion to
the windows' durations puts a word on the wrong side of a cut whenever the reading speeds up or
slows down, and that word then scores as if it were missing from both windows: a false alarm on
exactly the long sentences a book has. :func:`share_words` cuts the reference where the windows'
own transcripts say the cut fell, by aligning the joined transcripts to the reference words
(jiwer), and falls back to the durations only where a window heard nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from verifiers.wer_common import SAMPLE_RATE, WINDOW_SAMPLES

__all__ = ["SPLIT_SEARCH", "share_words", "split_windows"]

SPLIT_SEARCH = (10 * SAMPLE_RATE, 20 * SAMPLE_RATE)  # where a long clip may be cut


def _plain(word: str) -> str:
    return re.sub(r"[^\w']+", "", word.lower())


def _by_duration(count: int, lengths: Sequence[float]) -> list[int]:
    share = np.cumsum(lengths) / max(float(np.sum(lengths)), 1.0)
    return [0, *np.round(share * count).astype(int).tolist()]


def share_words(
    words: Sequence[str], transcripts: Sequence[str], lengths: Sequence[float]
) -> list[int]:
    """Word bounds (``len(transcripts) + 1`` of them, from 0 to ``len(words)``): window k gets
    ``words[bounds[k]:bounds[k + 1]]``."""
    import jiwer

    fallback = _by_duration(len(words), lengths)
    ref = [_plain(w) or "_" for w in words]
    heard = [[_plain(w) or "_" for w in t.split()] for t in transcripts]
    if not ref or any(not h for h in heard):
        return fallback
    hyp = [w for h in heard for w in h]
    chunks = jiwer.process_words(" ".join(ref), " ".join(hyp)).alignments[0]
    # reference position aligned to each transcript position (insertions take the next word)
    at = np.zeros(len(hyp) + 1, dtype=int)
    for chunk in chunks:
        for offset, h in enumerate(range(chunk.hyp_start_idx, chunk.hyp_end_idx)):
            if chunk.type == "insert":
                at[h] = chunk.ref_start_idx
            else:
                at[h] = min(chunk.ref_start_idx + offset, chunk.ref_end_idx - 1)
    at[len(hyp)] = len(ref)
    bounds = [0]
    ends = np.cumsum([len(h) for h in heard])
    for end in ends[:-1]:
        # the cut sits after the reference word that the window's last heard word matched
        bounds.append(int(max(bounds[-1], min(len(ref), at[end - 1] + 1))))
    bounds.append(len(ref))
    return bounds


def split_windows(audio: np.ndarray) -> list[np.ndarray]:
    """A clip of up to 30 s as is; a longer one cut at its quietest 100 ms between 10 and 20 s
    into each remaining stretch, so no window is longer than 30 s and cuts fall in pauses.

    Windows stay well under 30 s because Whisper without timestamps, given a window full of
    speech, tends to stop after the first sentence (tiny.en did on a 30 s espeak reading).
    """
    pieces: list[np.ndarray] = []
    start = 0
    frame = SAMPLE_RATE // 10
    while audio.size - start > WINDOW_SAMPLES:
        low, high = start + SPLIT_SEARCH[0], start + SPLIT_SEARCH[1]
        energy = np.square(audio[low:high]).reshape(-1, frame).sum(axis=1)
        cut = low + int(np.argmin(energy)) * frame + frame // 2
        pieces.append(audio[start:cut])
        start = cut
    pieces.append(audio[start:])
    return pieces
