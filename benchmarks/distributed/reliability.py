"""Reliability figures: kills survived, damage detected and regenerated, fuzz cases run, peak RSS.

The long versions of the suites in tests/ (test_crash, test_damage, test_fuzz), run with the fast
espeak generator:

- crashes: 20 SIGKILLs of one render, each resumed, every one landing in the work still to do:
  17 spread over the candidates and decisions (inside a store write: FLAC renamed, row not
  committed; before a decision commit; inside the atomic writer at a store audio write; or from
  outside after a random delay past start-up), then 3 in the final phase (a chapter or book file
  write, then the manifest or report); then a final resume. Counts committed candidates generated
  twice, compares every output's sha256 (audio files; manifest.json less its run statistics) with
  an uninterrupted render, runs the doctor's integrity check and counts temporary files left.
- damage: truncated and missing candidate files (winners; then a candidate that did not win
  truncated and another deleted), a corrupt index, each in a copy of a finished render: detected,
  regenerated, outputs identical again (manifest.json too: a regenerated candidate whose audio
  has its stored digest keeps its first scores), every listed candidate's audio decodes.
- fuzz: the hypothesis properties of tests/test_fuzz.py at a larger example count.
- jobs: 50 render and dub jobs submitted from 4 processes at once to one loopback cluster:
  every job final, none lost from the records, none submitted to Ray twice.
- memory: peak RSS (wait4 of the render process) of a 100- and a 1,000-utterance render at N=8
  with adaptivity off (every utterance takes all 8 candidates). The WER and speaker verifiers are
  switched off there: they would make the 8,000-candidate run take hours on two cores, and what
  grows with the book is the pipeline's own state, which this measures.

Usage: ``nice -n 10 python -m benchmarks.distributed.reliability [--only
crashes,damage,fuzz,memory,jobs]``; results go to benchmarks/results/reliability.json (sections not
run keep their last figures).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common.harvard import sentences as harvard_sentences

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import crashkit  # noqa: E402

from verified_tts.storage.atomic import write_json_atomic  # noqa: E402
from verified_tts.storage.store import audio_problem  # noqa: E402
from verified_tts.workflows.doctor import check_store  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "reliability.json"
IN_FLIGHT = ("temporary file", "has no row in the index", "manifest.json is missing")


def _sentences() -> list[str]:
    return harvard_sentences()


def make_book(path: Path, utterances: int, per_chapter: int = 50) -> Path:
    lines, sentences = ["# Reliability"], _sentences()
    for i in range(utterances):
        if i % per_chapter == 0:
            lines.append(f"\n## Part {i // per_chapter + 1}\n")
        sentence = sentences[i % len(sentences)]
        if i >= len(sentences):  # still one sentence, and a new one
            sentence = f"{sentence.rstrip('.?!')}, round {i // len(sentences) + 1}."
        lines += [sentence, ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _problems(out: Path, allowed: tuple[str, ...]) -> list[str]:
    return [p for p in check_store(out).problems if not any(a in p for a in allowed)]


def _startup_seconds(argv: list[str], work: Path) -> float:
    """Seconds from the process start to the first committed candidate (imports, model loads)."""
    log = work / "startup.log"
    process = subprocess.Popen(
        crashkit.command(argv), env=crashkit.environment(log), cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    started = time.perf_counter()
    while not crashkit.committed(log) and process.poll() is None:
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    process.kill()
    process.wait()
    return seconds


def crashes(work: Path, kills: int = 20, seed: int = 15) -> dict:
    book = make_book(work / "crash.md", 24, per_chapter=8)
    args = ["render", str(book), "--out", "{out}", "--generator", "espeak", "-n", "3"]

    def argv(out: Path) -> list[str]:
        return [a.format(out=out) for a in args]

    reference_log = work / "reference.log"
    started = time.perf_counter()
    reference = crashkit.run(argv(work / "reference"), reference_log)
    reference_seconds = time.perf_counter() - started
    startup_seconds = _startup_seconds(argv(work / "startup"), work)
    assert reference.returncode == 0, reference.stderr
    expected = crashkit.fingerprint(work / "reference")
    candidates = len(crashkit.committed(reference_log))
    after = crashkit.writes(reference_log) - candidates
    decisions = len(json.loads((work / "reference" / "manifest.json").read_text())["utterances"])

    rng = random.Random(seed)
    out, log = work / "killed", work / "killed.log"
    record, mid_run_problems = [], []
    # Every kill lands in the work still to do: the first ones spread over the candidates and
    # decisions (each at a uniform point in the next 2/(kills left + 1) of what remains, so they
    # spread evenly on average), the last three in the final phase, which runs only once every
    # candidate is committed: a chapter or book write, then the manifest or report.
    final_phase = ["write:assembly", "write:assembly", "write:report"][: max(0, kills - 1)]
    for number in range(kills):
        remaining = candidates - len(set(crashkit.committed(log)))
        undecided = decisions - len(set(crashkit.decided(log)))
        in_generation = kills - len(final_phase) - number
        if in_generation > 0 and remaining > 0:
            kind = rng.choice(["row", "decision", "write:store", "time"])
        elif in_generation > 0:  # every candidate is in: what is left is the final phase
            kind = rng.choice(["write:assembly", "write:report", "time"])
        else:
            kind = final_phase[number - (kills - len(final_phase))]

        spread = 2 / (max(in_generation, 1) + 1)
        if kind == "time":
            # after the render's start-up, within its share of the time the rest should take
            share = reference_seconds * max(remaining, 1) / candidates
            delay = startup_seconds + rng.uniform(0.0, share * spread)
            code = crashkit.run_killed_after(argv(out), log, delay)
            at = f"after {delay:.1f} s"
        else:
            if kind == "row":
                at = f"row:{rng.randint(1, max(1, round(remaining * spread)))}"
            elif kind == "decision":
                at = f"decision:{rng.randint(1, max(1, round(undecided * spread)))}"
            elif kind == "write:store":
                at = f"write:{rng.randint(1, max(1, round(remaining * spread)))}"
            elif kind == "write:assembly":
                at = f"write:{remaining + rng.randint(1, after - 2)}"
            else:
                at = f"write:{remaining + after - rng.randint(0, 1)}"  # manifest or report
            code = crashkit.run(argv(out), log, at).returncode
        killed = code == -signal.SIGKILL
        problems = _problems(out, IN_FLIGHT) if (out / "store").exists() else []
        mid_run_problems += problems
        record.append(
            {
                "kill": number + 1,
                "where": kind,
                "at": at,
                "killed": killed,
                "exit": code,
                "candidates_left_before": remaining,
                "store_problems": problems,
            }
        )
        print(f"kill {number + 1}: {kind} {at} ({remaining} left) -> exit {code}", flush=True)
    final = crashkit.run(argv(out), log)
    assert final.returncode == 0, final.stderr
    keys = crashkit.committed(log)
    got = crashkit.fingerprint(out)
    leftovers = [p for p in check_store(out).problems if p.startswith("temporary file")]
    return {
        "book_utterances": decisions,
        "candidates_per_render": candidates,
        "kills_attempted": kills,
        "kills_landed": sum(r["killed"] for r in record),
        "kills_in_generation": sum(r["killed"] and r["candidates_left_before"] > 0 for r in record),
        "kills_survived": sum(r["killed"] for r in record) if got == expected else 0,
        "committed_candidates_recomputed": len(keys) - len(set(keys)),
        "candidates_committed_over_all_runs": len(keys),
        "files_compared": len(expected),
        "files_identical": sum(got.get(name) == digest for name, digest in expected.items()),
        "store_problems_after_resume": _problems(out, ("temporary file",)),
        "store_problems_between_kills": mid_run_problems,
        "temporary_files_left_by_kills": len(leftovers),
        "kills": record,
    }


def damage(work: Path) -> dict:
    book = make_book(work / "damage.md", 12, per_chapter=6)
    args = ["render", str(book), "--generator", "espeak", "-n", "2", "--out"]
    clean = work / "clean"
    assert crashkit.run([*args, str(clean)], work / "clean.log").returncode == 0
    expected = crashkit.fingerprint(clean)
    manifest = json.loads((clean / "manifest.json").read_text())
    audio = [Path(u["audio"]) for u in manifest["utterances"]]  # the winners: what a render reads
    # candidates that did not win, one per utterance, not candidate 0 (a render reads candidate 0
    # of its first window for the speaker reference, so its damage is noticed anyway)
    losers = []
    for u in manifest["utterances"]:
        others = [c for c in u["candidates"] if c["index"] not in (0, u["winner"]) and c["audio"]]
        losers += [Path(others[0]["audio"])] if others else []
    cases = {}

    def case(name: str, harm) -> None:
        target = work / name
        shutil.copytree(clean, target)
        harmed = harm(target)
        run = crashkit.run([*args, str(target)], work / f"{name}.log")
        text = " ".join((run.stdout + run.stderr).split())
        entry = {"harmed": harmed, "exit": run.returncode, "traceback": "Traceback" in text}
        if run.returncode != 0:  # refused: the message, then the doctor, then the render again
            entry["message"] = text[text.find("error:") :][:300]
            entry["doctor"] = list(check_store(target, repair=True).repairs)
            run = crashkit.run([*args, str(target)], work / f"{name}.log")
        entry["detected"] = sum(
            "damaged store entry" in line for line in (run.stdout + run.stderr).splitlines()
        ) or int("error:" in text)
        entry["regenerated"] = len(crashkit.committed(work / f"{name}.log"))
        got = crashkit.fingerprint(target) if run.returncode == 0 else {}
        entry["identical_after"] = got == expected
        entry["differing"] = sorted(k for k in expected if got.get(k) != expected[k])
        entry["store_healthy_after"] = check_store(target).healthy
        listed = json.loads((target / "manifest.json").read_text()) if got else {"utterances": []}
        entry["listed_audio_broken"] = sum(
            bool(audio_problem(target / c["audio"]))
            for u in listed["utterances"]
            for c in u["candidates"]
            if c["audio"]
        )  # every candidate the manifest (and so the report) lists exists and decodes
        cases[name] = entry

    def truncate(target: Path) -> int:
        files = [target / "store" / "audio" / p.name for p in audio[:3]]
        for path in files:
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
        return len(files)

    def remove(target: Path) -> int:
        files = [target / "store" / "audio" / p.name for p in audio[3:5]]
        for path in files:
            path.unlink()
        return len(files)

    def harm_losers(target: Path) -> int:
        truncated, deleted = (target / "store" / "audio" / p.name for p in losers[:2])
        truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 3])
        deleted.unlink()
        return 2

    def corrupt(target: Path) -> int:
        with open(target / "store" / "index.sqlite", "r+b") as handle:
            handle.write(os.urandom(100))
        return 1

    case("truncated_flac", truncate)
    case("missing_audio", remove)
    case("truncated_and_missing_losers", harm_losers)
    case("corrupt_index", corrupt)
    return {
        "cases": cases,
        "entries_damaged": sum(c["harmed"] for c in cases.values()),
        "all_detected": all(c["detected"] for c in cases.values()),
        "all_identical_after": all(c["identical_after"] for c in cases.values()),
        "every_damaged_entry_reported": all(c["detected"] == c["harmed"] for c in cases.values()),
        "listed_audio_broken_after": sum(c["listed_audio_broken"] for c in cases.values()),
        "tracebacks": sum(c["traceback"] for c in cases.values()),
    }


def _counting(test, name: str, failures: Counter, first: dict[str, str]):
    """``test`` (a property's inner function), counting each case that fails instead of raising,
    so one failure neither stops the property's other cases nor the run."""

    @functools.wraps(test)
    def counted(*args, **kwargs):
        try:
            test(*args, **kwargs)
        except Exception as error:  # a property's failure: a traceback or a broken promise
            failures[name] += 1
            line = (str(error).strip().splitlines() or [""])[0][:200]
            first.setdefault(name, f"{type(error).__name__}: {line} (case {kwargs!r:.300})")

    return counted


def fuzz(examples: int = 1000) -> dict:
    os.environ["VTTS_FUZZ_EXAMPLES"] = str(examples)
    import test_fuzz

    failures: Counter[str] = Counter()
    first: dict[str, str] = {}
    started = time.perf_counter()
    for name in dir(test_fuzz):
        function = getattr(test_fuzz, name)
        if name.startswith("test_") and hasattr(function, "hypothesis"):
            function.hypothesis.inner_test = _counting(
                function.hypothesis.inner_test, name, failures, first
            )
            try:
                function()
            except Exception as error:  # hypothesis itself gave up (a health check, a flaky case)
                failures[name] += 1
                first.setdefault(name, f"{type(error).__name__}: {str(error)[:200]}")
    return {
        "examples_per_property": examples,
        "cases_run": dict(test_fuzz.CASES),
        "cases_total": sum(test_fuzz.CASES.values()),
        "tracebacks": sum(failures.values()),  # cases that failed, counted, not assumed
        "failures_per_property": dict(failures),
        "first_failure_per_property": first,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _peak_rss(argv: list[str]) -> tuple[int, float, int]:
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    return usage.ru_maxrss * 1024, time.perf_counter() - started, os.waitstatus_to_exitcode(status)


def memory(work: Path) -> dict:
    config = work / "fast.toml"
    config.write_text("[verifiers.wer]\nenabled = false\n[verifiers.speaker]\nenabled = false\n")
    figures = {}
    for size in (100, 1000):
        book = make_book(work / f"m{size}.md", size)
        rss, seconds, code = _peak_rss(
            [
                sys.executable,
                "-m",
                "verified_tts",
                "render",
                str(book),
                "--out",
                str(work / f"m{size}"),
                "--generator",
                "espeak",
                "-n",
                "8",
                "--no-adaptive",
                "--config",
                str(config),
            ]
        )
        assert code == 0, f"the {size}-utterance render failed"
        manifest = json.loads((work / f"m{size}" / "manifest.json").read_text())
        figures[str(size)] = {
            "peak_rss_mib": round(rss / 2**20, 1),
            "seconds": round(seconds, 1),
            "utterances": len(manifest["utterances"]),
            "candidates": manifest["stats"]["candidates_generated"],
        }
    ratio = figures["1000"]["peak_rss_mib"] / figures["100"]["peak_rss_mib"]
    return {
        "n": 8,
        "generator": "espeak",
        "adaptive": False,
        "verifiers": "signal only (wer, speaker switched off)",
        "runs": figures,
        "peak_rss_ratio_1000_vs_100": round(ratio, 3),
        "within_1_5x": ratio <= 1.5,
    }


def jobs_under_load(work: Path, count: int = 50, processes: int = 4) -> dict:
    """``count`` render and dub jobs from ``processes`` submitter processes to one loopback
    cluster (one job at a time, as the tests' cluster runs), every one accounted for."""
    import jobload

    from verified_tts.cluster import head

    state, _ = head.up(directory=work / "cluster", num_cpus=2, object_store_mb=200, max_jobs=1)
    try:
        jobs = jobload.make_inputs(work / "inputs", count)
        started = time.perf_counter()
        submitted = jobload.submit_all(work / "cluster", jobs, processes)
        submit_seconds = time.perf_counter() - started
        # a job of two sentences takes well under a minute here: two minutes each is generous,
        # and a job that never finishes is counted as lost rather than waited for
        figures = jobload.account(
            work / "cluster", state.dashboard_url, submitted, deadline_s=120.0 * count
        )
        figures["outputs_present"] = sum((out / "manifest.json").is_file() for _, _, out in jobs)
        figures["submit_seconds"] = round(submit_seconds, 1)
        figures["processes"] = processes
        figures["dub_jobs"] = sum(command == "dub" for command, _, _ in jobs)
        return figures
    finally:
        head.down(work / "cluster")


def _wer_scoring() -> str:
    """How the WER verifier scored in this run: the default's packing, as the docs table says."""
    from verifiers import WerOptions

    return "packed" if WerOptions().packing else "per clip"


SECTIONS = {
    "crashes": crashes,
    "damage": damage,
    "fuzz": None,
    "memory": memory,
    "jobs": jobs_under_load,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--fuzz-examples", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=50)
    options = parser.parse_args()
    for section in options.only.split(","):
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"vtts-{section}-") as folder:
            work = Path(folder)
            if section == "crashes":
                figures = crashes(work, options.kills)
            elif section == "fuzz":
                figures = fuzz(options.fuzz_examples)
            elif section == "jobs":
                figures = jobs_under_load(work, options.jobs)
            else:
                figures = SECTIONS[section](work)
        figures["wall_seconds"] = round(time.perf_counter() - started, 1)
        if section in ("crashes", "damage"):
            figures["wer_scoring"] = _wer_scoring()
        # read just before writing: sections may run in separate processes at once
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results[section] = figures
        results["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
        write_json_atomic(RESULTS, results)
        print(
            json.dumps({section: {k: v for k, v in figures.items() if k != "kills"}}, indent=1),
            flush=True,
        )


if __name__ == "__main__":
    main()
