"""Pronunciation and text-form candidates inside a render, decided once per book.

With ``[pronunciation] candidates`` on, :func:`render_pronounced` renders the book in passes over
one store. First, every line that says a doubtful word (:mod:`verified_tts.pronounce.candidates`)
is planned with its readings (:mod:`verified_tts.text.readings`): its takes read the word each way
in turn, the verifiers choose per line as always, and every take records the reading it used.
Words the ASR model then doubted in every take of a line join the doubtful ones, and their lines
are planned again with readings (the takes already made are reused). Then each word gets one
reading for the whole book from the evidence of all its lines' takes
(:mod:`verified_tts.pronounce.book_decision`), and the book is rendered once more with those
readings as a lexicon after the producer's: every line holding a decided word is decided again
among the takes of the decided reading (the store has them from the first pass; a line whose
winner already said the decided reading keeps it, :mod:`verified_tts.pronounce.kept_winners`,
and a line whose winner read the word otherwise gets new takes only as its rounds need them), so
no word is read two ways in one book. The producer's own lexicon always wins: a word it covers
is never in doubt, and a lexicon entry added in review replaces the decision for the lines it
covers. With
``text_forms`` on, a line where the normaliser guessed keeps its spoken forms as readings in every
pass, and the verifiers choose per line. What was decided goes to the manifest's
``pronunciations`` block and to ``lexicon.toml`` in the output folder, which ``--lexicon`` reads
back.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verified_tts.options.pronunciation import PronunciationOptions
from verified_tts.pronounce.book_decision import (
    WordDecision,
    chosen_phonemes,
    collect,
    decide,
)
from verified_tts.pronounce.candidates import DoubtOptions, WordReadings, doubtful, word_key
from verified_tts.pronounce.candidates import words_of as spoken_words
from verified_tts.pronounce.kept_winners import keep_decided_winners
from verified_tts.text.readings import LineReading, SpokenForm, line_readings

if TYPE_CHECKING:
    from verified_tts.pipeline import Synthesizer, Utterance, UtteranceResult
    from verified_tts.review.hook import ReviewHook
    from verified_tts.storage.store import Store
    from verified_tts.text.book import Book, Segment
    from verified_tts.text.lexicon import Lexicon, LexiconEntry

__all__ = [
    "LEXICON_FILE",
    "BookPronunciation",
    "check_sources",
    "decided_book",
    "decisions_of",
    "form_readings",
    "plan_readings",
    "render_pronounced",
    "with_review",
    "write_lexicon",
]

LEXICON_FILE = "lexicon.toml"  # the decided words, in the output folder


@dataclass(frozen=True)
class BookPronunciation:
    """What the render decided: each doubtful word's reading, and the text forms chosen."""

    decisions: tuple[WordDecision, ...]
    form_lines: int  # lines with more than one spoken form
    form_changed: int  # of those, lines whose winning take said another form than the normaliser
    passes: int  # renders of the book it took
    kept_winners: int = 0  # lines whose winner already said the decided readings

    def block(self) -> dict[str, Any]:
        """The manifest's ``pronunciations``."""
        won: Counter[str] = Counter()
        for d in self.decisions:
            for source in d.chosen_sources if d.changed else ("espeak-ng (kept)",):
                won[source] += 1
        overruled = sum(d.review is not None and d.review != d.chosen for d in self.decisions)
        return {
            "lexicon": LEXICON_FILE,
            "words": len(self.decisions),
            "changed": sum(d.changed for d in self.decisions),
            "won_by": dict(won.most_common()),
            "overruled_in_review": overruled,
            "text_forms": {"lines": self.form_lines, "changed": self.form_changed},
            "passes": self.passes,
            "lines_that_kept_their_winner": self.kept_winners,
            "decisions": [d.as_dict() for d in self.decisions],
        }


def plan_readings(
    segments: Sequence[Segment],
    words: Mapping[str, WordReadings],
    forms: Sequence[Sequence[SpokenForm]],
) -> list[tuple[LineReading, ...]]:
    """Each segment's readings: its doubtful words' readings and its spoken forms."""
    by_key = {word_key(w): w for w in words}
    out = []
    for segment, own_forms in zip(segments, forms, strict=True):
        said = {by_key[key] for key in map(word_key, spoken_words(segment.spoken)) if key in by_key}
        choices = {
            word: ["", *(v.phonemes for v in words[word].readings[1:])] for word in sorted(said)
        }
        out.append(line_readings(segment, choices, own_forms))
    return out


def check_sources(options: PronunciationOptions) -> None:
    """Pronunciation candidates need a dictionary of ``sources`` installed (the extra); the
    render checks before it loads any model."""
    from verified_tts.errors import UserError
    from verified_tts.pronounce.sources import available_sources

    if options.candidates and options.sources and not available_sources(options.sources):
        raise UserError(
            "[pronunciation] candidates need the pronunciation dictionaries: pip install "
            "'verified-tts[pronounce]' (or set [pronunciation] candidates = false)"
        )


def _heard_words(results: Sequence[UtteranceResult]) -> set[str]:
    """Words the ASR model doubted in every take of some line."""
    from verified_tts.selection.consensus import shared_hard_words

    found: set[str] = set()
    for result in results:
        found.update(shared_hard_words([c.detail for c in result.candidates]))
    return found


def _first_line(segments: Sequence[Segment], word: str) -> str:
    pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
    return next((s.text for s in segments if pattern.search(s.spoken)), "")


def _overruled(decision: WordDecision, entries: Sequence[LexiconEntry]) -> WordDecision:
    """``decision`` with the phonemes the review's latest lexicon entry for the word gives it
    (the producer wins)."""
    for entry in reversed(entries):
        if entry.phonemes and entry.compiled().fullmatch(decision.word):
            return replace(decision, review=entry.phonemes)
    return decision


def form_readings(
    segments: Sequence[Segment], options: PronunciationOptions
) -> list[tuple[LineReading, ...]]:
    """Each segment's spoken forms as readings (none unless ``text_forms`` is on)."""
    from verified_tts.text.text_forms import spoken_forms

    forms = [
        spoken_forms(s.text, s.spoken, options.max_forms) if options.text_forms else ()
        for s in segments
    ]
    return plan_readings(segments, {}, forms)


def decided_book(book: Book, block: Mapping[str, Any] | None) -> Book:
    """``book`` (the producer's lexicon applied) with the readings the verifiers decided, as the
    render's last pass read it (``block``: the manifest's ``pronunciations``): what ``rerender``
    and the review plan a line from."""
    from verified_tts.text.lexicon import Lexicon, apply_lexicon
    from verified_tts.text.readings import word_entries

    decisions = (block or {}).get("decisions") or []
    chosen = {str(d["word"]): str(d["chosen"]) if d.get("changed") else "" for d in decisions}
    entries = word_entries(chosen)
    return apply_lexicon(book, Lexicon(entries)) if entries else book  # type: ignore[arg-type]


def render_pronounced(
    book: Book,
    producer: Lexicon | None,
    synthesizer: Synthesizer,
    store: Store,
    review: ReviewHook,
    *,
    on_result: Callable[[UtteranceResult], None] | None = None,
) -> tuple[list[UtteranceResult], BookPronunciation]:
    """Render ``book`` (the producer's lexicon already applied) with pronunciation and text-form
    candidates as ``synthesizer.config.pronunciation`` says (the module docstring)."""
    from verified_tts.text.lexicon import Lexicon, apply_lexicon
    from verified_tts.text.readings import word_entries
    from verified_tts.text.text_forms import spoken_forms

    options: PronunciationOptions = synthesizer.config.pronunciation
    segments = book.segments
    forms = [
        spoken_forms(s.text, s.spoken, options.max_forms) if options.text_forms else ()
        for s in segments
    ]  # the spoken text a decided word's lexicon entry gives is the same: the forms too
    covered = [e.compiled() for e in producer.entries] if producer else []
    doubt = DoubtOptions(max_zipf=options.max_zipf, max_readings=options.max_readings,
                         sources=options.sources, dialects=options.dialects,
                         stresses=options.stresses)  # fmt: skip
    texts = [s.spoken for s in segments]
    words: dict[str, WordReadings] = {}
    if options.candidates:
        check_sources(options)
        words = {w.word: w for w in doubtful(texts, covered, doubt)}
    # the takes of every reading are kept: later passes and the review's players use them
    probe = synthesizer
    if synthesizer.config.keep != "all":
        probe = synthesizer.variant(synthesizer.config.variant(keep="all"))
    passes = 0
    results: list[UtteranceResult] = []

    def run(report: Callable[[UtteranceResult], None] | None) -> list[UtteranceResult]:
        nonlocal passes
        passes += 1
        planned = probe.plan(segments, readings=plan_readings(segments, words, forms))
        return probe.run(planned, store, on_result=report)

    if words:
        results = run(on_result)
        heard = {word_key(w) for w in _heard_words(results)} - {word_key(w) for w in words}
        if options.heard and heard:
            more = [w for w in doubtful(texts, covered, doubt, heard=heard)
                    if w.why == "heard otherwise" and w.word not in words]  # fmt: skip
            if more:
                words.update((w.word, w) for w in more)
                results = run(None)
    evidence = collect(results, list(words))
    decisions = [
        decide(w, evidence.get(w.word, []), options.margin, _first_line(segments, w.word))
        for w in words.values()
    ]
    decided = Lexicon(word_entries(chosen_phonemes(decisions)))  # type: ignore[arg-type]
    final_book = apply_lexicon(book, decided)
    final_readings = form_readings(final_book.segments, options)
    planned: list[Utterance] = review.plan(synthesizer, final_book.segments,
                                           readings=final_readings)  # fmt: skip
    kept = keep_decided_winners(results, planned, synthesizer, store) if words else 0
    passes += 1
    final = review.results(synthesizer.run(planned, store, on_result=None if words else on_result))
    if probe is not synthesizer:
        synthesizer.stats.merge(probe.stats)
    overrules = review.lexicon_entries()
    decisions = [_overruled(d, overrules) for d in decisions]
    form_lines = sum(1 for r in final_readings if r)
    form_changed = sum(
        1 for result in final if result.utterance.readings
        and result.utterance.take(result.winner)[0] is not result.utterance.readings[0]
    )  # fmt: skip
    return final, BookPronunciation(tuple(decisions), form_lines, form_changed, passes, kept)


def decisions_of(block: Mapping[str, Any] | None) -> list[WordDecision]:
    """The decisions of a manifest's ``pronunciations`` block, as the render made them."""
    from verified_tts.pronounce.book_decision import ReadingEvidence

    out = []
    for d in (block or {}).get("decisions") or ():
        readings = tuple(
            ReadingEvidence(**{**r, "sources": tuple(r["sources"]), "heard": tuple(r["heard"])})
            for r in d["readings"]
        )
        out.append(WordDecision(**{**d, "chosen_sources": tuple(d["chosen_sources"]),
                                   "readings": readings}))  # fmt: skip
    return out


def with_review(
    block: Mapping[str, Any], entries: Sequence[LexiconEntry], out: Path, producer: Lexicon | None
) -> dict[str, Any]:
    """``block`` with each word a review's lexicon entry chose for it, and ``lexicon.toml``
    written again to say so (a delivery after a review calls it: the file the producer passes
    back holds what they chose)."""
    decisions = [_overruled(replace(d, review=None), entries) for d in decisions_of(block)]
    pronunciation = BookPronunciation(
        tuple(decisions), block["text_forms"]["lines"], block["text_forms"]["changed"],
        block["passes"], block.get("lines_that_kept_their_winner", 0),
    )  # fmt: skip
    write_lexicon(out, pronunciation, producer)
    return pronunciation.block()


def write_lexicon(out: Path, pronunciation: BookPronunciation, producer: Lexicon | None) -> Path:
    """``lexicon.toml`` (the producer's entries, then the decided words with their evidence)
    and its evidence as ``lexicon.toml.json`` in ``out``; returns the lexicon's path."""
    from verified_tts.pronounce.lexicon_file import write_decisions

    path = out / LEXICON_FILE
    write_decisions(path, pronunciation.decisions, producer, made_by="verified-tts render")
    return path
