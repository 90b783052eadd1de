"""Where the test suite's time goes: `make test` run once, its CPU seconds by process and by test.

The suite keeps both cores busy, so its wall time is its CPU work divided by the cores, and a cut
in wall time has to be a cut in CPU somewhere. This runs the README's test command (``make test``,
or the pytest arguments given after ``--``) and meanwhile reads every process's CPU seconds from
``/proc`` twice a second, counting only what each process spent after the run began: pytest's
workers, the CLI commands the tests start (by subcommand), a Ray cluster's daemons, job drivers
and actors (by actor class, from the process title), browsers, EPUBCheck and the rest. The plugin
in suite_cpu_plugin.py adds each test's own and reaped-children CPU, summed here by test module.
A process that starts and ends between two reads, or the last half second of one, is missed; the
share of CPU the reads account for is written beside the kernel's own count for the whole machine.
A fixed Python loop is timed before and after, as a gauge of the machine's speed at the time.

    python -m benchmarks.speed.suite_cpu [-- PYTEST_ARGS]

Writes: benchmarks/results/suite_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from verified_tts.storage.atomic import write_text_atomic

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "suite_cpu.json"
TICKS = os.sysconf("SC_CLK_TCK")
PERIOD_S = 0.5


def _gauge() -> float:
    """Seconds of a fixed pure-Python loop: how fast the machine is right now."""
    started = time.perf_counter()
    sum(i * i for i in range(20_000_000))
    return time.perf_counter() - started


def _machine_busy_s() -> float:
    """CPU seconds the whole machine has spent not idle since boot (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / TICKS


class Sampler(threading.Thread):
    """Every process's CPU seconds since the run began, with its command line (or Ray's title)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.processes: dict[tuple[int, str], dict] = {}
        self._done = threading.Event()
        self._baseline: dict[tuple[int, str], float] = {}
        self._read(self._baseline)  # what was there before: only its growth counts

    def run(self) -> None:
        while not self._done.wait(PERIOD_S):
            self._read(None)

    def stop(self) -> None:
        self._done.set()
        self.join()
        self._read(None)

    def _read(self, baseline: dict | None) -> None:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                cpu = (int(fields[11]) + int(fields[12])) / TICKS
                key = (int(entry), fields[19])  # pid and start time: a reused pid is another
                if baseline is not None:
                    baseline[key] = cpu
                    continue
                seen = self.processes.get(key)
                # a Ray worker retitles itself with its actor's name once it has one
                if seen is None or _untitled(seen["command"]):
                    raw = Path(f"/proc/{entry}/cmdline").read_bytes()
                    command = raw.replace(b"\0", b" ").decode(errors="replace").strip()
                    if not command:
                        continue  # a kernel thread
                    seen = self.processes.setdefault(key, {"command": command})
                    seen["command"] = command
                seen["cpu_s"] = cpu - self._baseline.get(key, 0.0)
            except (OSError, ValueError, IndexError):
                continue  # the process ended while being read


def _untitled(command: str) -> bool:
    return command.startswith("ray::IDLE") or "default_worker.py" in command


_RAY_DAEMONS = (  # first match wins: "ray start" and the raylet name the dashboard's command
    ("ray start", "ray: head start"), ("log_monitor", "ray: monitors"),
    ("monitor.py", "ray: monitors"), ("dashboard", "ray: dashboard"),
    ("runtime_env", "ray: agents"), ("ray.util.client", "ray: client server"),
)  # fmt: skip
_CLI = re.compile(r"(?:verified-tts|verified_tts/__main__\.py|-m verified_tts)\s+(\w+)")


def kind(command: str) -> str:
    """The group a process's CPU is counted under."""
    if command.startswith("ray::IDLE"):
        return "ray: idle workers"
    if command.startswith("ray::"):
        title = command.split()[0].removeprefix("ray::")
        actor = title.split(":")[-1].split(".")[0]  # "wer-<key>-0-0:VerifierActor.__init__"
        return f"ray actor: {actor}"
    if "exec(eval(sys.stdin" in command or "execnet" in command:
        return "pytest workers (in-process tests)"
    if re.search(r"-m pytest|pytest/__main__", command):
        return "pytest main"
    if "jobs.entrypoint" in command:
        return "ray: job drivers"
    if "default_worker.py" in command:
        return "ray: workers before their first task"
    program = Path(command.split()[0]).name
    if program in ("raylet", "gcs_server"):
        return f"ray: {program}"
    for needle, name in _RAY_DAEMONS:
        if needle in command:
            return name
    found = _CLI.search(command)
    if found:
        return f"cli: {found.group(1)}"
    for needle, name in (("chrom", "chromium"), ("/proc/self/exe", "chromium"),
                         ("java", "epubcheck (java)"), ("ffmpeg", "ffmpeg"), ("ffprobe", "ffmpeg"),
                         ("espeak", "espeak-ng"), ("multiprocessing", "python multiprocessing"),
                         ("compileall", "compileall")):  # fmt: skip
        if needle in command:
            return name
    return "other: " + Path(command.split()[0]).name


def _described(process: dict) -> dict:
    command = process["command"]
    return {"cpu_s": round(process["cpu_s"], 1), "kind": kind(command), "command": command[:160]}


def _by_module(rows: list[dict]) -> dict[str, dict]:
    fields = ("own_cpu_s", "children_cpu_s", "wall_s")
    modules: dict[str, dict] = defaultdict(lambda: {"tests": 0, **dict.fromkeys(fields, 0.0)})
    for row in rows:
        module = row["test"].split("::", 1)[0]
        entry = modules[module]
        entry["tests"] += 1
        for field in fields:
            entry[field] += row[field]
    ranked = sorted(modules.items(), key=lambda m: -(m[1]["own_cpu_s"] + m[1]["children_cpu_s"]))
    return {name: {k: round(v, 1) for k, v in entry.items()} for name, entry in ranked}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pytest_args", nargs="*", help="after --: run pytest with these instead")
    args = parser.parse_args()

    log = Path(tempfile.mkdtemp(prefix="vtts-suite-cpu-")) / "tests.jsonl"
    env = {**os.environ, "VTTS_SUITE_CPU_LOG": str(log)}
    plugin = "-p benchmarks.speed.suite_cpu_plugin"
    env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} {plugin}".strip()
    if args.pytest_args:
        command = [sys.executable, "-m", "pytest", *args.pytest_args]
    else:
        command = ["make", "test"]

    gauge_before = _gauge()
    sampler = Sampler()
    busy_before = _machine_busy_s()
    started = time.monotonic()
    sampler.start()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    sampler.stop()
    busy = _machine_busy_s() - busy_before
    gauge_after = _gauge()

    summary = re.findall(r"^=*\s*(\d+ passed.*?) in [\d.]+s", done.stdout, re.M)
    kinds: dict[str, dict] = defaultdict(lambda: {"processes": 0, "cpu_s": 0.0})
    for process in sampler.processes.values():
        if process.get("cpu_s", 0.0) <= 0 or "benchmarks.speed.suite_cpu" in process["command"]:
            continue
        entry = kinds[kind(process["command"])]
        entry["processes"] += 1
        entry["cpu_s"] += process["cpu_s"]
    counted = sum(k["cpu_s"] for k in kinds.values())
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    cores = len(os.sched_getaffinity(0))
    largest = sorted(sampler.processes.values(), key=lambda p: -p.get("cpu_s", 0.0))[:30]
    result = {
        "what": "CPU seconds of one `make test` run, by process kind and by test module",
        "command": " ".join(command),
        "exit_code": done.returncode,
        "pytest_summary": summary[-1] if summary else None,
        "cores": cores,
        "wall_s": round(wall, 1),
        "machine_busy_cpu_s": round(busy, 1),
        "machine_busy_share": round(busy / (wall * cores), 3),
        "counted_cpu_s": round(counted, 1),
        "gauge_s": [round(gauge_before, 3), round(gauge_after, 3)],
        "by_kind": {
            name: {"processes": entry["processes"], "cpu_s": round(entry["cpu_s"], 1)}
            for name, entry in sorted(kinds.items(), key=lambda k: -k[1]["cpu_s"])
        },
        "largest_processes": [_described(process) for process in largest],
        "by_module": _by_module(rows),
        "slowest_tests": sorted(rows, key=lambda r: -r["wall_s"])[:20],
        "most_cpu_tests": sorted(rows, key=lambda r: -(r["own_cpu_s"] + r["children_cpu_s"]))[:20],
    }
    write_text_atomic(RESULT, json.dumps(result, indent=2) + "\n")
    share = result["machine_busy_share"]
    print(f"{result['pytest_summary']}; wall {wall:.0f} s, machine busy {busy:.0f} CPU s")
    print(f"({share:.0%} of {cores} cores), counted {counted:.0f} s")
    for name, entry in list(result["by_kind"].items())[:15]:
        print(f"  {entry['cpu_s']:8.1f} s  {entry['processes']:4d}  {name}")
    print(f"wrote {RESULT.relative_to(ROOT)}")
    if done.returncode:
        sys.exit(done.stdout[-3000:] + done.stderr[-3000:])


if __name__ == "__main__":
    main()
