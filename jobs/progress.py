"""A queued job's progress, written into its output folder as it goes: done, total, flagged.

A render or dub run by the queue (the queue sets ``VERIFIED_TTS_JOB_ID`` in the job's
environment) keeps ``progress.json`` in its output folder: how many utterances it has to speak,
how many are done and how many of those were flagged. :class:`ProgressFile` writes it atomically
when the run starts, then at most once a second as utterances finish, and always at the last
one, so a reader (``GET /v1/jobs/{id}``, its events stream) sees the progress and the flags so
far while the job runs, before its manifest exists. :func:`read_progress` reads it back. Runs
outside the queue write nothing.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from verified_tts.storage.atomic import write_json_atomic

__all__ = [
    "JOB_ID_ENV",
    "PROGRESS_FILE",
    "Progress",
    "ProgressFile",
    "job_progress",
    "read_progress",
]

JOB_ID_ENV = "VERIFIED_TTS_JOB_ID"  # set by the queue in every job's environment
PROGRESS_FILE = "progress.json"
_EVERY_S = 1.0


@dataclass(frozen=True)
class Progress:
    """Where a run is: utterances done of total, flagged among the done, when it was written."""

    done: int
    total: int
    flagged: int
    updated_at: float


class ProgressFile:
    """Writes a run's :class:`Progress` to ``path`` (at the start, each second, at the end)."""

    def __init__(self, path: Path, every_s: float = _EVERY_S) -> None:
        self.path = Path(path)
        self.every_s = every_s
        self.total = 0
        self.done = 0
        self.flagged = 0
        self._written_at = 0.0

    def start(self, total: int) -> None:
        self.total, self.done, self.flagged = total, 0, 0
        self._write()

    def advance(self, flagged: bool) -> None:
        self.done += 1
        self.flagged += int(flagged)
        if self.done >= self.total or time.monotonic() - self._written_at >= self.every_s:
            self._write()

    def _write(self) -> None:
        self._written_at = time.monotonic()
        progress = Progress(self.done, self.total, self.flagged, round(time.time(), 3))
        write_json_atomic(self.path, asdict(progress))


def job_progress(out: Path) -> ProgressFile | None:
    """The progress file of a run in ``out`` when the queue runs it as a job; None otherwise."""
    return ProgressFile(Path(out) / PROGRESS_FILE) if os.environ.get(JOB_ID_ENV) else None


def read_progress(out: Path) -> Progress | None:
    """The progress a job wrote in ``out`` (None: none yet, or a file that cannot be read)."""
    try:
        data: Any = json.loads((Path(out) / PROGRESS_FILE).read_text(encoding="utf-8"))
        return Progress(
            int(data["done"]), int(data["total"]), int(data["flagged"]), float(data["updated_at"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
