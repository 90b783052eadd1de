"""The review's work queue: one thread runs the slow actions (more takes, edits, lexicon entries,
deliveries) one after another, so two of them never write the same folder at once.

A job is a function of the :class:`Job` it runs as, which it tells what it is doing
(``job.say``). Its state (queued, running, done, failed, cancelled) and its last progress line
are what the page shows. A :class:`~verified_tts.errors.UserError` fails the job with its line;
any other exception fails it with a line saying so and its traceback goes to stderr, and the
queue goes on with the next job.
"""

from __future__ import annotations

import itertools
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verified_tts.errors import UserError

__all__ = ["Job", "Worker"]


@dataclass
class Job:
    """One piece of queued work and what the page shows of it."""

    id: int
    kind: str
    title: str
    run: Callable[[Job], Any]
    state: str = "queued"
    progress: str = ""
    error: str | None = None
    result: Any = None
    queued_at: float = field(default_factory=time.time)
    seconds: float | None = None
    cancelled: Callable[[], bool] = lambda: False

    def say(self, line: str) -> None:
        self.progress = line

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "title": self.title, "state": self.state,
                "progress": self.progress, "error": self.error, "result": self.result,
                "seconds": self.seconds}  # fmt: skip


class Worker:
    """A single thread that runs jobs in the order they were submitted."""

    def __init__(self, keep: int = 50) -> None:
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._ids = itertools.count(1)
        self._jobs: list[Job] = []
        self._keep = keep
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="review-worker", daemon=True)
        self._thread.start()

    def submit(
        self,
        kind: str,
        title: str,
        run: Callable[[Job], Any],
        *,
        cancelled: Callable[[], bool] | None = None,
    ) -> Job:
        job = Job(next(self._ids), kind, title, run)
        if cancelled is not None:
            job.cancelled = cancelled
        with self._lock:
            self._jobs.append(job)
            finished = [j for j in self._jobs if j.state not in ("queued", "running")]
            for old in finished[: max(0, len(finished) - self._keep)]:
                self._jobs.remove(old)
        self._queue.put(job)
        return job

    def jobs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [job.as_dict() for job in self._jobs]

    def busy(self) -> bool:
        with self._lock:
            return any(job.state in ("queued", "running") for job in self._jobs)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every submitted job has finished (True) or ``timeout`` passed (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.busy():
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        self._queue.put(None)

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            if job.cancelled():
                job.state = "cancelled"
                continue
            job.state = "running"
            started = time.perf_counter()
            try:
                job.result = job.run(job)
                job.state = "done"
            except UserError as error:
                job.error, job.state = str(error), "failed"
            except Exception as error:  # keep serving: report it, go on with the next job
                traceback.print_exc(file=sys.stderr)
                job.error = f"{job.title} failed ({type(error).__name__}: {error}); see the log"
                job.state = "failed"
            job.seconds = round(time.perf_counter() - started, 3)
