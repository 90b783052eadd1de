"""A review end to end in the library: choose a kept take and deliver (only its chapter is
assembled again, sample-exact; the M4B carries it), more takes continue the seeds, an edit and a
lexicon entry render only their lines, a later ``render`` keeps every decision, and a line whose
text changed in the book says so."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import soundfile as sf
from review_kit import (
    BOOK,
    chapter_lines,
    copy_render,
    correlation,
    expected_chapter,
    levelled,
    m4b_audio,
    m4b_region,
    manifest_json,
    take_offset,
    upsampled,
)

from verified_tts.errors import UserError
from verified_tts.review.actions import Reviewer
from verified_tts.review.session import ReviewSession
from verified_tts.review.state import version_of
from verified_tts.storage.keys import candidate_seed
from verified_tts.workflows.render import render


def text_at(out, text):
    return next(i for i, u in enumerate(manifest_json(out)["utterances"]) if u["text"] == text)


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def synthesizer(review_render):
    return review_render[2]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, review_render):
    return copy_render(review_render, tmp_path_factory.mktemp("review") / "out")


@pytest.fixture(scope="module")
def reviewer(rendered, synthesizer):
    _, out = rendered
    reviewer = Reviewer(ReviewSession(out), by="ann", synthesizer=synthesizer)
    yield reviewer
    reviewer.close()


def finish(reviewer, timeout=600):
    assert reviewer.worker.wait(timeout)
    failed = [j for j in reviewer.worker.jobs() if j["state"] == "failed"]
    assert not failed, failed


def test_choose_and_deliver_rebuild_only_that_chapter(rendered, reviewer, tmp_path):
    _, out = rendered
    before = manifest_json(out)
    files = {c["index"]: (out / c["flac"], out / c["wav"]) for c in before["chapters"]}
    digests = {i: (digest(f), digest(w)) for i, (f, w) in files.items()}
    mp3s = {m["index"]: out / m["path"] for m in before["delivery"]["mp3"]}
    encoded = {i: digest(path) for i, path in mp3s.items()}
    old_book = sf.read(out / "book.flac", dtype="int16")[0]
    position = text_at(out, "The Tortoise never stopped.")
    line = before["utterances"][position]
    chosen = next(c["index"] for c in line["candidates"] if c["index"] != line["winner"])
    take = line["candidates"][chosen]["audio"]
    reviewer.choose(position, chosen)
    reviewer.deliver()
    finish(reviewer)
    after = manifest_json(out)
    # the other chapters' files are the very bytes they were
    for index in (0, 2):
        assert (digest(files[index][0]), digest(files[index][1])) == digests[index]
        assert digest(mp3s[index]) == encoded[index]  # kept, not encoded again
    assert digest(files[1][0]) != digests[1][0] and digest(mp3s[1]) != encoded[1]
    acx = json.loads((out / "acx.json").read_text(encoding="utf-8"))
    assert [f["path"] for f in acx["files"]] == [m["path"] for m in after["delivery"]["mp3"]]
    assert acx["files"][0] == before["delivery"]["acx"]["files"][0]  # its figures carried over
    # chapter 2 holds the chosen take, sample-exact, as assembly lays a winner out
    flac = sf.read(files[1][0], dtype="int16")[0]
    wav = sf.read(files[1][1], dtype="int16")[0]
    expected = expected_chapter(out, 1, {position: take}, tmp_path)
    assert np.array_equal(flac, expected) and np.array_equal(wav, expected)
    start, length = take_offset(out, 1, position, {position: take})
    rate = after["sample_rate"]
    region = flac[start : start + length].astype(np.float32)
    clip = levelled(out, take, rate)
    # the levelled take sits exactly there (mastering scales it and limits its peaks)
    near = {lag: correlation(flac[start + lag : start + lag + length], clip)
            for lag in range(-200, 201)}  # fmt: skip
    assert max(near, key=near.get) == 0 and near[0] > 0.9
    old_take = line["candidates"][line["winner"]]["audio"]
    assert correlation(region, levelled(out, old_take, rate)) < near[0] - 0.2
    # the book file and the M4B carry it at the chapter's offset
    book = sf.read(out / "book.flac", dtype="int16")[0]
    chapter_start = sum(sf.info(str(out / c["flac"])).frames for c in after["chapters"][:1])
    assert np.array_equal(book[chapter_start : chapter_start + len(flac)], flac)
    at = chapter_start + start
    heard = m4b_region(m4b_audio(out / "book.m4b"), book / 32768.0, at, length)
    assert correlation(heard, upsampled(book / 32768.0, at, length)) > 0.95
    assert correlation(heard, upsampled(old_book / 32768.0, at, length)) < 0.8  # not the old take
    # the manifest records the decision
    record = after["utterances"][position]
    assert (record["winner"], record["audio"]) == (chosen, take)
    assert record["review"]["decision"] == "choose" and record["review"]["by"] == "ann"
    assert record["review"]["selected"] == line["winner"] and record["review"]["at"]
    assert after["review"]["reviewed"] == 1 and after["review"]["log"] == "review/decisions.sqlite"
    assert [u.get("review") for i, u in enumerate(after["utterances"]) if i != position] == [
        None
    ] * (len(after["utterances"]) - 1)
    done = next(j for j in reviewer.worker.jobs() if j["kind"] == "deliver")["result"]
    assert (done["rebuilt"], done["kept"]) == ([1], [0, 2])


def test_more_takes_continue_the_seeds(rendered, reviewer):
    _, out = rendered
    position = chapter_lines(out, 0)[0]
    old = manifest_json(out)["utterances"][position]
    reviewer.more(position, 2)
    finish(reviewer)
    record = reviewer.session.state(position).record
    assert [c.index for c in record.candidates] == [0, 1, 2, 3, 4]
    assert [c.seed for c in record.candidates] == [candidate_seed(old["key"], k) for k in range(5)]
    assert [c.audio for c in record.candidates[:3]] == [c["audio"] for c in old["candidates"]]
    assert all((out / c.audio).is_file() for c in record.candidates)
    assert record.rerendered.n == 5


def test_an_edit_renders_only_its_line_and_leaves_the_book_file(rendered, reviewer):
    book, out = rendered
    text = book.read_text(encoding="utf-8")
    position = chapter_lines(out, 0)[1]
    others = {i: s.record for i, s in enumerate(reviewer.session.review.lines) if i != position}
    reviewer.edit(position, "Glue the sheet to the dark blue back ground.")
    finish(reviewer)
    state = reviewer.session.state(position)
    assert state.record.spoken == "Glue the sheet to the dark blue back ground."
    # a new version: its 3 takes first, the render's 3 kept beside them
    assert state.record.key != state.line and len(state.record.candidates) == 6
    assert [version_of(c) for c in state.record.candidates] == [2, 2, 2, 1, 1, 1]
    assert all((out / c.audio).is_file() for c in state.record.candidates)
    assert {i: s.record for i, s in enumerate(reviewer.session.review.lines)
            if i != position} == others  # fmt: skip
    assert book.read_text(encoding="utf-8") == text
    with pytest.raises(UserError, match="already says that"):
        reviewer.edit(position, "Glue the sheet to the dark blue back ground.")


def test_a_lexicon_entry_renders_only_the_lines_with_the_word(rendered, reviewer):
    _, out = rendered
    with pytest.raises(UserError, match="no line says"):
        reviewer.lexicon("Hermione", say="her my oh nee")
    lines = reviewer.session.review.lines
    with_word = [i for i, s in enumerate(lines) if "Tortoise" in s.record.text]
    assert len(with_word) == 2
    keys = [s.record.key for s in lines]
    reviewer.lexicon("Tortoise", say="tor toys")
    finish(reviewer)
    lines = reviewer.session.review.lines
    for i, state in enumerate(lines):
        if i in with_word:
            assert "tor toys" in state.record.spoken and state.record.key != keys[i]
            assert state.record.lexicon == ("Tortoise",)
        else:
            assert state.record.key == keys[i]
    # the chosen take of a line the entry re-rendered stays in the book, beside the new takes
    kept = lines[text_at(out, "The Tortoise never stopped.")]
    assert kept.choice and kept.reviewed
    assert version_of(kept.record.candidates[kept.winner]) == 1


def test_undo_takes_back_the_last_decision(rendered, reviewer):
    _, out = rendered
    lines = reviewer.session.review.lines
    position = next(i for i, s in enumerate(lines) if "won the race" in s.record.text)
    before = lines[position].record.key
    reviewer.undo()  # the lexicon entry
    assert reviewer.session.state(position).record.key != before
    assert "tor toys" not in reviewer.session.state(position).record.spoken
    reviewer.lexicon("Tortoise", say="tor toys")
    finish(reviewer)
    assert reviewer.session.state(position).record.key == before  # stored: rendered once


def test_a_later_render_keeps_the_decisions(rendered, reviewer, synthesizer):
    book, out = rendered
    reviewer.deliver()
    finish(reviewer)
    delivered = manifest_json(out)
    chapters = {c["index"]: digest(out / c["flac"]) for c in delivered["chapters"]}
    render(book, out, synthesizer.config, synthesizer=synthesizer.variant())  # its own stats
    again = manifest_json(out)
    assert [(u["key"], u["winner"], len(u["candidates"])) for u in again["utterances"]] == [
        (u["key"], u["winner"], len(u["candidates"])) for u in delivered["utterances"]
    ]
    assert [u.get("review", {}).get("decision") for u in again["utterances"]] == [
        u.get("review", {}).get("decision") for u in delivered["utterances"]
    ]
    assert {c["index"]: digest(out / c["flac"]) for c in again["chapters"]} == chapters
    assert again["stats"]["candidates_generated"] == 0


def test_a_line_whose_text_changed_says_so(rendered, synthesizer, tmp_path):
    book, out = rendered
    changed = tmp_path / "book.md"
    changed.write_text(BOOK.replace("The birch canoe slid", "The red canoe slid"), "utf-8")
    manifest = manifest_json(out)
    manifest["input"] = str(changed)
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    render(changed, out, synthesizer.config, synthesizer=synthesizer.variant())
    again = manifest_json(out)
    line = next(u for u in again["utterances"] if u["text"].startswith("The red canoe"))
    assert "the text changed since it was reviewed" in line["review"]["stale"]
    assert "The birch canoe slid" in line["review"]["stale"]
    assert again["review"]["not_applied"] >= 1
    assert len(line["candidates"]) == 3  # rendered as the book says now, not from the review


def test_a_dub_delivers_its_chosen_take_on_the_track(review_render, tmp_path):
    from verified_tts.workflows.dub import dub

    subtitles = tmp_path / "dub.srt"
    subtitles.write_text("1\n00:00:00,500 --> 00:00:03,000\nThe birch canoe slid on the "
                         "smooth planks.\n\n2\n00:00:03,500 --> 00:00:06,000\nGlue the sheet "
                         "to the dark blue background.\n", encoding="utf-8")  # fmt: skip
    synthesizer = review_render[2]
    out = tmp_path / "dubbed"
    dub(subtitles, out, synthesizer.config, synthesizer=synthesizer.variant())
    before = manifest_json(out)
    track = digest(out / "track.wav")
    line = before["utterances"][0]
    chosen = next(c["index"] for c in line["candidates"] if c["index"] != line["winner"])
    reviewer = Reviewer(ReviewSession(out), by="ann", synthesizer=synthesizer.variant())
    try:
        assert reviewer.session.detail(0)["dub"]["start"] == 0.5
        reviewer.choose(0, chosen)
        reviewer.deliver()
        finish(reviewer)
    finally:
        reviewer.close()
    after = manifest_json(out)
    assert after["utterances"][0]["winner"] == chosen
    assert after["utterances"][0]["review"]["decision"] == "choose"
    assert after["utterances"][1]["winner"] == before["utterances"][1]["winner"]
    cues = json.loads((out / "dub.json").read_text(encoding="utf-8"))["cues"]
    assert cues[0]["winner"] == chosen and cues[0]["audio"] == line["candidates"][chosen]["audio"]
    assert digest(out / "track.wav") != track


def test_a_request_cut_short_runs_again_when_the_review_reopens(review_render, tmp_path):
    _, out = copy_render(review_render, tmp_path / "out")
    session = ReviewSession(out)
    state = session.state(0)
    record = state.record
    # what a review killed between recording "more takes" and its result leaves in the log
    asked = session.record("more", by="ann", line=state.line,
                           data={"key": record.key, "k": 1, "n": len(record.candidates) + 1})
    session.close()
    reviewer = Reviewer(ReviewSession(out), by="ann", synthesizer=review_render[2].variant())
    try:
        assert [e.seq for e in reviewer.session.review.pending] == [asked.seq]
        assert reviewer.resume() == 1
        finish(reviewer)
        assert reviewer.session.review.pending == ()
        assert len(reviewer.session.state(0).record.candidates) == len(record.candidates) + 1
        answers = [e for e in reviewer.session.entries if e.kind == "result"]
        assert [e.of for e in answers] == [asked.seq]
    finally:
        reviewer.close()


def test_more_takes_of_a_voice_whose_takes_are_copies_is_one_line(tmp_path):
    """hibari without seeded variation makes one take a line; asking the review for more says
    why instead of queueing copies."""
    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer

    config = build_config({"verifiers": {"emotion": {"enabled": False}}}, candidates=2,
                          generator="hibari")  # fmt: skip
    (tmp_path / "book.md").write_text("The birch canoe slid on the smooth planks.\n")
    render(tmp_path / "book.md", tmp_path / "out", config, synthesizer=Synthesizer.load(config))
    reviewer = Reviewer(ReviewSession(tmp_path / "out"), by="ann")
    with pytest.raises(UserError, match="differ only in signal noise"):
        reviewer.more(0, 2)
