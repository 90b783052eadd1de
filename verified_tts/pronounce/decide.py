"""The book-level decision: one reading per doubtful word, chosen by the verifier, with evidence.

A word is doubtful when the book uses it, English rarely does (Zipf frequency below
``max_zipf``), no producer's lexicon entry covers it, and espeak-ng either guessed it by rule or
reads it differently from every dictionary that knows it (:mod:`verified_tts.pronounce.sources`).
Each doubtful word's readings are spoken in the word's own first sentence(s) of the book by the
generator (``seeds`` takes per reading, the seeds shared across readings so that only the
pronunciation differs), the WER verifier scores every take against the sentence, and the reading
whose takes the verifier finds most likely (mean reference log-probability, then WER) is the
book's: applied to every occurrence through a lexicon, never one reading in chapter 1 and
another in chapter 9. espeak-ng's own reading wins unless another beats it by ``margin``. The
evidence (sources, phonemes, what the ASR heard in each take) goes with the decision.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from verified_tts.pronounce.sources import Variant, available_sources, proposals

__all__ = ["DecideOptions", "Decision", "Evidence", "choose", "decide", "doubtful_words", "summary"]


@dataclass(frozen=True)
class DecideOptions:
    max_zipf: float = 3.0  # rarer than about once per million words
    seeds: int = 2  # takes per reading
    examples: int = 1  # sentences per word
    window: int = 5  # words of the sentence kept either side of the word (0: the whole sentence)
    max_readings: int = 4  # espeak-ng's and at most three others
    margin: float = 0.05  # how much likelier (mean log-prob) another reading must be
    top: int = 200  # most doubtful words per book
    sources: tuple[str, ...] | None = None  # None: every installed source


@dataclass(frozen=True)
class Evidence:
    """One reading's takes: what the ASR heard and how likely it found the sentence."""

    phonemes: str
    sources: tuple[str, ...]
    logprob: float
    wer: float
    heard: tuple[str, ...]  # the transcripts
    heard_word: float  # share of takes whose transcript contains the word


@dataclass(frozen=True)
class Decision:
    word: str
    count: int
    why: str  # "by rule" or "dictionaries disagree"
    example: str
    chosen: str  # phonemes
    chosen_sources: tuple[str, ...]
    changed: bool  # False: espeak-ng's own reading kept
    readings: tuple[Evidence, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*[A-Za-z]|[A-Za-z]")


def _tokens(spoken: str) -> list[str]:
    return _WORD.findall(spoken)


def doubtful_words(
    sentences: Sequence[str],
    covered: Sequence[re.Pattern[str]] = (),
    options: DecideOptions | None = None,
) -> list[tuple[str, int, str, list[Variant]]]:
    """(word, count, why, readings) for each doubtful word of the spoken ``sentences``, most
    frequent first; ``covered``: the producer's lexicon patterns (those words are left alone)."""
    from collections import Counter

    from wordfreq import zipf_frequency

    from verified_tts.pronounce.espeak_words import by_rule, dialect_readings

    options = options or DecideOptions()

    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    for sentence in sentences:
        for token in _tokens(sentence):
            key = token.lower().replace("’", "'")
            counts[key] += 1
            spelling.setdefault(key, token)
    rare = [
        word
        for word in counts
        if zipf_frequency(word, "en") < options.max_zipf
        and len(word.strip("'")) > 1
        and not any(p.fullmatch(spelling[word]) or p.fullmatch(word) for p in covered)
    ]
    rare.sort(key=lambda w: (-counts[w], w))
    rare = rare[: options.top * 3]
    words = [spelling[w] for w in rare]
    rule = by_rule(words)
    dialects = dialect_readings(words)
    sources = available_sources() if options.sources is None else options.sources
    out = []
    for word in words:
        readings = proposals(word, dialects[word], sources)
        own = readings[0].phonemes.replace("ˌ", "") if readings else ""
        dictionary = [v for v in readings if set(v.sources) & set(sources)]
        agrees = any(v.phonemes == own for v in dictionary)
        if rule[word]:
            why = "by rule"
        elif dictionary and not agrees:
            why = "dictionaries disagree"
        else:
            continue
        if len(readings) > 1:
            out.append((word, counts[word.lower().replace("’", "'")], why, readings))
    return out[: options.top]


def _rank(readings: Sequence[Variant], options: DecideOptions) -> list[Variant]:
    """espeak-ng's own reading, then the others that the most sources agree on."""
    first, rest = readings[0], list(readings[1:])
    rest.sort(key=lambda v: (-sum(not s.startswith(("espeak", "stress")) for s in v.sources),
                             -len(v.sources)))  # fmt: skip
    return [first, *rest][: options.max_readings]


def decide(
    sentences: Sequence[str],
    generator: Any,
    verifier: Any,
    *,
    covered: Sequence[re.Pattern[str]] = (),
    options: DecideOptions | None = None,
) -> list[Decision]:
    """Decide every doubtful word of ``sentences`` (the book's spoken text, in order)."""
    from verified_tts.generators.base import SynthesisRequest
    from verifiers.base import Clip
    from verifiers.textnorm import normalize

    options = options or DecideOptions()
    doubts = doubtful_words(sentences, covered, options)
    plans = []  # (word, count, why, example, readings)
    requests = []
    for word, count, why, readings in doubts:
        pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
        examples = [_window(s, pattern, options.window) for s in sentences if pattern.search(s)][
            : options.examples
        ]
        ranked = _rank(readings, options)
        plans.append((word, count, why, examples, ranked))
        for r, reading in enumerate(ranked):
            for example in examples:
                spoken_word = pattern.search(example).group(0)  # type: ignore[union-attr]
                for seed in range(options.seeds):
                    requests.append(
                        SynthesisRequest(
                            f"pronounce:{word}:{r}", len(requests), seed, example,
                            phonemes=((spoken_word, reading.phonemes),) if r else (),
                        )
                    )  # fmt: skip
    candidates = generator.sample(requests) if requests else []
    clips = [
        Clip(c.audio, c.sample_rate, text=q.text, spoken=q.text)
        for c, q in zip(candidates, requests, strict=True)
    ]
    scores = verifier.score(clips) if clips else []
    by_key: dict[str, list[Any]] = {}
    for request, score in zip(requests, scores, strict=True):
        by_key.setdefault(request.utterance_key, []).append(score)
    decisions = []
    for word, count, why, examples, ranked in plans:
        evidence = [
            _evidence(word, reading, by_key.get(f"pronounce:{word}:{r}", []), normalize)
            for r, reading in enumerate(ranked)
        ]
        best = choose(evidence, options.margin)
        decisions.append(
            Decision(
                word=word, count=count, why=why, example=examples[0] if examples else "",
                chosen=evidence[best].phonemes, chosen_sources=evidence[best].sources,
                changed=best != 0, readings=tuple(evidence),
            )
        )  # fmt: skip
    return decisions


def choose(evidence: Sequence[Evidence], margin: float) -> int:
    """Index of the reading the book gets: the one whose takes the verifier found likeliest
    (then lowest WER); espeak-ng's own (index 0) unless the best beats it by ``margin``."""
    best = max(range(len(evidence)), key=lambda k: (evidence[k].logprob, -evidence[k].wer))
    if best and evidence[best].logprob < evidence[0].logprob + margin:
        return 0
    return best


def _window(sentence: str, pattern: re.Pattern[str], words: int) -> str:
    """The words of ``sentence`` within ``words`` of the word's first occurrence: a short clip
    costs less to speak and score, and holds fewer other doubtful words."""
    if words <= 0:
        return sentence
    tokens = sentence.split()
    here = next((k for k, token in enumerate(tokens) if pattern.search(token)), None)
    if here is None:  # the word spans a space in the text: keep the sentence
        return sentence
    return " ".join(tokens[max(0, here - words) : here + words + 1])


def _evidence(word: str, reading: Variant, scores: Sequence[Any], normalize: Any) -> Evidence:
    heard = tuple(str(s.detail.get("transcript", "")) for s in scores)
    target = normalize(word)
    hits = sum(1 for h in heard if target and f" {target} " in f" {normalize(h)} ")
    logprobs = [float(s.metrics.get("asr_logprob", -99.0)) for s in scores]
    wers = [float(s.metrics.get("wer", 1.0)) for s in scores]
    n = max(1, len(scores))
    return Evidence(
        phonemes=reading.phonemes,
        sources=reading.sources,
        logprob=round(sum(logprobs) / n, 4),
        wer=round(sum(wers) / n, 4),
        heard=heard,
        heard_word=round(hits / n, 3),
    )


def summary(decisions: Sequence[Decision]) -> Mapping[str, Any]:
    """Counts a report can print: words decided, changed, and the winning sources."""
    from collections import Counter

    won: Counter[str] = Counter()
    for d in decisions:
        for source in d.chosen_sources if d.changed else ("espeak-ng (kept)",):
            won[source] += 1
    return {"words": len(decisions), "changed": sum(d.changed for d in decisions),
            "won_by": dict(won.most_common())}  # fmt: skip
