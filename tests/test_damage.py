"""Damage to a finished output folder: each kind is detected with one line, regenerated, never
trusted, and `verified-tts doctor` repairs what it can (truncated FLAC, missing audio, corrupt or
locked index, full filesystem)."""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import crashkit
import pytest
import soundfile as sf

from verified_tts.errors import UserError
from verified_tts.storage.store import Decision, Store
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
    # ... and those two too: their audio came back identical (its digest is stored), so their
    # first scores are kept and the repaired manifest is the undamaged one
    assert crashkit.fingerprint(damaged) == crashkit.fingerprint(finished)
    assert check_store(damaged).healthy


def _listed_audio(out: Path) -> list[Path]:
    """Every candidate's audio that the manifest and the report point at."""
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    listed = [
        out / c["audio"] for u in manifest["utterances"] for c in u["candidates"] if c["audio"]
    ]
    report = (out / "report.html").read_text(encoding="utf-8")
    players = [out / html.unescape(src) for src in re.findall(r'<audio[^>]* src="([^"]+)"', report)]
    candidates = {path for path in players if path.parent == out / "store" / "audio"}
    assert candidates and candidates <= set(listed)
    return listed


def _loser(winner: int) -> int:
    """A candidate of three that did not win and is not candidate 0."""
    return 2 if winner != 2 else 1


def test_damaged_losers_are_noticed_and_generated_again(small_book, tmp_path, synthesizer_factory):
    # A producer may pick any candidate in the review app, so a candidate that did not win must
    # exist and decode as much as a winner does.
    finished = tmp_path / "clean"
    render(small_book, finished, (s := synthesizer_factory(candidates=3, adaptive=False)).config,
           synthesizer=s)  # fmt: skip
    damaged = tmp_path / "damaged"
    shutil.copytree(finished, damaged)
    db = sqlite3.connect(damaged / "store" / "index.sqlite")
    decisions = db.execute("SELECT utterance, winner FROM decisions ORDER BY utterance").fetchall()
    db.close()
    (first, first_winner), (second, second_winner) = decisions[:2]
    # not candidate 0 either: every run reads candidate 0 of the first window (the speaker
    # reference before any winner), so its damage was noticed anyway
    deleted = damaged / "store" / "audio" / f"{first}-{_loser(first_winner):03d}.flac"
    truncated = damaged / "store" / "audio" / f"{second}-{_loser(second_winner):03d}.flac"
    deleted.unlink()
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    synthesizer = synthesizer_factory(candidates=3, adaptive=False)
    summary = render(small_book, damaged, synthesizer.config, synthesizer=synthesizer)
    assert sorted(line.split(":")[0] for line in summary.damaged) == sorted(
        [f"candidate {deleted.stem}", f"candidate {truncated.stem}"]
    )
    assert summary.candidates_generated == 2
    for path in _listed_audio(damaged):
        assert sf.info(path).frames == len(sf.read(path)[0]) > 0, path
    assert crashkit.fingerprint(damaged) == crashkit.fingerprint(finished)
    assert check_store(damaged).healthy


def test_a_deleted_loser_is_one_line_from_the_cli(small_book, tmp_path):
    args = [*CLI, "render", str(small_book), "--out", str(tmp_path / "out"), "--generator",
            "espeak", "-n", "3", "--no-adaptive"]  # fmt: skip
    first = subprocess.run(args, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    db = sqlite3.connect(tmp_path / "out" / "store" / "index.sqlite")
    utterance, winner = db.execute("SELECT utterance, winner FROM decisions").fetchone()
    db.close()
    loser = tmp_path / "out" / "store" / "audio" / f"{utterance}-{_loser(winner):03d}.flac"
    loser.unlink()
    again = subprocess.run(args, capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr
    output = again.stdout + again.stderr
    said = [" ".join(line.split()) for line in output.split("damaged store entry:")[1:]]
    assert len(said) == 1 and said[0].startswith(
        f"candidate {loser.stem}: its audio file is missing; generated again"
    ), output
    assert loser.exists() and all(path.exists() for path in _listed_audio(tmp_path / "out"))


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


def test_doctor_finds_altered_audio_and_its_repair_keeps_the_proven_scores(
    finished, small_book, tmp_path, synthesizer_factory
):
    damaged = tmp_path / "damaged"
    shutil.copytree(finished, damaged)
    victim = _winner_files(damaged)[0]
    samples, rate = sf.read(victim, dtype="int16")
    sf.write(victim, samples[::-1].copy(), rate, subtype="PCM_16")  # same length, other audio
    checked = check_store(damaged)
    assert checked.problems[0] == (
        f"candidate {victim.stem}: its audio file holds other samples than were stored "
        "(digest differs)"
    )
    assert checked.problems[1:] == (
        f"decision for utterance {victim.stem.rsplit('-', 1)[0]}: its winner's audio is gone",
    )
    check_store(damaged, repair=True)
    db = sqlite3.connect(damaged / "store" / "index.sqlite")
    kept = db.execute("SELECT count(*) FROM scores WHERE candidate = ?", (victim.stem,)).fetchone()
    db.close()
    assert kept == (1,)  # tied to the digest of the audio they judged
    synthesizer = synthesizer_factory()
    summary = render(small_book, damaged, synthesizer.config, synthesizer=synthesizer)
    assert summary.candidates_generated == 1
    assert crashkit.fingerprint(damaged) == crashkit.fingerprint(finished)


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
