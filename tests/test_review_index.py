"""The review index (verified_tts.review.index): written by the render, used only while it is of
the manifest on disk, built again when the manifest changed or the index cannot be read whole,
and a review served from it shows the same order, rows and lines as one made from the manifest.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest
from review_kit import copy_render, manifest_json

from verified_tts.output.manifest import read_manifest
from verified_tts.review.actions import Reviewer
from verified_tts.review.decisions import DecisionLog
from verified_tts.review.index import INDEX_FILE, open_index
from verified_tts.review.order import FILTERS, Ranking
from verified_tts.review.session import ReviewSession
from verified_tts.review.state import fold
from verified_tts.storage.atomic import write_json_atomic


@pytest.fixture
def folder(tmp_path, review_render):
    return copy_render(review_render, tmp_path / "out")[1]


def _meta(out) -> dict:
    with sqlite3.connect(out / INDEX_FILE) as db:
        return {k: json.loads(v) for k, v in db.execute("SELECT name, value FROM meta")}


def _from_manifest(out):
    """The list and lines as the review made them before the index: from the whole manifest."""
    manifest = read_manifest(out)
    with DecisionLog(out, create=False) as log:
        review = fold(manifest.utterances, log.entries())
    ranking = Ranking(manifest.selection.get("gates", ()))
    return manifest, review, ranking, ranking.order(review.lines)


def test_the_render_writes_an_index_of_its_manifest(review_render):
    out = review_render[1]
    assert (out / INDEX_FILE).is_file()
    index = open_index(out, build=False)  # None unless it is of this very manifest
    assert index is not None
    try:
        manifest = read_manifest(out)
        assert index.keys == [u.key for u in manifest.utterances]
        assert [index.record(i) for i in range(len(index))] == list(manifest.utterances)
    finally:
        index.close()


def test_a_review_from_the_index_shows_what_the_manifest_says(folder):
    session = ReviewSession(folder)
    reviewer = Reviewer(session, by="ann")
    try:
        # opening read no whole manifest and no line's record
        assert session._manifest is None and not session.records._cache
        first = session.rows(limit=100)["rows"]
        worst = first[0]["pos"]
        reviewer.choose(worst, (session.detail(worst)["winner"] + 1) % 3)
        reviewer.approve(first[1]["pos"])
        manifest, review, ranking, order = _from_manifest(folder)
        assert session.order == order
        for show in FILTERS:
            for chapter in (None, 1, 2):
                query = {"show": show, "chapter": chapter, "offset": 0, "limit": 500}
                expected = ranking.rows(review.lines, order, **query)
                assert session.rows(**query) == {"total": expected[0], "rows": expected[1]}
        assert session.rows(query="tortoise")["total"] == 2
        assert session.summary()["reviewed"] == review.progress()["reviewed"] == 2
        assert session.review.progress() == review.progress()
        for position, record in enumerate(manifest.utterances):
            detail = session.detail(position)
            state = review.lines[position]
            assert detail["text"] == record.text and detail["key"] == record.key
            assert detail["winner"] == state.winner and detail["selected"] == state.selected
            assert [c["audio"] is not None for c in detail["candidates"]] == [
                bool(c.audio) for c in record.candidates
            ]
            assert [c["score"] for c in detail["candidates"]] == [
                c.score for c in record.candidates
            ]
            assert detail["heard"] == state.effective().winner_candidate.detail.get("transcript")
        assert session.manifest == manifest  # read in full only when asked for
    finally:
        reviewer.close()


def test_a_changed_manifest_is_indexed_again(folder):
    ReviewSession(folder).close()
    before = _meta(folder)["sha256"]
    data = manifest_json(folder)
    data["utterances"][0]["text"] = "A line the book now says otherwise."
    write_json_atomic(folder / "manifest.json", data)
    session = ReviewSession(folder)
    try:
        assert session.detail(0)["text"] == "A line the book now says otherwise."
        assert any(r["text"] == "A line the book now says otherwise."
                   for r in session.rows(limit=500)["rows"])  # fmt: skip
    finally:
        session.close()
    assert _meta(folder)["sha256"] != before


def test_an_edit_in_place_of_the_same_size_and_time_is_noticed(folder):
    ReviewSession(folder).close()
    path = folder / "manifest.json"
    stat = path.stat()
    text = path.read_text(encoding="utf-8")
    old = manifest_json(folder)["utterances"][0]["text"]
    new = old[::-1]  # same length, other words
    field = f'"text": {json.dumps(old, ensure_ascii=False)}'
    at = text.index(field, text.index('"utterances"'))
    assert new != old
    with open(path, "r+", encoding="utf-8") as handle:  # the same file, rewritten in place
        handle.write(text[:at] + text[at:].replace(old, new, 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # its time set back, too
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    session = ReviewSession(folder)
    try:
        assert session.detail(0)["text"] == new
        assert any(r["text"] == new for r in session.rows(limit=500)["rows"])
    finally:
        session.close()


@pytest.mark.parametrize("damage", ["truncated", "short", "other manifest", "not a database"])
def test_a_damaged_or_foreign_index_is_never_used(folder, tmp_path, damage):
    ReviewSession(folder).close()
    index = folder / INDEX_FILE
    expected = [r["text"] for r in ReviewSession(folder).rows(limit=500)["rows"]]
    if damage == "truncated":  # what a writer killed mid-file would leave, were it renamed
        index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    elif damage == "short":
        with sqlite3.connect(index) as db:
            db.execute("DELETE FROM lines WHERE pos = (SELECT max(pos) FROM lines)")
    elif damage == "other manifest":  # the index of a copy whose manifest has one line less
        other = tmp_path / "other"
        shutil.copytree(folder, other)
        data = manifest_json(other)
        data["utterances"] = data["utterances"][1:]
        write_json_atomic(other / "manifest.json", data)
        ReviewSession(other).close()
        shutil.copy(other / INDEX_FILE, index)
    else:
        index.write_bytes(b"this is not an index")
    assert open_index(folder, build=False) is None
    session = ReviewSession(folder)
    try:
        assert [r["text"] for r in session.rows(limit=500)["rows"]] == expected
        assert len(session.records) == len(read_manifest(folder).utterances)
    finally:
        session.close()
    assert open_index(folder, build=False) is not None  # built again, whole


def test_a_copied_folder_keeps_its_index_and_a_hand_written_manifest_gets_one(folder, tmp_path):
    ReviewSession(folder).close()
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    written = (copy / INDEX_FILE).stat().st_mtime_ns
    session = ReviewSession(copy)  # another inode: the same bytes, by their SHA-256
    session.close()
    assert (copy / INDEX_FILE).stat().st_mtime_ns == written
    # a manifest laid out otherwise (one line of JSON): its records are kept in the index
    data = manifest_json(copy)
    (copy / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    session = ReviewSession(copy)
    try:
        manifest = read_manifest(copy)
        assert [session.records[i] for i in range(len(session.records))] == list(
            manifest.utterances
        )
        assert session.detail(0)["text"] == manifest.utterances[0].text
    finally:
        session.close()


def test_a_killed_writers_temporary_index_is_never_read_and_is_cleared(folder):
    (folder / INDEX_FILE).unlink()
    left = folder / "review" / ".index.k1ll3d00.sqlite"  # the name atomic_path gives it
    left.write_bytes(b"half an index")
    os.utime(left, (0, 0))
    session = ReviewSession(folder)
    try:
        assert session.rows(limit=1)["total"] == len(read_manifest(folder).utterances)
    finally:
        session.close()
    assert not left.exists() and open_index(folder, build=False) is not None


def test_a_repeated_sentence_is_one_line_in_the_index_as_in_the_fold(folder):
    data = manifest_json(folder)
    repeat = json.loads(json.dumps(data["utterances"][1]))
    repeat["chapter"], repeat["line"] = data["utterances"][-1]["chapter"], 999
    data["utterances"].append(repeat)
    write_json_atomic(folder / "manifest.json", data)
    session = ReviewSession(folder)
    try:
        last = len(data["utterances"]) - 1
        manifest, review, ranking, order = _from_manifest(folder)
        assert session.order == order
        query = {"offset": 0, "limit": 500}
        assert session.rows(**query)["rows"] == ranking.rows(review.lines, order, **query)[1]
        assert session.detail(last)["repeats"] == 2 and session.summary()["lines"] == last
        assert session.detail(last)["place"] == session.chapter_sizes[repeat["chapter"]]
    finally:
        session.close()
