"""One reading per doubtful word for the whole book, from the takes of all its lines.

While a word is in doubt, every line that says it has takes of each of its readings (the line's
other takes read it otherwise; :mod:`verified_tts.text.readings`). :func:`collect` gathers what
the WER verifier made of the word in each take: the word's own tokens' log-probability under
forced decoding (the rest of the line, whose noise differs from take to take, left out) and
whether the transcript holds the word (:mod:`verified_tts.pronounce.heard`). :func:`decide`
scores each reading by the share of its takes heard as the word (worth :data:`HEARD_WEIGHT`) plus
its word log-probability, both over every line, and keeps espeak-ng's own reading unless another
scores ``margin`` more. Where the written text does not hold the word as spoken (the normaliser's
"Missus" for "Mrs."), the line's mean log-probability stands in for the word's. The decision
keeps its evidence: who proposed each reading, how many takes and lines said it, what was heard,
how many lines' winning takes used it, and the best take of it for the review's player.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from verified_tts.pronounce.candidates import WordReadings
from verified_tts.pronounce.heard import heard_word, word_logprob

__all__ = ["HEARD_WEIGHT", "ReadingEvidence", "TakeEvidence", "WordDecision", "collect", "decide"]

HEARD_WEIGHT = 10.0  # a reading every take is heard as the word beats one none is, whatever else


@dataclass(frozen=True)
class TakeEvidence:
    """What the WER verifier made of one doubtful word in one take."""

    line: str  # the line's key
    take: int  # the take's index in its line
    reading: str  # the phonemes the take gave the word ("" for espeak-ng's own)
    word_logprob: float | None  # None: the reference does not hold the word as spoken
    logprob: float  # the line's mean reference log-probability
    heard: bool
    transcript: str
    won: bool  # the line's winning take
    audio: str | None = None  # store-relative path, when kept


@dataclass(frozen=True)
class ReadingEvidence:
    """One reading of a word, over every take that said it."""

    phonemes: str  # espeak-ng IPA ("" never: espeak-ng's own reading is written out)
    sources: tuple[str, ...]
    takes: int
    lines: int
    heard_word: float  # share of takes whose transcript holds the word
    word_logprob: float | None
    logprob: float  # mean line log-probability
    score: float
    wins: int  # lines whose winning take said it
    heard: tuple[str, ...] = ()  # a few transcripts
    example: Mapping[str, Any] | None = None  # the best take: line, take, audio

    @property
    def wer(self) -> float:  # the lexicon file's comment reads it beside the log-probability
        return 1.0 - self.heard_word


@dataclass(frozen=True)
class WordDecision:
    """The book's reading of one word, with the evidence for each reading."""

    word: str
    count: int
    why: str
    example: str
    chosen: str  # phonemes
    chosen_sources: tuple[str, ...]
    changed: bool  # False: espeak-ng's own reading kept
    readings: tuple[ReadingEvidence, ...] = field(default=())
    review: str | None = None  # the phonemes a lexicon entry added in review gives it instead

    @property
    def phonemes(self) -> str:
        """The reading the book gets: the review's where it chose one, else the verifiers'."""
        return self.review if self.review is not None else self.chosen

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def collect(results: Iterable[Any], words: Sequence[str]) -> dict[str, list[TakeEvidence]]:
    """Per doubtful word (as the readings spell it), the evidence of every take of every line
    whose takes read it in more than one way (``results``: the render's UtteranceResults)."""
    wanted = set(words)
    out: dict[str, list[TakeEvidence]] = defaultdict(list)
    for result in results:
        for candidate in result.candidates:
            label = candidate.info.get("reading") or {}
            for word, phonemes in (label.get("words") or {}).items():
                if word not in wanted:
                    continue
                transcript = str(candidate.detail.get("transcript", ""))
                out[word].append(TakeEvidence(
                    line=result.utterance.key, take=candidate.index, reading=phonemes or "",
                    word_logprob=word_logprob(candidate.detail, word),
                    logprob=float(candidate.metrics.get("asr_logprob", -99.0)),
                    heard=heard_word(transcript, word), transcript=transcript,
                    won=candidate.index == result.winner, audio=candidate.audio,
                ))  # fmt: skip
    return dict(out)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _evidence(
    phonemes: str, sources: tuple[str, ...], takes: Sequence[TakeEvidence], by_word: bool
) -> ReadingEvidence:
    heard = _mean([float(t.heard) for t in takes]) if takes else 0.0
    local = [t.word_logprob for t in takes if t.word_logprob is not None]
    word = _mean(local) if local else None
    line = _mean([t.logprob for t in takes]) if takes else -99.0
    fit = (word if word is not None else -99.0) if by_word else line
    best = max(takes, key=lambda t: (t.heard, t.word_logprob or t.logprob), default=None)
    example = None
    if best is not None:
        example = {"line": best.line, "take": best.take, "audio": best.audio}
    return ReadingEvidence(
        phonemes=phonemes, sources=sources, takes=len(takes),
        lines=len({t.line for t in takes}), heard_word=round(heard, 3),
        word_logprob=None if word is None else round(word, 4), logprob=round(line, 4),
        score=round(HEARD_WEIGHT * heard + fit, 4) if takes else float("-inf"),
        wins=sum(t.won for t in takes), heard=tuple(dict.fromkeys(t.transcript for t in takes))[:3],
        example=example,
    )  # fmt: skip


def decide(
    word: WordReadings,
    takes: Sequence[TakeEvidence],
    margin: float,
    example: str = "",
) -> WordDecision:
    """The book's reading of ``word`` from ``takes`` (its evidence in every line): the best
    scoring reading, espeak-ng's own (the first) unless another scores ``margin`` more."""
    by_reading: dict[str, list[TakeEvidence]] = defaultdict(list)
    for take in takes:
        by_reading[take.reading].append(take)
    own = word.readings[0].phonemes
    # the word's own tokens where every reading's takes have them, else the whole line
    by_word = all(any(t.word_logprob is not None for t in by_reading.get(key, []))
                  for key in by_reading)  # fmt: skip
    evidence = [
        _evidence(v.phonemes, v.sources, by_reading.get("" if k == 0 else v.phonemes, []),
                  by_word)
        for k, v in enumerate(word.readings)
    ]  # fmt: skip
    best = max(range(len(evidence)), key=lambda k: (evidence[k].score, -k))
    if best and not evidence[best].score > evidence[0].score + margin:
        best = 0
    return WordDecision(
        word=word.word, count=word.count, why=word.why, example=example,
        chosen=evidence[best].phonemes if best else own, chosen_sources=evidence[best].sources,
        changed=best != 0, readings=tuple(evidence),
    )  # fmt: skip


def chosen_phonemes(decisions: Iterable[WordDecision]) -> dict[str, str]:
    """Word -> the phonemes a lexicon gives it ("" where espeak-ng's own reading stays)."""
    return {d.word: d.chosen if d.changed else "" for d in decisions}
