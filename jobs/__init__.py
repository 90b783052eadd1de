"""The verified-tts job queue on Ray's Jobs API: specs, persistent records, submit and control.

:mod:`jobs.spec` describes a render or dub job as plain data whose hash is its id;
:mod:`jobs.records` keeps every job in SQLite beside the cluster's state, so jobs outlive the
cluster; :mod:`jobs.queue` submits, lists, follows, cancels and resumes them; and
:mod:`jobs.entrypoint` is what a job runs on the cluster. Ray is imported only when a queue
operation reaches the cluster.
"""

from __future__ import annotations

from jobs.queue import DuplicateJob, JobQueue
from jobs.records import ACTIVE_STATES, TERMINAL_STATES, JobRecord, JobRecords
from jobs.spec import JobSpec, build_spec

__all__ = [
    "ACTIVE_STATES",
    "TERMINAL_STATES",
    "DuplicateJob",
    "JobQueue",
    "JobRecord",
    "JobRecords",
    "JobSpec",
    "build_spec",
]
