"""The Harvard sentences every benchmark reads: the copy the package ships, so a clone reproduces.

The 720 IEEE sentences (1969, public domain) are package data of ``verified_tts.calibration``
(``verified-tts calibrate`` reads them too); the benchmarks take them from there rather than from a
folder outside the repository. Each imports this module as ``benchmarks.common.harvard``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["HARVARD", "harvard_book", "sentences"]

HARVARD = Path(str(files("verified_tts.calibration").joinpath("data/harvard-sentences.txt")))


def sentences(first: int = 0, count: int | None = None) -> list[str]:
    """Sentences ``first`` .. ``first + count - 1`` (0-based) of the list, stripped."""
    lines = [line.strip() for line in HARVARD.read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line]
    return lines[first : None if count is None else first + count]


def harvard_book(path: Path, count: int, *, first: int = 0, heading: str | None = None) -> Path:
    """A Markdown book of ``count`` sentences from ``first``, one per paragraph, and an optional
    ``# heading`` (one chapter either way)."""
    text = "\n\n".join(sentences(first, count)) + "\n"
    if heading:
        text = f"# {heading}\n\n{text}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
