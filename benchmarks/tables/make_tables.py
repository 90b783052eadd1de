"""Regenerate (or check) every generated block of README.md, docs/*.md and docs/research/*.md.

Tables of measured figures and figures inside sentences are rendered from
benchmarks/results/*.json (the ``tables_*.py`` modules); the configuration reference in
docs/configuration.md from the options types (options_reference.py). Run it after a benchmark
writes a result file or an option changes, and commit what it rewrites:

    python -m benchmarks.tables.make_tables            # rewrite the blocks in place
    python -m benchmarks.tables.make_tables --check    # exit 1 and list what differs (tests do
    this)

``--check`` also runs the provenance checks: every number a generated block shows outside its
label columns is a value of its result files, and every decimal figure or percentage written in
a paragraph that cites a result file is a value of that file; and no document cites a file
under benchmarks/results/archive/.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from benchmarks.tables.doc_blocks import (
    ROOT,
    Generated,
    blocks,
    data_text,
    file_numbers,
    fill,
    numbers_in,
)
from benchmarks.tables.options_reference import option_rows, reference_markdown
from benchmarks.tables.tables_calibration import BLOCKS as CALIBRATION
from benchmarks.tables.tables_casting import BLOCKS as CASTING
from benchmarks.tables.tables_dubbing import BLOCKS as DUBBING
from benchmarks.tables.tables_judged import BLOCKS as JUDGED
from benchmarks.tables.tables_judged_prose import BLOCKS as JUDGED_PROSE
from benchmarks.tables.tables_pronounce import BLOCKS as PRONOUNCE
from benchmarks.tables.tables_readalong import BLOCKS as READALONG
from benchmarks.tables.tables_real_books import BLOCKS as REAL_BOOKS
from benchmarks.tables.tables_review import BLOCKS as REVIEW
from benchmarks.tables.tables_selection import BLOCKS as SELECTION
from benchmarks.tables.tables_service import BLOCKS as SERVICE
from benchmarks.tables.tables_systems import BLOCKS as SYSTEMS

__all__ = ["REGISTRY", "check", "documents", "regenerate"]

CONFIG_REFERENCE = "config-reference"
REGISTRY: Mapping[str, Generated] = {
    **SELECTION,
    **CALIBRATION,
    **CASTING,
    **DUBBING,
    **JUDGED,
    **JUDGED_PROSE,
    **SYSTEMS,
    **SERVICE,
    **READALONG,
    **REAL_BOOKS,
    **REVIEW,
    **PRONOUNCE,
    CONFIG_REFERENCE: Generated((), lambda: reference_markdown(option_rows()), labels=0),
}


def documents() -> list[Path]:
    """README.md, every docs/*.md and the investigations in docs/research/*.md."""
    docs = ROOT / "docs"
    return [ROOT / "README.md", *sorted(docs.glob("*.md")), *sorted(docs.glob("research/*.md"))]


def _render(kind: str, name: str) -> str:
    if name not in REGISTRY:
        raise KeyError(f"no generated block named {name!r} (benchmarks/tables/make_tables.py)")
    return REGISTRY[name].render()


def regenerate(text: str) -> str:
    return fill(text, _render)


# --- provenance of figures in prose -----------------------------------------------------------

_CITED = re.compile(r"(?:benchmarks/results/)?([\w.-]+?)\.json")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE = re.compile(r"`[^`]*`")
_FIGURE_OR_TABLE = re.compile(r"<!-- (table|figure): [\w.-]+ -->.*?<!-- /\1 -->", re.S)
# a percentage first: "2.8 %" is 2.8 of a hundred, not the decimal 2.8
_PROSE_FIGURE = re.compile(r"(?<![\w.])-?(\d+(?:\.\d+)?\s?%|\d+\.\d+(?![A-WYZa-wyz_\d]|\.\d))")
_METHOD = re.compile(r"95% (?:bootstrap )?interval|bootstrap 95%")  # how, not what, was measured


def _paragraphs(text: str) -> Iterator[str]:
    text = _FENCE.sub("", text)
    for paragraph in re.split(r"\n\s*\n", text):
        if not paragraph.lstrip().startswith("|"):  # hand-written tables are not prose
            yield paragraph


def prose_problems(path: Path, text: str) -> list[str]:
    """Decimal figures and percentages in paragraphs that cite a result file, not in the file."""
    results = ROOT / "benchmarks" / "results"
    problems = []
    for paragraph in _paragraphs(text):
        stems = [s for s in _CITED.findall(paragraph) if (results / f"{s}.json").is_file()]
        if not stems:
            continue
        known = file_numbers(stems)
        plain = _METHOD.sub("", _CODE.sub("", _FIGURE_OR_TABLE.sub("", paragraph)))
        plain = plain.replace("..", " .. ")
        for match in _PROSE_FIGURE.finditer(plain):
            written = match.group(1)
            percent = written.endswith("%")
            if not known(written.rstrip("% "), percent):
                where = path.relative_to(ROOT)
                problems.append(f"{where}: {written!r} is not in {', '.join(stems)}.json")
    return problems


def block_problems(path: Path, text: str) -> list[str]:
    """Unknown names, stale bodies and numbers not in the block's result files."""
    problems = []
    where = path.relative_to(ROOT)
    for block in blocks(text):
        spec = REGISTRY.get(block.name)
        if spec is None:
            problems.append(f"{where}: no generated block named {block.name!r}")
            continue
        body = block.body.strip("\n") if block.kind == "table" else block.body
        if body != spec.render():
            problems.append(f"{where}: block {block.name!r} differs from its result files")
        if not spec.sources:
            continue
        known = file_numbers(spec.sources)
        for written, percent in numbers_in(data_text(body, spec.labels)):
            if not known(written, percent):
                problems.append(
                    f"{where}: {block.name!r} shows {written}{'%' if percent else ''}, "
                    f"which is not in {', '.join(spec.sources)}"
                )
    return problems


def archive_problems(path: Path, text: str) -> list[str]:
    """Result files under benchmarks/results/archive/ (steps of finished work) cited as current."""
    archive = ROOT / "benchmarks" / "results" / "archive"
    where = path.relative_to(ROOT)
    cited = set(_CITED.findall(text))
    return [
        f"{where}: cites {old.name}, which is archived (cite a current result file)"
        for old in sorted(archive.glob("*.json"))
        if old.stem in cited
    ] + ([f"{where}: cites benchmarks/results/archive/"] if "results/archive/" in text else [])


def check(paths: list[Path] | None = None) -> list[str]:
    """Every problem of the generated blocks and cited figures, as lines to print."""
    problems = []
    used = set()
    for path in paths or documents():
        text = path.read_text(encoding="utf-8")
        used |= {block.name for block in blocks(text)}
        problems += block_problems(path, text) + prose_problems(path, text)
        problems += archive_problems(path, text)
    if paths is None:
        problems += [
            f"block {name!r} is used in no document" for name in REGISTRY if name not in used
        ]
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; list differences")
    args = parser.parse_args()
    if args.check:
        problems = check()
        print("\n".join(problems) or "every generated block matches its files")
        sys.exit(1 if problems else 0)
    for path in documents():
        text = path.read_text(encoding="utf-8")
        new = regenerate(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
