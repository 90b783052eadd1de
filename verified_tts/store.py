"""The content-addressed store: an SQLite index plus one FLAC per kept candidate.

Every candidate's audio is written as soon as it is generated (to a temporary name, then renamed),
and its row is committed after the file exists; an utterance's decision (its candidates' scores,
the winner, the flag) is committed in one transaction once the selection policy is done with it;
a beam search commits its beams after every step.
So a crash loses only work in flight, a rerun reuses every finished utterance and every generated
candidate, and a changed sentence re-renders only itself (its key changes, nothing else does).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from verified_tts.output.atomic import write_audio_atomic

__all__ = ["Decision", "Store", "StoredCandidate"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    key TEXT PRIMARY KEY,
    utterance TEXT NOT NULL,
    idx INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    sample_rate INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    audio TEXT,
    info TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS candidates_by_utterance ON candidates (utterance, idx);
CREATE TABLE IF NOT EXISTS decisions (
    utterance TEXT NOT NULL,
    policy TEXT NOT NULL,
    winner INTEGER NOT NULL,
    flagged INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (utterance, policy)
);
CREATE TABLE IF NOT EXISTS search_steps (
    utterance TEXT NOT NULL,
    search TEXT NOT NULL,
    step INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (utterance, search, step)
);
"""


@dataclass(frozen=True)
class StoredCandidate:
    key: str
    utterance: str
    index: int
    seed: int
    sample_rate: int
    duration_s: float
    audio: str | None  # path relative to the store root; None once dropped (winners-only)
    info: Mapping[str, Any]


@dataclass(frozen=True)
class Decision:
    utterance: str
    policy: str
    winner: int
    flagged: bool
    record: Mapping[str, Any]  # candidates' scores and verdicts, as the manifest shows them


class Store:
    """The store under ``root`` (``root/index.sqlite`` and ``root/audio/``)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        (self.root / "audio").mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.root / "index.sqlite", check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # candidates -------------------------------------------------------------------------------
    def put_candidate(
        self,
        key: str,
        *,
        utterance: str,
        index: int,
        seed: int,
        audio: np.ndarray,
        sample_rate: int,
        info: Mapping[str, Any],
    ) -> StoredCandidate:
        relative = f"audio/{key}.flac"
        write_audio_atomic(self.root / relative, audio, sample_rate, subtype="PCM_16")
        stored = StoredCandidate(
            key, utterance, index, seed, sample_rate, len(audio) / sample_rate, relative, dict(info)
        )
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO candidates VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    utterance,
                    index,
                    seed,
                    sample_rate,
                    stored.duration_s,
                    relative,
                    json.dumps(stored.info),
                ),
            )
        return stored

    def get_candidate(self, key: str) -> StoredCandidate | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM candidates WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        stored = StoredCandidate(*row[:7], info=json.loads(row[7]))
        if stored.audio is not None and not (self.root / stored.audio).exists():
            return None  # the index outlived its file (deleted by hand): treat as not generated
        return stored

    def load_audio(self, stored: StoredCandidate) -> np.ndarray:
        if stored.audio is None:
            raise FileNotFoundError(f"candidate {stored.key} was not kept (winners-only store)")
        audio, _ = sf.read(self.root / stored.audio, dtype="float32", always_2d=False)
        return audio

    def drop_audio(self, keys: Iterable[str]) -> None:
        """Delete the audio of candidates that are not kept (winners-only mode)."""
        keys = list(keys)
        with self._lock, self._db:
            for key in keys:
                self._db.execute("UPDATE candidates SET audio = NULL WHERE key = ?", (key,))
        for key in keys:
            (self.root / "audio" / f"{key}.flac").unlink(missing_ok=True)

    # decisions --------------------------------------------------------------------------------
    def put_decision(self, decision: Decision) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?)",
                (
                    decision.utterance,
                    decision.policy,
                    decision.winner,
                    int(decision.flagged),
                    json.dumps(decision.record),
                ),
            )

    # search steps (beam search state after each step, so a killed search resumes) -----------
    def put_search_step(self, utterance: str, search: str, step: int, record: Any) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO search_steps VALUES (?, ?, ?, ?)",
                (utterance, search, step, json.dumps(record)),
            )

    def last_search_step(self, utterance: str, search: str) -> tuple[int, Any] | None:
        """The latest stored step of a search and its record, or None before the first."""
        with self._lock:
            row = self._db.execute(
                "SELECT step, record FROM search_steps WHERE utterance = ? AND search = ? "
                "ORDER BY step DESC LIMIT 1",
                (utterance, search),
            ).fetchone()
        return None if row is None else (int(row[0]), json.loads(row[1]))

    def get_decision(self, utterance: str, policy: str) -> Decision | None:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM decisions WHERE utterance = ? AND policy = ?", (utterance, policy)
            ).fetchone()
        if row is None:
            return None
        return Decision(row[0], row[1], int(row[2]), bool(row[3]), json.loads(row[4]))
