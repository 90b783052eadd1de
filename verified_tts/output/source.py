"""Where a render's book is: recorded when the manifest is written, found again when it is read.

A render may be started from any working directory with a relative path (``examples/book.md``),
and a review, a delivery or a rerender may run from another one, or after the project folder was
moved. So the manifest keeps, beside ``input`` (the path as it was given), a ``source`` block: the
book's absolute path, its path relative to the output folder, and the SHA-256 of its bytes
(:func:`book_source`). :func:`find_book` looks for it at each of those places (the absolute path,
then relative to the output folder, then ``input`` as given, from the working directory and from
the output folder) and takes the first whose bytes are the ones recorded; where none is, but a
file is there, that one is taken (the caller's line check then says how it changed). Where
nothing is found, the one-line error names every place it looked and how to fix it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError

__all__ = ["book_source", "check_same_input", "find_book"]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def book_source(path: str | os.PathLike[str], out: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest's ``source`` block for the book at ``path`` rendered into ``out``."""
    book = Path(path).resolve()
    return {
        "path": str(book),
        "from_out": os.path.relpath(book, Path(out).resolve()),
        "sha256": _sha256(book),
    }


def find_book(
    given: str | None,
    source: Mapping[str, Any] | None,
    out: str | os.PathLike[str],
    *,
    to: str = "deliver",
) -> Path:
    """The book a manifest names (``input`` as ``given``, and its ``source`` block), for the
    output folder ``out``; see the module docstring. ``to`` says what needs it."""
    out = Path(out).resolve()
    source = source or {}
    places: list[Path] = []
    if source.get("path"):
        places.append(Path(str(source["path"])))
    if source.get("from_out"):
        places.append(out / str(source["from_out"]))
    if given:
        places.extend([Path(given).absolute(), out / given])
    places = list(dict.fromkeys(p.resolve() for p in places))
    found = [p for p in places if p.is_file()]
    wanted = source.get("sha256")
    for path in found:
        if not wanted or _sha256(path) == wanted:
            return path
    if found:
        return found[0]
    looked = ", ".join(str(p) for p in places) or "nowhere (the manifest names no book)"
    kept = " (the review's decisions are kept)" if to == "deliver" else ""
    raise UserError(
        f"the book {given} that this render read is gone (looked at {looked}): put it back at "
        f"one of those paths to {to}{kept}"
    )


def check_same_input(out: str | os.PathLike[str], path: str | os.PathLike[str], kind: str) -> None:
    """Refuse to write a render (``kind`` "render") or a dub ("dub") of ``path`` into a folder that
    holds another's: its chapters, report and store would be mixed with this one's. The same book
    edited, moved or renamed (its path or its bytes as recorded) is the same input, and resumes."""
    manifest_path = Path(out) / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no finished run here, or a damaged manifest: `doctor` deals with that
    if not isinstance(manifest, dict) or not manifest.get("input"):
        return
    held = "dub" if manifest.get("dub") else "render"
    name = Path(str(manifest["input"])).name
    book = Path(path)
    source = manifest.get("source") or {}
    same = held == kind and (
        name == book.name
        or source.get("path") == str(book.resolve())
        or (source.get("sha256") and book.is_file() and _sha256(book) == source["sha256"])
    )
    if not same:
        raise UserError(
            f"{out} holds a {held} of {name}: give another --out for this {kind} of {book.name} "
            "(a folder holds one render or dub; its files would be mixed)"
        )
