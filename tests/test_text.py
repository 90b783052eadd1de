"""Tests for the text front-end's public entry points: parse_book and load_book."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from verified_tts.errors import UserError
from verified_tts.text.book import Book, Chapter, Segment, load_book, parse_book

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "book.md"

SOURCE = """\
<!-- source: a test -->
# The Book

## Chapter I

<!-- tts: emotion=sad voice=tara -->
Dr. Smith paid $3.50 in 1869. He left.

"Come back," she said.

## Chapter II

The end.
"""


def test_parse_book_structure_and_fields() -> None:
    book = parse_book(SOURCE)
    assert isinstance(book, Book)
    assert book.title == "The Book"
    assert [(c.index, c.title) for c in book.chapters] == [
        (0, "The Book"),
        (1, "Chapter I"),
        (2, "Chapter II"),
    ]
    assert book.segments == (
        Segment(0, 0, 0, "The Book", "The Book", "heading", 2, "chapter"),
        Segment(1, 0, 0, "Chapter I", "Chapter one", "heading", 4, "paragraph"),
        Segment(
            1,
            1,
            0,
            "Dr. Smith paid $3.50 in 1869.",
            "Doctor Smith paid three dollars and fifty cents in eighteen sixty-nine.",
            "paragraph",
            7,
            "sentence",
            "sad",
            "tara",
        ),
        Segment(1, 1, 1, "He left.", "He left.", "paragraph", 7, "paragraph", "sad", "tara"),
        Segment(
            1,
            2,
            0,
            '"Come back," she said.',
            '"Come back," she said.',
            "dialogue",
            9,
            "chapter",
            "sad",
            "tara",
        ),
        Segment(2, 0, 0, "Chapter II", "Chapter two", "heading", 11, "paragraph"),
        Segment(2, 1, 0, "The end.", "The end.", "paragraph", 13, "end"),
    )


def test_dataclasses_are_frozen() -> None:
    book = parse_book("Hello there.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        book.chapters[0].segments[0].text = "changed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        book.title = "changed"  # type: ignore[misc]
    assert isinstance(book.chapters[0], Chapter)


def test_untitled_book_without_headings() -> None:
    book = parse_book("One. Two.\n\nThree.\n")
    assert book.title is None
    assert [(c.index, c.title) for c in book.chapters] == [(0, None)]
    assert [(s.paragraph, s.sentence, s.text, s.pause_after) for s in book.segments] == [
        (0, 0, "One.", "sentence"),
        (0, 1, "Two.", "paragraph"),
        (1, 0, "Three.", "end"),
    ]


def test_sentence_line_is_its_own_source_line() -> None:
    book = parse_book("First sentence\nwraps here. Second\nsentence.\n")
    assert [(s.text, s.line) for s in book.segments] == [
        ("First sentence wraps here.", 1),
        ("Second sentence.", 2),
    ]


def test_long_sentences_are_chunked_on_spoken_length() -> None:
    clause = "the fox ran over the hill and far away"
    source = ", ".join([clause] * 12) + "."
    book = parse_book(source, max_chars=80)
    segments = book.segments
    assert len(segments) > 1
    assert all(len(s.spoken) <= 80 for s in segments)
    assert " ".join(s.text for s in segments) == source
    assert [s.sentence for s in segments] == list(range(len(segments)))
    assert [s.pause_after for s in segments[:-1]] == ["sentence"] * (len(segments) - 1)


def test_chunk_limit_counts_the_normalised_text() -> None:
    # "$1,000,000" is 10 characters written but over 20 spoken: the limit is on what is said.
    book = parse_book("It cost $1,000,000 and $2,000,000 in all.", max_chars=30)
    assert len(book.segments) > 1
    assert all(len(s.spoken) <= 30 for s in book.segments)


def test_unspeakable_segments_blocks_and_chapters_are_dropped() -> None:
    source = "## Empty\n\n## ...\n\n“—”\n\n## Real\n\n--\n\nWords.\n"
    book = parse_book(source)
    assert [(c.index, c.title) for c in book.chapters] == [(0, "Empty"), (1, "Real")]
    assert [(s.chapter, s.paragraph, s.text) for s in book.segments] == [
        (0, 0, "Empty"),
        (1, 0, "Real"),
        (1, 1, "Words."),
    ]


def test_nothing_speakable_gives_an_empty_book() -> None:
    assert parse_book("```\ncode\n```\n").chapters == ()
    assert parse_book("").segments == ()


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        parse_book("Hi.", max_chars=0)


def test_example_book_parses() -> None:
    book = load_book(EXAMPLE)
    assert book.title
    assert 3 <= len(book.chapters) <= 4
    words = sum(len(s.text.split()) for s in book.segments)
    assert 300 <= words <= 600
    kinds = {s.kind for s in book.segments}
    assert kinds == {"heading", "paragraph", "dialogue"}
    # The year and the abbreviation are spelled out; the source comment is not read.
    spoken = " ".join(s.spoken for s in book.segments)
    assert "eighteen sixty-seven" in spoken and "Reverend" in spoken
    assert "gutenberg" not in spoken.lower()
    assert book.segments[-1].pause_after == "end"
    assert all(len(s.spoken) <= 250 for s in book.segments)


# --- load_book errors: one clear line each ----------------------------------------------------


def _error(path: Path) -> str:
    with pytest.raises(UserError) as caught:
        load_book(path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def test_missing_file(tmp_path: Path) -> None:
    assert "does not exist" in _error(tmp_path / "nope.md")


def test_directory(tmp_path: Path) -> None:
    assert "is a directory" in _error(tmp_path)


@pytest.mark.parametrize("content", [b"", b"  \n\n\t\n"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.md"
    path.write_bytes(content)
    assert "is empty" in _error(path)


def test_binary_file_names_the_nul_offset(tmp_path: Path) -> None:
    path = tmp_path / "book.md"
    path.write_bytes(b"Hello\x00world")
    message = _error(path)
    assert "binary" in message and "offset 5" in message


def test_non_utf8_file_names_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "book.md"
    path.write_bytes(b"Caf\xe9 au lait")
    message = _error(path)
    assert "not UTF-8" in message and "offset 3" in message and "0xe9" in message


def test_utf16_file(tmp_path: Path) -> None:
    path = tmp_path / "book.md"
    path.write_bytes("Hello.".encode("utf-16"))
    assert "UTF-16" in _error(path)


def test_nothing_speakable(tmp_path: Path) -> None:
    path = tmp_path / "book.md"
    path.write_text("```\nprint(1)\n```\n\n![image](a.png)\n\n<!-- comment -->\n", encoding="utf-8")
    assert "nothing to read aloud" in _error(path)


def test_bad_directive_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "book.md"
    path.write_text("Text.\n\n<!-- tts: colour=blue -->\n", encoding="utf-8")
    assert "line 3" in _error(path)


def test_utf8_bom_and_crlf_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "book.md"
    path.write_bytes(b"\xef\xbb\xbf# Title\r\n\r\nHello there.\r\n")
    book = load_book(str(path))
    assert book.title == "Title"
    assert [(s.text, s.line) for s in book.segments] == [("Title", 1), ("Hello there.", 3)]
