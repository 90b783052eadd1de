"""Judged real prose: what the winners gain over candidate 0 to the judge's ear, and the ceiling.

Renders a real-prose sample as the ``.txt`` book a user would give, with a given config (a TOML of
options, as ``verified-tts render --config`` takes; none: today's defaults, Piper joe-medium, N=8
adaptive), and has the judge (Whisper base, ``bundled:base``, never used for selection) transcribe
candidate 0, the verifier's winner and every take the render made, so the oracle (the take the
judge hears best among a line's takes) stands beside them. ``--pool 8`` also makes every line's
first 8 takes (:func:`benchmarks.common.judged_render.fill_pool`) and judges them: the oracle at
N=8, the ceiling of the candidates whatever the stop rule spends. Reports the judge WER of the
three with paired bootstrap 95 % intervals (absolute and relative to candidate 0), the flag rate
and the flagged winners' judge WER against the rest's, the takes a line and the lines whose take
changed, DNSMOS P.835 overall of the winners against candidate 0 (paired), and the real-time
factor (benchmarks/common/judged_render.py). Every step resumes: run the same command again after
a kill and only what is missing is rendered, judged or scored.

Samples: ``held_out_k`` (benchmarks/real_prose/held_out_k.py: 1,180 held-out lines no sample had
read, fixed before they were rendered) or ``dev`` (the development chapters of the three books,
``--per-chapter`` utterances of three chapters each; tune on these only).

Usage: python -m benchmarks.selection.judged_prose [--sample held_out_k|dev] [--per-chapter N]
       [--config TOML] [--pool N] [--no-dnsmos] [--chunks C] [--first-chunks K] [--work DIR]
       --output JSON (``--first-chunks K``: only the first K of the C chunks, e.g. a sample's
       first lines)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from benchmarks.common.judged_render import (
    add_timings,
    chapter_chunks,
    dnsmos_takes,
    fill_pool,
    judge_takes,
    render_sample,
    summarise,
    take_key,
)

ROOT = Path(__file__).resolve().parents[2]


def write_book(sample: str, per_chapter: int, path: Path) -> dict[str, Any]:
    """Write the sample as a ``.txt`` book; returns how it was drawn."""
    if sample == "held_out_k":
        from benchmarks.real_prose.held_out_k import chapters_listed, write_held_out_k

        samples = write_held_out_k(path)
        rule = "benchmarks/real_prose/held_out_k.py (fixed before its lines were rendered)"
    else:
        from benchmarks.real_prose.held_out_k import chapters_listed
        from benchmarks.real_prose.real_prose import write_sample

        samples = write_sample(path, "dev", per_chapter=per_chapter)
        rule = (f"the first {per_chapter} utterances of three development chapters of each book "
                "(benchmarks/real_prose/real_prose.py)")  # fmt: skip
    return {"name": sample, "rule": rule, "chapters": chapters_listed(samples)}


def line_rows(rows: list[Any], judged: dict[str, tuple[float, str]]) -> list[list[Any]]:
    """[key, takes, winner, flagged, judge WER of each take in order] of every line."""
    out = []
    for u in rows:
        wers = [judged.get(take_key(u, i), (None, ""))[0] for i in range(len(u.candidates))]
        out.append([u.key, len(u.candidates), u.winner, u.flagged, wers])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", choices=("held_out_k", "dev"), default="held_out_k")
    parser.add_argument("--per-chapter", type=int, default=35, help="dev: utterances a chapter")
    parser.add_argument("--config", type=Path, default=None, help="a TOML of render options")
    parser.add_argument("--pool", type=int, default=None, help="judge every line's first N takes")
    parser.add_argument("--no-dnsmos", action="store_true")
    parser.add_argument("--chunks", type=int, default=13, help="parts rendered one after another")
    parser.add_argument("--first-chunks", type=int, default=None, help="stop after this many")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()

    from verified_tts.config import read_config_file

    work = args.work or ROOT / "benchmarks" / "work" / "judged_prose" / args.output.stem
    book = work / f"{args.sample}.txt"
    sample = write_book(args.sample, args.per_chapter, book)
    table = read_config_file(args.config) if args.config else {}
    chunks = chapter_chunks(book, args.chunks)[: args.first_chunks]
    finished: list[Any] = []
    for number, chapters in enumerate(chunks):
        finished.append(run_chunk(book, work, number, chapters, table, args))
        write_result(args, sample, table, chunks, finished)


def run_chunk(
    book: Path, work: Path, number: int, chapters: str, table: dict, args: argparse.Namespace
) -> dict[str, Any]:
    """Render, judge and score one chunk of the sample (resuming each step)."""
    from verified_tts.output.manifest import read_manifest

    out = work / f"render{number:02d}"
    timing = render_sample(book, out, table, chapters=chapters)
    rows = list(read_manifest(out).utterances)
    cache = work / "judged.json"
    judged = judge_takes(out, [(u, i) for u in rows for i in range(len(u.candidates))], cache)
    pool_rows = None
    if args.pool:
        pool_out = work / f"pool{args.pool}-{number:02d}"
        fill_pool(book, out, pool_out, table, args.pool, chapters)
        pool_rows = list(read_manifest(pool_out).utterances)
        takes = [(u, i) for u in pool_rows for i in range(len(u.candidates))]
        judged |= judge_takes(pool_out, takes, cache)
    dnsmos = None
    if not args.no_dnsmos:
        pairs = [(u, i) for u in rows for i in dict.fromkeys((0, u.winner))]
        dnsmos = dnsmos_takes(out, pairs, work / "dnsmos.json")
    return {"rows": rows, "pool_rows": pool_rows, "judged": judged, "dnsmos": dnsmos,
            "timing": timing}  # fmt: skip


def write_result(
    args: argparse.Namespace,
    sample: dict[str, Any],
    table: dict,
    chunks: list[str],
    finished: list[dict[str, Any]],
) -> None:
    """The result file over the chunks finished so far."""
    from verified_tts.storage.atomic import write_json_atomic

    rows = [u for chunk in finished for u in chunk["rows"]]
    judged = {k: v for chunk in finished for k, v in chunk["judged"].items()}
    pool_rows = None
    if args.pool:
        pool_rows = [u for chunk in finished for u in chunk["pool_rows"]]
    dnsmos = None
    if not args.no_dnsmos:
        dnsmos = {k: v for chunk in finished for k, v in chunk["dnsmos"].items()}
    figures = summarise(rows, judged, pool_rows=pool_rows, dnsmos=dnsmos)
    shown = args.config.resolve() if args.config else None
    data = {
        "command": " ".join(["python -m benchmarks.selection.judged_prose", *sys.argv[1:]]),
        "config": (
            shown.relative_to(ROOT).as_posix()
            if shown and shown.is_relative_to(ROOT)
            else str(shown)
            if shown
            else "today's defaults"
        ),  # fmt: skip
        "config_table": table,
        "judge": "bundled:base",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "sample": sample,
        **figures,
        "timing": add_timings([chunk["timing"] for chunk in finished]),
        "chunks": {
            "finished": len(finished),
            "of": len(chunks),
            "rule": "the sample's chapters dealt into chunks (chunk i: chapters i, i + C, ...), "
            "each rendered from its own store and judged before the next, so a stopped run "
            "reports the chunks it finished",
        },
        "flagged_lines": [
            {
                "text": u.text,
                "judge_wer": judged.get(take_key(u, u.winner), (None, ""))[0],
                "judge_heard": judged.get(take_key(u, u.winner), (None, ""))[1],
                "reasons": [r.get("text") for r in u.reasons if r.get("flag", True)],
            }
            for u in rows
            if u.flagged
        ],  # fmt: skip
        "lines": line_rows(rows, judged),
    }
    write_json_atomic(args.output, data)
    shown_figures = {k: v for k, v in data.items() if k not in ("lines", "sample")}
    print(json.dumps(shown_figures, indent=1)[:3000])


if __name__ == "__main__":
    main()
