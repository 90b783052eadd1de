"""Tests for Markdown structure: chapters, blocks, skipped markup, directives, line numbers."""

from __future__ import annotations

import pytest

from verified_tts.errors import UserError
from verified_tts.text.markdown_book import Block, parse_directives, parse_markdown


def _texts(source: str) -> list[list[str]]:
    return [[block.text for block in section.blocks] for section in parse_markdown(source).sections]


def test_single_leading_h1_is_the_title_and_opens_chapter_zero() -> None:
    document = parse_markdown(
        "# The Book\n\nPreface.\n\n## One\n\nText one.\n\n## Two\n\nText two.\n"
    )
    assert document.title == "The Book"
    assert [s.title for s in document.sections] == ["The Book", "One", "Two"]
    assert _texts("# The Book\n\nPreface.\n\n## One\n\nText one.\n\n## Two\n\nText two.\n") == [
        ["The Book", "Preface."],
        ["One", "Text one."],
        ["Two", "Text two."],
    ]
    assert document.sections[0].blocks[0].kind == "heading"


def test_several_h1_are_chapters_and_the_book_has_no_title() -> None:
    document = parse_markdown("# One\n\nA.\n\n## Part\n\nB.\n\n# Two\n\nC.\n")
    assert document.title is None
    assert [s.title for s in document.sections] == ["One", "Two"]
    # The deeper heading is read inside its chapter as a section title.
    assert [(b.kind, b.text) for b in document.sections[0].blocks] == [
        ("heading", "One"),
        ("paragraph", "A."),
        ("heading", "Part"),
        ("paragraph", "B."),
    ]


def test_text_before_any_heading_has_a_chapter_without_title() -> None:
    document = parse_markdown("Opening words.\n\n## First\n\nBody.\n")
    assert document.title is None
    assert [s.title for s in document.sections] == [None, "First"]
    assert _texts("Opening words.\n\n## First\n\nBody.\n")[0] == ["Opening words."]


def test_no_headings_at_all() -> None:
    document = parse_markdown("Just a paragraph.\n\nAnd another.\n")
    assert [s.title for s in document.sections] == [None]
    assert _texts("Just a paragraph.\n\nAnd another.\n") == [["Just a paragraph.", "And another."]]


def test_setext_heading_is_a_chapter() -> None:
    document = parse_markdown(
        "Chapter One\n===========\n\nText.\n\nChapter Two\n===========\n\nMore.\n"
    )
    assert [s.title for s in document.sections] == ["Chapter One", "Chapter Two"]


def test_markup_that_is_not_read_is_skipped() -> None:
    source = (
        "Some *emphasis*, **strong** and a [link](https://example.com/page) here.[^1]\n"
        "![a cat on a mat](cat.png)\n"
        "\n"
        "```python\nprint('code')\n```\n"
        "\n"
        "    indented code\n"
        "\n"
        "<div>raw html</div>\n"
        "\n"
        "<!-- a comment -->\n"
        "\n"
        "Inline <span>html</span> and `code`.\n"
        "\n"
        "[^1]: The footnote text.\n"
    )
    assert _texts(source) == [["Some emphasis, strong and a link here.", "Inline html and code."]]
    flat = " ".join(_texts(source)[0])
    for unread in ("https", "cat", "print", "indented", "raw", "comment", "footnote", "^1"):
        assert unread not in flat


def test_footnote_marker_with_link_style_definition_is_skipped() -> None:
    assert _texts("Said so.[^2]\n\n[^2]: http://example.com\n") == [["Said so."]]


def test_lists_and_blockquotes_are_read_as_blocks() -> None:
    source = "- first item\n- second item\n\n1. numbered\n\n> quoted words\n> continue\n"
    assert _texts(source) == [["first item", "second item", "numbered", "quoted words continue"]]


def test_dialogue_lines_become_their_own_blocks() -> None:
    source = (
        "The wolf spoke.\n"
        '"Come here," he said, "and let me\n'
        'see you."\n'
        "The lamb came.\n"
        "— Yes, said the lamb.\n"
        "“Good,” said the wolf.\n"
    )
    blocks = parse_markdown(source).sections[0].blocks
    assert [(b.kind, b.text, b.line) for b in blocks] == [
        ("paragraph", "The wolf spoke.", 1),
        ("dialogue", '"Come here," he said, "and let me see you."', 2),
        ("paragraph", "The lamb came.", 4),
        ("dialogue", "— Yes, said the lamb.", 5),
        ("dialogue", "“Good,” said the wolf.", 6),
    ]


def test_line_numbers_are_one_based_and_per_line() -> None:
    source = "\n\n# Title\n\nline five\nline six\n\n> line nine\n"
    document = parse_markdown(source)
    blocks = [b for s in document.sections for b in s.blocks]
    assert [(b.text, b.line) for b in blocks] == [
        ("Title", 3),
        ("line five line six", 5),
        ("line nine", 8),
    ]
    paragraph = blocks[1]
    assert paragraph.line_at(0) == 5
    assert paragraph.line_at(paragraph.text.index("six")) == 6


def test_block_line_at_without_line_starts() -> None:
    assert Block(kind="paragraph", text="abc", line=7).line_at(2) == 7


def test_directives_set_emotion_and_voice_until_changed() -> None:
    source = (
        "## One\n\n"
        "Plain.\n\n"
        "<!-- tts: emotion=sad voice=tara -->\n"
        "Sad tara.\n\n"
        "<!-- tts: voice=leo -->\n"
        "Sad leo.\n\n"
        "<!-- tts: emotion=none -->\n"
        "Neutral leo.\n\n"
        "## Two\n\n"
        "Reset.\n"
    )
    blocks = [b for s in parse_markdown(source).sections for b in s.blocks]
    assert [(b.text, b.emotion, b.voice) for b in blocks] == [
        ("One", None, None),
        ("Plain.", None, None),
        ("Sad tara.", "sad", "tara"),
        ("Sad leo.", "sad", "leo"),
        ("Neutral leo.", None, "leo"),
        ("Two", None, None),
        ("Reset.", None, None),
    ]


def test_directive_just_above_a_heading_applies_to_that_chapter() -> None:
    source = "## One\n\nA.\n\n<!-- tts: voice=leo -->\n## Two\n\nB.\n"
    blocks = [b for s in parse_markdown(source).sections for b in s.blocks]
    assert [(b.text, b.voice) for b in blocks] == [
        ("One", None),
        ("A.", None),
        ("Two", "leo"),
        ("B.", "leo"),
    ]


def test_inline_directive_applies_from_the_next_block() -> None:
    source = "First <!-- tts: emotion=happy --> words.\n\nSecond.\n"
    blocks = parse_markdown(source).sections[0].blocks
    assert [(b.text, b.emotion) for b in blocks] == [("First words.", None), ("Second.", "happy")]


def test_parse_directives_values() -> None:
    assert parse_directives("<!-- TTS: Emotion=angry voice='zoe' -->", 1) == [
        {"emotion": "angry", "voice": "zoe"}
    ]
    assert parse_directives("<!-- tts: voice=None -->", 1) == [{"voice": None}]
    assert parse_directives("<!-- not a directive -->", 1) == []


@pytest.mark.parametrize("body", ["emtion=sad", "emotion", "voice="])
def test_malformed_directive_names_its_line(body: str) -> None:
    with pytest.raises(UserError, match=r"line 3: .*tts directive") as caught:
        parse_markdown(f"Text.\n\n<!-- tts: {body} -->\n")
    assert "\n" not in str(caught.value)


def test_nothing_readable_gives_no_sections() -> None:
    source = "```\ncode\n```\n\n![img](x.png)\n\n<!-- note -->\n"
    assert parse_markdown(source).sections == ()


def test_chapter_heading_with_a_bare_number_is_read_as_a_chapter() -> None:
    from verified_tts.text.book import parse_book

    book = parse_book(
        "# Fables\n\n## II. The Fox and the Grapes\n\nA fox.\n\n### I. A note\n\nSour.\n\n"
        "## 3. Rain\n\nIt rained.\n\n## The Last\n\nEnd.\n"
    )
    headings = [(s.text, s.spoken) for s in book.segments if s.kind == "heading"]
    assert headings == [
        ("Fables", "Fables"),
        ("Chapter II. The Fox and the Grapes", "Chapter two. The Fox and the Grapes"),
        ("I. A note", "one. A note"),
        ("Chapter 3. Rain", "Chapter three. Rain"),
        ("The Last", "The Last"),
    ]
    # the chapter keeps its title as written (chapter markers, file names)
    assert [c.title for c in book.chapters][1] == "II. The Fox and the Grapes"
