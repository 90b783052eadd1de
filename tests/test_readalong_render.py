"""Read-along EPUBs from real renders: the demo book (generated XHTML, word overlays) and an EPUB
of the tests (the book's own XHTML), each accepted by EPUBCheck; every clip inside its audio file
and in order; sentence clips where assembly put the winners (checked against the chapter audio
itself, by correlation); captions and timings.json; and a rerender that keeps them in step."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from tests.conftest import ROOT
from tests.epub_fixtures import cover_jpeg, novel
from verified_tts.config import build_config
from verified_tts.output.assembly import trim_silence
from verified_tts.workflows.render import render

SMIL = "{http://www.w3.org/ns/SMIL}"
OPF = "{http://www.idpf.org/2007/opf}"
EPUBCHECK = Path("/usr/bin/epubcheck")


def epubcheck(path: Path) -> str:
    """EPUBCheck's report. It is part of the test environment (.ci/run installs it): missing, a
    test fails, unless VTTS_SKIP_EPUBCHECK is set."""
    if not EPUBCHECK.exists() or shutil.which("java") is None:
        if os.environ.get("VTTS_SKIP_EPUBCHECK"):
            pytest.skip("VTTS_SKIP_EPUBCHECK is set: EPUBCheck is not run")
        pytest.fail(
            "epubcheck is missing: apt-get install -y epubcheck (.ci/run does), "
            "or set VTTS_SKIP_EPUBCHECK=1 to skip the EPUBCheck tests"
        )
    # One short validation per JVM: the client compiler alone and the serial collector start it
    # on 3 s of CPU instead of 6.5 (the server compiler's and the parallel collector's threads
    # pay off only in a long run); the report is the same.
    java = ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    result = subprocess.run(
        [*java, "-jar", str(EPUBCHECK), str(path)], capture_output=True, text=True, timeout=600
    )
    return result.stdout + result.stderr


def _seconds(clock: str) -> float:
    hours, minutes, seconds = clock.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def overlay_clips(epub: Path) -> dict[str, list[tuple[str, str, float, float]]]:
    """Per SMIL: (text src, audio path in the ZIP, clipBegin, clipEnd) of every par, in order."""
    with zipfile.ZipFile(epub) as archive:
        container = archive.read("META-INF/container.xml").decode()
        opf_path = re.search(r'full-path="([^"]+)"', container).group(1)
        opf = ElementTree.fromstring(archive.read(opf_path))
        folder = opf_path.rsplit("/", 1)[0]
        smils = [
            f"{folder}/{item.get('href')}"
            for item in opf.iter(f"{OPF}item")
            if item.get("media-type") == "application/smil+xml"
        ]
        out = {}
        for smil in smils:
            base = smil.rsplit("/", 1)[0]
            root = ElementTree.fromstring(archive.read(smil))
            out[smil] = [
                (
                    par.find(f"{SMIL}text").get("src"),
                    _normal(f"{base}/{par.find(f'{SMIL}audio').get('src')}"),
                    _seconds(par.find(f"{SMIL}audio").get("clipBegin")),
                    _seconds(par.find(f"{SMIL}audio").get("clipEnd")),
                )
                for par in root.iter(f"{SMIL}par")
            ]
    return out


def _normal(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def audio_seconds(epub: Path, name: str, tmp_path: Path) -> float:
    import av

    target = tmp_path / Path(name).name
    target.write_bytes(zipfile.ZipFile(epub).read(name))
    with av.open(str(target)) as container:
        stream = container.streams.audio[0]
        return float(stream.duration * stream.time_base)


def check_clips_lie_inside_their_audio_in_order(epub: Path, tmp_path: Path) -> None:
    clips = overlay_clips(epub)
    assert clips
    lengths: dict[str, float] = {}
    for pars in clips.values():
        assert pars
        by_audio: dict[str, list[tuple[float, float]]] = {}
        for _, audio, begin, end in pars:
            if audio not in lengths:
                lengths[audio] = audio_seconds(epub, audio, tmp_path)
            assert 0 <= begin < end <= lengths[audio] + 1e-6, (audio, begin, end)
            by_audio.setdefault(audio, []).append((begin, end))
        for spans in by_audio.values():  # a chapter's clips: in order, none overlapping
            assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:], strict=False))


def check_sentences_are_where_assembly_put_the_winners(out: Path) -> None:
    """Each sentence's first sample, as timings.json and the SMIL give it, is where the
    winner's (trimmed) audio lies in the chapter master: found again by cross-correlation."""
    timings = json.loads((out / "timings.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    clips = [c for pars in overlay_clips(out / "book.epub").values() for c in pars]
    starts = {src.split("#")[1]: begin for src, _, begin, _ in clips}
    checked = 0
    for chapter in timings["chapters"]:
        audio, rate = sf.read(out / chapter["audio"], dtype="float32")
        winners = [u for u in manifest["utterances"] if u["chapter"] == chapter["index"]]
        assert len(winners) == len(chapter["sentences"])
        for sentence, winner in zip(chapter["sentences"], winners, strict=True):
            assert sentence["text"] == winner["text"]
            start = sentence["start_sample"]
            clip, clip_rate = sf.read(out / winner["audio"], dtype="float32")
            template = trim_silence(clip, clip_rate)[: int(0.3 * rate)]
            reach = int(0.05 * rate)
            window = audio[max(0, start - reach) : start + reach + len(template)]
            score = np.correlate(window, template, mode="valid")
            energy = np.sqrt(np.convolve(window**2, np.ones(len(template)), mode="valid"))
            lag = int(np.argmax(score / np.maximum(energy, 1e-9))) - min(start, reach)
            assert abs(lag) <= rate // 1000, (sentence["id"], lag)  # within 1 ms
            # the overlay's clip (the sentence's, or its first word's) starts there too
            first = next(
                (starts[k] for k in (sentence["id"], f"{sentence['id']}-w1") if k in starts), None
            )
            if first is None:  # its first piece may carry a prefix: rt-...
                first = next(v for k, v in starts.items() if k.endswith(sentence["id"]))
            assert abs(first - start / rate) <= 0.0005, (sentence["id"], first, start / rate)
            checked += 1
    assert checked == len(manifest["utterances"])


@pytest.fixture(scope="module")
def demo(tmp_path_factory, synthesizer_factory):
    out = tmp_path_factory.mktemp("demo") / "out"
    synthesizer = synthesizer_factory(candidates=1)
    config = build_config(
        {}, candidates=1, generator="espeak",
        production={"formats": "flac,epub3,srt,vtt", "read_along": "words"},
    )  # fmt: skip
    synthesizer = type(synthesizer)(synthesizer.generator, synthesizer.verifiers, config)
    render(ROOT / "examples" / "book.md", out, config, synthesizer=synthesizer)
    return out


def test_demo_book_read_along_epub_passes_epubcheck(demo):
    report = epubcheck(demo / "book.epub")
    assert "0 fatals / 0 errors" in report, report


XHTML = "{http://www.w3.org/1999/xhtml}"


def check_generated_xhtml_holds_every_sentence(out: Path) -> None:
    """Every sentence of timings.json is the text of the element with its id (its span, or a
    span of words inside it) in the EPUB's generated content documents."""
    timings = json.loads((out / "timings.json").read_text())
    texts: dict[str, str] = {}
    with zipfile.ZipFile(out / "book.epub") as archive:
        for name in archive.namelist():
            if name.endswith(".xhtml") and "/text/" in name:
                root = ElementTree.fromstring(archive.read(name))
                for element in root.iter(f"{XHTML}span"):
                    if element.get("id"):
                        texts[element.get("id")] = "".join(element.itertext())
    sentences = [s for chapter in timings["chapters"] for s in chapter["sentences"]]
    assert sentences
    for sentence in sentences:
        assert " ".join(texts[sentence["id"]].split()) == sentence["text"], sentence["id"]


def test_demo_book_clips_lie_inside_their_audio_and_follow_assembly(demo, tmp_path):
    check_clips_lie_inside_their_audio_in_order(demo / "book.epub", tmp_path)
    check_sentences_are_where_assembly_put_the_winners(demo)
    check_generated_xhtml_holds_every_sentence(demo)  # made from the Markdown
    manifest = json.loads((demo / "manifest.json").read_text())
    read_along = manifest["delivery"]["read_along"]
    assert read_along["level"] == "words" and read_along["epub"]["unmarked"] == 0
    assert read_along["words"]["asr"] > 0.8 * sum(read_along["words"].values())


def test_demo_book_word_overlays_cover_each_sentence_clip(demo):
    timings = json.loads((demo / "timings.json").read_text())
    assert timings["words"] is True
    clips = overlay_clips(demo / "book.epub")
    by_id = {
        src.split("#")[1]: (begin, end) for pars in clips.values() for src, _, begin, end in pars
    }
    for chapter in timings["chapters"]:
        sentences = chapter["sentences"]
        for number, sentence in enumerate(sentences):
            words = sentence["words"]
            assert [w["word"] for w in words] == sentence["text"].split()
            spans = [by_id[w["id"]] for w in words]
            assert spans[0][0] == pytest.approx(sentence["start_s"], abs=0.0005)
            after = sentences[number + 1]["start_s"] if number + 1 < len(sentences) else None
            assert spans[-1][1] == pytest.approx(after or sentence["end_s"], abs=0.0005)
            assert all(a[1] == pytest.approx(b[0]) for a, b in zip(spans, spans[1:], strict=False))
            assert all(sentence["start_s"] - 1e-4 <= w["start_s"] <= w["end_s"]
                       <= sentence["end_s"] + 1e-4 for w in words)  # words: 0.1 ms  # fmt: skip


def test_demo_book_epub_audio_starts_where_its_chapter_master_does(demo):
    """The AAC in the EPUB is heard at the master's times: the encoder's priming is skipped."""
    import av
    from scipy.signal import resample_poly

    timings = json.loads((demo / "timings.json").read_text())
    chapter = timings["chapters"][1]
    master, rate = sf.read(demo / chapter["audio"], dtype="float32")
    stem = Path(chapter["audio"]).stem
    with av.open(str(demo / "readalong" / "audio" / f"{stem}.m4a")) as container:
        decoded = np.concatenate(
            [f.to_ndarray().mean(axis=0) for f in container.decode(container.streams.audio[0])]
        )
        delivered = container.streams.audio[0].rate
    master = resample_poly(master[: 4 * rate], delivered, rate)
    decoded = decoded[: len(master)]
    reach = delivered // 20
    lags = range(-reach, reach + 1)
    score = [float(np.dot(master[reach:-reach], decoded[reach + k : len(master) - reach + k]))
             for k in lags]  # fmt: skip
    assert abs(lags[int(np.argmax(score))]) <= delivered // 1000


def test_demo_book_captions_follow_the_sentences(demo):
    import srt
    import webvtt

    timings = json.loads((demo / "timings.json").read_text())
    for chapter in timings["chapters"]:
        stem = Path(chapter["audio"]).stem
        subtitles = list(srt.parse((demo / "captions" / f"{stem}.srt").read_text()))
        vtt = webvtt.read(str(demo / "captions" / f"{stem}.vtt"))
        assert len(subtitles) == len(vtt.captions) >= len(chapter["sentences"])
        assert all(len(line) <= 42 for s in subtitles for line in s.content.split("\n"))
        firsts = {c.identifier: c for c in vtt.captions}
        for sentence in chapter["sentences"]:
            cue = firsts[sentence["id"]]
            assert cue.start_in_seconds == int(sentence["start_s"])
            assert abs(_seconds(cue.start) - sentence["start_s"]) <= 0.0005


@pytest.fixture(scope="module")
def epub_render(tmp_path_factory, synthesizer_factory):
    folder = tmp_path_factory.mktemp("epub")
    image = io.BytesIO()
    Image.new("RGB", (8, 8), (9, 9, 9)).save(image, "PNG")
    book = novel(
        folder / "novel.epub",
        cover=cover_jpeg(),
        resources=[("x.png", "image/png", image.getvalue())],
    )
    config = build_config({}, candidates=1, generator="espeak",
                          production={"formats": "flac,epub3,vtt"})  # fmt: skip
    base = synthesizer_factory(candidates=1)
    synthesizer = type(base)(base.generator, base.verifiers, config)
    render(book, folder / "out", config, synthesizer=synthesizer)
    return book, folder / "out", synthesizer


def test_epub_read_along_keeps_the_books_own_xhtml_and_passes_epubcheck(epub_render, tmp_path):
    source, out, _ = epub_render
    report = epubcheck(out / "book.epub")
    assert "0 fatals / 0 errors" in report, report
    original, made = zipfile.ZipFile(source), zipfile.ZipFile(out / "book.epub")
    assert set(original.namelist()) <= set(made.namelist())
    for name in original.namelist():
        if name.endswith("content.opf"):
            continue
        before, after = original.read(name), made.read(name)
        if name in ("OEBPS/ch12.xhtml", "OEBPS/ch3.xhtml"):
            text = after.decode()
            text = re.sub(r'<span id="c\d+-s\d+">', "", text)
            text = text.replace('<link rel="stylesheet" type="text/css" '
                                'href="readalong/readalong.css"/>', "")  # fmt: skip
            opened = before.decode().count("</span>")
            assert text.replace("</span>", "") == before.decode().replace("</span>", "")
            assert text.count("</span>") - opened == after.decode().count('<span id="c')
        else:  # notes, copyright, cover, images: byte for byte
            assert before == after, name
    opf = made.read("OEBPS/content.opf").decode()
    assert re.search(r'href="ch12.xhtml"[^>]*media-overlay=', opf)
    assert not re.search(r'href="notes.xhtml"[^>]*media-overlay=', opf)  # skipped: no overlay
    for skipped in ("cover.xhtml", "copyright.xhtml", "notes.xhtml"):  # front matter, notes
        assert not re.search(rf'href="{skipped}"[^>]*media-overlay=', opf), skipped
    targets = {src.split("#")[0] for pars in overlay_clips(out / "book.epub").values()
               for src, _, _, _ in pars}  # fmt: skip
    assert {t.rsplit("/", 1)[-1] for t in targets} == {"ch12.xhtml", "ch3.xhtml"}
    assert "media:active-class" in opf and opf.count('property="media:duration"') == 3
    ch12 = made.read("OEBPS/ch12.xhtml").decode()
    assert '<span id="c0-s2">It was the year 1984 when it began.</span>' in ch12
    assert "A note that must not be read." in made.read("OEBPS/notes.xhtml").decode()
    check_clips_lie_inside_their_audio_in_order(out / "book.epub", tmp_path)
    check_sentences_are_where_assembly_put_the_winners(out)


def test_rerender_keeps_overlays_captions_and_timings_in_step(epub_render, tmp_path):
    from verified_tts.workflows.rerender import rerender

    _, out, synthesizer = epub_render
    manifest = json.loads((out / "manifest.json").read_text())
    key = manifest["utterances"][2]["key"]  # chapter one, "The wolf ran."
    before = {p: p.stat().st_mtime_ns for p in (out / "readalong").glob("*.json")}
    epub_before = (out / "book.epub").stat().st_mtime_ns
    rerender(out, key, n=3, synthesizer=synthesizer)
    after = {p: p.stat().st_mtime_ns for p in (out / "readalong").glob("*.json")}
    assert all(after[p] > before[p] for p in before)  # the chapters' maps were written again
    assert (out / "book.epub").stat().st_mtime_ns > epub_before
    check_clips_lie_inside_their_audio_in_order(out / "book.epub", tmp_path)
    check_sentences_are_where_assembly_put_the_winners(out)
    timings = json.loads((out / "timings.json").read_text())
    vtt = (out / "captions" / f"{Path(timings['chapters'][0]['audio']).stem}.vtt").read_text()
    third = timings["chapters"][0]["sentences"][2]
    millis = round(third["start_s"] * 1000)
    stamp = f"{millis // 3_600_000:02d}:{millis // 60_000 % 60:02d}:{millis // 1000 % 60:02d}."
    assert f"{stamp}{millis % 1000:03d} -->" in vtt


def test_an_epub2_becomes_a_valid_read_along_epub3(tmp_path, synthesizer_factory):
    image = io.BytesIO()
    Image.new("RGB", (8, 8), (9, 9, 9)).save(image, "PNG")
    book = novel(
        tmp_path / "novel2.epub",
        version=2,
        cover=cover_jpeg(),
        resources=[("x.png", "image/png", image.getvalue())],
    )
    config = build_config(
        {}, candidates=1, generator="espeak", production={"formats": "flac,epub3", "credits": True}
    )
    base = synthesizer_factory(candidates=1)
    synthesizer = type(base)(base.generator, base.verifiers, config)
    render(book, tmp_path / "out", config, synthesizer=synthesizer)
    report = epubcheck(tmp_path / "out" / "book.epub")
    assert "Validating using EPUB version 3" in report and "0 fatals / 0 errors" in report, report
    made = zipfile.ZipFile(tmp_path / "out" / "book.epub")
    opf = made.read("OEBPS/content.opf").decode()
    assert 'version="3.0"' in opf and 'properties="nav"' in opf and "toc.ncx" in opf
    spine = re.findall(r'<itemref idref="([^"]+)"', opf)
    assert spine[0].startswith("ra-text") and spine[-1].startswith("ra-text")  # the credits
    credits = [n for n in made.namelist() if "/text/" in n]
    assert len(credits) == 2
    assert "Written by Ann Author." in made.read(sorted(credits)[0]).decode()
    check_clips_lie_inside_their_audio_in_order(tmp_path / "out" / "book.epub", tmp_path)
    check_sentences_are_where_assembly_put_the_winners(tmp_path / "out")


def test_a_plain_text_book_gets_generated_xhtml_that_epubcheck_accepts(
    tmp_path, synthesizer_factory
):
    book = tmp_path / "tale.txt"
    book.write_text(
        "The Short Tale\n\nCHAPTER I.\n\nThe wolf ran into the wood. It was cold & dark.\n\n"
        "CHAPTER II.\n\nMorning came at last. The wolf slept.\n",
        encoding="utf-8",
    )
    config = build_config({}, candidates=1, generator="espeak",
                          production={"formats": "flac,epub3"})  # fmt: skip
    base = synthesizer_factory(candidates=1)
    synthesizer = type(base)(base.generator, base.verifiers, config)
    render(book, tmp_path / "out", config, synthesizer=synthesizer)
    report = epubcheck(tmp_path / "out" / "book.epub")
    assert "0 fatals / 0 errors" in report, report
    check_generated_xhtml_holds_every_sentence(tmp_path / "out")
    check_clips_lie_inside_their_audio_in_order(tmp_path / "out" / "book.epub", tmp_path)
    check_sentences_are_where_assembly_put_the_winners(tmp_path / "out")


def test_a_review_delivery_keeps_the_read_along_in_step(tmp_path, synthesizer_factory):
    """A kept take chosen in `verified-tts review` and delivered: its chapter gets a new map,
    captions and EPUB audio, where the take now lies; the other chapters keep theirs."""
    from review_kit import BOOK

    from verified_tts.review.actions import Reviewer
    from verified_tts.review.session import ReviewSession

    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    synthesizer = synthesizer_factory(candidates=2, adaptive=False,
                                      production={"formats": "flac,epub3,vtt"})  # fmt: skip
    out = tmp_path / "out"
    render(book, out, synthesizer.config, synthesizer=synthesizer)
    maps = {p.name: p.read_bytes() for p in (out / "readalong").glob("0*.json")}
    assert len(maps) == 3
    captions = {p.name: p.read_bytes() for p in (out / "captions").glob("*.vtt")}
    before = json.loads((out / "manifest.json").read_text())
    position = next(
        i for i, u in enumerate(before["utterances"]) if u["text"] == "The Tortoise never stopped."
    )
    line = before["utterances"][position]
    chosen = next(c["index"] for c in line["candidates"] if c["index"] != line["winner"])
    reviewer = Reviewer(ReviewSession(out), by="ann", synthesizer=synthesizer)
    try:
        reviewer.choose(position, chosen)
        reviewer.deliver()
        assert reviewer.worker.wait(600)
        assert not [j for j in reviewer.worker.jobs() if j["state"] == "failed"]
    finally:
        reviewer.close()
    after = json.loads((out / "manifest.json").read_text())
    assert after["utterances"][position]["audio"] == line["candidates"][chosen]["audio"]
    changed = {
        name for name, data in maps.items() if (out / "readalong" / name).read_bytes() != data
    }
    assert changed == {next(n for n in maps if n.startswith("02-"))}  # chapter two only
    assert {n for n, d in captions.items() if (out / "captions" / n).read_bytes() != d} == {
        n for n in captions if n.startswith("02-")
    }
    report = epubcheck(out / "book.epub")
    assert "0 fatals / 0 errors" in report, report
    check_clips_lie_inside_their_audio_in_order(out / "book.epub", tmp_path)
    check_sentences_are_where_assembly_put_the_winners(out)  # the chosen take, where it now is
