"""``verified-tts serve`` started as a user starts it, for the service test modules: the one line
it prints once it answers (address, token, start-up seconds), and SIGTERM at the end. A server
that a test killed leaves its Ray head running (that is what a kill does); the head of the
server's folder is stopped at the end too, so no test leaves Ray behind."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LINE = re.compile(r"^(http://127\.0\.0\.1:\d+/v1) token (\S+) \(ready in ([\d.]+) s\)$")


@dataclass(frozen=True)
class Started:
    """A running server: its address, token, the seconds it said it took, what it printed."""

    url: str
    token: str
    ready_s: float
    out: list[str]
    process: subprocess.Popen[str]


@contextlib.contextmanager
def running_server(home: Path, *options: str) -> Iterator[Started]:
    """``verified-tts serve --port 0 --dir HOME OPTIONS`` until its address line; stopped after."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "verified_tts", "serve", "--port", "0", "--dir", str(home),
         *options],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    out: list[str] = []
    found = None
    deadline = time.monotonic() + 180
    assert process.stdout is not None
    try:
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            out.append(line.rstrip("\n"))
            found = LINE.match(out[-1].strip())
            if found:
                break
        assert found, "the server never printed its address:\n" + "\n".join(out)
        yield Started(found.group(1), found.group(2), float(found.group(3)), out, process)
    finally:
        stop(process)
        from verified_tts.cluster import head

        head.down(home / "jobs")  # left running only by a server that was killed


def stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM, as a service manager stops it, and wait for it to shut down."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
