"""Public entry points of the text front-end: a Markdown book into spoken segments.

:func:`load_book` reads a file (turning every problem a user can cause into one
:class:`~verified_tts.errors.UserError` line) and :func:`parse_book` does the work: Markdown
structure from :mod:`verified_tts.text.markdown_book`, sentences and generator-sized chunks from
:mod:`verified_tts.text.sentences`, spoken forms from :mod:`verified_tts.text.normalize`. The
result is a
:class:`Book` of :class:`Chapter` s of :class:`Segment` s, plain frozen data that carries both
the text as written (for reports and as the ASR reference) and the text the TTS is asked to say,
plus where it came from and which pause follows it. Asked to, it reads quoted speech apart from
the narration around it (:mod:`verified_tts.text.dialogue`), so each can have its own voice.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from verified_tts.errors import UserError
from verified_tts.text.dialogue import ParagraphQuotes, quote_style, scan_paragraph
from verified_tts.text.markdown_book import Block, BlockKind, Document, parse_markdown
from verified_tts.text.normalize import normalize_text
from verified_tts.text.sentences import split_long, split_sentences
from verified_tts.text.source_map import SourceMap
from verified_tts.text.textfile import read_text_file

__all__ = [
    "Book",
    "Chapter",
    "PauseKind",
    "Segment",
    "book_from_document",
    "load_book",
    "parse_book",
]

PauseKind = Literal["sentence", "paragraph", "chapter", "end"]


@dataclass(frozen=True)
class Segment:
    """One utterance for the generator, with its origin in the book."""

    chapter: int  # 0-based chapter index
    paragraph: int  # 0-based block index within its chapter (heading = 0)
    sentence: int  # 0-based index within its block (chunks of a long sentence count apart)
    text: str  # original text as written (markup stripped), for reports and ASR reference
    spoken: str  # normalised text given to the TTS
    kind: Literal["heading", "paragraph", "dialogue"]
    line: int  # 1-based source line
    pause_after: PauseKind  # which pause follows this segment ("end" for the book's last)
    emotion: str | None = None
    voice: str | None = None
    pause_before: float | None = None  # seconds, from a pause directive: replaces the pause
    # (word as spoken, phonemes) for generators that take phonemes; from the lexicon
    phonemes: tuple[tuple[str, str], ...] = ()
    lexicon: tuple[str, ...] = ()  # lexicon entries applied to ``spoken``
    speaker: str | None = None  # the character a dialogue segment is attributed to, if known
    speaker_reason: str | None = None  # why the attribution chose it (or found nobody)
    speaker_gender: str | None = None  # the speaker's gender, where the book says it
    speaker_confidence: float | None = None  # how sure the attribution is (0 to 1)
    speaker_guess: str | None = None  # whom a guess below the threshold named
    # where ``text`` stands in the file it was read from (EPUB XHTML), for the read-along EPUB
    source: SourceMap | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Chapter:
    """A chapter: its heading's text (None for text before any heading) and its segments."""

    index: int
    title: str | None
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class Book:
    """A parsed book: the title of a single leading H1 (else None) and its chapters."""

    title: str | None
    chapters: tuple[Chapter, ...]
    author: str | None = None
    language: str | None = None
    cover: bytes | None = field(default=None, repr=False)

    @property
    def segments(self) -> tuple[Segment, ...]:
        """Every segment of the book in reading order."""
        return tuple(segment for chapter in self.chapters for segment in chapter.segments)


def _speakable(spoken: str) -> bool:
    return any(char.isalnum() for char in spoken)


def _spell(spoken: str, words: tuple[str, ...]) -> str:
    """Spell each listed word letter by letter ("FBI" -> "F B I")."""
    for word in words:
        spoken = re.sub(rf"(?<!\w){re.escape(word)}(?!\w)", " ".join(word), spoken)
    return spoken


def _given_phonemes(block: Block, chunk: str) -> tuple[tuple[str, str], ...]:
    """(words as spoken, IPA) of the block's given phonemes whose text lies in ``chunk``."""
    pairs = []
    for written, ipa in block.phonemes:
        spoken = normalize_text(written).strip(" .,;:!?")
        if written in chunk and spoken:
            pairs.append((spoken, ipa))
    return tuple(dict.fromkeys(pairs))


def _spans(block: Block, found: ParagraphQuotes | None) -> list[tuple[int, int, BlockKind]]:
    """(start, end, kind) of the stretches of a block read apart. Without dialogue (``found``
    None), in headings and in paragraphs without quotes the block is one stretch."""
    if found is None or not found.has_dialogue:  # narration, or a line set with a dash
        return [(0, len(block.text), block.kind)]
    kinds: dict[bool, BlockKind] = {True: "dialogue", False: "paragraph"}
    return [(s.start, s.end, kinds[s.dialogue]) for s in found.spans]


def _quotes(document: Document) -> list[list[ParagraphQuotes | None]]:
    """Each block's quotes (None for headings), a chapter's open quote running into the next
    paragraph."""
    style = quote_style(b.text for s in document.sections for b in s.blocks)
    sections = []
    for section in document.sections:
        after_open, found = False, []
        for block in section.blocks:
            if block.kind == "heading":
                found.append(None)
                continue
            quotes = scan_paragraph(block.text, style=style, after_open=after_open)
            after_open = quotes.open_at_end
            found.append(quotes)
        sections.append(found)
    return sections


def _speakers(
    document: Document, quotes: list[list[ParagraphQuotes | None]], threshold: float | None
) -> list[list]:
    """Each block's :class:`Attribution` (None for blocks without dialogue), per section; a
    guess below ``threshold`` (None: the casting default) has no speaker."""
    chapters = [
        [(b.text, q) for b, q in zip(section.blocks, found, strict=True) if q is not None]
        for section, found in zip(document.sections, quotes, strict=True)
    ]
    from verified_tts.casting.report import THRESHOLD, attribute_paragraphs

    sure = THRESHOLD if threshold is None else threshold
    headings = [b.text for s in document.sections for b in s.blocks if b.kind == "heading"]
    attributed = iter(attribute_paragraphs(chapters, headings, threshold=sure))
    result = []
    for found in quotes:
        guesses = iter(next(attributed))
        result.append([next(guesses) if q is not None else None for q in found])
    return result


def _block_pieces(
    block: Block, max_chars: int, spans: list[tuple[int, int, BlockKind]]
) -> list[tuple[str, str, int, BlockKind, SourceMap | None]]:
    """(text, spoken, line, kind, source) for each speakable chunk of a block, in order."""
    pieces = []
    # split_long measures each sentence by its spoken form, and a sentence that fits is the chunk
    # read: keeping the forms normalises it once, not twice (most of parsing a book's time)
    spoken_forms: dict[str, str] = {}

    def spoken_form(text: str) -> str:
        if text not in spoken_forms:
            spoken_forms[text] = normalize_text(text)
        return spoken_forms[text]

    for start, end, kind in spans:
        stretch = block.text[start:end]
        cursor = start
        # A heading is read as one utterance: "I. The Wolf" is a title, not two sentences.
        sentences = [stretch] if block.kind == "heading" else split_sentences(stretch)
        for sentence in sentences:
            for chunk in split_long(sentence, max_chars, length=lambda t: len(spoken_form(t))):
                offset = block.text.find(chunk, cursor)
                cursor = offset + len(chunk) if offset >= 0 else cursor
                spoken = _spell(spoken_form(chunk), block.spell)
                if _speakable(spoken):
                    source = None
                    if block.source is not None and offset >= 0:
                        source = block.source.slice(offset, offset + len(chunk))
                    line = block.line_at(max(offset, 0))
                    pieces.append((chunk, spoken, line, kind, source))
    return pieces


def _pause(is_last_in_block: bool, is_last_in_chapter: bool) -> PauseKind:
    if is_last_in_chapter:
        return "chapter"
    return "paragraph" if is_last_in_block else "sentence"


def parse_book(
    source: str, *, max_chars: int = 250, dialogue: bool = False, threshold: float | None = None
) -> Book:
    """Parse Markdown ``source`` into a :class:`Book` of spoken segments.

    Chunks are cut so that each spoken text is at most ``max_chars`` characters (a single word
    longer than that stays whole). Blocks and chapters with nothing speakable are dropped and the
    rest renumbered, so indices are contiguous. A source with nothing to read gives a book with
    no chapters; :func:`load_book` reports that as an error. With ``dialogue``, quoted speech is
    read apart from the narration around it (see :func:`book_from_document`).
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    document = parse_markdown(source, split_quotes=not dialogue)
    return book_from_document(document, max_chars=max_chars, dialogue=dialogue, threshold=threshold)


def book_from_document(
    document: Document,
    *,
    max_chars: int = 250,
    dialogue: bool = False,
    threshold: float | None = None,
) -> Book:
    """Sentences, spoken forms and pauses for a parsed document (Markdown, EPUB, plain text).

    With ``dialogue``, each quote of a paragraph (:mod:`verified_tts.text.dialogue`) is its own
    utterances of kind "dialogue" and the narration between quotes its own of kind "paragraph";
    a paragraph without quotes is cut exactly as without ``dialogue``, so its keys do not change.
    A quote left open at a paragraph's end and reopened at the next one's start is one speech.
    Each dialogue segment carries the character the rules attribute it to (None: the book's
    default dialogue voice) and the reason (:mod:`verified_tts.text.attribution`); a guess whose
    confidence is below ``threshold`` (None: :data:`verified_tts.casting.report.THRESHOLD`) is
    left to the dialogue voice.
    """
    quotes = _quotes(document) if dialogue else [[None] * len(s.blocks) for s in document.sections]
    speakers = _speakers(document, quotes, threshold) if dialogue else quotes
    chapters: list[Chapter] = []
    for section, found, said in zip(document.sections, quotes, speakers, strict=True):
        blocks = [
            (block, _block_pieces(block, max_chars, _spans(block, q)), who)
            for block, q, who in zip(section.blocks, found, said, strict=True)
        ]
        blocks = [(block, pieces, who) for block, pieces, who in blocks if pieces]
        if not blocks:
            continue
        segments = []
        for paragraph, (block, pieces, who) in enumerate(blocks):
            for sentence, (text, spoken, line, kind, source) in enumerate(pieces):
                given = _given_phonemes(block, text) if block.phonemes else ()
                last_in_block = sentence == len(pieces) - 1
                last_in_chapter = last_in_block and paragraph == len(blocks) - 1
                segments.append(
                    Segment(
                        chapter=len(chapters),
                        paragraph=paragraph,
                        sentence=sentence,
                        text=text,
                        spoken=spoken,
                        kind=kind,
                        line=line,
                        pause_after=_pause(last_in_block, last_in_chapter),
                        emotion=block.emotion,
                        voice=block.voice,
                        pause_before=block.pause_before if sentence == 0 else None,
                        phonemes=given,
                        lexicon=tuple(f"ssml:ph {word}" for word, _ in given),
                        speaker=who.speaker if who and kind == "dialogue" else None,
                        speaker_reason=who.reason if who and kind == "dialogue" else None,
                        speaker_gender=who.gender if who and kind == "dialogue" else None,
                        speaker_confidence=who.confidence if who and kind == "dialogue" else None,
                        speaker_guess=who.guess if who and kind == "dialogue" else None,
                        source=source,
                    )
                )
        chapters.append(Chapter(len(chapters), section.title, tuple(segments)))
    if chapters:
        last = chapters[-1]
        final = replace(last.segments[-1], pause_after="end")
        chapters[-1] = Chapter(last.index, last.title, last.segments[:-1] + (final,))
    return Book(document.title, tuple(chapters))


def load_book(
    path: str | os.PathLike[str],
    *,
    max_chars: int = 250,
    dialogue: bool = False,
    threshold: float | None = None,
) -> Book:
    """Read and parse the Markdown book at ``path``; user mistakes raise one-line UserErrors."""
    path = Path(path)
    source = read_text_file(
        path,
        kind="book",
        expected="a UTF-8 Markdown file (e.g. book.md)",
        empty_hint="write the book's text in it as Markdown",
    )
    try:
        book = parse_book(source, max_chars=max_chars, dialogue=dialogue, threshold=threshold)
    except UserError as error:
        raise UserError(f"{path}: {error}") from None
    if not book.chapters:
        raise UserError(
            f"{path} has nothing to read aloud (code blocks, images, HTML and comments are "
            f"skipped); add headings or paragraphs of text"
        )
    return book
