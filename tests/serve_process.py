"""``verified-tts serve`` started as a user starts it, for the service test modules: the one line
it prints once it answers (address, token, start-up seconds), and SIGTERM at the end."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

LINE = re.compile(r"^(http://127\.0\.0\.1:\d+/v1) token (\S+) \(ready in ([\d.]+) s\)$")


@contextlib.contextmanager
def running_server(home: Path, *options: str) -> Iterator[tuple[re.Match[str], list[str]]]:
    """The started server's printed line (matched by :data:`LINE`) and everything it printed."""
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
        yield found, out
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
