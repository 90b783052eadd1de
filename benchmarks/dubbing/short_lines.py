"""Short dialogue lines from the real-prose books, as subtitles: the dub benchmark's second input.

Dialogue in a film is short ("Is it?", "Scales!", "So...", "All right,"), and the books in
/work/shared/data/books carry thousands of such lines between quotation marks. This helper takes
every quoted line of ``--min-words`` to ``--max-words`` words that starts with a capital letter
from either half of the books (the team's split: for each book the last floor(n/2) chapters are
held out from tuning, i.e. katrine.txt XV-XXVIII, log-school-house.txt X-XVIII,
little-colonels-hero.txt IX-XVI; the first half is the development set), drops repeats, keeps
``--lines`` of them spread evenly over the books (a fixed stride, no randomness), and writes them
as an SRT whose cue lengths follow a subtitle reading rate (``--chars-per-s`` characters a
second, at least ``--min-s``), one gap of ``--gap-s`` between cues. Chapters are found by their
headings (``CHAPTER IX.`` or a bare roman numeral on its own line); a book ends at ``THE END``,
``HISTORICAL NOTES.`` or Project Gutenberg's closing line. ``--longer N`` adds N lines of 6 to 14
words, one after every few short ones, for a calibration set shaped like a whole film's cues.

Usage: python -m benchmarks.dubbing.short_lines --split held-out  (or development; --out FILE.srt)
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOOKS = Path("/work/shared/data/books")
BOOK_FILES = ("katrine.txt", "log-school-house.txt", "little-colonels-hero.txt")
SPLITS = ("held-out", "development")

_HEADING = re.compile(r"^(?:CHAPTER [IVXLC]+\.?|[IVXLC]+)\s*$")
_END = re.compile(r"^(?:THE END\.?|HISTORICAL NOTES\.|End of (?:the )?Project Gutenberg)")
_QUOTE = re.compile(r'"([^"]+)"')


def chapters(path: Path) -> list[str]:
    """The chapters of a Gutenberg text, each as its lines after the heading."""
    lines = path.read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if _HEADING.match(line)]
    if not starts:
        raise ValueError(f"{path}: no chapter headings found")
    end = next((i for i in range(starts[-1], len(lines)) if _END.match(lines[i])), len(lines))
    bounds = [*starts, end]
    return ["\n".join(lines[a + 1 : b]) for a, b in zip(bounds, bounds[1:], strict=False)]


def split_chapters(path: Path, split: str) -> list[str]:
    """The held-out half (the last floor(n/2) chapters) or the development half of a book."""
    found = chapters(path)
    held = len(found) // 2
    return found[len(found) - held :] if split == "held-out" else found[: len(found) - held]


def quoted_lines(text: str, max_words: int, min_words: int = 1) -> list[str]:
    """Quoted lines of ``min_words`` to ``max_words`` words that start with a capital letter."""
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        joined = " ".join(line.strip() for line in paragraph.splitlines()).replace("_", "")
        for match in _QUOTE.finditer(joined):
            line = " ".join(match.group(1).split())
            words = line.split()
            fits = min_words <= len(words) <= max_words
            if fits and line[0].isupper() and re.search(r"[a-z]", line):
                out.append(line)
    return out


def collect(split: str, lines: int, max_words: int, min_words: int = 1) -> list[tuple[str, str]]:
    """(book, line) pairs: the unique lines of the split, ``lines`` of them at a stride."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name in BOOK_FILES:
        for chapter in split_chapters(BOOKS / name, split):
            for line in quoted_lines(chapter, max_words, min_words):
                if line.lower() not in seen:
                    seen.add(line.lower())
                    found.append((name, line))
    if len(found) < lines:
        raise ValueError(f"only {len(found)} short lines in the {split} chapters")
    stride = len(found) / lines
    return [found[int(k * stride)] for k in range(lines)]


def write_srt(
    lines: list[tuple[str, str]], out: Path, chars_per_s: float, min_s: float, gap_s: float
) -> None:
    import srt

    cues, start = [], 1.0
    for number, (_book, line) in enumerate(lines, 1):
        seconds = max(min_s, len(line) / chars_per_s)
        cues.append(
            srt.Subtitle(
                number,
                timedelta(seconds=round(start, 3)),
                timedelta(seconds=round(start + seconds, 3)),
                line,
            )
        )
        start += seconds + gap_s
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(srt.compose(cues, reindex=False), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=SPLITS, default="held-out")
    parser.add_argument("--lines", type=int, default=120)
    parser.add_argument("--min-words", type=int, default=1)
    parser.add_argument("--max-words", type=int, default=5)
    parser.add_argument("--chars-per-s", type=float, default=15.0)
    parser.add_argument("--min-s", type=float, default=1.0)
    parser.add_argument("--gap-s", type=float, default=1.5)
    parser.add_argument("--longer", type=int, default=0, help="also this many lines of 6-14 words")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    name = f"short_lines_{args.split.replace('-', '_')}.srt"
    out = args.out or ROOT / "benchmarks" / "data" / name
    lines = collect(args.split, args.lines, args.max_words, args.min_words)
    if args.longer:
        longer = collect(args.split, args.longer, 14, 6)
        every = max(1, len(lines) // len(longer))
        mixed = []
        for position, line in enumerate(lines):
            mixed.append(line)
            if (position + 1) % every == 0 and longer:
                mixed.append(longer.pop(0))
        lines = mixed + longer
    write_srt(lines, out, args.chars_per_s, args.min_s, args.gap_s)
    print(f"wrote {len(lines)} lines to {out}")


if __name__ == "__main__":
    main()
