"""Generated blocks in the Markdown docs: where they sit, how they are filled, what they may show.

A table in README.md or docs/*.md that shows measured figures sits between
``<!-- table: NAME -->`` and ``<!-- /table -->``; a figure inside a sentence between
``<!-- figure: NAME -->`` and ``<!-- /figure -->``. Each NAME is a :class:`Generated`: the result
files it reads (``benchmarks/results/STEM.json``) and a function that renders it from them, so a
figure is written by code from its file and never by hand. This module holds that machinery and
the formatting helpers; the blocks themselves are in ``tables_*.py`` and ``make_tables.py``
rewrites or checks the docs.

:func:`numbers_in` and :func:`file_numbers` are the provenance check: every number a block shows
outside its label columns must be a value of its files as shown (at the same decimals, or times
100 before a ``%``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "BLOCK",
    "Block",
    "Generated",
    "RESULTS",
    "ROOT",
    "better_worse",
    "blocks",
    "ci",
    "data_text",
    "file_numbers",
    "fill",
    "gain",
    "md_table",
    "num",
    "numbers_in",
    "pct",
    "result",
]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
BLOCK = re.compile(r"<!-- (table|figure): ([\w.-]+) -->(.*?)<!-- /\1 -->", re.S)


@dataclass(frozen=True)
class Generated:
    """A block: the result files it reads (stems) and how it is rendered from them.

    ``labels``: how many leading columns of a table are labels written in code (what a row is),
    left out of the provenance check; a figure has none.
    """

    sources: tuple[str, ...]
    render: Callable[[], str]
    labels: int = 1


@dataclass(frozen=True)
class Block:
    kind: str  # "table" or "figure"
    name: str
    body: str
    start: int
    end: int


def blocks(text: str) -> Iterator[Block]:
    for match in BLOCK.finditer(text):
        kind, name, body = match.groups()
        yield Block(kind, name, body, match.start(), match.end())


def fill(text: str, render: Callable[[str, str], str]) -> str:
    """``text`` with every block's body replaced by ``render(kind, name)``."""

    def replace(match: re.Match) -> str:
        kind, name, _ = match.groups()
        body = render(kind, name)
        inner = f"\n{body}\n" if kind == "table" else body
        return f"<!-- {kind}: {name} -->{inner}<!-- /{kind} -->"

    return BLOCK.sub(replace, text)


@cache
def _load(stem: str) -> Any:
    path = RESULTS / f"{stem}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def result(stem: str) -> Any:
    """The parsed ``benchmarks/results/STEM.json`` (read once)."""
    return _load(stem)


# --- formatting -----------------------------------------------------------------------------


def num(value: float, decimals: int = 3) -> str:
    return f"{value:.{decimals}f}"


def pct(share: float, decimals: int = 0) -> str:
    return f"{share * 100:.{decimals}f}%"


def ci(pair: Sequence[float], decimals: int = 3) -> str:
    return f"{pair[0]:.{decimals}f}..{pair[1]:.{decimals}f}"


def gain(paired: dict, decimals: int = 3, key: str = "mean_gain") -> str:
    """A paired gain as "mean (low..high)"."""
    return f"{paired[key]:.{decimals}f} ({ci(paired['ci95'], decimals)})"


def better_worse(paired: dict) -> str:
    """A paired gain's counts of sentences each way, "better / worse"."""
    return f"{paired['better']} / {paired['worse']}"


def md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# --- provenance -----------------------------------------------------------------------------

# a number, not part of a name ("Llama-3.2", "0.5B"); "1.4x" is a ratio and counts
_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:,\d{3})*(?:\.\d+)?)(?![A-WYZa-wyz_\d]|\.\d)(\s?%)?")


def numbers_in(text: str) -> list[tuple[str, bool]]:
    """(number as written, followed by %) for every number in ``text``."""
    text = text.replace("..", " .. ")  # an interval "0.001..0.032" is two numbers
    return [(m.group(1), bool(m.group(2))) for m in _NUMBER.finditer(text)]


def _leaves(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str):  # numbers inside a file's own text (notes, settings)
        for written, percent in numbers_in(value):
            number = float(written.replace(",", ""))
            yield number / 100 if percent else number


@cache
def _file_values(stem: str) -> tuple[float, ...]:
    return tuple(sorted({abs(v) for v in _leaves(result(stem))}))


def file_numbers(stems: Iterable[str]) -> Callable[[str, bool], bool]:
    """A test of one written number: is it a value of these files, as written?"""
    values = [v for stem in stems for v in _file_values(stem)]

    def known(written: str, percent: bool) -> bool:
        token = written.lstrip("-").replace(",", "")
        decimals = len(token.partition(".")[2])
        scale = 100.0 if percent else 1.0
        return any(f"{v * scale:.{decimals}f}" == token for v in values)

    return known


def data_text(body: str, labels: int) -> str:
    """The part of a block the provenance check reads: a table less its header row and its first
    ``labels`` columns; a figure whole."""
    lines = [line for line in body.strip().splitlines() if line.strip()]
    if not lines or not lines[0].startswith("|"):
        return body
    kept = []
    for line in lines[2:]:  # header and rule
        if not line.startswith("|"):
            continue
        cells = line.strip().strip("|").split(" | ")
        kept.append(" | ".join(cells[labels:]))
    return "\n".join(kept)
