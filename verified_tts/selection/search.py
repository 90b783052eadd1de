"""The search settings and the partial-transcript check: what ``--search`` and ``--budget`` set.

:class:`SearchOptions` is the ``[search]`` table: best-of-N
(:mod:`verified_tts.selection.best_of_n`) or a verifier-guided beam search over codec-LM outputs
(:mod:`verified_tts.selection.beam_search`), its width, expansions and chunk, the process verifiers
that steer it and a budget of audio seconds generated per utterance (best-of-N with a budget samples
only the candidates whose worst case fits). :func:`parse_arm` reads an A/B arm (``best-of-n:8``,
``beam:2x4``).

The partial-transcript check (:func:`prefix_error`): the partial audio ends wherever the chunk
ended, possibly inside a word, and the model may speak slower or faster than the text's length
suggests. So the transcript's last word is dropped, and the rest is compared with the reference's
first k words for every k within two words of its length, keeping the best alignment: a skipped or
wrong word costs one error per transcript word, a different speaking rate costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from verified_tts.errors import UserError
from verified_tts.options.run import PROCESS_VERIFIERS, STRATEGIES, SearchOptions

__all__ = [
    "PROCESS_VERIFIERS",
    "STRATEGIES",
    "SearchOptions",
    "parse_arm",
    "prefix_error",
]

def parse_arm(text: str) -> tuple[str, int, int]:
    """``best-of-n:8`` -> ("best-of-n", 8, 1); ``beam:2x4`` -> ("beam", 2, 4) (width x E)."""
    strategy, _, size = text.partition(":")
    try:
        if strategy == "best-of-n":
            n = int(size)
            if n >= 1:
                return strategy, n, 1
        elif strategy == "beam":
            width, _, expansions = size.partition("x")
            w, e = int(width), int(expansions)
            if w >= 1 and e >= 1:
                return strategy, w, e
    except ValueError:
        pass
    raise UserError(f"--arm '{text}' is not an arm: write best-of-n:N or beam:WxE (e.g. beam:2x4)")


def _edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def prefix_error(text: str, transcript: str) -> float:
    """Errors per transcript word of a partial transcript against the start of ``text``.

    See the module docstring: the last transcript word is dropped (it may be cut), the best of
    the reference prefixes within two words of the transcript's length is kept. Nothing heard
    yet is no error (silence is the speaker and final checks' business).
    """
    from verifiers.textnorm import normalize

    heard = normalize(transcript).split()[:-1]
    if not heard:
        return 0.0
    words = normalize(text).split()
    lengths = range(max(0, len(heard) - 2), min(len(words), len(heard) + 2) + 1)
    best = min((_edit_distance(words[:k], heard) for k in lengths), default=len(heard))
    return best / len(heard)
