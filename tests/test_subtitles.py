"""Subtitle parsing: SRT and WebVTT in, clean timed cues out, one-line errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from verified_tts.errors import UserError
from verified_tts.text.subtitles import (
    clean_cue_text,
    format_timestamp,
    load_subtitles,
    parse_subtitles,
    voice_for,
)

SINTEL = Path(__file__).resolve().parent / "data" / "sintel-en.srt"


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path, **kwargs) -> str:
    with pytest.raises(UserError) as caught:
        load_subtitles(path, **kwargs)
    message = str(caught.value)
    assert "\n" not in message  # one line, as the CLI prints it
    return message


def test_sintel_srt_all_cues_in_order_with_lines_joined():
    subtitles = load_subtitles(SINTEL)
    assert subtitles.format == "srt"
    assert len(subtitles.cues) == 26 and not subtitles.skipped and not subtitles.warnings
    first, third = subtitles.cues[0], subtitles.cues[2]
    assert (first.index, first.line, first.start, first.end) == (1, 2, 107.25, 110.5)
    assert first.text == "This blade has a dark past."
    assert third.text == "You're a fool for traveling alone, so completely unprepared."
    assert third.line == 10 and third.identifier == "3"
    assert all(a.end <= b.start for a, b in zip(subtitles.cues, subtitles.cues[1:], strict=False))


@pytest.mark.parametrize(
    ("raw", "text", "speaker"),
    [
        ("<i>Hello</i> {\\an8}there", "Hello there", None),
        ("<font color='#ff0'>Yellow</font> &amp; <b>bold</b>", "Yellow & bold", None),
        ("[ANNA] Come here!", "Come here!", "ANNA"),  # known to the voice map
        ("[MUSIC] Come here!", "Come here!", None),  # not known: a sound description
        ("JOHN: Hi.", "Hi.", "JOHN"),
        ("Note: the door is open.", "Note: the door is open.", None),  # not a name
        ("Dr. Smith: Sit down.", "Sit down.", "Dr. Smith"),  # known to the voice map
        ("- Hi.\n- Hello.", "Hi. Hello.", None),
        ("[door slams] Who's there?", "Who's there?", None),
        ("♪ la la la ♪", "la la la", None),
        ("At 10:30 we leave.", "At 10:30 we leave.", None),
        ("<v.loud Roger>Hey<00:00:01.000> you", "Hey you", "Roger"),
        ("<ruby>漢<rt>kan</rt></ruby> ok", "漢 ok", None),
    ],
)
def test_markup_and_speaker_prefixes(raw, text, speaker):
    cleaned, found, _ = clean_cue_text(raw, known_speakers=["dr. smith", "Anna"])
    assert (cleaned, found) == (text, speaker)


def test_several_speakers_in_one_cue_voice_as_the_first_with_a_warning():
    source = "1\n00:00:01,000 --> 00:00:03,000\nJOHN: Hi.\nMARY: Hello.\n"
    subtitles = parse_subtitles(source, "srt", name="s.srt")
    assert subtitles.cues[0].speaker == "JOHN" and subtitles.cues[0].text == "Hi. Hello."
    assert "several speakers" in subtitles.warnings[0] and "cue 1 (line 2)" in subtitles.warnings[0]


def test_voice_map_matches_names_case_insensitively():
    assert voice_for("ANNA", {"Anna": "f3"}) == "f3"
    assert voice_for("Bob", {"Anna": "f3"}) is None
    assert voice_for(None, {"Anna": "f3"}) is None


def test_webvtt_with_header_notes_ids_settings_and_voices(tmp_path):
    path = write(
        tmp_path,
        "subs.vtt",
        "WEBVTT - a title\n\nNOTE written by hand\n\nSTYLE\n::cue { color: red }\n\n"
        "intro\n00:01.000 --> 00:02.500 align:start line:0\n<v Anna>Hello <b>there</b>.\n"
        "Second line\n\n00:00:03.000 --> 00:00:04.250\n<c.yellow>World</c> &amp; more\n",
    )
    subtitles = load_subtitles(path)
    assert subtitles.format == "vtt"
    assert [(c.start, c.end, c.text, c.speaker) for c in subtitles.cues] == [
        (1.0, 2.5, "Hello there. Second line", "Anna"),
        (3.0, 4.25, "World & more", None),
    ]
    assert subtitles.cues[0].identifier == "intro" and subtitles.cues[0].line == 9
    assert subtitles.cues[1].line == 13


def test_empty_cues_are_skipped_with_a_warning(tmp_path):
    path = write(
        tmp_path,
        "s.srt",
        "1\n00:00:01,000 --> 00:00:02,000\n[MUSIC]\n\n2\n00:00:03,000 --> 00:00:04,000\n"
        "Words.\n\n3\n00:00:05,000 --> 00:00:05,000\nZero length.\n",
    )
    subtitles = load_subtitles(path)
    assert [c.text for c in subtitles.cues] == ["Words."]
    assert [(s.index, s.line) for s in subtitles.skipped] == [(1, 2), (3, 10)]
    assert "cue 1 (line 2) skipped: nothing to say ('[MUSIC]')" in subtitles.warnings[0]
    assert "zero length" in subtitles.warnings[1]


def test_overlapping_cues_are_cut_at_the_next_start(tmp_path):
    path = write(
        tmp_path,
        "s.srt",
        "1\n00:00:01,000 --> 00:00:04,000\nFirst.\n\n2\n00:00:03,000 --> 00:00:05,000\n"
        "Second.\n\n3\n00:00:03,000 --> 00:00:06,000\nThird.\n",
    )
    subtitles = load_subtitles(path)
    assert [(c.index, c.start, c.end, c.text) for c in subtitles.cues] == [
        (1, 1.0, 3.0, "First."),
        (2, 3.0, 6.0, "Second. Third."),  # same start: joined into one line
    ]
    assert "overlaps cue 2 by 1.000 s" in subtitles.warnings[0]
    assert "starts together with cue 2" in subtitles.warnings[1]


def test_cues_out_of_time_order_are_sorted(tmp_path):
    path = write(
        tmp_path,
        "s.srt",
        "1\n00:00:05,000 --> 00:00:06,000\nLater.\n\n2\n00:00:01,000 --> 00:00:02,000\nEarlier.\n",
    )
    subtitles = load_subtitles(path)
    assert [c.text for c in subtitles.cues] == ["Earlier.", "Later."]
    assert "not in time order" in subtitles.warnings[0]


def test_blank_line_inside_srt_text_continues_the_cue(tmp_path):
    path = write(tmp_path, "s.srt", "1\n00:00:01,000 --> 00:00:03,000\nHello\n\nworld.\n")
    assert load_subtitles(path).cues[0].text == "Hello world."


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "s.srt",
            "1\n00:00:01,000 --> 00:00:02,000\nHi.\n\n2\n00:00:0x,000 --> 00:00:04,000\nYo.\n",
            "cue 2 (line 6): malformed timing line '00:00:0x,000 --> 00:00:04,000'",
        ),
        (
            "s.srt",
            "1\n00:00:01,000 --> 00:00:02,000\nHi.\n\n2\n00:00:03,000 --> 00:00:04,000\nYo.\n\n"
            "3\n00:00:05,000 --> 00:00:04,000\nBack.\n",
            "cue 3 (line 10) ends (00:00:04,000) before it starts (00:00:05,000)",
        ),
        (
            "s.srt",
            "1\n00:00:01,000 --> 00:00:02,000\nHi.\n\n2\nNo timing line here.\n",
            "line 5 (after cue 1): cue 2 has no timing line",
        ),
        (
            "s.srt",
            "1\n00:00:01,000 --> 00:01:75,000\nHi.\n",
            "cue 1 (line 2): malformed timing line",
        ),
        (
            "s.vtt",
            "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHi.\n\n00:00:03.000 -> 00:00:04.000\nYo.\n",
            "line 6 (after cue 1): '00:00:03.000 -> 00:00:04.000' has no timing line",
        ),
        (
            "s.vtt",
            "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHi.\n\n00:00:03,000 --> 00:00:04.000\nYo.\n",
            "cue 2 (line 6): malformed timing line",
        ),
        (
            "s.vtt",
            "WEBVTT\n\n00:00:05.000 --> 00:00:02.000\nHi.\n",
            "cue 1 (line 3) ends (00:00:02,000) before it starts (00:00:05,000)",
        ),
        ("s.vtt", "00:00:01.000 --> 00:00:02.000\nHi.\n", "line 1: a WebVTT file starts"),
    ],
)
def test_bad_input_is_one_line_naming_cue_and_line(tmp_path, name, content, expected):
    path = write(tmp_path, name, content)
    message = error_of(path)
    assert message.startswith(str(path)) and expected in message


def test_non_utf8_names_the_cue_and_line(tmp_path):
    """A byte that is neither UTF-8 nor Windows-1252 (0x81 is unassigned there) is refused;
    Windows-1252 files themselves are read (the test below)."""
    data = b"1\n00:00:01,000 --> 00:00:02,000\nHi.\n\n2\n00:00:03,000 --> 00:00:04,000\n"
    path = write(tmp_path, "s.srt", data + b"Caf\x81 au lait.\n")
    message = error_of(path)
    assert "cue 2 (line 7) is not UTF-8 text (byte 0x81)" in message and "UTF-8" in message


def test_a_byte_order_mark_and_a_windows_1252_file_are_read(tmp_path):
    cues = (
        "1\n00:00:01,000 --> 00:00:02,000\nHi.\n\n2\n00:00:03,000 --> 00:00:04,000\nCafé au lait.\n"
    )
    with_bom = load_subtitles(write(tmp_path, "bom.srt", b"\xef\xbb\xbf" + cues.encode()))
    legacy = load_subtitles(write(tmp_path, "legacy.srt", cues.encode("cp1252")))
    for subtitles in (with_bom, legacy):
        assert [(c.index, c.text) for c in subtitles.cues] == [(1, "Hi."), (2, "Café au lait.")]
        assert subtitles.cues[0].identifier == "1"  # the mark is not part of the first cue
    assert with_bom.warnings == ()
    [warning] = legacy.warnings
    assert "Windows-1252" in warning and "cue 2" in warning


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "is empty"),
        (b"\xff\xfe1\x00", "UTF-16"),
        (b"1\n\x00\x01binary", "binary file"),
        (b"1\n00:00:01,000 --> 00:00:02,000\n[MUSIC]\n", "no cue with anything to say"),
    ],
)
def test_unusable_files(tmp_path, content, expected):
    assert expected in error_of(write(tmp_path, "s.srt", content))


def test_missing_file_and_directory(tmp_path):
    assert "does not exist" in error_of(tmp_path / "nope.srt")
    assert "is a directory" in error_of(tmp_path)


def test_crlf_line_ends_and_text_before_the_first_cue(tmp_path):
    path = write(tmp_path, "s.srt", "1\r\n00:00:01,000 --> 00:00:02,000\r\nHi\r\nthere\r\n")
    assert load_subtitles(path).cues[0].text == "Hi there"
    path = write(tmp_path, "t.srt", "Title\n\n1\n00:00:01,000 --> 00:00:02,000\nHi\n")
    assert "line 1 (before the first cue): 'Title' has no timing line" in error_of(path)


def test_format_is_sniffed_without_a_known_suffix(tmp_path):
    path = write(tmp_path, "subs.txt", "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHi.\n")
    assert load_subtitles(path).format == "vtt"


def test_format_timestamp():
    assert format_timestamp(3723.4567) == "01:02:03,457"
    assert format_timestamp(1.5, separator=".") == "00:00:01.500"
