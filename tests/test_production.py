"""Audiobook production: EPUB in, M4B/MP3 out, ACX mastering and check, lexicon, words, markup."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import av
import numpy as np
import pytest
import soundfile as sf
from conftest import CLI, ROOT
from epub_fixtures import build_epub, cover_jpeg, novel, xhtml

from verified_tts.errors import UserError
from verified_tts.output.acx import check, master, measure
from verified_tts.output.encode import split_parts
from verified_tts.text.book import parse_book
from verified_tts.text.epub import load_epub
from verified_tts.text.lexicon import load_lexicon
from verified_tts.text.words import list_words

# --- EPUB ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 3])
def test_epub_follows_spine_and_toc_and_skips_notes_and_front_matter(tmp_path, version):
    path = novel(tmp_path / f"book{version}.epub", version=version, cover=cover_jpeg())
    loaded = load_epub(path)
    book = loaded.book
    assert (book.title, book.author, book.language) == ("A Test Book", "Ann Author", "en")
    assert book.cover == cover_jpeg()
    # spine order (manifest lists ch3 first), TOC titles, a chapter starting at an anchor
    assert [c.title for c in book.chapters] == ["Chapter One", "Chapter Two", "Chapter Three"]
    texts = [[s.text for s in c.segments] for c in book.chapters]
    assert texts[0] == [
        "Chapter One",
        "It was the year 1984 when it began.",
        "The wolf ran.",
        '"Stop," said the lamb.',
    ]
    assert texts[1] == ["Chapter Two", "The second chapter starts inside the file."]
    assert book.chapters[0].segments[0].kind == "heading"
    assert book.chapters[0].segments[3].kind == "dialogue"
    spoken = " ".join(s.spoken for s in book.segments)
    assert "nineteen eighty-four" in spoken
    for unwanted in ("note", "Copyright", "map", "7", "Cover"):
        assert unwanted not in spoken
    assert any("copyright.xhtml" in s for s in loaded.skipped)
    assert any("notes.xhtml" in s for s in loaded.skipped)


def test_keep_extras_reads_front_matter_and_notes(tmp_path):
    book = load_epub(novel(tmp_path / "b.epub"), keep_extras=True).book
    spoken = " ".join(s.text for s in book.segments)
    assert "All rights reserved." in spoken and "A note that must not be read." in spoken


def _drm(path: Path) -> Path:
    novel(path)
    encryption = (
        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData>'
        '<enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
        '<enc:CipherData><enc:CipherReference URI="OEBPS/ch12.xhtml"/></enc:CipherData>'
        "</enc:EncryptedData></encryption>"
    )
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("META-INF/encryption.xml", encryption)
    return path


def test_bad_epubs_are_one_clear_error(tmp_path):
    not_zip = tmp_path / "not.epub"
    not_zip.write_text("hello")
    with pytest.raises(UserError, match="not a ZIP"):
        load_epub(not_zip)
    with pytest.raises(UserError, match="DRM-protected"):
        load_epub(_drm(tmp_path / "drm.epub"))
    images = build_epub(
        tmp_path / "images.epub",
        [("a.xhtml", xhtml('<img src="p1.jpg" alt="page one"/>'))],
        [("Start", "a.xhtml")],
    )
    with pytest.raises(UserError, match="no readable text"):
        load_epub(images)
    broken = tmp_path / "broken.epub"
    with zipfile.ZipFile(broken, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
    with pytest.raises(UserError, match="no META-INF/container.xml"):
        load_epub(broken)


def test_cli_bad_input_is_one_line_and_nonzero(tmp_path):
    drm = _drm(tmp_path / "drm.epub")
    bad_lexicon = tmp_path / "words.toml"
    bad_lexicon.write_text('[patterns]\n"(open" = "x"\n', encoding="utf-8")
    book = tmp_path / "book.md"
    book.write_text("# T\n\nHello.\n", encoding="utf-8")
    for args, needle in (
        (["render", str(drm), "--out", str(tmp_path / "o1")], "DRM-protected"),
        (["render", str(book), "--format", "ogg", "--out", str(tmp_path / "o2")], "unknown output"),
        (["render", str(book), "--lexicon", str(bad_lexicon)], "not a valid regular expression"),
        (["words", str(book), "--lexicon", str(bad_lexicon)], "not a valid regular expression"),
    ):
        done = subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and needle in " ".join(done.stderr.split()), done.stderr


# --- lexicon, words, markup ------------------------------------------------------------------


def test_lexicon_respells_records_phonemes_and_rejects_bad_entries(tmp_path):
    path = tmp_path / "words.toml"
    path.write_text(
        '[words]\nHermione = "her-my-oh-nee"\nNguyen = { phonemes = "ŋwˈɪən" }\n'
        "[patterns]\n'\\bSt\\.? John\\b' = \"Sinjin\"\n",
        encoding="utf-8",
    )
    lexicon = load_lexicon(path)
    spoken, phonemes, used = lexicon.apply("Hermione met Nguyen and St John.")
    assert spoken == "her-my-oh-nee met Nguyen and Sinjin."
    assert phonemes == (("Nguyen", "ŋwˈɪən"),)
    assert len(used) == 3
    path.write_text('[words]\nfoo = { phonemes = "f#o" }\n', encoding="utf-8")
    with pytest.raises(UserError, match="unknown phoneme '#'"):
        load_lexicon(path)
    path.write_text('[words]\nfoo = { sound = "x" }\n', encoding="utf-8")
    with pytest.raises(UserError, match="unknown key"):
        load_lexicon(path)


def test_words_lists_unexpanded_tokens_and_rare_words():
    book = parse_book(
        "# T\n\nThe FBI met Queequeg, who drank H2O. Queequeg smiled at bob@example.com.\n"
    )
    report = list_words(book)
    unexpanded = {row.word: row for row in report.unexpanded}
    assert {"FBI", "H2O", "bob@example.com"} <= set(unexpanded)
    assert unexpanded["H2O"].why == "digits"
    rare = {row.word: row for row in report.rare}
    assert rare["Queequeg"].count == 2 and "Queequeg" in rare["Queequeg"].example
    assert "smiled" not in rare


def test_markdown_pause_spell_and_voice_directives():
    book = parse_book(
        "# T\n\nFirst.\n\n<!-- tts: pause=1.5 spell=FBI voice=f3 -->\n\nThe FBI came.\n"
    )
    last = book.segments[-1]
    assert last.pause_before == 1.5 and last.spoken == "The F B I came." and last.voice == "f3"
    with pytest.raises(UserError, match="pause=long"):
        parse_book("<!-- tts: pause=long -->\n\nHello.\n")


# --- ACX -------------------------------------------------------------------------------------


def _speechlike(seconds: float, rate: int, seed: int = 0) -> np.ndarray:
    """Bursts of modulated tones with gaps, loud enough to need limiting once mastered."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    tone = np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 720 * t)
    envelope = (np.sin(2 * np.pi * 2.5 * t) > 0).astype(float) * rng.uniform(0.2, 1.0)
    audio = 0.3 * tone * envelope
    audio[rng.integers(0, len(audio), 40)] = 0.95  # plosive-like spikes: a high crest factor
    return audio.astype(np.float32)


def test_master_meets_acx_and_check_catches_failures(tmp_path):
    rate = 22050
    audio = np.concatenate(
        [np.zeros(int(0.75 * rate)), _speechlike(20.2, rate), np.zeros(2 * rate)]
    ).astype(np.float32)
    mastered = master(audio, rate, rms_db=-20.0, peak_db=-3.5)
    good = tmp_path / "good.flac"
    sf.write(good, mastered, rate, subtype="PCM_16")
    result = check(measure(good))
    assert result.passed, result.failures
    assert -20.5 < result.rms_db < -19.5 and result.peak_db <= -3.4
    assert 0.7 <= result.head_s <= 0.8 and 1.9 <= result.tail_s <= 2.1
    before = float(np.max(np.abs(audio)) / np.sqrt(np.mean(audio.astype(float) ** 2)))
    assert 20 * np.log10(before) > 17  # the limiter had to work: gain alone breaks the peak
    assert result.noise_floor_db < -70
    loud = tmp_path / "loud.wav"
    sf.write(loud, np.concatenate([_speechlike(3, rate) * 3, np.zeros(rate)]), rate)
    failures = " ".join(check(measure(loud)).failures)
    assert "peak" in failures and "head room tone" in failures and "RMS" in failures


def test_split_parts_groups_chapters_by_hours():
    assert split_parts([1800, 1800, 3600, 600], 1.0) == [[0, 1], [2], [3]]
    assert split_parts([7200], 1.0) == [[0]]
    assert split_parts([10, 20], None) == [[0, 1]]


# --- end to end ------------------------------------------------------------------------------


@pytest.mark.slow
def test_render_epub_to_m4b_and_acx_mp3(tmp_path, synthesizer_factory):
    from verified_tts.config import build_config
    from verified_tts.workflows.render import render

    lexicon = tmp_path / "words.toml"
    lexicon.write_text('[words]\nwolf = "woolf"\n', encoding="utf-8")
    synthesizer = synthesizer_factory(candidates=1)
    config = build_config(
        {},
        candidates=1,
        production={
            "formats": "m4b,mp3,flac",
            "credits": True,
            "narrator": "Ed Speak",
            "lexicon": str(lexicon),
        },
    )
    synthesizer.config = config
    out = tmp_path / "out"
    path = novel(tmp_path / "novel.epub", cover=cover_jpeg())
    render(path, out, config, synthesizer=synthesizer)
    manifest = json.loads((out / "manifest.json").read_text())
    chapters = manifest["chapters"]
    titles = ["Opening Credits", "Chapter One", "Chapter Two", "Chapter Three", "Closing Credits"]
    assert [c["title"] for c in chapters] == titles
    assert any(
        u.get("lexicon") == ["wolf"] and "woolf" in u["spoken"] for u in manifest["utterances"]
    )

    # M4B: chapter starts read back equal the chapter files' offsets, to the sample
    offsets, total = [], 0
    for chapter in chapters:
        info = sf.info(str(out / chapter["flac"]))
        offsets.append(total * 44100 // info.samplerate)
        assert total * 44100 % info.samplerate == 0
        total += info.frames
    with av.open(str(out / "book.m4b")) as container:
        marks = container.chapters()
        assert [m["metadata"]["title"] for m in marks] == titles
        starts = [m["start"] * 44100 * m["time_base"] for m in marks]
        assert starts == offsets
        tags = container.metadata
        assert (tags["title"], tags["artist"], tags["composer"]) == (
            "A Test Book",
            "Ann Author",
            "Ed Speak",
        )
        audio = container.streams.audio[0]
        assert audio.codec_context.name == "aac" and audio.rate == 44100
        assert any(s.disposition & av.stream.Disposition.attached_pic for s in container.streams)
        decoded = sum(frame.samples for frame in container.decode(audio=0))
    assert abs(decoded - total * 44100 // 22050) <= 2048  # the encoder's priming, at most

    # MP3: one per chapter, ACX format, and the ACX check on them passes
    acx = json.loads((out / "acx.json").read_text())
    assert [f["path"] for f in acx["files"]] == [m["path"] for m in manifest["delivery"]["mp3"]]
    assert len(acx["files"]) == 5 and acx["passed"], acx
    for record in acx["files"]:
        assert record["bit_rate"] == 192000 and record["sample_rate"] == 44100
        assert record["constant_bit_rate"] is True
    assert "ACX check" in (out / "report.html").read_text()
    done = subprocess.run(
        [*CLI, "check", str(out / "mp3")], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_lexicon_change_rerenders_only_sentences_with_the_word(tmp_path, synthesizer_factory):
    from verified_tts.config import build_config
    from verified_tts.workflows.render import render

    book = tmp_path / "book.md"
    book.write_text(
        "# Tale\n\n## One\n\nThe wolf ran. The lamb sat.\n\n## Two\n\nA wolf howled. Rain fell."
        "\n\n## Three\n\nThe end came.\n",
        encoding="utf-8",
    )
    lexicon = tmp_path / "words.toml"
    out = tmp_path / "out"

    def run(entry: str, chapters: str | None = None):
        lexicon.write_text(f'[words]\nwolf = "{entry}"\n', encoding="utf-8")
        config = build_config(
            {},
            candidates=1,
            production={"lexicon": str(lexicon), "chapters": chapters, "split_hours": None},
        )
        synthesizer = synthesizer_factory(candidates=1)
        synthesizer.config = config
        render(book, out, config, synthesizer=synthesizer)
        return synthesizer.stats, json.loads((out / "manifest.json").read_text())

    run("woolf")
    stats, manifest = run("wulf")
    assert stats.candidates_generated == 2  # the two sentences with "wolf"
    assert manifest["production"]["lexicon_entries"][0]["say"] == "wulf"
    stats, manifest = run("wulf", chapters="2-3")
    assert stats.candidates_generated == 0
    assert [c["title"] for c in manifest["chapters"]] == ["One", "Two"]
    assert manifest["chapters"][0]["flac"].startswith("chapters/02-")


def test_limiter_in_blocks_equals_one_pass_and_holds_the_ceiling():
    from verified_tts.output.acx import _limit_block, limit_peaks

    rng = np.random.default_rng(3)
    audio = (rng.standard_normal(2_500_000) * 0.3).astype(np.float32)  # spans three blocks
    whole = _limit_block(audio.copy(), 10 ** (-3.5 / 20), 110)
    blocks = limit_peaks(audio.copy(), 22050, -3.5, inplace=True)
    assert np.array_equal(whole, blocks)
    assert 20 * np.log10(np.max(np.abs(blocks))) <= -3.5 + 1e-4


def test_epub_without_toc_makes_a_chapter_per_document_and_skips_nonlinear(tmp_path):
    documents = [
        ("a.xhtml", xhtml("<h2>Prologue</h2><p>First words.</p>")),
        ("b.xhtml", xhtml("<div>Loose text in a div.<p>A paragraph.</p>Tail text.</div>")),
        ("popup.xhtml", xhtml("<p>Only reached by a link.</p>")),
    ]
    path = build_epub(tmp_path / "plain.epub", documents, [], version=3, linear_no=["popup.xhtml"])
    loaded = load_epub(path)
    assert [c.title for c in loaded.book.chapters] == ["Prologue", None]
    assert [s.text for s in loaded.book.chapters[1].segments] == [
        "Loose text in a div.",
        "A paragraph.",
        "Tail text.",
    ]
    assert any("popup.xhtml" in s and "linear" in s for s in loaded.skipped)


@pytest.mark.slow
def test_split_hours_writes_m4b_parts_at_chapter_boundaries(tmp_path, synthesizer_factory):
    from verified_tts.config import build_config
    from verified_tts.workflows.render import render

    book = tmp_path / "book.md"
    book.write_text(
        "# Parts\n\n## One\n\nThe birch canoe slid on the smooth planks.\n\n## Two\n\n"
        "Glue the sheet to the dark blue background.\n\n## Three\n\nRice is often served in "
        "round bowls.\n",
        encoding="utf-8",
    )
    config = build_config({}, candidates=1, production={"formats": "m4b", "split_hours": 12 / 3600})
    synthesizer = synthesizer_factory(candidates=1)
    synthesizer.config = config
    render(book, tmp_path / "out", config, synthesizer=synthesizer)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    parts = manifest["delivery"]["m4b"]
    assert len(parts) >= 2 and parts[0]["path"] == "book-part1.m4b"
    assert manifest["book"]["wav"] is None and manifest["book"]["flac"] is None
    seen = []
    limit = 12.0  # --split-hours, in seconds
    chapters = {f["title"]: f["duration_s"] for f in manifest["chapters"]}
    for number, part in enumerate(parts, 1):
        with av.open(str(tmp_path / "out" / part["path"])) as container:
            marks = container.chapters()
            assert marks[0]["start"] == 0
            assert container.metadata["title"] == f"Parts (Part {number})"
            seen += [m["metadata"]["title"] for m in marks]
            stream = container.streams.audio[0]
            heard = sum(frame.samples for frame in container.decode(stream)) / stream.rate
        titles = [m["metadata"]["title"] for m in marks]
        # at most H hours of audio in a part (AAC's priming and last-frame padding aside: two
        # frames of 1,024 samples), unless one chapter alone is longer; and a part ends only
        # where the next chapter would not fit
        padding = 2 * 1024 / stream.rate
        assert heard <= limit + padding or len(titles) == 1, (part["path"], heard)
        assert heard == pytest.approx(part["duration_s"], abs=padding)
        assert sum(chapters[t] for t in titles) == pytest.approx(part["duration_s"], abs=1e-3)
        assert part["duration_s"] <= limit or len(titles) == 1
        if number < len(parts):
            following = av.open(str(tmp_path / "out" / parts[number]["path"]))
            with following:
                first_next = following.chapters()[0]["metadata"]["title"]
            assert part["duration_s"] + chapters[first_next] > limit
    assert seen == ["Parts", "One", "Two", "Three"]
