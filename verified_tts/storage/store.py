"""The content-addressed store: an SQLite index plus one FLAC per kept candidate.

Every candidate's audio is written as soon as it is generated (to a temporary name, then renamed),
and its row is committed after the file exists; an utterance's decision (its candidates' scores,
the winner, the flag) is committed in one transaction once the selection policy is done with it;
a beam search commits its beams after every step.
The verifiers' scores of every verified candidate are committed too, one transaction per round of
scoring, under a context key (the verifiers' identities and what the scores depend on besides the
audio, such as the speaker reference), so a resumed run judges the candidates of unfinished
utterances on the very scores the killed run had, even where a score depends on more than the
clip itself (packed Whisper windows).
So a crash loses only work in flight, a rerun reuses every finished utterance and every generated
candidate, and a changed sentence re-renders only itself (its key changes, nothing else does).

Stored audio is never trusted blindly: the first time a run asks for a candidate, its file is
decoded in full and checked against the length and the digest of its 16-bit samples that the index
recorded; a missing, truncated, undecodable or altered file is reported once (in
:attr:`Store.damaged`), its row is dropped and the candidate is generated again. Its scores stay,
tied to the digest of the audio they judged: when the regenerated audio has the same digest (a
generator is a pure function of the seed), the candidate gets its first scores back rather than a
new score taken beside other clips (packed Whisper windows), so a repaired store gives the
manifest the undamaged one gave. Stores from before digests were kept are migrated in place: a
candidate's digest is taken from its file the first time the file decodes in full, and that
candidate's scores are tied to it. SQLite failures (a damaged or locked index, a full disk)
become one :class:`~verified_tts.errors.UserError` line that says what to do.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from verified_tts.errors import UserError
from verified_tts.storage.atomic import write_audio_atomic
from verified_tts.storage.audio import audio_digest, audio_problem, check_audio

__all__ = [
    "STORE_DIR",
    "Decision",
    "Store",
    "StoredCandidate",
    "audio_digest",
    "audio_problem",
    "index_error",
]

STORE_DIR = "store"  # the store's folder inside an output folder; manifest audio paths start here
INDEX_FILE = "index.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS candidates (
    key TEXT PRIMARY KEY,
    utterance TEXT NOT NULL,
    idx INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    sample_rate INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    audio TEXT,
    info TEXT NOT NULL,
    digest TEXT
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
CREATE TABLE IF NOT EXISTS scores (
    candidate TEXT NOT NULL,
    context TEXT NOT NULL,
    record TEXT NOT NULL,
    digest TEXT,
    PRIMARY KEY (candidate, context)
);
"""
# Columns added since the first stores were written: (table, column, SQL type).
_ADDED_COLUMNS = (("candidates", "digest", "TEXT"), ("scores", "digest", "TEXT"))
_CANDIDATE_COLUMNS = "key, utterance, idx, seed, sample_rate, duration_s, audio, info, digest"


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
    digest: str | None = None  # of the 16-bit samples (audio_digest); None in an unmigrated row


@dataclass(frozen=True)
class Decision:
    utterance: str
    policy: str
    winner: int
    flagged: bool
    record: Mapping[str, Any]  # candidates' scores and verdicts, as the manifest shows them


def index_error(root: Path, error: sqlite3.Error) -> UserError:
    """The one line for an SQLite failure of the store index under ``root``."""
    index = root / INDEX_FILE
    text = str(error)
    if "locked" in text or "busy" in text:
        return UserError(
            f"the store index {index} is locked by another process (another render into the "
            "same folder?): wait for it to finish, or choose another --out"
        )
    if "full" in text:
        return UserError(
            f"no space left on the device holding {index}: free some space and run the same "
            "command again (finished candidates are kept)"
        )
    if isinstance(error, sqlite3.OperationalError) and "unable to open" in text:
        return UserError(f"cannot open the store index {index} ({text}): check its permissions")
    return UserError(
        f"the store index {index} is damaged ({text}): run `verified-tts doctor "
        f"{root.parent}` to set it aside and rebuild it"
    )


class Store:
    """The store under ``root`` (``root/index.sqlite`` and ``root/audio/``)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.damaged: list[str] = []  # one line per damaged entry found (and dropped) this run
        self._checked: set[str] = set()  # keys whose audio decoded in full this run
        try:
            (self.root / "audio").mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(
                f"cannot create the store folder {self.root} ({error.strerror}): "
                "choose a writable --out folder"
            ) from error
        self._lock = threading.Lock()
        with self._sqlite():
            self._db = sqlite3.connect(
                self.root / INDEX_FILE, check_same_thread=False, timeout=10.0
            )
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(_SCHEMA)
                self._migrate()
                self._db.commit()
            except BaseException:
                self._db.close()
                raise

    def _migrate(self) -> None:
        """Add the columns that stores written before them lack (their values fill in lazily)."""
        for table, column, kind in _ADDED_COLUMNS:
            present = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in present:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    @contextmanager
    def _sqlite(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise index_error(self.root, error) from error

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
        # The digest of what the file holds, as any later reader decodes it (libsndfile's own
        # float to 16-bit conversion). A file that does not read back (FLAC cannot hold zero
        # samples) gets none, and the next run's check finds it damaged.
        digest = check_audio(self.root / relative, len(audio), None)[1]
        stored = StoredCandidate(
            key,
            utterance,
            index,
            seed,
            sample_rate,
            len(audio) / sample_rate,
            relative,
            dict(info),
            digest,
        )
        with self._sqlite(), self._lock, self._db:
            self._db.execute(
                f"INSERT OR REPLACE INTO candidates ({_CANDIDATE_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    utterance,
                    index,
                    seed,
                    sample_rate,
                    stored.duration_s,
                    relative,
                    json.dumps(stored.info),
                    digest,
                ),
            )
        self._checked.add(key)
        return stored

    def get_candidate(self, key: str) -> StoredCandidate | None:
        """The stored candidate, or None when it was never stored or its audio is damaged (then
        the row is dropped, the damage noted in :attr:`damaged`, and the caller generates it
        again)."""
        with self._sqlite(), self._lock:
            row = self._db.execute(
                f"SELECT {_CANDIDATE_COLUMNS} FROM candidates WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        stored = StoredCandidate(*row[:7], info=json.loads(row[7]), digest=row[8])
        if stored.audio is None:
            return stored
        path = self.root / stored.audio
        if key in self._checked and path.exists():  # decoded in full once; still there
            return stored
        expected = round(stored.duration_s * stored.sample_rate)
        problem, digest = check_audio(path, expected, stored.digest)
        if problem is not None:
            self.damaged.append(f"candidate {key}: {problem}; generated again")
            self.forget(key)
            return None
        if stored.digest is None:  # a row from before digests: its audio is whole, take it now
            with self._sqlite(), self._lock, self._db:
                self._db.execute("UPDATE candidates SET digest = ? WHERE key = ?", (digest, key))
                self._db.execute(
                    "UPDATE scores SET digest = ? WHERE candidate = ? AND digest IS NULL",
                    (digest, key),
                )
            stored = replace(stored, digest=digest)
        self._checked.add(key)
        return stored

    def check_listed(self, keys: Iterable[str]) -> bool:
        """Whether every candidate in ``keys`` (those a decision lists with their audio) is in
        the store with whole audio; each one that is not is noted in :attr:`damaged`."""
        whole = True
        for key in keys:
            if self.get_candidate(key) is not None:
                continue  # (a damaged file was noted and dropped by get_candidate)
            if not any(line.startswith(f"candidate {key}:") for line in self.damaged):
                self.damaged.append(
                    f"candidate {key}: listed by a decision but not in the store index; "
                    "generated again"
                )
            whole = False
        return whole

    def forget(self, key: str) -> None:
        """Drop a candidate's row and file (damaged: it must be generated again).

        Scores tied to a digest stay: they are given back only to a candidate whose audio has
        that digest again. Scores of a row that never had a digest go with it."""
        with self._sqlite(), self._lock, self._db:
            self._db.execute("DELETE FROM candidates WHERE key = ?", (key,))
            self._db.execute("DELETE FROM scores WHERE candidate = ? AND digest IS NULL", (key,))
        (self.root / "audio" / f"{key}.flac").unlink(missing_ok=True)
        self._checked.discard(key)

    def load_audio(self, stored: StoredCandidate) -> np.ndarray:
        if stored.audio is None:
            raise FileNotFoundError(f"candidate {stored.key} was not kept (winners-only store)")
        try:
            audio, _ = sf.read(self.root / stored.audio, dtype="float32", always_2d=False)
        except (sf.LibsndfileError, RuntimeError, OSError) as error:
            raise UserError(
                f"the stored audio {self.root / stored.audio} became unreadable during the run "
                f"({error}): run the same command again to generate it anew"
            ) from error
        return audio

    def drop_audio(self, keys: Iterable[str]) -> None:
        """Delete the audio of candidates that are not kept (winners-only mode)."""
        keys = list(keys)
        with self._sqlite(), self._lock, self._db:
            for key in keys:
                self._db.execute("UPDATE candidates SET audio = NULL WHERE key = ?", (key,))
        for key in keys:
            (self.root / "audio" / f"{key}.flac").unlink(missing_ok=True)

    # scores -----------------------------------------------------------------------------------
    def put_scores(self, records: Iterable[tuple[str, str, Mapping[str, Any]]]) -> None:
        """Commit (candidate key, context, record) triples in one transaction, each tied to the
        digest of the audio its candidate has now."""
        rows = [(key, context, json.dumps(record), key) for key, context, record in records]
        with self._sqlite(), self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO scores (candidate, context, record, digest) "
                "VALUES (?, ?, ?, (SELECT digest FROM candidates WHERE key = ?))",
                rows,
            )

    def get_scores(self, key: str, context: str) -> dict[str, Any] | None:
        """The scores of candidate ``key`` under ``context``, if they judged the audio it has
        now (the same digest)."""
        with self._sqlite(), self._lock:
            row = self._db.execute(
                "SELECT scores.record FROM scores JOIN candidates "
                "ON candidates.key = scores.candidate AND candidates.digest = scores.digest "
                "WHERE scores.candidate = ? AND scores.context = ?",
                (key, context),
            ).fetchone()
        return None if row is None else json.loads(row[0])

    # decisions --------------------------------------------------------------------------------
    def put_decision(self, decision: Decision) -> None:
        with self._sqlite(), self._lock, self._db:
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
        with self._sqlite(), self._lock:
            row = self._db.execute(
                "SELECT * FROM decisions WHERE utterance = ? AND policy = ?", (utterance, policy)
            ).fetchone()
        if row is None:
            return None
        return Decision(row[0], row[1], int(row[2]), bool(row[3]), json.loads(row[4]))
