"""Submit many small jobs to one loopback cluster from several processes at once and account for
every one; shared by tests/test_jobs_load.py (5 jobs) and benchmarks/distributed/reliability.py
(50).

Each job is a render of its own two-sentence book or a dub of its own two-cue SRT (espeak, N=2),
so every job has its own id. Submitters are separate ``verified-tts jobs submit`` processes, all
writing to the same job records. Afterwards every job must be in a final state, each once in
the records, and Ray must hold exactly one submission per attempt (none run twice). The wait has a
deadline: a job that is not final by then (or not in the records at all) is counted as lost, so a
lost job shows in the figures instead of hanging the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
SENTENCES = [
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It's easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
]


def make_inputs(folder: Path, count: int) -> list[tuple[str, Path, Path]]:
    """(command, input, out) for ``count`` distinct jobs, one in three a dub."""
    folder.mkdir(parents=True, exist_ok=True)
    jobs = []
    for i in range(count):
        a, b = SENTENCES[i % 6], SENTENCES[(i + 1) % 6]
        if i % 3 == 2:
            path = folder / f"dub-{i}.srt"
            path.write_text(
                f"1\n00:00:00,000 --> 00:00:03,500\n{a} Take {i}.\n\n"
                f"2\n00:00:04,000 --> 00:00:07,500\n{b}\n",
                encoding="utf-8",
            )
            jobs.append(("dub", path, folder / f"out-{i}"))
        else:
            path = folder / f"book-{i}.md"
            path.write_text(f"# Book {i}\n\n{a} {b}\n", encoding="utf-8")
            jobs.append(("render", path, folder / f"out-{i}"))
    return jobs


def cli(state_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verified_tts", *args, "--json", "--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def submit_all(state_dir: Path, jobs, processes: int) -> list[dict]:
    """Submit every job, ``processes`` submitter processes at a time; the JSON each printed."""

    def submit(job) -> dict:
        command, path, out = job
        done = cli(
            state_dir,
            "jobs",
            "submit",
            command,
            str(path),
            "--out",
            str(out),
            "--generator",
            "espeak",
            "-n",
            "2",
        )
        lines = done.stdout.strip().splitlines()
        return {
            "rc": done.returncode,
            **(json.loads(lines[-1]) if lines else {"error": done.stderr}),
        }

    with ThreadPoolExecutor(processes) as pool:  # each call is its own OS process
        return list(pool.map(submit, jobs))


def list_jobs(state_dir: Path) -> list[dict]:
    """Every job in the records, as ``jobs list --json`` prints them."""
    return json.loads(cli(state_dir, "jobs", "list").stdout.strip().splitlines()[-1])


def wait_all(
    state_dir: Path, ids: list[str], deadline_s: float, poll_s: float = 2.0
) -> tuple[dict[str, dict], list[dict]]:
    """Wait until every job is final or ``deadline_s`` seconds have passed: (the final jobs by
    id, the records as ``jobs list --json`` then prints them). The waiting polls the queue in this
    process: a ``jobs list`` process each poll costs a second or two of CPU, which on two cores
    the jobs being waited for would pay for. What counts is the one listing at the end."""
    from jobs.queue import JobQueue
    from verified_tts.errors import UserError

    queue = JobQueue(state_dir)
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        try:
            states = {record.id: record.state for record in queue.list()}
        except UserError:
            states = {}
        if all(states.get(i) in TERMINAL for i in ids):
            break
        time.sleep(min(poll_s, max(0.0, give_up - time.monotonic())))
    listed = list_jobs(state_dir)
    final = {job["id"]: job for job in listed if job["id"] in ids and job["state"] in TERMINAL}
    return final, listed


def ray_submissions(dashboard: str) -> dict[str, int]:
    """Submissions Ray holds per verified-tts job id."""
    from ray.job_submission import JobSubmissionClient

    counts: dict[str, int] = {}
    for details in JobSubmissionClient(dashboard).list_jobs():
        job = (details.metadata or {}).get("verified_tts_job")
        if job:
            counts[job] = counts.get(job, 0) + 1
    return counts


def account(
    state_dir: Path, dashboard: str, submitted: list[dict], *, deadline_s: float = 1500.0
) -> dict:
    """The figures of a load run: every accepted job is succeeded, failed or lost (not final
    within ``deadline_s`` seconds, or missing from the records)."""
    ids = [s["id"] for s in submitted if s.get("rc") == 0]
    final, listed = wait_all(state_dir, ids, deadline_s)
    in_records = [j["id"] for j in listed if j["id"] in ids]
    states = {j["id"]: j["state"] for j in listed}
    lost = {i: states.get(i, "not in the records") for i in ids if i not in final}
    submissions = ray_submissions(dashboard)
    failed = {i: job.get("message", "") for i, job in final.items() if job["state"] != "SUCCEEDED"}
    return {
        "jobs_submitted": len(submitted),
        "submissions_refused": len(submitted) - len(ids),
        "succeeded": sum(job["state"] == "SUCCEEDED" for job in final.values()),
        "failed": len(failed),
        "failed_messages": failed,
        "lost": len(lost),
        "lost_states": lost,  # the state each lost job was last seen in
        "deadline_s": deadline_s,
        "duplicated_in_records": len(in_records) - len(set(in_records)),
        "run_twice": sum(
            submissions.get(i, 0) != job.get("attempts", 1) for i, job in final.items()
        ),
    }
