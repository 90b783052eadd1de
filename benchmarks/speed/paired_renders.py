"""Two versions of the code, or two configs, timed against each other on the same real-prose sample.

A change meant to make renders cheaper is measured by its effect on a whole render, and on the
2-core development machines the hour moves a render's time by more than most such changes
(benchmarks/speed/machine_speed.py). So this renders one sample with side A and side B alternately,
in the order A B B A for each round (a drift that is linear over a round cancels), each render from
an empty store in its own process, and probes the machine's speed (Piper's plain graph on a fixed
workload) before every render. A side is a git revision (checked out once as a detached worktree
under the work folder and imported from there) and an optional config file. Per side it reports
each render's timing (real_books.render_timed: wall and CPU seconds, real-time factor, seconds per
stage) and the probe before it; per round the ratio B/A of the real-time factors and of the CPU
seconds, and of the real-time factor per probe second; and whether the two sides chose the same
takes (the same winners and take counts) and wrote the same chapter audio, which says whether a
change meant to leave every score alone did.

Usage: python -m benchmarks.speed.paired_renders --a REV [--config-a TOML] --b REV [--config-b TOML]
       [--part dev] [--per-chapter 10] [--chapters 3] [--rounds 2] [--work DIR] --output JSON
       (REV: any git revision, e.g. HEAD or a commit; "." is the working tree as it is)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.real_prose.real_prose import CHAPTERS, PARTS, START, write_sample
from benchmarks.speed.machine_speed import probe as probe_machine
from benchmarks.speed.machine_speed import probe_generator

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
ORDER = ("a", "b", "b", "a")  # one round

# Runs in the side's own process, importing verified_tts from that side's tree.
RENDER = """
import json, sys
from pathlib import Path
import verified_tts  # this side's tree, first on the path
sys.path.append(sys.argv[4])  # this checkout's benchmarks, after this side's own code
from benchmarks.real_prose.real_books import render_timed
from verified_tts.config import read_config_file
book, out, config = sys.argv[1:4]
table = read_config_file(config) if config else {}
timing = render_timed(Path(book), Path(out), table)
print(json.dumps({"imported_from": verified_tts.__file__, **timing}))
"""


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def tree_of(revision: str, work: Path) -> tuple[Path, str]:
    """The folder to import ``revision``'s code from, and the commit it names ("." is the
    working tree itself, named by HEAD plus whether it has changes)."""
    if revision == ".":
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
        return ROOT, git("rev-parse", "HEAD") + (" with uncommitted changes" if dirty else "")
    commit = git("rev-parse", "--verify", f"{revision}^{{commit}}")
    tree = work / "trees" / commit[:12]
    if not (tree / "verified_tts").is_dir():
        if tree.exists():
            shutil.rmtree(tree)
        git("worktree", "prune")
        git("worktree", "add", "--detach", "--force", str(tree), commit)
    return tree, commit


def render_side(tree: Path, book: Path, out: Path, config: Path | None) -> dict[str, Any]:
    """Render ``book`` into ``out`` in a new process that imports ``tree``'s code."""
    if out.exists():
        shutil.rmtree(out)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", RENDER, str(book), str(out), str(config or ""), str(ROOT)],
        cwd=tree, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the render in {tree} failed:\n{done.stderr[-3000:]}")
    timing = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(timing["imported_from"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the render meant for {tree} imported {timing['imported_from']}")
    return timing


def outcome(out: Path) -> dict[str, Any]:
    """What a render chose: per utterance its winner and take count, and the chapters' audio."""
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    chapters = sorted((out / "chapters").iterdir()) if (out / "chapters").is_dir() else []
    return {
        "choices": [[u["key"], u["winner"], len(u["candidates"])] for u in manifest["utterances"]],
        "chapters": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in chapters},
    }


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """How far two renders' choices agree."""
    same = sum(x == y for x, y in zip(a["choices"], b["choices"], strict=False))
    return {
        "utterances": len(a["choices"]),
        "same_winner_and_takes": same,
        "same_utterances": [k for k, *_ in a["choices"]] == [k for k, *_ in b["choices"]],
        "identical_chapter_audio": a["chapters"] == b["chapters"] and bool(a["chapters"]),
    }


def ratios(renders: list[dict[str, Any]]) -> dict[str, Any]:
    """Per round, B over A of the real-time factor, the CPU seconds and the real-time factor per
    probe second (the mean of each side's two renders in the round)."""

    def mean(side: str, value) -> float:
        return statistics.fmean(value(r) for r in renders if r["side"] == side)

    def per_probe(r: dict[str, Any]) -> float:
        return r["timing"]["real_time_factor"] / r["probe"]["cpu_seconds_per_audio_second"]

    figures = {
        "real_time_factor": lambda r: r["timing"]["real_time_factor"],
        "cpu_seconds": lambda r: r["timing"]["cpu_seconds"],
        "real_time_factor_per_probe_second": per_probe,
    }
    return {name: round(mean("b", value) / mean("a", value), 4) for name, value in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="side A's git revision ('.': the working tree)")
    parser.add_argument("--b", required=True, help="side B's git revision ('.': the working tree)")
    parser.add_argument("--config-a", type=Path, default=None)
    parser.add_argument("--config-b", type=Path, default=None)
    parser.add_argument("--part", choices=PARTS, default="dev")
    parser.add_argument("--per-chapter", type=int, default=10)
    parser.add_argument("--chapters", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of A B B A")
    parser.add_argument("--work", type=Path, default=BENCHMARKS / "work" / "paired_renders")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    from verified_tts.storage.atomic import write_json_atomic

    args.work.mkdir(parents=True, exist_ok=True)
    book = args.work / f"{args.part}.txt"
    chapters = args.chapters or CHAPTERS.get(args.part, 3)
    samples = write_sample(
        book, args.part, per_chapter=args.per_chapter, chapters=chapters,
        start=START.get(args.part, 0),
    )  # fmt: skip
    configs = {"a": args.config_a, "b": args.config_b}
    trees, sides = {}, {}
    for side, revision in (("a", args.a), ("b", args.b)):
        trees[side], commit = tree_of(revision, args.work)
        config = configs[side]
        sides[side] = {"revision": revision, "commit": commit, "config": config and str(config)}
    generator = probe_generator()
    renders, outcomes = [], {"a": [], "b": []}
    data: dict[str, Any] = {
        "command": " ".join(["python", "-m", "benchmarks.speed.paired_renders", *sys.argv[1:]]),
        "sample": {
            "part": args.part,
            "per_chapter": args.per_chapter,
            "chapters": chapters,
            "utterances": sum(len(segs) for _, _, segs in samples),
        },
        "sides": sides,
        "order": "".join(ORDER).upper() + " per round",
    }
    for round_index in range(args.rounds):
        for position, side in enumerate(ORDER):
            out = args.work / f"render-{round_index}-{position}-{side}"
            speed = probe_machine(generator=generator)
            timing = render_side(trees[side], book, out, configs[side])
            renders.append({"round": round_index, "side": side, "probe": speed, "timing": timing})
            outcomes[side].append(outcome(out))
            shown = {"round": round_index, "side": side, "probe": speed, **timing}
            print(json.dumps(shown), flush=True)
            shutil.rmtree(out)
        data["renders"] = renders
        data["b_over_a_by_round"] = [
            ratios([r for r in renders if r["round"] == i]) for i in range(round_index + 1)
        ]
        write_json_atomic(args.output, data)  # a round at a time: an interrupted run keeps them
    data["b_over_a_median"] = {
        name: round(statistics.median(r[name] for r in data["b_over_a_by_round"]), 4)
        for name in data["b_over_a_by_round"][0]
    }
    data["choices"] = {
        "a_with_itself": compare(outcomes["a"][0], outcomes["a"][-1]),
        "b_with_itself": compare(outcomes["b"][0], outcomes["b"][-1]),
        "a_with_b": compare(outcomes["a"][0], outcomes["b"][0]),
    }
    write_json_atomic(args.output, data)
    print(json.dumps({k: data[k] for k in ("b_over_a_median", "choices")}, indent=2))


if __name__ == "__main__":
    main()
