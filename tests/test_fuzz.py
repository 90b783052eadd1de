"""Hostile input: property-based tests over the Markdown, SRT/VTT and TOML config readers (never a
traceback: a clear UserError or a valid plan), paths made from chapter titles and job ids that
never leave the output folder, and the large and oddly encoded files a user really has: 10,000
cues, a 5 MB paragraph, UTF-16, Latin-1, a BOM, CRLF line ends.

``VTTS_FUZZ_EXAMPLES`` sets the examples per property (benchmarks/distributed/reliability.py raises
it); :data:`CASES` counts the cases run, per reader.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verified_tts.config import build_config, read_config_file
from verified_tts.errors import UserError
from verified_tts.output.assembly import _slug
from verified_tts.text.book import load_book, parse_book
from verified_tts.text.subtitles import load_subtitles, parse_subtitles

EXAMPLES = int(os.environ.get("VTTS_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,  # the same cases in CI every time; the benchmark varies the count
)
CASES: Counter[str] = Counter()

# Text that looks like what the readers expect, so cases reach past the first check.
MD_PIECES = st.sampled_from(
    [
        "# ",
        "## ",
        "### ",
        "\n",
        "\n\n",
        "*",
        "_",
        "`",
        "```\n",
        "> ",
        "- ",
        "1. ",
        "[a](b)",
        "![i](x.png)",
        "<!-- c -->",
        '<!-- voice: "x" -->',
        "<!-- emotion: happy -->",
        "<br>",
        "| a | b |\n|---|---|\n",
        "\\",
        "&amp;",
        "Mr. ",
        "3.5 ",
        "Hello world. ",
        "\r\n",
        "\t",
        "\u200b",
        "\ufeff",
        "é",
        "中文",
        "🙂",
        "-- ",
        '"',
        "'",
        "...",
        "CHAPTER I\n",
    ]
)
TEXTISH = st.one_of(
    st.text(max_size=400),
    st.lists(st.one_of(MD_PIECES, st.text(max_size=12)), max_size=60).map("".join),
)
STAMP = st.builds(
    lambda h, m, s, ms, sep: f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}",
    st.integers(0, 99),
    st.integers(0, 70),
    st.integers(0, 70),
    st.integers(0, 1200),
    st.sampled_from([",", "."]),
)
CUE = st.builds(
    lambda n, a, b, text, arrow: f"{n}\n{a}{arrow}{b}\n{text}\n",
    st.one_of(st.integers(-2, 20000).map(str), st.text(max_size=4)),
    STAMP,
    STAMP,
    st.one_of(TEXTISH, st.sampled_from(["<i>x</i>", "[music]", "ANNA: hi", ""])),
    st.sampled_from([" --> ", "-->", " -> ", " --> ", "  -->  "]),
)
SUBTITLES = st.one_of(
    st.text(max_size=300),
    st.lists(CUE, max_size=12).map("\n".join),
    st.lists(CUE, max_size=12).map(lambda cues: "WEBVTT\n\n" + "\n".join(cues)),
)


def _expect_plan_or_user_error(action) -> str:
    try:
        action()
    except UserError as error:
        message = str(error)
        assert message.strip() and "\n" not in message.strip(), message
        return "error"
    return "plan"


@FUZZ
@given(source=TEXTISH, max_chars=st.integers(1, 400))
def test_markdown_gives_a_plan_or_one_line(source, max_chars):
    CASES["markdown"] += 1

    def plan():
        book = parse_book(source, max_chars=max_chars)
        for number, chapter in enumerate(book.chapters):
            assert chapter.index == number and chapter.segments
            for segment in chapter.segments:
                assert segment.spoken.strip()
                assert segment.chapter == number
            assert "/" not in _slug(chapter.title, number)

    _expect_plan_or_user_error(plan)


@FUZZ
@given(source=SUBTITLES, format=st.sampled_from(["srt", "vtt"]))
def test_subtitles_give_a_plan_or_one_line(source, format):
    CASES["subtitles"] += 1

    def plan():
        subtitles = parse_subtitles(source, format, name="cues")
        for cue in subtitles.cues:
            assert cue.end >= cue.start >= 0 and cue.text.strip()

    _expect_plan_or_user_error(plan)


TOML_KEYS = st.sampled_from(
    [
        "candidates",
        "seed",
        "generator",
        "voice",
        "adaptive",
        "keep",
        "window",
        "model",
        "name",
        "selection",
        "gates",
        "weights",
        "verifiers",
        "wer",
        "speaker",
        "emotion",
        "assembly",
        "loudness",
        "pause",
        "max",
        "min",
        "x",
    ]
)
TOML_VALUES = st.recursive(
    st.one_of(
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=True),
        st.booleans(),
        st.text(max_size=20),
        st.none(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(TOML_KEYS, inner, max_size=4)
    ),
    max_leaves=12,
)


def _toml(value) -> str:
    """A TOML rendering of ``value`` (None becomes a bare invalid token, on purpose)."""
    import json

    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "nothing"
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(repr(value), repr(value))
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


@FUZZ
@given(
    table=st.dictionaries(TOML_KEYS, TOML_VALUES, max_size=6),
    raw=st.one_of(st.none(), st.binary(max_size=200)),
)
def test_config_gives_a_config_or_one_line(table, raw):
    CASES["config"] += 1
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        if raw is not None:
            path.write_bytes(raw)
        else:
            path.write_text(
                "\n".join(f"{k} = {_toml(v)}" for k, v in table.items()), encoding="utf-8"
            )
        _expect_plan_or_user_error(lambda: build_config(read_config_file(path)))


@FUZZ
@given(data=st.binary(max_size=400), suffix=st.sampled_from([".md", ".srt", ".vtt", ".txt"]))
def test_any_bytes_as_a_file_give_a_plan_or_one_line(data, suffix):
    CASES["files"] += 1
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"input{suffix}"
        path.write_bytes(data)
        reader = load_book if suffix == ".md" else load_subtitles
        _expect_plan_or_user_error(lambda: reader(path))


@FUZZ
@given(
    title=st.one_of(
        st.none(),
        st.text(max_size=80),
        st.sampled_from(["..", "../../etc/passwd", "/", "a/../../b", "\x00", "~"]),
    ),
    index=st.integers(0, 10_000),
)
def test_chapter_file_names_stay_in_the_chapters_folder(title, index):
    CASES["paths"] += 1
    out = Path("/out/chapters")
    name = _slug(title, index)
    assert (out / name).resolve().parent == out
    assert name not in (".", "..") and "/" not in name and "\x00" not in name


@FUZZ
@given(
    job_id=st.one_of(
        st.text(max_size=40), st.sampled_from(["..", "../x", "/etc", "vtts-render-../../..", ""])
    )
)
def test_job_ids_never_name_a_folder_outside_the_queue(job_id):
    from jobs.queue import JobQueue

    CASES["paths"] += 1
    queue = JobQueue.__new__(JobQueue)
    queue.directory = Path("/queue")
    try:
        folder = queue._job_dir(job_id)
    except UserError:
        return
    assert folder.resolve().parent == Path("/queue/jobs"), folder


# -- large and oddly encoded files -----------------------------------------------------------------
def _stamp(t: float) -> str:
    hours, minutes, seconds = int(t // 3600), int(t % 3600 // 60), int(t % 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d},{int(t * 1000 % 1000):03d}"


def _srt(cues: int, newline: str = "\n") -> str:
    lines = []
    for i in range(cues):
        start = i * 2.0
        lines += [str(i + 1), f"{_stamp(start)} --> {_stamp(start + 1.5)}", f"Line {i}.", ""]
    return newline.join(lines)


def test_ten_thousand_cues(tmp_path):
    path = tmp_path / "long.srt"
    path.write_text(_srt(10_000), encoding="utf-8")
    subtitles = load_subtitles(path)
    assert len(subtitles.cues) == 10_000


def test_five_megabyte_paragraph_is_cut_into_bounded_utterances(tmp_path):
    path = tmp_path / "big.md"
    sentence = "The birch canoe slid on the smooth planks. "
    path.write_text("# Big\n\n" + sentence * (5_000_000 // len(sentence)), encoding="utf-8")
    book = load_book(path, max_chars=250)
    segments = [s for c in book.chapters for s in c.segments]
    assert len(segments) > 100_000 // 2
    assert max(len(s.spoken) for s in segments) <= 250


@pytest.mark.parametrize("suffix", [".md", ".srt"])
def test_utf16_latin1_bom_and_crlf(tmp_path, suffix):
    reader = load_book if suffix == ".md" else load_subtitles
    text = "# Café\n\nA naïve café.\n" if suffix == ".md" else _srt(3).replace("Line", "Café")
    plain = tmp_path / f"plain{suffix}"
    plain.write_text(text, encoding="utf-8")
    # subtitles as they come: a Windows-1252 (Latin-1) file is read, with a warning naming its cue
    refused = ("utf-16", "latin-1") if suffix == ".md" else ("utf-16",)
    for encoding in refused:
        path = tmp_path / f"{encoding}{suffix}"
        path.write_bytes(text.encode(encoding))
        with pytest.raises(UserError, match="UTF-16|not UTF-8") as raised:
            reader(path)
        assert "re-save" in str(raised.value)
    if suffix == ".srt":
        latin = tmp_path / f"latin-1{suffix}"
        latin.write_bytes(text.encode("latin-1"))
        read = reader(latin)
        assert _same_plan(read, reader(plain))
        assert any("Windows-1252" in warning and "cue 1" in warning for warning in read.warnings)
    for variant, data in {
        "bom": b"\xef\xbb\xbf" + text.encode(),
        "crlf": text.replace("\n", "\r\n").encode(),
        "bom-crlf": b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(),
    }.items():
        path = tmp_path / f"{variant}{suffix}"
        path.write_bytes(data)
        assert reader(path) == reader(plain) or _same_plan(reader(path), reader(plain)), variant


def _same_plan(a, b) -> bool:
    if hasattr(a, "chapters"):
        return [(s.text, s.spoken) for c in a.chapters for s in c.segments] == [
            (s.text, s.spoken) for c in b.chapters for s in c.segments
        ]
    return [(c.start, c.end, c.text) for c in a.cues] == [(c.start, c.end, c.text) for c in b.cues]


# -- EPUB and the pronunciation lexicon ------------------------------------------------------------
LEXICON_KEYS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["Hermione", "(", "[a-", "\\b", "*", "St\\.? John", "(?P<x>a)\\1", ""]),
)
LEXICON_VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(),
    st.booleans(),
    st.dictionaries(
        st.sampled_from(["say", "phonemes", "case", "other"]),
        st.one_of(st.text(max_size=10), st.booleans(), st.integers(), st.sampled_from(["ŋwˈɪən"])),
        max_size=3,
    ),
)


@FUZZ
@given(
    words=st.dictionaries(LEXICON_KEYS, LEXICON_VALUES, max_size=4),
    patterns=st.dictionaries(LEXICON_KEYS, LEXICON_VALUES, max_size=3),
    extra=st.one_of(st.none(), st.sampled_from(["[other]\nx = 1", "words = 3", "\x00", "[words"])),
    text=st.text(max_size=80),
)
def test_lexicon_gives_a_lexicon_or_one_line(words, patterns, extra, text):
    from verified_tts.text.lexicon import load_lexicon

    CASES["lexicon"] += 1
    body = "[words]\n" + "\n".join(f"{_toml(k)} = {_toml(v)}" for k, v in words.items())
    body += "\n[patterns]\n" + "\n".join(f"{_toml(k)} = {_toml(v)}" for k, v in patterns.items())
    if extra:
        body += "\n" + extra
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lexicon.toml"
        path.write_text(body, encoding="utf-8")

        def plan():
            lexicon = load_lexicon(path)
            spoken, phonemes, _ = lexicon.apply(text)
            assert isinstance(spoken, str)

        _expect_plan_or_user_error(plan)


EPUB_BODIES = st.one_of(
    st.text(max_size=200),
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "<h1>",
                    "</h1>",
                    "<p>",
                    "</p>",
                    "<br/>",
                    '<aside epub:type="footnote">',
                    "</aside>",
                    "<section>",
                    "</section>",
                    '<a href="#x">',
                    "</a>",
                    "&amp;",
                    "&nbsp;",
                    "&bogus;",
                    "<![CDATA[x]]>",
                    "<script>",
                    '<img src="x"/>',
                    "<",
                    '<span ssml:ph="ˈθɜrti" ssml:alphabet="ipa">',
                    '<span ssml:ph="T3rti" ssml:alphabet="x-sampa">',
                    "</span>",
                    '<div class="linegroup">',
                    "<div>",
                    "</div>",
                    '<section epub:type="titlepage">',
                    '<p epub:type="note" id="n">',
                    '<span class="lnum">',
                    '<span epub:type="pagebreak" id="p1"/>',
                    '<link rel="pronunciation" href="missing.pls"/>',
                ]
            ),
            st.text(max_size=20),
        ),
        max_size=30,
    ).map("".join),
)


@FUZZ
@given(
    bodies=st.lists(EPUB_BODIES, min_size=1, max_size=3),
    titles=st.lists(st.text(max_size=30), min_size=0, max_size=3),
    version=st.sampled_from([2, 3]),
    damage=st.sampled_from([None, "truncate", "no-container", "garbage"]),
)
def test_epub_gives_a_plan_or_one_line(bodies, titles, version, damage):
    from epub_fixtures import build_epub, xhtml

    from verified_tts.text.epub import load_epub

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "book.epub"
        documents = [(f"c{i}.xhtml", xhtml(body)) for i, body in enumerate(bodies)]
        toc = [
            (title.replace("<", ""), f"c{i}.xhtml") for i, title in enumerate(titles[: len(bodies)])
        ]
        # No case is passed over: the fixture writes any text these strategies draw, and one it
        # cannot write fails this test rather than counting as a case read.
        build_epub(path, documents, toc, version=version)
        CASES["epub"] += 1
        data = path.read_bytes()
        if damage == "truncate":
            path.write_bytes(data[: len(data) // 2])
        elif damage == "no-container":
            path.write_bytes(data.replace(b"META-INF/container.xml", b"META-INF/containe_.xml"))
        elif damage == "garbage":
            path.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 4)

        def plan():
            book = load_epub(path)
            for chapter in book.book.chapters if hasattr(book, "book") else []:
                assert "/" not in _slug(chapter.title, chapter.index)

        _expect_plan_or_user_error(plan)
