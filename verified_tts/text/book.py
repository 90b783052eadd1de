"""Public entry points of the text front-end: a Markdown book into spoken segments.

:func:`load_book` reads a file (turning every problem a user can cause into one
:class:`~verified_tts.errors.UserError` line) and :func:`parse_book` does the work: Markdown
structure from :mod:`verified_tts.text.markdown_book`, sentences and generator-sized chunks from
:mod:`verified_tts.text.sentences`, spoken forms from :mod:`verified_tts.text.normalize`. The
result is a
:class:`Book` of :class:`Chapter` s of :class:`Segment` s, plain frozen data that carries both
the text as written (for reports and as the ASR reference) and the text the TTS is asked to say,
plus where it came from and which pause follows it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from verified_tts.errors import UserError
from verified_tts.text.markdown_book import Block, Document, parse_markdown
from verified_tts.text.normalize import normalize_text
from verified_tts.text.sentences import split_long, split_sentences
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


def _spoken_length(text: str) -> int:
    return len(normalize_text(text))


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


def _block_pieces(block: Block, max_chars: int) -> list[tuple[str, str, int]]:
    """(text, spoken, line) for each speakable chunk of a block, in order."""
    pieces = []
    cursor = 0
    # A heading is read as one utterance: "I. The Wolf" is a title, not two sentences.
    sentences = [block.text] if block.kind == "heading" else split_sentences(block.text)
    for sentence in sentences:
        for chunk in split_long(sentence, max_chars, length=_spoken_length):
            offset = block.text.find(chunk, cursor)
            cursor = offset + len(chunk) if offset >= 0 else cursor
            spoken = _spell(normalize_text(chunk), block.spell)
            if _speakable(spoken):
                pieces.append((chunk, spoken, block.line_at(max(offset, 0))))
    return pieces


def _pause(is_last_in_block: bool, is_last_in_chapter: bool) -> PauseKind:
    if is_last_in_chapter:
        return "chapter"
    return "paragraph" if is_last_in_block else "sentence"


def parse_book(source: str, *, max_chars: int = 250) -> Book:
    """Parse Markdown ``source`` into a :class:`Book` of spoken segments.

    Chunks are cut so that each spoken text is at most ``max_chars`` characters (a single word
    longer than that stays whole). Blocks and chapters with nothing speakable are dropped and the
    rest renumbered, so indices are contiguous. A source with nothing to read gives a book with
    no chapters; :func:`load_book` reports that as an error.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    return book_from_document(parse_markdown(source), max_chars=max_chars)


def book_from_document(document: Document, *, max_chars: int = 250) -> Book:
    """Sentences, spoken forms and pauses for a parsed document (Markdown or EPUB)."""
    chapters: list[Chapter] = []
    for section in document.sections:
        blocks = [(block, _block_pieces(block, max_chars)) for block in section.blocks]
        blocks = [(block, pieces) for block, pieces in blocks if pieces]
        if not blocks:
            continue
        segments = []
        for paragraph, (block, pieces) in enumerate(blocks):
            for sentence, (text, spoken, line) in enumerate(pieces):
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
                        kind=block.kind,
                        line=line,
                        pause_after=_pause(last_in_block, last_in_chapter),
                        emotion=block.emotion,
                        voice=block.voice,
                        pause_before=block.pause_before if sentence == 0 else None,
                        phonemes=given,
                        lexicon=tuple(f"ssml:ph {word}" for word, _ in given),
                    )
                )
        chapters.append(Chapter(len(chapters), section.title, tuple(segments)))
    if chapters:
        last = chapters[-1]
        final = replace(last.segments[-1], pause_after="end")
        chapters[-1] = Chapter(last.index, last.title, last.segments[:-1] + (final,))
    return Book(document.title, tuple(chapters))


def load_book(path: str | os.PathLike[str], *, max_chars: int = 250) -> Book:
    """Read and parse the Markdown book at ``path``; user mistakes raise one-line UserErrors."""
    path = Path(path)
    source = read_text_file(
        path,
        kind="book",
        expected="a UTF-8 Markdown file (e.g. book.md)",
        empty_hint="write the book's text in it as Markdown",
    )
    try:
        book = parse_book(source, max_chars=max_chars)
    except UserError as error:
        raise UserError(f"{path}: {error}") from None
    if not book.chapters:
        raise UserError(
            f"{path} has nothing to read aloud (code blocks, images, HTML and comments are "
            f"skipped); add headings or paragraphs of text"
        )
    return book
