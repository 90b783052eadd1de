"""Damage to a finished output folder: each kind is detected with one line, regenerated, never
trusted, and `verified-tts doctor` repairs what it can (truncated FLAC, missing audio, corrupt or
locked index, full filesystem)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import crashkit
import pytest

from verified_tts.errors import UserError
from verified_tts.store import Decision, Store
from verified_tts.workflows.doctor import check_store
from verified_tts.workflows.render import render

CLI = [sys.executable, "-m", "verified_tts"]
AUDIO_OUTPUTS = ("book.wav", "book.flac")


def _digests(out: Path) -> dict[str, str]:
    files = [out / name for name in AUDIO_OUTPUTS] + sorted((out / "chapters").iterdir())
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture
def finished(small_book, tmp_path, synthesizer_factory):
    out = tmp_path / "clean"
    synthesizer = synthesizer_factory()
    render(small_book, out, synthesizer.config, synthesizer=synthesizer)
    return out


def _winner_files(out: Path) -> list[Path]:
    db = sqlite3.connect(out / "store" / "index.sqlite")
    rows = db.execute("SELECT utterance, winner FROM decisions").fetchall()
    db.close()
    return [out / "store" / "audio" / f"{u}-{w:03d}.flac" for u, w in rows]


def test_truncated_and_missing_winners_are_reported_and_generated_again(
    finished, small_book, tmp_path, synthesizer_factory
):
    damaged = tmp_path / "damaged"
    shutil.copytree(finished, damaged)
    truncated, missing = _winner_files(damaged)[:2]
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    missing.unlink()
    synthesizer = synthesizer_factory()
    summary = render(small_book, damaged, synthesizer.config, synthesizer=synthesizer)
    assert len(summary.damaged) == 2
    assert any("truncated" in line or "does not decode" in line for line in summary.damaged)
    assert any("missing" in line for line in summary.damaged)
    assert summary.candidates_generated == 2  # exactly the two damaged ones, nothing else
    assert _digests(damaged) == _digests(finished)
    # and every decision and score, but the two regenerated candidates' scores: packed Whisper
    # scoring (the default) heard them beside each other, not beside the clips of the first run
    regenerated = {truncated.stem, missing.stem}
    assert _results(damaged, regenerated) == _results(finished, regenerated)
    assert check_store(damaged).healthy


def _results(out: Path, regenerated: set[str]) -> list:
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return [
        (
            u["key"],
            u["winner"],
            u["flagged"],
            [
                (c["index"], c["duration_s"], None if Path(c["audio"]).stem in regenerated else
                 c["scores"])
                for c in u["candidates"]
            ],
        )
        for u in manifest["utterances"]
    ]  # fmt: skip


def test_per_clip_scoring_repairs_to_the_same_scores(small_book, tmp_path, synthesizer_factory):
    # Per-clip Whisper scores do not depend on the other clips of a call: a regenerated
    # candidate scored on its own scores as it did beside the others, so every score comes back.
    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer

    shared = synthesizer_factory()
    per_clip = shared.verifiers.with_verifier(
        shared.verifiers.get("wer").with_options(packing=False)
    )
    config = build_config(
        {"verifiers": {"wer": {"packing": False}}}, candidates=2, generator="espeak"
    )

    def synthesizer():
        return Synthesizer(shared.generator, per_clip, config)

    finished = tmp_path / "clean"
    render(small_book, finished, config, synthesizer=synthesizer())
    damaged = tmp_path / "damaged"
    shutil.copytree(finished, damaged)
    truncated, missing = _winner_files(damaged)[:2]
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    missing.unlink()
    summary = render(small_book, damaged, config, synthesizer=synthesizer())
    assert len(summary.damaged) == 2 and summary.candidates_generated == 2
    assert _digests(damaged) == _digests(finished)
    assert crashkit.fingerprint(damaged) == crashkit.fingerprint(finished)


def test_doctor_reports_and_repairs_what_it_did(finished, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(finished, damaged)
    victim = _winner_files(damaged)[0]
    victim.write_bytes(victim.read_bytes()[:200])
    # a killed writer's temporary file, named as mkstemp names them
    (damaged / "store" / "audio" / ".u0001-000.k2x9_q7a.flac").write_bytes(b"half")
    checked = subprocess.run(
        [*CLI, "doctor", str(damaged), "--check-only"], capture_output=True, text=True
    )
    assert checked.returncode == 1, checked.stderr
    assert "Traceback" not in checked.stdout + checked.stderr
    assert victim.exists()  # --check-only touches nothing
    repaired = subprocess.run([*CLI, "doctor", str(damaged)], capture_output=True, text=True)
    assert repaired.returncode == 0, repaired.stderr
    text = " ".join((repaired.stdout + repaired.stderr).split())
    assert "dropped 1 damaged candidate(s)" in text
    assert "dropped 1 decision(s) whose winner is gone" in text
    assert "removed 1 temporary file(s)" in text
    assert not victim.exists()
    assert check_store(damaged).healthy


def test_corrupt_index_is_one_line_and_doctor_sets_it_aside(finished, small_book, tmp_path):
    index = finished / "store" / "index.sqlite"
    with open(index, "r+b") as handle:
        handle.write(b"this is not an SQLite header at all")
    run = subprocess.run(
        [
            *CLI,
            "render",
            str(small_book),
            "--out",
            str(finished),
            "--generator",
            "espeak",
            "-n",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stdout + run.stderr
    said = " ".join((run.stdout + run.stderr).split())
    assert "is damaged" in said and "verified-tts doctor" in said
    report = check_store(finished, repair=True)
    assert any("set the damaged index aside" in line for line in report.repairs)
    assert (finished / "store" / "index.sqlite.damaged-1").exists()
    assert check_store(finished).problems == ()  # empty index, orphans removed; manifest kept


def test_locked_index_is_one_line(finished, tmp_path, synthesizer_factory):
    book = tmp_path / "other.md"
    book.write_text("# Other\n\nA sentence that is not in the store yet.\n", encoding="utf-8")
    holder = sqlite3.connect(finished / "store" / "index.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        store = Store(finished / "store")
        store._db.execute("PRAGMA busy_timeout = 100")  # the test need not wait 10 s
        with pytest.raises(UserError, match="is locked by another process"):
            store.put_decision(Decision("u", "p", 0, False, {}))
        store.close()
        with pytest.raises(UserError, match="is locked"):
            check_store(finished)
    finally:
        holder.rollback()
        holder.close()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="needs root")
def test_full_filesystem_is_one_line_and_resume_finishes(small_book, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        args = [
            *CLI,
            "render",
            str(small_book),
            "--out",
            str(small / "out"),
            "--generator",
            "espeak",
            "-n",
            "2",
        ]
        run = subprocess.run(args, capture_output=True, text=True)
        assert run.returncode == 2, run.stdout + run.stderr
        assert "Traceback" not in run.stdout + run.stderr
        assert "no space left on the device" in " ".join((run.stdout + run.stderr).split())
        leftovers = [p for p in (small / "out").rglob(".*") if p.is_file()]
        assert leftovers == []  # a failed write removes its temporary file
        subprocess.run(["mount", "-o", "remount,size=8m", str(small)], check=True)
        again = subprocess.run(args, capture_output=True, text=True)
        assert again.returncode == 0, again.stdout + again.stderr
        assert check_store(small / "out").healthy
    finally:
        subprocess.run(["umount", str(small)], check=False)
