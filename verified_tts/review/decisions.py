"""The review's decision log: every human decision and its time, in ``review/decisions.sqlite``.

A producer's choices (a kept take chosen, a line approved, more takes asked for, a line's spoken
text edited, a lexicon entry added, a quote given to another speaker, an undo, a delivery) are rows
of one SQLite table in the output folder, in WAL mode with ``synchronous=FULL``: an append returns
only once its row is on disk, so a decision the page showed as recorded survives a killed app and a
power cut, and a write cut short is rolled back by SQLite, never read half-done. The table is
append-only (two triggers refuse UPDATE and DELETE): an undo is a new row naming the row it takes
back, so the log is also the history. A request that takes work (more takes, an edit, a lexicon
entry) is one row when it is asked for and a ``result`` (or ``failed``) row naming it when its work
is done; a request with no answer was cut short and is run again when the review opens.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verified_tts.errors import UserError

if TYPE_CHECKING:
    from verified_tts.text.lexicon import LexiconEntry

__all__ = [
    "DECISIONS",
    "KINDS",
    "LOG_FILE",
    "REQUESTS",
    "REVIEW_DIR",
    "DecisionLog",
    "Entry",
    "lexicon_entry",
    "live_changes",
    "now",
]

REVIEW_DIR = "review"
LOG_FILE = f"{REVIEW_DIR}/decisions.sqlite"

REQUESTS = ("more", "edit", "lexicon", "speaker")  # decisions whose work runs after recording
DECISIONS = ("choose", "approve", *REQUESTS)  # what an undo can take back
KINDS = (*DECISIONS, "result", "failed", "undo", "deliver")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    by TEXT NOT NULL,
    kind TEXT NOT NULL,
    line TEXT,
    of INTEGER,
    data TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS entries_append_only_update BEFORE UPDATE ON entries
BEGIN SELECT RAISE(ABORT, 'the review log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS entries_append_only_delete BEFORE DELETE ON entries
BEGIN SELECT RAISE(ABORT, 'the review log is append-only'); END;
"""


def now() -> str:
    """The time of a decision: UTC, ISO 8601 to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Entry:
    """One row of the log. ``line`` is the line it is about (the utterance key the render gave
    the line; None for the whole book), ``of`` the row it answers or undoes."""

    seq: int
    at: str
    by: str
    kind: str
    line: str | None = None
    of: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "at": self.at, "by": self.by, "kind": self.kind,
                "line": self.line, "of": self.of, "data": dict(self.data)}  # fmt: skip


class DecisionLog:
    """The log of the output folder ``out_dir`` (created on first use unless ``create=False``)."""

    def __init__(self, out_dir: str | Path, *, create: bool = True) -> None:
        self.path = Path(out_dir) / LOG_FILE
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if not create and not self.path.is_file():
            return
        with self._sqlite():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=10.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._db.commit()

    @property
    def exists(self) -> bool:
        return self._db is not None

    @contextmanager
    def _sqlite(self) -> Iterator[None]:
        try:
            yield
        except OSError as error:
            raise UserError(
                f"cannot write the review log {self.path} ({error.strerror}): check the output "
                "folder's permissions and free space"
            ) from error
        except sqlite3.Error as error:
            text = str(error)
            if "full" in text:
                raise UserError(
                    f"no space left on the device holding {self.path}: free some space; every "
                    "decision recorded so far is kept"
                ) from error
            if "locked" in text or "busy" in text:
                raise UserError(
                    f"the review log {self.path} is locked by another process: close the other "
                    "review of this folder"
                ) from error
            raise UserError(
                f"the review log {self.path} cannot be read ({text}): move it aside to start the "
                "review afresh (the render's own winners are untouched)"
            ) from error

    def append(
        self,
        kind: str,
        *,
        by: str,
        line: str | None = None,
        of: int | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> Entry:
        """Record one decision; it is on disk when this returns."""
        if kind not in KINDS:
            raise ValueError(f"unknown decision kind {kind!r}")
        if self._db is None:
            raise RuntimeError("this log was opened read-only and does not exist")
        at = now()
        text = json.dumps(dict(data or {}), ensure_ascii=False, separators=(",", ":"))
        with self._sqlite(), self._lock, self._db:
            cursor = self._db.execute(
                "INSERT INTO entries (at, by, kind, line, of, data) VALUES (?, ?, ?, ?, ?, ?)",
                (at, by, kind, line, of, text),
            )
            seq = int(cursor.lastrowid)
        return Entry(seq, at, by, kind, line, of, json.loads(text))

    def entries(self, after: int = 0) -> list[Entry]:
        """Every entry (or those after ``after``) in the order they were recorded."""
        if self._db is None:
            return []
        with self._sqlite(), self._lock:
            rows = self._db.execute(
                "SELECT seq, at, by, kind, line, of, data FROM entries WHERE seq > ? ORDER BY seq",
                (after,),
            ).fetchall()
        return [Entry(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6])) for r in rows]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> DecisionLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def lexicon_entry(data: dict[str, Any]) -> LexiconEntry:
    """A lexicon entry as the log records it (``LexiconEntry.as_dict``)."""
    from verified_tts.text.lexicon import LexiconEntry

    return LexiconEntry(str(data["match"]), bool(data.get("regex", False)), data.get("say"),
                        data.get("phonemes"), bool(data.get("case", False)))  # fmt: skip


def live_changes(entries: Sequence[Entry]) -> list[Entry]:
    """Edits, lexicon entries and speakers chosen, not undone, in the order they were made."""
    undone = {e.of for e in entries if e.kind == "undo"}
    changes = ("edit", "lexicon", "speaker")
    return [e for e in entries if e.kind in changes and e.seq not in undone]
