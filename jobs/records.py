"""Job records: SQLite beside the cluster's state, so jobs outlive the cluster that ran them.

Each job has one row (its spec, submission time, current state, the Ray submission id of its
latest attempt, its output folder and the last message) and a history of every state it went
through, per attempt. Ray forgets its jobs when the cluster restarts; these records do not, so
``jobs list`` still shows them and ``jobs resume`` can submit them again. A job that was PENDING
or RUNNING when its cluster went away is marked FAILED with a message saying it was lost.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.spec import JobSpec

__all__ = [
    "ACTIVE_STATES",
    "DB_FILE",
    "TERMINAL_STATES",
    "JobRecord",
    "JobRecords",
    "StateChange",
]

DB_FILE = "jobs.sqlite"
ACTIVE_STATES = ("PENDING", "RUNNING")
TERMINAL_STATES = ("SUCCEEDED", "FAILED", "STOPPED")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    state TEXT NOT NULL,
    submission_id TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    output TEXT NOT NULL,
    message TEXT NOT NULL DEFAULT '',
    address TEXT NOT NULL DEFAULT '',
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    job TEXT NOT NULL REFERENCES jobs(id),
    at REAL NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL,
    message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS history_job ON history(job, at);
"""


@dataclass(frozen=True)
class StateChange:
    at: float
    attempt: int
    state: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "attempt": self.attempt,
            "state": self.state,
            "message": self.message,
        }


@dataclass(frozen=True)
class JobRecord:
    """A job as the queue knows it, across attempts and cluster restarts."""

    id: str
    spec: JobSpec
    submitted_at: float
    state: str
    submission_id: str  # Ray's id of the latest attempt
    attempts: int
    output: str
    message: str
    address: str  # the Jobs API it was submitted to
    updated_at: float
    history: tuple[StateChange, ...] = ()

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state,
            "command": self.spec.command,
            "input": self.spec.input_name,
            "output": self.output,
            "submitted_at": self.submitted_at,
            "updated_at": self.updated_at,
            "submission_id": self.submission_id,
            "attempts": self.attempts,
            "message": self.message,
            "address": self.address,
            "spec": self.spec.to_dict(),
            "history": [h.as_dict() for h in self.history],
        }


class JobRecords:
    """The job table of one cluster state directory."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._db = connection

    @classmethod
    @contextmanager
    def open(cls, directory: str | os.PathLike[str]) -> Iterator[JobRecords]:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        # several CLI processes may touch the records at once: wait for the lock, don't fail
        connection = sqlite3.connect(path / DB_FILE, timeout=30.0, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.executescript(_SCHEMA)
            yield cls(connection)
        finally:
            connection.close()

    # -- reading --------------------------------------------------------------------------------
    def get(self, job_id: str) -> JobRecord | None:
        row = self._db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return self._record(row) if row else None

    def find(self, prefix: str) -> list[JobRecord]:
        """Jobs whose id starts with ``prefix`` (ids are long; a unique prefix is enough)."""
        rows = self._db.execute(
            "SELECT * FROM jobs WHERE id LIKE ? ESCAPE '\\' ORDER BY submitted_at",
            (prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
        ).fetchall()
        return [self._record(row) for row in rows]

    def all(self) -> list[JobRecord]:
        rows = self._db.execute("SELECT * FROM jobs ORDER BY submitted_at").fetchall()
        return [self._record(row) for row in rows]

    def _record(self, row: tuple[Any, ...]) -> JobRecord:
        (job_id, spec, submitted_at, state, submission_id, attempts, output, message, address,
         updated_at) = row  # fmt: skip
        history = tuple(
            StateChange(at, attempt, s, m)
            for at, attempt, s, m in self._db.execute(
                "SELECT at, attempt, state, message FROM history WHERE job = ? ORDER BY at, rowid",
                (job_id,),
            )
        )
        return JobRecord(
            id=job_id,
            spec=JobSpec.from_dict(json.loads(spec)),
            submitted_at=submitted_at,
            state=state,
            submission_id=submission_id,
            attempts=attempts,
            output=output,
            message=message,
            address=address,
            updated_at=updated_at,
            history=history,
        )

    # -- writing --------------------------------------------------------------------------------
    def create(self, spec: JobSpec, submission_id: str, address: str) -> JobRecord:
        now = time.time()
        job_id = spec.job_id
        with self._transaction():
            self._db.execute(
                "INSERT INTO jobs VALUES (?, ?, ?, 'PENDING', ?, 1, ?, 'submitted', ?, ?)",
                (job_id, json.dumps(spec.to_dict()), now, submission_id, spec.out, address, now),
            )
            self._history(job_id, now, 1, "PENDING", "submitted")
        record = self.get(job_id)
        assert record is not None
        return record

    def delete(self, job_id: str) -> None:
        with self._transaction():
            self._db.execute("DELETE FROM history WHERE job = ?", (job_id,))
            self._db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))

    def set_state(self, job_id: str, state: str, message: str = "") -> JobRecord:
        """Record a state (history grows only when the state or message changes)."""
        record = self.get(job_id)
        if record is None:
            raise KeyError(job_id)
        if record.state == state and record.message == message:
            return record
        now = time.time()
        with self._transaction():
            self._db.execute(
                "UPDATE jobs SET state = ?, message = ?, updated_at = ? WHERE id = ?",
                (state, message, now, job_id),
            )
            self._history(job_id, now, record.attempts, state, message)
        return self.get(job_id)  # type: ignore[return-value]

    def new_attempt(
        self, job_id: str, submission_id: str, address: str, message: str = "resumed"
    ) -> JobRecord:
        record = self.get(job_id)
        if record is None:
            raise KeyError(job_id)
        now = time.time()
        attempt = record.attempts + 1
        with self._transaction():
            self._db.execute(
                "UPDATE jobs SET state = 'PENDING', submission_id = ?, attempts = ?, "
                "message = ?, address = ?, updated_at = ? WHERE id = ?",
                (submission_id, attempt, message, address, now, job_id),
            )
            self._history(job_id, now, attempt, "PENDING", message)
        return self.get(job_id)  # type: ignore[return-value]

    def mark_unfinished_lost(self, why: str) -> list[str]:
        """Jobs still PENDING/RUNNING when their cluster went away: FAILED, resumable."""
        lost = [r.id for r in self.all() if r.state in ACTIVE_STATES]
        for job_id in lost:
            self.set_state(job_id, "FAILED", f"lost: {why}; `verified-tts jobs resume {job_id}`")
        return lost

    def _history(self, job_id: str, at: float, attempt: int, state: str, message: str) -> None:
        self._db.execute(
            "INSERT INTO history VALUES (?, ?, ?, ?, ?)", (job_id, at, attempt, state, message)
        )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
