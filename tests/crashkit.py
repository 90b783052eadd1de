"""Kill -9 a CLI render at a chosen moment; shared by tests/test_crash.py and
benchmarks/distributed/reliability.py.

Run as ``python tests/crashkit.py RENDER-ARGS...`` with two environment variables:
``VTTS_CRASH_LOG`` (a file: every committed candidate key and every finished atomic write is
appended to it, one line each, so a test can see what was recomputed) and optionally
``VTTS_CRASH_AT=POINT:COUNT``, which sends SIGKILL to the process itself at the COUNT-th time it
reaches POINT:

- ``write``: inside the atomic writer, the temporary file complete and not yet renamed (store
  audio, chapter and book files, manifest and report alike, in the order the run writes them);
- ``row``: a candidate's FLAC renamed into the store and its index row not yet committed;
- ``decision``: an utterance's decision about to be committed.

Kills from outside at a random time need no hook (see :func:`run_killed_after`).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
AUDIO_SUFFIXES = (".wav", ".flac")
# Fields of manifest.json that describe this run rather than the result.
RUN_FIELDS = ("stats",)
UTTERANCE_RUN_FIELDS = ("reused",)


def _install(point: str | None, count: int, log: Path) -> None:
    import verified_tts.storage.atomic as atomic
    import verified_tts.storage.store as store_module

    seen = {"write": 0, "row": 0, "decision": 0}

    def reach(name: str) -> None:
        seen[name] += 1
        if name == point and seen[name] == count:
            os.kill(os.getpid(), signal.SIGKILL)

    def note(line: str) -> None:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    class _Os:
        """``os`` for the atomic writer, with a kill point just before its rename."""

        def __getattr__(self, name: str):
            return getattr(os, name)

        @staticmethod
        def replace(source, target):
            reach("write")
            os.replace(source, target)
            note(f"wrote {target}")

    atomic.os = _Os()
    write_audio = store_module.write_audio_atomic

    def write_then_maybe_die(*args, **kwargs):
        write_audio(*args, **kwargs)
        reach("row")

    store_module.write_audio_atomic = write_then_maybe_die
    put_candidate = store_module.Store.put_candidate
    put_decision = store_module.Store.put_decision

    def put_candidate_noted(self, key, **kwargs):
        stored = put_candidate(self, key, **kwargs)
        note(f"candidate {key}")
        return stored

    def put_decision_maybe_die(self, decision):
        reach("decision")
        stored = put_decision(self, decision)
        note(f"decision {decision.utterance}")
        return stored

    store_module.Store.put_candidate = put_candidate_noted
    store_module.Store.put_decision = put_decision_maybe_die


def command(args: list[str]) -> list[str]:
    return [sys.executable, str(HERE), *args]


def environment(log: Path, at: str | None = None) -> dict[str, str]:
    env = {**os.environ, "VTTS_CRASH_LOG": str(log), "PYTHONPATH": str(ROOT)}
    env.pop("VTTS_CRASH_AT", None)
    if at:
        env["VTTS_CRASH_AT"] = at
    return env


def run(args: list[str], log: Path, at: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        command(args), env=environment(log, at), capture_output=True, text=True, cwd=ROOT
    )


def run_killed_after(args: list[str], log: Path, seconds: float) -> int:
    """Start a render and SIGKILL it from outside after ``seconds`` (if it is still running)."""
    process = subprocess.Popen(
        command(args),
        env=environment(log),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        return process.wait()


def committed(log: Path) -> list[str]:
    """Candidate keys committed to the store, in order, over every run that wrote to ``log``."""
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").splitlines()
    return [line.split(" ", 1)[1] for line in lines if line.startswith("candidate ")]


def decided(log: Path) -> list[str]:
    """Utterances whose decision was committed, in order, over every run that wrote to ``log``."""
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [line.split(" ", 1)[1] for line in lines if line.startswith("decision ")]


def writes(log: Path) -> int:
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return sum(line.startswith("wrote ") for line in lines)


def fingerprint(out: Path) -> dict[str, str]:
    """sha256 of every audio output, and of manifest.json without the fields about the run."""
    digests = {}
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out)
        if relative.parts[0] == "store" or not path.is_file() or path.name.startswith("."):
            continue
        if path.suffix in AUDIO_SUFFIXES:
            digests[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    for name in RUN_FIELDS:
        manifest.pop(name, None)
    for utterance in manifest["utterances"]:
        for name in UTTERANCE_RUN_FIELDS:
            utterance.pop(name, None)
    canonical = json.dumps(manifest, sort_keys=True).encode()
    digests["manifest.json (result fields)"] = hashlib.sha256(canonical).hexdigest()
    return digests


def main() -> None:
    log = Path(os.environ["VTTS_CRASH_LOG"])
    at = os.environ.get("VTTS_CRASH_AT")
    point, count = at.split(":") if at else (None, "0")
    _install(point, int(count), log)
    sys.argv = ["verified-tts", *sys.argv[1:]]
    from verified_tts.cli import main as cli_main

    started = time.perf_counter()
    try:
        cli_main()
    finally:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"finished {time.perf_counter() - started:.1f}\n")


if __name__ == "__main__":
    main()
