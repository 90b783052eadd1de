"""``doctor``: check an output folder's store and repair what can be repaired, saying what it did.

The store is an SQLite index plus one FLAC per candidate. The doctor checks the index with
SQLite's own ``integrity_check``, decodes every candidate's audio in full against the length the
index recorded, checks that every decision's winner is still there, and looks for files nobody
owns (audio without a row, temporary files left by a killed writer). Repair sets a damaged index
aside (renamed, never deleted) and starts an empty one, drops rows whose audio is missing or
damaged (with the decisions that chose them) so the next render generates them again, and removes
orphans. A store that a render is using right now (locked) is reported, not touched.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from verified_tts.errors import UserError
from verified_tts.output.manifest import MANIFEST_FILE, output_folders
from verified_tts.storage.atomic import interrupted_writes
from verified_tts.storage.keys import candidate_key
from verified_tts.storage.store import INDEX_FILE, STORE_DIR, Store, audio_problem, index_error

__all__ = ["DoctorReport", "check_store", "doctor"]


@dataclass(frozen=True)
class DoctorReport:
    """What the doctor found and, when repairing, what it did (one line each)."""

    store: Path
    candidates: int
    decisions: int
    problems: tuple[str, ...]
    repairs: tuple[str, ...]

    @property
    def healthy(self) -> bool:
        return not self.problems


def _open_index(root: Path) -> sqlite3.Connection:
    db = sqlite3.connect(root / INDEX_FILE, timeout=2.0)
    try:
        verdict = db.execute("PRAGMA integrity_check").fetchall()
        if verdict != [("ok",)]:
            raise sqlite3.DatabaseError("; ".join(str(row[0]) for row in verdict[:3]))
        db.execute("SELECT count(*) FROM candidates").fetchone()
        db.execute("SELECT count(*) FROM decisions").fetchone()
        # A reader never waits for a writer in WAL mode: ask for the write lock to learn whether
        # a render holds this store right now.
        db.execute("BEGIN IMMEDIATE")
        db.rollback()
    except BaseException:
        db.close()
        raise
    return db


def _has_column(db: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in db.execute(f"PRAGMA table_info({table})"))


def _set_aside(root: Path) -> Path:
    index = root / INDEX_FILE
    number = 1
    while (root / f"{INDEX_FILE}.damaged-{number}").exists():
        number += 1
    aside = root / f"{INDEX_FILE}.damaged-{number}"
    os.replace(index, aside)
    for suffix in ("-wal", "-shm"):
        (root / f"{INDEX_FILE}{suffix}").unlink(missing_ok=True)
    return aside


def check_store(out_dir: str | os.PathLike, *, repair: bool = False) -> DoctorReport:
    """Check (and with ``repair`` mend) the store of the output folder ``out_dir``."""
    out = Path(out_dir)
    root = out / STORE_DIR
    if not (root / INDEX_FILE).exists():
        raise UserError(
            f"{out} holds no store ({root / INDEX_FILE} is missing): give the --out "
            "folder of a render or dub"
        )
    problems: list[str] = []
    repairs: list[str] = []
    try:
        db = _open_index(root)
    except sqlite3.Error as error:
        failure = index_error(root, error)
        if "locked" in str(failure):
            raise failure from error
        problems.append(f"index {root / INDEX_FILE} is damaged ({error})")
        if not repair:
            return DoctorReport(root, 0, 0, tuple(problems), ())
        aside = _set_aside(root)
        Store(root).close()  # an empty index with the current schema
        repairs.append(
            f"set the damaged index aside as {aside.name} and started an empty one: the next "
            "render generates every candidate again"
        )
        db = _open_index(root)
    with db:
        digests = _has_column(db, "candidates", "digest")  # stores from before digests lack it
        rows = db.execute(
            "SELECT key, utterance, idx, sample_rate, duration_s, audio, "
            f"{'digest' if digests else 'NULL'} FROM candidates"
        ).fetchall()
        decisions = db.execute("SELECT utterance, policy, winner FROM decisions").fetchall()
        bad: set[str] = set()
        for key, _utterance, _idx, sample_rate, duration_s, audio, digest in rows:
            if audio is None:
                continue  # not kept (winners-only): nothing to check
            problem = audio_problem(root / audio, round(duration_s * sample_rate), digest)
            if problem is not None:
                problems.append(f"candidate {key}: {problem}")
                bad.add(key)
        present = {key for key, *_ in rows} - bad
        stale = [
            (utterance, policy)
            for utterance, policy, winner in decisions
            if candidate_key(utterance, winner) not in present
        ]
        for utterance, _policy in stale:
            problems.append(f"decision for utterance {utterance}: its winner's audio is gone")
        known = {f"{key}.flac" for key, *_ in rows}
        orphans = (
            sorted(
                p
                for p in (root / "audio").glob("*.flac")
                if p.name not in known and not p.name.startswith(".")
            )
            if (root / "audio").is_dir()
            else []
        )
        for path in orphans:
            problems.append(f"audio file {path.name} has no row in the index")
        leftovers = [path for folder in output_folders(out) for path in interrupted_writes(folder)]
        for path in leftovers:
            problems.append(f"temporary file {path} left by an interrupted write")
        manifest = out / MANIFEST_FILE
        if not manifest.exists():
            problems.append(f"{manifest} is missing: the render did not finish")
        if repair:
            has_scores = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'scores'"
            ).fetchone()
            # Scores tied to a digest stay, as the store keeps them: a regenerated candidate
            # whose audio has that digest again gets them back.
            unproven = (
                " AND digest IS NULL" if has_scores and _has_column(db, "scores", "digest") else ""
            )
            for key in sorted(bad):
                db.execute("DELETE FROM candidates WHERE key = ?", (key,))
                if has_scores:  # stores from before scores were kept have no such table
                    db.execute(f"DELETE FROM scores WHERE candidate = ?{unproven}", (key,))
                (root / "audio" / f"{key}.flac").unlink(missing_ok=True)
            if bad:
                repairs.append(
                    f"dropped {len(bad)} damaged candidate(s); the next render generates them again"
                )
            for utterance, policy in stale:
                db.execute(
                    "DELETE FROM decisions WHERE utterance = ? AND policy = ?", (utterance, policy)
                )
            if stale:
                repairs.append(
                    f"dropped {len(stale)} decision(s) whose winner is gone; the "
                    "next render decides them again"
                )
            for path in orphans + leftovers:
                path.unlink(missing_ok=True)
            if orphans:
                repairs.append(f"removed {len(orphans)} audio file(s) without an index row")
            if leftovers:
                repairs.append(f"removed {len(leftovers)} temporary file(s)")
            if not manifest.exists():
                repairs.append(
                    "the manifest cannot be repaired here: run the render again "
                    "to finish it (the store resumes it)"
                )
    db.close()
    return DoctorReport(
        root,
        len(rows) - (len(bad) if repair else 0),
        len(decisions) - (len(stale) if repair else 0),
        tuple(problems),
        tuple(repairs),
    )


def doctor(out_dir: str | os.PathLike, *, repair: bool = True) -> DoctorReport:
    """The CLI's entry: check, and repair unless told only to check."""
    return check_store(out_dir, repair=repair)
