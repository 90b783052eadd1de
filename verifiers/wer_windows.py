"""Which reference words belong to which 30 s window of a clip longer than Whisper hears at once.

A clip longer than 30 s is cut into windows at its quiet moments (:mod:`verifiers.wer`), and each
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

__all__ = ["share_words"]


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
