"""The ways one line may be read: pronunciation and text-form candidates as plain data.

A doubtful word (:mod:`verified_tts.pronounce.candidates`) has several readings, espeak-ng's own
first; a place where the normaliser guessed (:mod:`verified_tts.text.text_forms`) has several
spoken forms, the normaliser's own first. A line that holds either is read in R ways, a
:class:`LineReading` each: reading r gives each doubtful word its reading r mod (its count) and
the line its spoken form r mod (the forms' count), so that the first reading is the line as the
book says it and every word's every reading is in one of the first R. A reading's phonemes are
what a lexicon of the chosen readings (one ``[words]`` entry per word whose reading is not
espeak-ng's, in the order of :func:`word_entries`) gives the line, exactly as ``render --lexicon``
with a file of those entries would: a take made while the line was in doubt is the take a later
render with the decided lexicon asks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from verified_tts.text.book import Segment

__all__ = ["LineReading", "SpokenForm", "line_readings", "word_entries"]


@dataclass(frozen=True)
class SpokenForm:
    """One spoken form of a line: its text and, per place the normaliser guessed, the written
    span and the words said for it (empty for the normaliser's own form)."""

    spoken: str
    choices: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LineReading:
    """One way to read a line: the spoken text and lexicon phonemes a take is given, what it
    says of each doubtful word (its key and phonemes, "" for espeak-ng's own reading) and of
    each place the normaliser guessed; ``key`` is the utterance key of the line read so."""

    spoken: str
    phonemes: tuple[tuple[str, str], ...] = ()
    words: tuple[tuple[str, str], ...] = ()
    forms: tuple[tuple[str, str], ...] = ()
    key: str = ""

    def label(self) -> dict[str, object]:
        """What the manifest records of the reading a take used."""
        label: dict[str, object] = {}
        if self.words:
            label["words"] = {word: phonemes or None for word, phonemes in self.words}
        if self.forms:
            label["forms"] = [{"written": w, "said": s} for w, s in self.forms]
        return label


def word_entries(chosen: Mapping[str, str]) -> tuple[object, ...]:
    """Lexicon entries for words read other than espeak-ng reads them (``chosen``: word key ->
    phonemes, "" for espeak-ng's own), in the one order every reading and the decided lexicon
    file use: by word."""
    from verified_tts.text.lexicon import LexiconEntry

    return tuple(LexiconEntry(word, False, phonemes=phonemes)
                 for word, phonemes in sorted(chosen.items()) if phonemes)  # fmt: skip


def _with_entries(spoken: str, base: Sequence[tuple[str, str]], chosen: Mapping[str, str]):  # type: ignore[no-untyped-def]
    from verified_tts.text.lexicon import Lexicon

    entries = word_entries(chosen)
    if not entries:
        return tuple(base)
    _, pairs, _ = Lexicon(entries).apply(spoken)  # type: ignore[arg-type]
    return tuple(base) + pairs


def line_readings(
    segment: Segment,
    words: Mapping[str, Sequence[str]],
    forms: Sequence[SpokenForm] = (),
) -> tuple[LineReading, ...]:
    """The readings of ``segment``: ``words`` maps each doubtful word key of the line to its
    readings' phonemes ("" first, espeak-ng's own); ``forms`` are the line's spoken forms, the
    normaliser's own first (none: the segment's). A line with one way to be read gets ()."""
    forms = list(forms) or [SpokenForm(segment.spoken)]
    count = max([len(forms), *(len(r) for r in words.values())])
    if count < 2:
        return ()
    out: list[LineReading] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for r in range(count):
        form = forms[r % len(forms)]
        chosen = {word: readings[r % len(readings)] for word, readings in words.items()}
        base = segment.phonemes
        if form.spoken != segment.spoken:  # lexicon words the other form no longer says drop out
            base = tuple(p for p in base if p[0].lower() in form.spoken.lower())
        phonemes = _with_entries(form.spoken, base, chosen)
        if (form.spoken, phonemes) in seen:
            continue
        seen.add((form.spoken, phonemes))
        out.append(LineReading(form.spoken, phonemes, tuple(sorted(chosen.items())), form.choices))
    return tuple(out) if len(out) > 1 else ()


def as_segment(segment: Segment, reading: LineReading) -> Segment:
    """``segment`` as ``reading`` says it (its spoken text and phonemes)."""
    return replace(segment, spoken=reading.spoken, phonemes=reading.phonemes)
