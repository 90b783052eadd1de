"""Whisper-style English text normalisation and the word error rate computed over it.

An ASR transcript and the book's text differ in ways a listener never hears: case, punctuation,
"Dr." against "doctor", "5" against "five", "colour" against "color". Counting those as errors
would make the WER verifier reward candidates for the ASR model's spelling habits, so both sides
go through the normaliser OpenAI published with Whisper (the ``whisper-normalizer`` package:
spelled-out numbers become digits, titles are expanded, British spellings are unified,
punctuation and case are dropped) plus a few extra rules for abbreviations and clock times that
the text front-end expands before synthesis. :func:`word_error_rate` then runs jiwer over the two
normalised word sequences.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import jiwer

__all__ = ["normalize", "word_error_counts", "word_error_rate"]

# Abbreviations the front-end reads out in full: map both the written and the spoken form to
# one token sequence, so that neither what the TTS said nor how Whisper spelled it is an error.
_ABBREVIATIONS = (
    (re.compile(r"\be\.\s?g\.", re.IGNORECASE), " for example "),
    (re.compile(r"\bi\.\s?e\.", re.IGNORECASE), " that is "),
    (re.compile(r"\betc\.?(?=\W|$)", re.IGNORECASE), " et cetera "),
    (re.compile(r"\bvs\.?(?=\s)", re.IGNORECASE), " versus "),
    (re.compile(r"\bokay\b", re.IGNORECASE), " ok "),
    # "3:30" -> "330", which is what Whisper's number normaliser makes of "three thirty".
    (re.compile(r"\b(\d{1,2}):(\d{2})\b"), r"\1\2"),
)
# After normalisation "a.m." reads "a m" and "p.m." reads "p m"; Whisper also writes "am"/"pm".
_MERIDIEM = re.compile(r"\b([ap]) m\b")


@lru_cache(maxsize=1)
def _whisper_normalizer() -> Any:
    # Built once: its constructor compiles a few hundred regular expressions and loads the
    # British-to-American spelling table.
    from whisper_normalizer.english import EnglishTextNormalizer

    return EnglishTextNormalizer()


def normalize(text: str) -> str:
    """Normalise English text for WER: lower case, no punctuation, numbers as digits."""
    for pattern, replacement in _ABBREVIATIONS:
        text = pattern.sub(replacement, text)
    text = _whisper_normalizer()(text)
    text = _MERIDIEM.sub(r"\1m", text)
    # the normaliser keeps "." and "$" for numbers like "$5.20"; a stray one alone is no word
    return " ".join(word for word in text.split() if any(c.isalnum() for c in word))


def _joined(words: list[str], other: set[str]) -> list[str]:
    """``words`` with each pair of neighbours that the other side writes as one word joined:
    a compound is heard the same with or without its space or hyphen ("show-places",
    "showplaces"; "gaminlike", "gamin like")."""
    out: list[str] = []
    index = 0
    while index < len(words):
        if index + 1 < len(words) and words[index] + words[index + 1] in other:
            out.append(words[index] + words[index + 1])
            index += 2
        else:
            out.append(words[index])
            index += 1
    return out


def _pair(reference: str, hypothesis: str) -> tuple[str, str]:
    """Both texts normalised, compounds written alike on both sides."""
    ref, hyp = normalize(reference).split(), normalize(hypothesis).split()
    ref = _joined(ref, set(hyp))
    hyp = _joined(hyp, set(ref))
    return " ".join(ref), " ".join(hyp)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER of ``hypothesis`` against ``reference``, both normalised with :func:`normalize`.

    An empty (or punctuation-only) reference has no words to get wrong: the rate is 0.0 when the
    hypothesis is empty too and 1.0 otherwise (anything said is wrong), rather than jiwer's
    error or an unbounded insertion count. The rate is otherwise not capped: a hypothesis with
    many insertions (a model babbling on) can score above 1.0.
    """
    ref, hyp = _pair(reference, hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    if not hyp:
        return 1.0  # every reference word deleted
    return float(jiwer.wer(ref, hyp))


def word_error_counts(reference: str, hypothesis: str) -> dict[str, int]:
    """Inserted, deleted and substituted words of the alignment of ``hypothesis`` to
    ``reference`` (both normalised). Insertions say the audio holds words the text does not (a
    repeat, babble); deletions say words are missing (a skip, a cut ending)."""
    ref, hyp = _pair(reference, hypothesis)
    if not ref or not hyp:
        return {"insertions": len(hyp.split()), "deletions": len(ref.split()), "substitutions": 0}
    out = jiwer.process_words(ref, hyp)
    return {
        "insertions": int(out.insertions),
        "deletions": int(out.deletions),
        "substitutions": int(out.substitutions),
    }
