"""Fault injection: the ways LLM TTS fails, made on purpose so the truth is known.

Text faults (``skip``, ``repeat``, ``substitute``) alter the text the generator is given; the
calibration synthesises the altered text with the clean candidate's seed and verifies the audio
against the *original* text, so the only difference from the clean candidate is the fault. Audio
faults edit a clean candidate's audio: ``truncate`` cuts the last 25-50 % of the speech, ``silence``
inserts a pause of 1.5-2.5 s at the quietest point mid-sentence, ``babble`` appends (or inserts)
1.2-2 s of another sentence's speech, ``voice`` shifts pitch and formants together by 4-7
semitones (resample, then WSOLA back to the original length), and ``clip`` drives the level 2-4x
into hard clipping. Every function is pure given its ``numpy.random.Generator`` and returns the
edited text or audio plus a short description of what it did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from verified_tts.options.run import AUDIO_FAULTS, FAULT_KINDS, TEXT_FAULTS, parse_kinds

__all__ = [
    "AUDIO_FAULTS",
    "FAULT_KINDS",
    "TEXT_FAULTS",
    "AudioFault",
    "TextFault",
    "audio_fault",
    "content_words",
    "parse_kinds",
    "speech_span",
    "text_fault",
]


# Function words: a skipped "the" is a fault a listener may not notice; a skipped noun is not.
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "will",
        "with",
        "you",
        "your",
        "into",
        "out",
        "up",
        "down",
        "off",
        "over",
    }
)
_CORE = re.compile(r"^(\W*)(.*?)(\W*)$")


@dataclass(frozen=True)
class TextFault:
    kind: str
    text: str  # the altered text the generator is asked to say
    description: str


@dataclass(frozen=True)
class AudioFault:
    kind: str
    audio: np.ndarray
    description: str


def _core(word: str) -> str:
    return _CORE.match(word).group(2)  # type: ignore[union-attr]


def content_words(words: Sequence[str]) -> list[int]:
    """Indices of the words worth a fault: alphabetic, three letters or more, no function word."""
    return [
        i
        for i, word in enumerate(words)
        if len(_core(word)) >= 3 and _core(word).isalpha() and _core(word).lower() not in _STOPWORDS
    ]


def text_fault(
    kind: str, text: str, rng: np.random.Generator, word_pool: Sequence[str] = ()
) -> TextFault:
    """Alter ``text`` by ``kind`` (skip, repeat or substitute). ``word_pool`` holds content words
    of other sentences for ``substitute``. ValueError when the text is too short for the fault."""
    words = text.split()
    content = content_words(words)
    if kind == "skip":
        if not content or len(words) < 2:
            raise ValueError(f"no content word to skip in {text!r}")
        i = int(rng.choice(content))
        lead, _, tail = _CORE.match(words[i]).groups()  # type: ignore[union-attr]
        kept = [*words[:i], *words[i + 1 :]]
        if tail and i > 0:  # keep the sentence's punctuation where it was
            kept[i - 1] = kept[i - 1] + tail
        return TextFault(kind, " ".join(kept), f"'{_core(words[i])}' left out")
    if kind == "repeat":
        if len(words) < 3:
            raise ValueError(f"too few words to repeat a phrase in {text!r}")
        length = int(rng.integers(2, min(4, len(words) - 1) + 1))
        start = int(rng.integers(0, len(words) - length + 1))
        phrase = [_core(w) for w in words[start : start + length]]
        altered = [*words[:start], *phrase, *words[start:]]
        return TextFault(kind, " ".join(altered), f"'{' '.join(phrase)}' said twice")
    if kind == "substitute":
        if not content:
            raise ValueError(f"no content word to substitute in {text!r}")
        i = int(rng.choice(content))
        old = _core(words[i]).lower()
        choices = sorted({w.lower() for w in word_pool if w.lower() != old and w.isalpha()})
        if not choices:
            raise ValueError("no other words to substitute with: give more sentences")
        new = str(rng.choice(choices))
        lead, _, tail = _CORE.match(words[i]).groups()  # type: ignore[union-attr]
        altered = [*words[:i], lead + new + tail, *words[i + 1 :]]
        return TextFault(kind, " ".join(altered), f"'{old}' read as '{new}'")
    raise ValueError(f"{kind!r} is not a text fault: choose from {', '.join(TEXT_FAULTS)}")


def speech_span(
    audio: np.ndarray, sample_rate: int, threshold_dbfs: float = -45.0
) -> tuple[int, int]:
    """(first, last+1) sample of the speech: 20 ms frames louder than ``threshold_dbfs``."""
    frame = max(1, sample_rate // 50)
    count = audio.size // frame
    if count == 0:
        return 0, audio.size
    rms = np.sqrt(np.mean(np.square(audio[: count * frame].reshape(count, frame)), axis=1))
    voiced = np.flatnonzero(rms >= 10.0 ** (threshold_dbfs / 20.0))
    if voiced.size == 0:
        return 0, audio.size
    return int(voiced[0]) * frame, min(audio.size, (int(voiced[-1]) + 1) * frame)


def _quietest_point(audio: np.ndarray, sample_rate: int, low: int, high: int) -> int:
    """Centre of the quietest 20 ms between samples ``low`` and ``high``: a pause between words."""
    frame = max(1, sample_rate // 50)
    count = max(1, (high - low) // frame)
    window = audio[low : low + count * frame]
    if window.size < frame:
        return (low + high) // 2
    energy = np.square(window[: (window.size // frame) * frame]).reshape(-1, frame).sum(axis=1)
    return low + int(np.argmin(energy)) * frame + frame // 2


def _fade(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """5 ms fade-out, so a cut ends without a click that is not part of the fault."""
    out = audio.copy()
    n = min(out.size, max(1, sample_rate // 200))
    out[-n:] *= np.linspace(1.0, 0.0, n, dtype=np.float32)
    return out


def _shift(audio: np.ndarray, sample_rate: int, semitones: float) -> np.ndarray:
    """Pitch and formants up or down by ``semitones``, same length: resample, then WSOLA."""
    from audiotsm import wsola
    from audiotsm.io.array import ArrayReader, ArrayWriter

    from verified_tts.audio import resample

    factor = Fraction(2.0 ** (semitones / 12.0)).limit_denominator(50)
    # playing ``factor`` faster raises every frequency by it and shortens the clip by it
    shifted = resample(audio, factor.numerator, factor.denominator)
    frame = 2 ** max(8, round(np.log2(0.046 * sample_rate)))
    padded = np.concatenate([shifted, np.zeros(2 * frame, dtype=np.float32)])
    writer = ArrayWriter(1)
    speed = shifted.size / audio.size  # < 1 slows down: back to the original length
    wsola(1, speed=speed, frame_length=frame).run(ArrayReader(padded.reshape(1, -1)), writer)
    out = np.asarray(writer.data, dtype=np.float32).reshape(-1)[: audio.size]
    if out.size < audio.size:
        out = np.concatenate([out, np.zeros(audio.size - out.size, dtype=np.float32)])
    return out


def audio_fault(
    kind: str,
    audio: np.ndarray,
    sample_rate: int,
    rng: np.random.Generator,
    other: np.ndarray | None = None,
) -> AudioFault:
    """Edit a clean clip by ``kind``; ``babble`` takes its speech from ``other`` (another
    sentence's clean audio at the same rate)."""
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    first, last = speech_span(audio, sample_rate)
    if kind == "truncate":
        share = float(rng.uniform(0.25, 0.5))
        cut = first + int(round((last - first) * (1.0 - share)))
        return AudioFault(kind, _fade(audio[:cut], sample_rate), f"last {share:.0%} cut off")
    if kind == "silence":
        seconds = float(rng.uniform(1.5, 2.5))
        span = last - first
        at = _quietest_point(audio, sample_rate, first + int(0.3 * span), first + int(0.7 * span))
        gap = np.zeros(int(round(seconds * sample_rate)), dtype=np.float32)
        out = np.concatenate([audio[:at], gap, audio[at:]])
        return AudioFault(kind, out, f"{seconds:.1f} s of silence at {at / sample_rate:.2f} s")
    if kind == "babble":
        if other is None or other.size == 0:
            raise ValueError("babble needs another clip to take speech from")
        other = np.asarray(other, dtype=np.float32).reshape(-1)
        o_first, o_last = speech_span(other, sample_rate)
        seconds = float(rng.uniform(1.2, 2.0))
        piece = other[o_first : min(o_last, o_first + int(seconds * sample_rate))]
        piece = _fade(piece, sample_rate)
        if rng.random() < 0.5:  # an LLM TTS that does not stop: speech after the end
            out = np.concatenate([audio[:last], piece, audio[last:]])
            where = "appended"
        else:
            span = last - first
            at = _quietest_point(
                audio, sample_rate, first + int(0.3 * span), first + int(0.7 * span)
            )
            out = np.concatenate([audio[:at], piece, audio[at:]])
            where = f"inserted at {at / sample_rate:.2f} s"
        return AudioFault(kind, out, f"{piece.size / sample_rate:.1f} s of other speech {where}")
    if kind == "voice":
        semitones = float(rng.uniform(4.0, 7.0)) * (1 if rng.random() < 0.5 else -1)
        out = _shift(audio, sample_rate, semitones)
        return AudioFault(kind, out, f"pitch and formants shifted {semitones:+.1f} semitones")
    if kind == "clip":
        gain = float(rng.uniform(2.0, 4.0))
        peak = float(np.max(np.abs(audio))) or 1.0
        out = np.clip(audio / peak * gain, -1.0, 1.0).astype(np.float32)
        return AudioFault(kind, out, f"driven {gain:.1f}x past full scale")
    raise ValueError(f"{kind!r} is not an audio fault: choose from {', '.join(AUDIO_FAULTS)}")
