"""The review index: what the list of a review needs, kept beside the manifest so a long book opens
at once.

``review/index.sqlite`` holds, for each place in the book, what the list shows, filters and sorts
(:class:`~verified_tts.review.order.Listed` of the verifiers' record: text, chapter, flagged,
doubt, reason, marked word, winner, number of takes), the line it is and its place in the book, and
where its whole record (takes and scores) lies in ``manifest.json``, which is read only when the
line is opened (a manifest laid out otherwise than the project writes it has its records kept in
the index instead), and who says each quote as the attribution found it (a record's ``speaker``
block, for the review's list of uncertain speakers). It also holds the manifest's other fields. The
index is a cache of ``manifest.json`` and nothing else: it records the manifest's size, SHA-256 and
file identity (device, inode, size, modification and change times), and is used only while the
manifest on disk has the same identity, or else the same size and SHA-256 (a folder copied
elsewhere); a manifest changed in any way, by a render, a delivery or a hand, makes it stale, and
the review builds it again. It is written under a temporary name and renamed into place, so a
killed writer leaves no half-written index under its name; one that cannot be read as complete (its
line count short, its tables missing) is built again, never used. ``render``, ``rerender``, ``dub``
and a delivery write it when they write the manifest (:func:`write_index`); a folder from before
the index gets it the first time it is reviewed.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import astuple
from pathlib import Path
from typing import Any, BinaryIO

from verified_tts.errors import UserError
from verified_tts.output.manifest import MANIFEST_FILE, Manifest, UtteranceRecord
from verified_tts.review.decisions import REVIEW_DIR
from verified_tts.review.order import Listed, Ranking
from verified_tts.review.state import LineState, line_id, plain, where
from verified_tts.storage.atomic import atomic_path, remove_interrupted_writes

__all__ = ["INDEX_FILE", "INDEX_FORMAT", "ReviewIndex", "build_index", "open_index",
           "records_of", "write_index"]  # fmt: skip

INDEX_FILE = f"{REVIEW_DIR}/index.sqlite"
INDEX_FORMAT = 3  # raised whenever what the index holds, or how it is computed, changes
_MARKED = tuple(Listed.__dataclass_fields__).index("marked")  # a pair, kept as a JSON list

_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE lines (pos INTEGER PRIMARY KEY, start INTEGER, length INTEGER, record BLOB);
"""
_UTTERANCES = b'\n  "utterances": ['
_OPEN, _CLOSE = b"\n    {", b"\n    }"


def _spans(data: bytes, keys: Sequence[str]) -> list[tuple[int, int]] | None:
    """Where each utterance's JSON lies in ``data``, a manifest as ``write_json_atomic`` writes
    it (two-space indent: an utterance opens and closes on a line of its own, and no string
    holds a newline), checked against ``keys``; None for any other layout."""
    at = data.find(_UTTERANCES)
    if at < 0:
        return None
    at += len(_UTTERANCES)
    if not keys:
        return [] if data[at : at + 1] == b"]" else None
    spans = []
    for key in keys:
        if not data.startswith(_OPEN, at):
            return None
        end = data.find(_CLOSE, at)
        if end < 0:
            return None
        start, end = at + 1, end + len(_CLOSE)
        first = b'    {\n      "key": ' + json.dumps(key, ensure_ascii=False).encode("utf-8")
        if not data.startswith(first, start):
            return None
        spans.append((start, end - start))
        at = end + 1 if data[end : end + 1] == b"," else end
    return spans if data.startswith(b"\n  ]", at) else None


@contextmanager
def _no_collection() -> Iterator[None]:
    """A whole manifest is millions of small objects that live until the index is written: the
    collector would scan them again and again for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ReviewIndex:
    """An open index (see the module docstring): the list figures in memory, records on demand.
    It holds open the manifest it was checked against, so a record is read from those bytes even
    after a delivery has put a new manifest in its place."""

    def __init__(
        self,
        db: sqlite3.Connection,
        manifest: BinaryIO,
        head: Manifest,
        keys: list[str],
        places: list[list[Any]],
        listed: list[Listed],
        speakers: dict[int, dict[str, Any]] | None = None,
    ) -> None:
        self._db = db
        self._manifest = manifest
        self._lock = threading.Lock()
        self.head = head  # the manifest without its utterances
        self.keys = keys
        self.places = places
        self.listed = listed
        self.ids = [row.line for row in listed]
        self.flags = [row.flagged for row in listed]
        self.speakers = speakers or {}  # position -> the record's speaker block (quotes only)

    def __len__(self) -> int:
        return len(self.listed)

    def record(self, position: int) -> UtteranceRecord:
        """The manifest's record at ``position``."""
        with self._lock:
            row = self._db.execute(
                "SELECT start, length, record FROM lines WHERE pos = ?", (position,)
            ).fetchone()
            if row is None:
                raise IndexError(position)
            start, length, stored = row
            if stored is not None:
                data = json.loads(zlib.decompress(stored))
            else:
                data = json.loads(os.pread(self._manifest.fileno(), length, start))
        if data.get("key") != self.keys[position]:  # cannot be, short of a damaged disk
            raise UserError(
                f"the review index of {self._manifest.name} does not match it at line "
                f"{position}: delete {INDEX_FILE} in the output folder and open the review again"
            )
        return UtteranceRecord.from_json(data)

    def close(self) -> None:
        with self._lock:
            self._db.close()
            self._manifest.close()


def _listed(ranking: Ranking, record: UtteranceRecord) -> Listed:
    return ranking.listed(LineState(line_id(record), plain(record)))


def _identity(stat: os.stat_result) -> list[int]:
    """What changes whenever the file's bytes may have: any write sets its change time (which no
    tool can set back) and an atomic replace gives a new inode."""
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def _write(path: Path, manifest: Manifest, data: bytes, stat: os.stat_result) -> None:
    """The index of ``manifest``, whose JSON on disk is ``data`` (the file's ``stat``)."""
    head = manifest.to_json()
    head.pop("utterances")
    ranking = Ranking(manifest.selection.get("gates", ()))
    spans = _spans(data, [u.key for u in manifest.utterances])
    # the writer holds the folder's lock: an index's temporary file here is a killed writer's
    remove_interrupted_writes([path.parent], older_than=time.time())
    with atomic_path(path) as temporary:
        temporary.unlink()  # sqlite makes its own file; a leftover empty one is no database
        db = sqlite3.connect(temporary)
        try:
            db.executescript(_SCHEMA)
            listing, rows, speakers = [], [], []
            first: dict[str, Listed] = {}  # a repeated sentence is listed as its first place
            for position, record in enumerate(manifest.utterances):
                ident = line_id(record)
                if ident not in first:
                    first[ident] = _listed(ranking, record)
                listing.append([record.key, where(record), *astuple(first[ident])])
                if record.speaker:
                    speakers.append([position, dict(record.speaker)])
                if spans is not None:
                    rows.append((position, *spans[position], None))
                else:  # a manifest laid out by other hands: its records are kept here
                    text = json.dumps(record.to_json(), ensure_ascii=False)
                    rows.append((position, None, None, zlib.compress(text.encode("utf-8"), 1)))
            db.executemany("INSERT INTO lines VALUES (?, ?, ?, ?)", rows)
            # one JSON array for the whole list: read back in one parse, not one a line
            meta = {"format": INDEX_FORMAT, "size": len(data), "identity": _identity(stat),
                    "sha256": hashlib.sha256(data).hexdigest(), "lines": len(rows),
                    "head": head, "listing": listing, "speakers": speakers}  # fmt: skip
            db.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [(k, json.dumps(v, ensure_ascii=False)) for k, v in meta.items()],
            )
            db.commit()
        finally:
            db.close()


def write_index(out_dir: str | Path, manifest: Manifest) -> None:
    """Index ``manifest``, just written as the folder's ``manifest.json`` by this process."""
    data, stat = _read_manifest(Path(out_dir))
    _write(Path(out_dir) / INDEX_FILE, manifest, data, stat)


def build_index(out_dir: str | Path) -> None:
    """Index the folder's ``manifest.json`` as it is on disk (read and parsed once)."""
    data, stat = _read_manifest(Path(out_dir))
    with _no_collection():
        _write(Path(out_dir) / INDEX_FILE, Manifest.from_json(json.loads(data)), data, stat)


def _read_manifest(out: Path) -> tuple[bytes, os.stat_result]:
    with open(out / MANIFEST_FILE, "rb") as handle:
        stat = os.fstat(handle.fileno())
        data = handle.read()
    if len(data) != stat.st_size:
        raise UserError(f"{out / MANIFEST_FILE} changed while it was read: open the review again")
    return data, stat


def _read(path: Path, manifest_path: Path) -> ReviewIndex | None:
    """The index at ``path`` if it is complete and of the manifest as it is now, else None."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    except sqlite3.Error:
        return None
    try:
        manifest = open(manifest_path, "rb")  # noqa: SIM115 (the index keeps it open)
    except OSError:
        db.close()
        return None
    try:
        meta = dict(db.execute("SELECT name, value FROM meta"))
        if json.loads(meta.get("format", "null")) != INDEX_FORMAT:
            raise ValueError("another format")
        stat = os.fstat(manifest.fileno())
        if json.loads(meta["size"]) != stat.st_size:
            raise ValueError("of another manifest")
        same = json.loads(meta["identity"]) == _identity(stat)  # else written since, or copied
        digest = json.loads(meta["sha256"])
        if not same and digest != hashlib.file_digest(manifest, "sha256").hexdigest():
            raise ValueError("of another manifest")
        count = json.loads(meta["lines"])
        (stored,) = db.execute("SELECT count(*) FROM lines").fetchone()
        listing = json.loads(meta["listing"])
        if not (count == stored == len(listing)):
            raise ValueError("incomplete")
        keys, places, listed = [], [], []
        for key, place, *fields in listing:
            keys.append(key)
            places.append(place)
            marked = tuple(fields[_MARKED]) if fields[_MARKED] else None
            listed.append(Listed(*fields[:_MARKED], marked, *fields[_MARKED + 1 :]))
        head = Manifest.from_json({**json.loads(meta["head"]), "utterances": []})
        speakers = {int(p): dict(block) for p, block in json.loads(meta["speakers"])}
    except (sqlite3.Error, OSError, ValueError, TypeError, KeyError):
        db.close()
        manifest.close()
        return None
    return ReviewIndex(db, manifest, head, keys, places, listed, speakers)


def open_index(
    out_dir: str | Path, *, build: bool = True, on_build: Callable[[], None] | None = None
) -> ReviewIndex | None:
    """The folder's index when it is of the manifest now on disk; else (with ``build``) built
    afresh first, after calling ``on_build`` (None only without ``build``)."""
    out = Path(out_dir)
    path, manifest = out / INDEX_FILE, out / MANIFEST_FILE
    found = _read(path, manifest) if path.is_file() else None
    if found is not None or not build:
        return found
    if on_build is not None:
        on_build()
    build_index(out)
    found = _read(path, manifest)
    if found is None:
        raise UserError(
            f"the review index {path} was written but cannot be read back: check the disk "
            "holding the output folder"
        )
    return found


def records_of(index: ReviewIndex) -> Sequence[UtteranceRecord]:
    """The manifest's records, each read from ``index`` when first asked for."""
    return _Records(index)


class _Records(Sequence[UtteranceRecord]):
    """The manifest's records, each read from the index the first time it is asked for."""

    def __init__(self, index: ReviewIndex) -> None:
        self._index = index
        self._cache: dict[int, UtteranceRecord] = {}

    def __len__(self) -> int:
        return len(self._index)

    def __getitem__(self, position: Any) -> Any:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self)
        found = self._cache.get(position)
        if found is None:
            found = self._cache[position] = self._index.record(position)
        return found
