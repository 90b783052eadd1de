"""Plain-text (Project Gutenberg style) books: structure, what is left out, clean-up, errors."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import CLI, ROOT
from verified_tts.errors import UserError
from verified_tts.options import ProductionOptions
from verified_tts.text.plaintext import load_plaintext, parse_plaintext
from verified_tts.text.plaintext_inline import join_lines, title_case, uncap, vocabulary
from verified_tts.text.production import load_input

GUTENBERG = """The Project Gutenberg EBook of The Lantern, by Jane Roe

*** START OF THIS PROJECT GUTENBERG EBOOK THE LANTERN ***




Produced by A. Volunteer and the Online Distributed
Proofreading Team.



[Illustration: "SHE HELD THE LANTERN HIGH"]



THE LANTERN

BY

JANE ROE

_Copyright, 1901_


CONTENTS

CHAPTER                                 PAGE

   I. THE ROAD                            1

  II. THE RIVER                          15


CHAPTER I.

THE ROAD.


IT was late when the cart came down the hill, and the _lantern_ swung
on its hook. The driver, a good-tempered man, sang as he drove.

[Illustration: _The cart on the hill,
drawn by two horses._]

"Hold it steady," said the boy.[1]

       *       *       *       *       *

The gate-posts stood white in the dark.


CHAPTER II.

THE RIVER.


The river ran *fast* under the bridge, and the words =NO BOATS= were
painted on the rail.

THE END


THE LANTERN SERIES

The Lantern, cloth, $1.00

End of the Project Gutenberg EBook of The Lantern, by Jane Roe

*** END OF THIS PROJECT GUTENBERG EBOOK THE LANTERN ***
"""


def _book(tmp_path, text: str, name: str = "book.txt", **options):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_plaintext(path, **options)


def test_gutenberg_book_chapters_titles_and_what_is_left_out(tmp_path):
    plain = _book(tmp_path, GUTENBERG)
    book = plain.book
    assert book.title == "The Lantern" and book.author == "Jane Roe"
    assert [c.title for c in book.chapters] == ["Chapter I. The Road", "Chapter II. The River"]
    first = book.chapters[0].segments
    assert first[0].kind == "heading" and first[0].spoken == "Chapter one. The Road"
    texts = [s.text for s in book.segments]
    # capitals of a chapter opening, emphasis marks and footnote marks are not read
    assert texts[1].startswith(
        "It was late when the cart came down the hill, and the lantern swung"
    )
    assert '"Hold it steady," said the boy.' in texts
    assert (
        "The river ran fast under the bridge, and the words No Boats were painted on the rail."
        in texts
    )
    assert texts[-1] == "The End"
    joined = " ".join(texts)
    for absent in ("Illustration", "Produced", "Copyright", "PAGE", "SERIES", "$", "*", "_", "["):
        assert absent not in joined, absent
    skipped = " | ".join(plain.skipped)
    assert "Project Gutenberg header" in skipped and "Project Gutenberg footer" in skipped
    assert "front matter" in skipped and "after THE END" in skipped
    assert "[Illustration: _The cart on the hill, drawn by two horses._]" in skipped
    assert "--keep-extras" in skipped
    # every segment keeps its source line
    line = GUTENBERG.splitlines().index("The gate-posts stood white in the dark.") + 1
    assert next(s.line for s in book.segments if s.text.startswith("The gate-posts")) == line


def test_keep_extras_reads_front_and_back_matter_but_not_the_contents(tmp_path):
    plain = _book(tmp_path, GUTENBERG, keep_extras=True)
    texts = [s.text for s in plain.book.segments]
    assert any("Produced by A. Volunteer" in t for t in texts)
    assert any("The Lantern, cloth" in t for t in texts)
    assert not any("PAGE" in t or "The Road 1" in t for t in texts)
    assert "front matter" not in " ".join(plain.skipped)


BARE = """KATE

A Novel




I

UNDER THE PINES


The house stood on a rise of wooded land.

She came down the stair.


II

THE MEETING


They met in the woods.

    KATE.


III

They parted at noon.
"""


def test_bare_numerals_on_their_own_line_are_chapters_read_as_chapters(tmp_path):
    book = _book(tmp_path, BARE).book
    assert [c.title for c in book.chapters] == [
        "Chapter I. Under the Pines",
        "Chapter II. The Meeting",
        "Chapter III",
    ]
    assert [c.segments[0].spoken for c in book.chapters] == [
        "Chapter one. Under the Pines",
        "Chapter two. The Meeting",
        "Chapter three",
    ]
    # a signature that happens to be the title is read; the half-title above chapter I is not
    assert [s.text for s in book.chapters[1].segments][-1] == "Kate."


@pytest.mark.parametrize(
    ("heading", "title", "spoken"),
    [
        ("Chapter 1\n\nThe Start", "Chapter 1. The Start", "Chapter one. The Start"),
        ("CHAPTER THE FIRST.", "Chapter the First", "Chapter the First"),
        (
            "CHAPTER IV. A LONG WAY HOME.",
            "Chapter IV. A Long Way Home",
            "Chapter four. A Long Way Home",
        ),
        ("Chapter 12: Rain", "Chapter 12. Rain", "Chapter twelve. Rain"),
    ],
)
def test_chapter_heading_forms(tmp_path, heading, title, spoken):
    text = f"{heading}\n\nIt rained all day and all night.\n\nChapter 13\n\nThe sun came out.\n"
    book = _book(tmp_path, text).book
    assert book.chapters[0].title == title
    assert book.chapters[0].segments[0].spoken == spoken


def test_book_headings_are_read_at_the_start_of_their_first_chapter(tmp_path):
    text = (
        "BOOK I\n\nCHAPTER I.\n\nOne day.\n\nCHAPTER II.\n\nTwo days.\n\n"
        "BOOK II\n\nCHAPTER I.\n\nThree days.\n"
    )
    book = _book(tmp_path, text).book
    assert [c.title for c in book.chapters] == ["Chapter I", "Chapter II", "Chapter I"]
    assert [s.spoken for s in book.chapters[2].segments[:2]] == ["Book two", "Chapter one"]


def test_unnumbered_sections_and_a_contents_list_in_the_body(tmp_path):
    text = (
        "THE TITLE\n\nPREFACE.\n\nThis book was written in a cold winter, long ago, by a man "
        "who liked to write.\n\nCONTENTS.\n\n    I.  THE ROAD\n\n   II.  THE RIVER\n\n"
        "NOTES.\n\n  I.  A note\n\nCHAPTER I.\n\nTHE ROAD.\n\nIt was late.\n\nNOTES.\n\n"
        "I.\n\nA NOTE.\n\nThe road was old.\n\nII.\n\nANOTHER.\n\nThe river was older.\n"
    )
    plain = _book(tmp_path, text)
    book = plain.book
    assert [c.title for c in book.chapters] == ["Preface", "Chapter I. The Road", "Notes"]
    assert [s.spoken for s in book.chapters[2].segments] == [
        "Notes", "one. A Note", "The road was old.", "two. Another", "The river was older."
    ]  # fmt: skip
    assert "contents list" in " ".join(plain.skipped)


def test_line_end_hyphens_are_mended_by_the_books_own_words():
    words = vocabulary("the gate and the posts, a beautiful day, the gate posts and the well")
    lines = [(1, "It was a beau-"), (2, "tiful day by the gate-"), (3, "posts.")]
    assert join_lines(lines, words).text == "It was a beautiful day by the gate-posts."
    dash = join_lines([(1, "He stopped--"), (2, "and ran.")], words)
    assert dash.text == "He stopped--and ran." and dash.starts == ((0, 1), (12, 2))


def test_capitals_become_the_case_a_reader_says():
    assert uncap("IT was late, and GUESTS ARE WELCOME said the sign.") == (
        "It was late, and Guests Are Welcome said the sign."
    )
    assert uncap("The FBI came, and Charles II. left.") == "The FBI came, and Charles II. left."
    assert title_case("THE MEETING IN THE WOODS") == "The Meeting in the Woods"
    assert title_case("MCDERMOTT'S SELF-SURRENDER") == "McDermott's Self-Surrender"
    assert title_case("Already Mixed Case") == "Already Mixed Case"


def test_load_input_reads_txt_and_lists_what_it_skipped(tmp_path):
    path = tmp_path / "book.txt"
    path.write_text(GUTENBERG, encoding="utf-8")
    loaded = load_input(path, ProductionOptions(chapters="2"))
    assert [c.title for c in loaded.book.chapters] == ["Chapter II. The River"]
    assert any("Illustration" in s for s in loaded.skipped)


def _error(tmp_path, data: bytes, name: str = "book.txt") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UserError) as error:
        load_plaintext(path)
    return str(error.value)


def test_bad_plain_text_is_one_line_like_markdown(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_plaintext(tmp_path / "nope.txt")
    assert "is empty" in _error(tmp_path, b"\n  \n")
    assert "NUL byte" in _error(tmp_path, b"CHAPTER I.\n\x00\x01")
    assert "not UTF-8" in _error(tmp_path, b"CHAPTER I.\n\ncaf\xe9\n")
    assert "UTF-16" in _error(tmp_path, "hello".encode("utf-16"))
    nothing = _error(tmp_path, b"[Illustration: a cat]\n\n* * * * *\n")
    assert "nothing to read aloud" in nothing and "\n" not in nothing
    with pytest.raises(UserError, match="directory, not a book; give a UTF-8 plain-text book"):
        load_plaintext(tmp_path)


def test_cli_render_txt_errors_are_one_line(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    done = subprocess.run(
        [*CLI, "render", str(empty)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if line.strip()][-1].startswith("error:")


def test_parse_keeps_dialogue_paragraphs_apart():
    parsed = parse_plaintext('CHAPTER I.\n\n"Come here," she said.\n\nHe came.\n')
    kinds = [b.kind for b in parsed.document.sections[0].blocks]
    assert kinds == ["heading", "dialogue", "paragraph"]


def test_a_brace_drawn_down_a_cast_list_is_not_read(tmp_path):
    # little-colonels-hero.txt: a printed brace groups six names under "Flower Messengers"
    cast = (
        "CHAPTER I.\n\n    Chorus of Fairies.\n"
        "                           {Pansy.\n"
        "    Flower Messengers      {Rose.\n"
        "                           {Daisy.\n\n"
        "A set {of braces} and a lone { here are the author's.\n"
    )
    book = _book(tmp_path, cast).book
    segments = [s.text for chapter in book.chapters for s in chapter.segments]
    assert segments == [
        "Chapter I",
        "Chorus of Fairies.",
        "Pansy.",
        "Flower Messengers Rose.",
        "Daisy.",
        "A set {of braces} and a lone { here are the author's.",
    ]
