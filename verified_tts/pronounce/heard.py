"""What an ASR model made of one word of a take: how likely it found the word, whether it heard it.

Forced decoding scores every token of a take's reference (the WER verifier's detail keeps them as
``tokens`` and ``token_logprobs``); the tokens of one word, found as
:func:`~verified_tts.selection.consensus.token_words` counts words, say how likely the model found
that word where the take says it, apart from the rest of the sentence (whose noise differs from
take to take). The transcript says whether the model heard the word at all. Both are what the
book-level decision weighs, per reading, over every occurrence of a word.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["heard_word", "word_logprob"]

_EDGES = "\"'“”‘’()[],.;:!?-—"


def _plain(word: str) -> str:
    return word.strip(_EDGES).lower().replace("’", "'")


def word_logprob(detail: Mapping[str, Any], word: str) -> float | None:
    """The mean log-probability of the tokens of ``word``'s occurrences in a take's reference
    (None when the detail has no tokens or the reference does not hold the word)."""
    from verified_tts.selection.consensus import token_words

    logprobs = detail.get("token_logprobs") or []
    tokens = token_words(detail)
    if not tokens or len(tokens) != len(logprobs):
        return None
    target = _plain(word)
    found = [float(lp) for (index, said), lp in zip(tokens, logprobs, strict=True)
             if index is not None and _plain(said) == target]  # fmt: skip
    return sum(found) / len(found) if found else None


def heard_word(transcript: str, word: str) -> bool:
    """Whether ``transcript`` holds ``word`` as a word, both normalised as the WER verifier
    normalises them (case, punctuation and spelling variants set aside)."""
    from verifiers.textnorm import normalize

    target = normalize(word)
    return bool(target) and f" {target} " in f" {normalize(transcript)} "
