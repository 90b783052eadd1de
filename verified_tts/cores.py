"""The CPU cores this process may use, for sizing thread pools.

``os.cpu_count()`` counts the machine's cores; a container or ``taskset`` may allow fewer, and a
pool sized to the machine then oversubscribes the cores it has. :func:`usable_cores` reads the
process's affinity where the platform gives it, and :func:`cores` turns a setting where 0 means
"as many as there are" into a count.
"""

from __future__ import annotations

import os

__all__ = ["cores", "usable_cores"]


def usable_cores() -> int:
    """The cores this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def cores(requested: int) -> int:
    """``requested``, or with 0 every usable core."""
    return int(requested) if requested else usable_cores()
