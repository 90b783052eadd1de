"""The pytest plugin of benchmarks/speed/suite_cpu.py: each test's CPU seconds, apart from its wall.

Loaded with ``-p benchmarks.speed.suite_cpu_plugin`` into every pytest-xdist worker; appends one
JSON line per test to the file named by ``VTTS_SUITE_CPU_LOG``: the worker's own CPU seconds over
the test (every thread of the process: in-process engines and verifiers), the CPU of the child
processes it started and reaped meanwhile (CLI commands, servers, browsers), and its wall seconds.
Processes it did not reap (a Ray cluster's daemons and actors) are the suite runner's to count.

Shared code for suite_cpu.py; not run on its own.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator

import pytest

LOG_ENV = "VTTS_SUITE_CPU_LOG"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    path = os.environ.get(LOG_ENV)
    own, children, wall = time.process_time(), _children_cpu(), time.monotonic()
    yield
    if not path:
        return
    row = {
        "test": item.nodeid,
        "own_cpu_s": round(time.process_time() - own, 3),
        "children_cpu_s": round(_children_cpu() - children, 3),
        "wall_s": round(time.monotonic() - wall, 3),
        "worker": os.getpid(),
    }
    with open(path, "a", encoding="utf-8") as log:  # one short line per write: appends interleave
        log.write(json.dumps(row) + "\n")
