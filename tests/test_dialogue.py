"""Quoted speech read apart from narration: the quote scanner and the book readers that use it."""

from __future__ import annotations

import pytest
from epub_fixtures import build_epub, xhtml

from verified_tts.text.book import parse_book
from verified_tts.text.dialogue import quote_style, scan_paragraph
from verified_tts.text.epub import load_epub


def _spans(text: str, **kwargs) -> list[tuple[str, bool]]:
    found = scan_paragraph(text, **kwargs)
    return [(text[s.start : s.end], s.dialogue) for s in found.spans]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '"Go home," she said, "before it rains."',
            [('"Go home,"', True), ("she said,", False), ('"before it rains."', True)],
        ),
        (
            "“Go home,” she said. “Before it rains.”",
            [("“Go home,”", True), ("she said.", False), ("“Before it rains.”", True)],
        ),
        ('Anne said: "Yes."', [("Anne said:", False), ('"Yes."', True)]),
        # a nested quote stays inside the outer one
        (
            "\"He told me 'never' twice,\" said Tom.",
            [("\"He told me 'never' twice,\"", True), ("said Tom.", False)],
        ),
        (
            "“He said ‘go’ and went,” she whispered.",
            [("“He said ‘go’ and went,”", True), ("she whispered.", False)],
        ),
        # a quoted word inside a sentence is not speech
        (
            'He called it "the old place" and laughed.',
            [('He called it "the old place" and laughed.', False)],
        ),
        ("No quotes here at all.", [("No quotes here at all.", False)]),
    ],
)
def test_quotes_are_cut_from_the_narration(text, expected):
    assert _spans(text) == expected


def test_single_quoted_books_keep_apostrophes_in_the_words():
    text = "'It is late,' said the boys' father, 'and I don't mind 'em.'"
    assert quote_style([text, "'Go,' she said.", "'Now,' he said."]) == "single"
    assert _spans(text, style="single") == [
        ("'It is late,'", True),
        ("said the boys' father,", False),
        ("'and I don't mind 'em.'", True),
    ]
    assert quote_style(['"Go," she said.', "'Tis so, and 'em too."]) == "double"


def test_a_quote_open_at_a_paragraph_end_continues_in_the_next():
    first = scan_paragraph('"This is the first part of a long speech.')
    assert first.open_at_end and not first.spans[0].closed
    second = scan_paragraph('"And this the last."', after_open=first.open_at_end)
    assert second.spans[0].continues and second.spans[0].closed
    fresh = scan_paragraph('"And this the last."')
    assert not fresh.spans[0].continues


MARKDOWN = """# One

The rain had stopped.

"Go home," she said, "before it rains again."

He called it "the old place" and laughed.

"This is a speech of two paragraphs.

"It ends here," he said.
"""


def test_markdown_book_reads_dialogue_as_utterances_of_its_own():
    book = parse_book(MARKDOWN, dialogue=True)
    kinds = [(s.kind, s.text) for s in book.chapters[0].segments]
    assert kinds == [
        ("heading", "One"),
        ("paragraph", "The rain had stopped."),
        ("dialogue", '"Go home,"'),
        ("paragraph", "she said,"),
        ("dialogue", '"before it rains again."'),
        ("paragraph", 'He called it "the old place" and laughed.'),
        ("dialogue", '"This is a speech of two paragraphs.'),
        ("dialogue", '"It ends here,"'),
        ("paragraph", "he said."),
    ]


def test_without_dialogue_the_book_reads_as_before():
    plain = parse_book(MARKDOWN)
    texts = [s.text for s in plain.chapters[0].segments]
    assert '"Go home," she said, "before it rains again."' in texts
    assert all(s.kind != "dialogue" or s.text.startswith('"') for s in plain.chapters[0].segments)
    # a paragraph without quotes is cut the same either way, so its keys do not change
    with_dialogue = parse_book(MARKDOWN, dialogue=True)
    assert plain.chapters[0].segments[1] == with_dialogue.chapters[0].segments[1]


def test_epub_book_reads_dialogue_as_utterances_of_its_own(tmp_path):
    body = (
        "<h1>One</h1><p>The rain had stopped.</p>"
        "<p>“Go home,” she said, “before it rains again.”</p>"
    )
    path = build_epub(tmp_path / "d.epub", [("a.xhtml", xhtml(body))], [("One", "a.xhtml")])
    segments = load_epub(path, dialogue=True).book.chapters[0].segments
    assert [(s.kind, s.text) for s in segments][-3:] == [
        ("dialogue", "“Go home,”"),
        ("paragraph", "she said,"),
        ("dialogue", "“before it rains again.”"),
    ]


def test_dialogue_segments_carry_their_speaker_and_the_reason():
    source = (
        "# One\n\nAnne and Tom went out, and Anne waved to Tom.\n\n"
        '"Good morning," said Anne.\n\n"Morning," Tom answered.\n\n"It is cold."\n\n'
        "The wind rose.\n\n"
        '"Go," she said.\n'
    )
    segments = parse_book(source, dialogue=True).chapters[0].segments
    said = [(s.speaker, s.speaker_reason) for s in segments if s.kind == "dialogue"]
    assert [who for who, _ in said] == ["Anne", "Tom", "Anne", None]
    assert said[2][1].startswith("turn-taking")
    assert "'she'" in said[3][1]  # no woman named: the default dialogue voice, and why
    assert all(s.speaker is None for s in segments if s.kind != "dialogue")


def test_a_hard_wrapped_markdown_paragraph_keeps_its_tag_beside_its_quote():
    source = (
        "# One\n\nAnne and Tom went home, and Anne smiled at Tom, for Anne liked Tom.\n\n"
        'Anne looked at Tom and said,\n"Go home."\n'
    )
    segments = parse_book(source, dialogue=True).chapters[0].segments
    assert [(s.paragraph, s.kind, s.speaker) for s in segments[-2:]] == [
        (2, "paragraph", None),
        (2, "dialogue", "Anne"),
    ]
    # without dialogue, a line opening with a quote is still a block of its own, as before
    plain = parse_book(source).chapters[0].segments
    assert [s.paragraph for s in plain[-2:]] == [2, 3]
