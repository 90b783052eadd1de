"""The atomic writer: whole files or nothing, and a killed writer's leftovers are found and,
once a later run has finished, removed without touching anybody else's hidden files."""

from __future__ import annotations

import os
import time

import pytest

from verified_tts.storage.atomic import (
    atomic_path,
    interrupted_writes,
    remove_interrupted_writes,
    write_text_atomic,
)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "manifest.json"
    write_text_atomic(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        temporary.write_text("half")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old"
    assert interrupted_writes(tmp_path) == []


def test_only_old_temporary_files_of_the_writer_are_removed(tmp_path):
    left = tmp_path / ".book.k2x9_q7a.wav"  # what mkstemp named a killed book.wav write
    left.write_bytes(b"RIFF")
    mine = tmp_path / ".DS_Store"  # hidden, but not ours
    mine.write_bytes(b"x")
    earlier = time.time() - 60
    os.utime(left, (earlier, earlier))
    assert interrupted_writes(tmp_path) == [left]
    # a temporary file newer than the run's start may be another writer's, in flight
    assert remove_interrupted_writes([tmp_path], older_than=earlier - 1) == 0
    assert remove_interrupted_writes([tmp_path, tmp_path / "absent"], older_than=time.time()) == 1
    assert not left.exists() and mine.exists()


def test_the_pattern_matches_what_the_writer_really_leaves(tmp_path):
    target = tmp_path / "chapters" / "01-the-start.flac"
    with pytest.raises(RuntimeError), atomic_path(target) as temporary:
        seen = interrupted_writes(target.parent)
        raise RuntimeError("stop before the rename")
    assert seen == [temporary]
