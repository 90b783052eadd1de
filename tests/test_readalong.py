"""Read-along pieces on their own: where the EPUB reader says a sentence stands in its XHTML,
spans that keep a document well-formed and otherwise unchanged, word timings (exact from the
generator, aligned by Whisper, interpolated where missed), captions at 42 characters a line, and
the one-line refusals."""

from __future__ import annotations

import html
import re
import subprocess
import zipfile
from xml.etree import ElementTree

import numpy as np
import pytest

from tests.conftest import CLI, DATA, ROOT
from tests.epub_fixtures import build_epub, novel, xhtml
from verified_tts.errors import UserError
from verified_tts.output.captions import LINE_CHARS, chapter_cues, write_captions
from verified_tts.output.readalong_xhtml import Mark, mark_document
from verified_tts.output.timings import ChapterTimings, SentenceTiming
from verified_tts.output.word_timing import (
    INFO_KEY,
    TimedClip,
    WordTiming,
    exact_word_timings,
    interpolate,
    load_aligner,
    snap_to_pauses,
    word_timings,
)
from verified_tts.text.epub import load_epub

TRICKY = (
    "<h1>Chapter &#8220;One&#8221;</h1>"
    '<p><span class="dropcap">T</span>he fox &amp; the <em>hound. They ran</em><a '
    'epub:type="noteref" href="#n">3</a> on. Then they stopped&#8212;and\n   rested.</p>'
    '<div class="stanza"><div>Over the hills</div><div>and far away,</div>'
    "<div>the wind blew on.</div></div>"
)


def _strip_ours(text: str) -> str:
    text = re.sub(r'<span id="(?:rt-)*c\d+-s\d+(?:-w\d+)?(?:-\d+)?">', "", text)
    text = re.sub(r'<link rel="stylesheet" type="text/css" href="readalong\.css"/>', "", text)
    return text


def test_every_character_of_a_segment_points_at_itself_in_the_xhtml(tmp_path):
    path = build_epub(tmp_path / "t.epub", [("ch.xhtml", xhtml(TRICKY))], [("One", "ch.xhtml")])
    book = load_epub(path).book
    raw = zipfile.ZipFile(path).read("OEBPS/ch.xhtml").decode()
    texts = [s.text for s in book.segments]
    assert "Then they stopped—and rested." in texts  # the entity, the newline collapsed
    for segment in book.segments:
        source = segment.source
        assert source is not None and source.file == "OEBPS/ch.xhtml", segment.text
        for index, char in enumerate(segment.text):
            start, end = source.raw_start(index), source.raw_end(index)
            if char == " " and start is None:
                continue  # the space that joins two lines of a stanza is the reader's own
            assert start is not None and end is not None, (segment.text, index)
            decoded = html.unescape(raw[start:end])
            assert decoded == char or (char == " " and decoded.isspace()), (segment.text, index)
        assert source.raw_span(0, len(segment.text)) is not None
    # the note reference "3" is left out of the text but lies inside the sentence's range
    sentence = next(s for s in book.segments if s.text.startswith("They ran"))
    start, end = sentence.source.raw_span(0, len(sentence.text))
    assert ">3</a>" in raw[start:end]


def test_spans_keep_the_document_well_formed_and_everything_else_as_it_was(tmp_path):
    path = build_epub(tmp_path / "t.epub", [("ch.xhtml", xhtml(TRICKY))], [("One", "ch.xhtml")])
    book = load_epub(path).book
    raw = zipfile.ZipFile(path).read("OEBPS/ch.xhtml").decode()
    raw = raw.replace("</body>", '<p id="c0-s2">taken</p></body>')  # an id the book has
    marks = []
    for number, segment in enumerate(book.segments):
        start, end = segment.source.raw_span(0, len(segment.text))
        words = []
        position = 0
        for k, word in enumerate(segment.text.split()):
            at = segment.text.index(word, position)
            position = at + len(word)
            span = segment.source.raw_span(at, position)
            words.append(Mark(f"c0-s{number + 1}-w{k + 1}", *span))
        marks.append(Mark(f"c0-s{number + 1}", start, end, tuple(words)))
    marked, pieces = mark_document(raw, marks, stylesheet="readalong.css")
    ElementTree.fromstring(marked)  # well-formed, or this raises
    assert _strip_ours(marked).replace("</span>", "") == raw.replace("</span>", "")
    assert marked.count("<span") - marked.count("</span>") == raw.count("<span") - raw.count(
        "</span>"
    )
    assert all(p.id.startswith("rt-") for ps in pieces.values() for p in ps)  # c0-s2 was taken
    tree = ElementTree.fromstring(marked)
    text_of = {
        e.get("id"): " ".join("".join(e.itertext()).split())
        for e in tree.iter()
        if e.get("id", "").startswith("rt-")
    }
    for number, segment in enumerate(book.segments):
        made = pieces[f"c0-s{number + 1}"]
        joined = " ".join(text_of[p.id] for p in made)
        # the sentence's pieces hold its text (and the note reference it encloses)
        assert joined.replace("3 ", "").replace(" ,", ",") == segment.text or (
            "".join(joined.split()) == "".join(segment.text.split())
        ), (joined, segment.text)
    # "he fox ... hound." starts inside the drop cap and ends inside <em>: it is cut in pieces,
    # and the stanza's sentence is one piece per line
    assert len(pieces["c0-s2"]) == 3
    stanza = next(k for k, s in enumerate(book.segments) if s.text.startswith("Over"))
    assert len(pieces[f"c0-s{stanza + 1}"]) == 3


def test_exact_word_timings_map_spoken_words_to_written_ones():
    info = {
        INFO_KEY: [
            ["in", 0.1, 0.2],
            ["nineteen", 0.25, 0.6],
            ["eighty-four", 0.6, 1.0],
            ["it", 1.1, 1.2],
            ["began", 1.2, 1.6],
        ]
    }
    timings = exact_word_timings(info, "In 1984 it began.")
    assert [(t.word, t.start_s, t.end_s, t.source) for t in timings] == [
        ("In", 0.1, 0.2, "generator"),
        ("1984", 0.25, 1.0, "generator"),
        ("it", 1.1, 1.2, "generator"),
        ("began.", 1.2, 1.6, "generator"),
    ]
    assert exact_word_timings(info, "Something else entirely.") is None  # counts differ
    joined = {INFO_KEY: [["in the", 0.0, 0.4], ["wood", 0.45, 0.8]]}  # espeak-ng joins them
    timings = exact_word_timings(joined, "In the wood.")
    assert [t.source for t in timings] == ["interpolated", "interpolated", "generator"]
    assert timings[0].start_s == 0.0 and timings[1].end_s == pytest.approx(0.4)
    assert timings[0].end_s == pytest.approx(0.4 * 3 / 7)
    assert exact_word_timings({}, "In 1984 it began.") is None


def test_missed_words_share_the_time_between_their_placed_neighbours():
    words = ["a", "famished", "fox", "saw", "grapes"]
    timings = interpolate(words, [(0.0, 0.2), None, None, (1.0, 1.3), (1.3, 1.8)], 0.0, 2.0)
    assert [t.source for t in timings] == ["asr", "interpolated", "interpolated", "asr", "asr"]
    assert timings[1].start_s == pytest.approx(0.2) and timings[2].end_s == pytest.approx(1.0)
    assert timings[1].end_s == pytest.approx(0.2 + 0.8 * 9 / 13)  # by characters (+1 each)
    squeezed = interpolate(["x", "yy", "z"], [(0.0, 0.5), None, (0.5, 1.0)], 0.0, 1.0)
    assert squeezed[1].end_s - squeezed[1].start_s > 0.05  # neighbours give it room
    assert [t.source for t in squeezed] == ["interpolated"] * 3
    assert [t.end_s for t in squeezed] == sorted(t.end_s for t in squeezed)
    # widening into a placed neighbour reaches the missed words behind it too
    mixed = interpolate(["aa", "b", "cc", "d"], [None, (0.02, 0.04), None, (0.9, 1.0)], 0.0, 1.0)
    assert [t.source for t in mixed] == ["interpolated", "interpolated", "interpolated", "asr"]
    assert mixed[0].start_s == 0.0 and mixed[2].end_s == pytest.approx(0.9)
    assert all(a.end_s == pytest.approx(b.start_s) for a, b in zip(mixed, mixed[1:3], strict=False))


def test_refinement_moves_bounds_into_the_pauses_and_inside_the_voice():
    rate = 16_000
    audio = np.zeros(2 * rate, dtype=np.float32)
    t = np.arange(rate) / rate
    audio[int(0.3 * rate) : int(0.9 * rate)] = 0.3 * np.sin(2 * np.pi * 200 * t[: int(0.6 * rate)])
    audio[int(1.1 * rate) : int(1.7 * rate)] = 0.3 * np.sin(2 * np.pi * 300 * t[: int(0.6 * rate)])
    # Whisper-like: contiguous, late by 40 ms, the first word starting at the clip's start
    given = [WordTiming("one", 0.0, 1.04, "asr"), WordTiming("two", 1.04, 2.0, "asr")]
    one, two = snap_to_pauses(given, audio, rate, lag_s=0.04)
    assert one.start_s == pytest.approx(0.3, abs=0.011)  # where the voice starts
    assert one.end_s == pytest.approx(0.9, abs=0.011)  # the pause: 0.9 .. 1.1
    assert two.start_s == pytest.approx(1.1, abs=0.011)
    assert two.end_s == pytest.approx(1.7, abs=0.011)  # where the voice ends
    assert [t.source for t in (one, two)] == ["asr", "asr"]
    # no pause near the meeting point: the instant stays (moved by the lag)
    far = snap_to_pauses(
        [WordTiming("a", 0.3, 0.6, "asr"), WordTiming("b", 0.6, 0.9, "asr")], audio, rate, 0.04
    )
    assert far[0].end_s == pytest.approx(0.56) and far[1].start_s == pytest.approx(0.56)


def test_whisper_aligns_the_written_words_of_a_real_clip(synthesizer_factory):
    from verified_tts.generators import SynthesisRequest
    from verified_tts.text.normalize import normalize_text

    synthesizer = synthesizer_factory()
    text = "The birch canoe slid on the smooth planks in 1984."
    spoken = normalize_text(text)
    (candidate,) = synthesizer.generator.sample([SynthesisRequest("k", 0, 3, spoken)])
    clip = TimedClip(text, spoken, candidate.audio, candidate.sample_rate, candidate.info)
    aligner = load_aligner(synthesizer.verifiers)
    assert aligner._verifier is synthesizer.verifiers.get("wer")  # the same model, not a copy
    (timings,) = word_timings([clip], lambda: aligner)
    seconds = len(candidate.audio) / candidate.sample_rate
    assert [t.word for t in timings] == text.split()
    assert all(0 <= t.start_s <= t.end_s <= seconds + 0.02 for t in timings)
    assert all(a.end_s <= b.start_s + 1e-9 for a, b in zip(timings, timings[1:], strict=False))
    assert sum(t.source == "asr" for t in timings) >= len(timings) - 2
    # given exact timings, the aligner is never asked
    exact = {INFO_KEY: [[w, k * 0.3, k * 0.3 + 0.25] for k, w in enumerate(spoken.split())]}
    clip = TimedClip(text, spoken, candidate.audio, candidate.sample_rate, exact)
    (given,) = word_timings([clip], lambda: pytest.fail("aligner loaded"))
    assert {t.source for t in given} == {"generator"}


def test_packed_alignment_places_each_clips_words_as_one_clip_a_window_does(synthesizer_factory):
    """Clips share encoder windows (the encoder is the aligner's cost); each clip's words stay
    inside it, in order, and land where aligning it alone puts them."""
    from verified_tts.generators import SynthesisRequest
    from verified_tts.output.word_timing import WordAligner
    from verified_tts.text.normalize import normalize_text

    synthesizer = synthesizer_factory()
    texts = [
        "The birch canoe slid on the smooth planks.",
        "Glue the sheet to the dark blue background.",
        "It's easy to tell the depth of a well.",
        "These days a chicken leg is a rare dish.",
    ]
    clips = []
    for number, text in enumerate(texts):
        spoken = normalize_text(text)
        (candidate,) = synthesizer.generator.sample([SynthesisRequest("k", 0, number, spoken)])
        clips.append(TimedClip(text, spoken, candidate.audio, candidate.sample_rate))
    verifier = synthesizer.verifiers.get("wer")
    packed = WordAligner(verifier, refine=False)  # the bounds as aligned, not moved to pauses
    alone = WordAligner(verifier, refine=False, packed=False)
    assert len(packed._windows([(k, c.audio, [[1]]) for k, c in enumerate(clips)])) == 1
    together, apart = packed.align(clips), alone.align(clips)
    differences = []
    for clip, timings, single in zip(clips, together, apart, strict=True):
        seconds = len(clip.audio) / clip.sample_rate
        assert [t.word for t in timings] == clip.text.split()
        assert all(0 <= t.start_s <= t.end_s <= seconds + 0.02 for t in timings), timings
        assert all(a.end_s <= b.start_s + 1e-9 for a, b in zip(timings, timings[1:], strict=False))
        assert sum(t.source == "asr" for t in timings) >= len(timings) - 1
        differences += [abs(a.start_s - b.start_s) for a, b in zip(timings, single, strict=True)]
    assert np.median(differences) <= 0.03 and max(differences) <= 0.1, sorted(differences)


def _chapter(texts: list[str], words: bool = False) -> ChapterTimings:
    rate, position, sentences = 1000, 500, []
    for number, text in enumerate(texts):
        length = 300 * len(text.split())
        timed = tuple(
            WordTiming(w, (position + 300 * k) / rate, (position + 300 * k + 250) / rate, "asr")
            for k, w in enumerate(text.split())
        )
        sentences.append(
            SentenceTiming(
                f"c0-s{number + 1}", text, position, position + length, rate, timed if words else ()
            )
        )
        position += length + 400
    return ChapterTimings(0, "One", "chapters/01-one.flac", rate, position / rate, tuple(sentences))


@pytest.mark.parametrize("words", [False, True])
def test_captions_are_a_sentence_a_cue_two_lines_of_42_at_most(tmp_path, words):
    import srt
    import webvtt

    long = (
        "The Hare, believing her assertion to be simply impossible, assented to the proposal; "
        "and they agreed that the Fox should choose the course and fix the goal."
    )
    chapter = _chapter(["A short one.", long, "Ends <here> & now."], words)
    cues = chapter_cues(chapter)
    assert all(len(line) <= LINE_CHARS for cue in cues for line in cue.lines)
    assert all(1 <= len(cue.lines) <= 2 for cue in cues)
    assert [c.name for c in cues][:2] == ["c0-s1", "c0-s2"] and len(cues) == 4
    assert [c.name for c in cues[1:3]] == ["c0-s2", "c0-s2-2"]  # four lines: two cues
    assert " ".join(" ".join(c.lines) for c in cues[1:3]) == long
    assert cues[1].start_s == chapter.sentences[1].start_s
    assert cues[2].end_s == chapter.sentences[1].end_s
    starts = [c.start_s for c in cues]
    assert starts == sorted(starts) and all(c.end_s > c.start_s for c in cues)
    if words:  # the second cue of the sentence starts with its first word
        first = len(" ".join(cues[1].lines).split())
        assert cues[2].start_s == chapter.sentences[1].words[first].start_s
    paths = write_captions(tmp_path, chapter, ("srt", "vtt", "m4b"))
    assert paths == ["captions/01-one.srt", "captions/01-one.vtt"]
    parsed = list(srt.parse((tmp_path / paths[0]).read_text()))
    assert [s.content.split("\n") for s in parsed] == [list(c.lines) for c in cues]
    vtt = webvtt.from_string((tmp_path / paths[1]).read_text())
    assert vtt.captions[-1].text == "Ends &lt;here&gt; &amp; now."  # escaped as WebVTT asks
    assert vtt.captions[1].start_in_seconds == int(cues[1].start_s)


def test_read_along_options_the_epub_cannot_have_are_one_line():
    from verified_tts.options import ProductionOptions

    with pytest.raises(UserError, match="aac .* or mp3 only"):
        ProductionOptions(formats=("epub3",), epub_audio="flac")
    with pytest.raises(UserError, match="sentences .* or words"):
        ProductionOptions(read_along="letters")
    assert ProductionOptions(formats=("epub3", "srt", "vtt"), epub_audio="mp3").formats == (
        "epub3", "srt", "vtt"
    )  # fmt: skip


def _one_line(result: subprocess.CompletedProcess, *phrases: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    message = " ".join(result.stderr.split())
    for phrase in phrases:
        assert phrase in message, message


def test_cli_refuses_an_audio_format_the_epub_cannot_carry_and_epub3_of_a_dub(small_book, tmp_path):
    run = lambda *args: subprocess.run(  # noqa: E731
        [*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    _one_line(
        run("render", str(small_book), "--format", "epub3", "--epub-audio", "opus"),
        "--epub-audio 'opus'", "aac", "mp3",
    )  # fmt: skip
    config = tmp_path / "dub.toml"
    config.write_text('[production]\nformats = ["wav", "epub3"]\n')
    _one_line(
        run("dub", str(DATA / "sintel-en.srt"), "--config", str(config), "--out",
            str(tmp_path / "dub")),
        "epub3", "a dub delivers one timed track",
    )  # fmt: skip
    assert not (tmp_path / "dub").exists()  # refused before anything was made


def test_novel_fixture_segments_know_their_documents(tmp_path):
    book = load_epub(novel(tmp_path / "n.epub")).book
    assert {s.source.file for s in book.segments} == {"OEBPS/ch12.xhtml", "OEBPS/ch3.xhtml"}
    assert np.all([s.source.raw_span(0, len(s.text)) is not None for s in book.segments])
