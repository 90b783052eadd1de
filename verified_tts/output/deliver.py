"""Deliverables after assembly: M4B parts and ACX MP3 files from the mastered chapters, checked.

:func:`deliver` encodes what ``[production] formats`` asks for from the chapter masters that
assembly wrote (FLAC, one per chapter): ``book.m4b`` (or ``book-partN.m4b`` with ``split_hours``)
with chapter marks, tags and cover, and ``mp3/NN-title.mp3``, one per chapter. It then runs the
ACX check on the files a producer uploads (the MP3s when made, else the chapter masters) and
returns everything as plain data for ``manifest.json``, ``acx.json`` and ``report.html``. Given
the book (:class:`~verified_tts.output.readalong.ReadAlongInput`) it also writes the read-along
files, chapter by chapter as the chapters were assembled: ``timings.json`` always, captions for
``srt``/``vtt`` and ``book.epub`` for ``epub3`` (:mod:`verified_tts.output.readalong`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from verified_tts.cores import usable_cores
from verified_tts.options import ProductionOptions
from verified_tts.output.acx import AcxLimits, check, measure
from verified_tts.output.assembly import AssembledFile
from verified_tts.output.encode import BookTags, ChapterSource, split_parts, write_m4b, write_mp3
from verified_tts.output.readalong import ReadAlongInput, deliver_read_along

__all__ = ["deliver"]


def deliver(
    files: Sequence[AssembledFile],
    out_dir: Path,
    options: ProductionOptions,
    tags: BookTags,
    read_along: ReadAlongInput | None = None,
    *,
    unchanged: Collection[int] = (),
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the M4B/MP3 (and, with ``read_along``, the read-along) deliverables and check
    them; returns the manifest's ``delivery``.

    ``unchanged`` chapters (indices) whose files are as ``previous`` (the last delivery) made
    them keep their MP3 and its ACX figures from there instead of being encoded and measured
    again (a review's delivery after a few changed lines)."""
    chapters = [f for f in files if f.index is not None and f.flac]
    m4b: list[dict[str, Any]] = []
    mp3: list[dict[str, Any]] = []
    if "m4b" in options.formats and chapters:
        parts = split_parts([f.duration_s for f in chapters], options.split_hours)
        for number, indices in enumerate(parts, 1):
            name = "book.m4b" if len(parts) == 1 else f"book-part{number}.m4b"
            marks = write_m4b(
                out_dir / name,
                [
                    ChapterSource(chapters[i].title, out_dir / str(chapters[i].flac))
                    for i in indices
                ],
                tags,
                part=f"Part {number}" if len(parts) > 1 else None,
            )
            seconds = round(sum(chapters[i].duration_s for i in indices), 3)
            m4b.append({"path": name, "duration_s": seconds, "chapters": marks})
    measured = {f["path"]: f for f in (previous or {}).get("acx", {}).get("files", [])}
    kept: set[str] = set()
    if "mp3" in options.formats:
        for track, chapter in enumerate(chapters, 1):
            name = f"mp3/{Path(str(chapter.flac)).stem}.mp3"
            if chapter.index in unchanged and name in measured and (out_dir / name).is_file():
                kept.add(name)
            else:
                write_mp3(out_dir / name, out_dir / str(chapter.flac), tags,
                          title=chapter.title, track=track)  # fmt: skip
            mp3.append({"index": chapter.index, "title": chapter.title, "path": name})
    checked = [m["path"] for m in mp3] or [str(f.flac) for f in chapters]
    if not mp3:
        kept = {str(f.flac) for f in chapters if f.index in unchanged} & set(measured)

    def figures(path: str) -> dict[str, Any]:
        if path in kept:
            return measured[path]
        return {**check(measure(out_dir / path)).as_dict(), "path": path}

    # one file per core at a time: decoding and the loudness filters release the GIL
    with ThreadPoolExecutor(usable_cores(), thread_name_prefix="acx") as pool:
        results = list(pool.map(figures, checked))
    acx = {
        "limits": asdict(AcxLimits()),
        "passed": all(r["passed"] for r in results),
        "files": results,
    }
    delivery: dict[str, Any] = {"m4b": m4b, "mp3": mp3, "acx": acx}
    if read_along is not None:
        delivery["read_along"] = deliver_read_along(files, out_dir, options, tags, read_along)
    return delivery
