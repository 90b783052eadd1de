"""The job queue on the Ray Jobs API: submit, list, status, logs, cancel and resume.

``submit`` turns a render or dub command line into a :class:`~jobs.spec.JobSpec`, stages its
files into a working dir under the state directory (kept, so ``resume`` can send exactly the same
inputs again) and submits it to the cluster's Jobs API with the spec's hash as the submission
id; the same spec a second time is refused with a pointer to the first job. On a cluster started
by ``verified-tts cluster up`` each job reserves one unit of the ``verified_tts_job`` resource,
so at most ``--max-jobs`` run and Ray keeps the others PENDING. Every read refreshes the SQLite
records from Ray; a job Ray no longer knows (the cluster restarted) is marked FAILED as lost, and
``resume`` resubmits it with the next attempt's submission id, to continue from the store in its
output folder. Logs of finished attempts are saved beside the records, so they survive too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jobs.progress import JOB_ID_ENV
from jobs.records import ACTIVE_STATES, JobRecord, JobRecords
from jobs.spec import SPEC_FILE, JobSpec, build_spec, stage
from verified_tts.cluster.state import JOB_RESOURCE, import_ray, read_state, state_dir
from verified_tts.errors import UserError

__all__ = ["DuplicateJob", "JobQueue", "SLOTS_ENV", "output_gone", "submission"]

SLOTS_ENV = "VERIFIED_TTS_JOB_SLOTS"  # "1": an existing cluster has the verified_tts_job resource


def output_gone(record: JobRecord) -> bool:
    """Whether a finished job's deliverable is no longer there (its manifest is the last file
    a render or dub writes), so running it again is what the user wants."""
    return not (Path(record.output) / "manifest.json").is_file()


class DuplicateJob(UserError):
    """The same spec was submitted before; points at the first job."""

    def __init__(self, record: JobRecord) -> None:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.submitted_at))
        message = (
            f"this job was already submitted as {record.id} at {when} (now {record.state}): "
            f"see `verified-tts jobs status {record.id}`"
        )
        if record.state in ("FAILED", "STOPPED"):
            message += f"; continue it with `verified-tts jobs resume {record.id}`"
        super().__init__(message)
        self.record = record


def submission(spec: JobSpec, submission_id: str, working_dir: str, slots: bool) -> dict[str, Any]:
    """What the queue hands the Jobs API for ``spec`` (``JobSubmissionClient.submit_job``'s
    arguments): a RayJob on Kubernetes (docs/kubernetes.md) must say the same."""
    return {
        # the submitter's interpreter, by path: a job runs with the cluster's PATH otherwise
        "entrypoint": f"{shlex.quote(spec.python)} -m jobs.entrypoint {SPEC_FILE}",
        "submission_id": submission_id,
        "runtime_env": {
            "working_dir": working_dir,
            "env_vars": {"PYTHONUNBUFFERED": "1", JOB_ID_ENV: spec.job_id},
        },
        "metadata": {"verified_tts_job": spec.job_id, "command": spec.command},
        "entrypoint_resources": {JOB_RESOURCE: 1} if slots else None,
    }


def _is_missing(error: Exception) -> bool:
    return "404" in str(error) or "does not exist" in str(error)


_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class JobQueue:
    """Jobs of one cluster state directory, on that cluster's (or ``address``'s) Jobs API."""

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, address: str | None = None
    ) -> None:
        self.directory = state_dir(directory)
        self._address = address
        self._clients: dict[str, Any] = {}

    # -- reaching the cluster -------------------------------------------------------------------
    def endpoint(self) -> tuple[str, bool]:
        """The Jobs API URL and whether it has job slots (the concurrent-job limit)."""
        if self._address:
            url = self._address if "://" in self._address else f"http://{self._address}"
            return url, os.environ.get(SLOTS_ENV) == "1"
        state = read_state(self.directory)
        if state is None or not state.alive():
            raise UserError(
                "no local cluster is running: start one with `verified-tts cluster up`, or pass "
                "--address http://HEAD:8265 of an existing cluster's dashboard"
            )
        return state.dashboard_url, True

    def client(self, url: str | None = None) -> Any:
        url = url or self.endpoint()[0]
        if url not in self._clients:
            import_ray()  # MissingExtra instead of an ImportError
            from ray.job_submission import JobSubmissionClient

            # Ray's client logs every upload at INFO on stderr (its SDK module sets its own level,
            # so the parent's is not enough); the CLI says what matters itself
            logging.getLogger("ray").setLevel(logging.WARNING)
            logging.getLogger("ray.dashboard.modules.dashboard_sdk").setLevel(logging.WARNING)

            try:
                self._clients[url] = JobSubmissionClient(url)
            except (ConnectionError, OSError, RuntimeError) as error:
                raise UserError(
                    f"cannot reach the Ray Jobs API at {url} ({str(error).splitlines()[0]}): is "
                    "the cluster up? (`verified-tts cluster status`)"
                ) from error
        return self._clients[url]

    def _records(self) -> Any:
        return JobRecords.open(self.directory)

    def _job_dir(self, job_id: str) -> Path:
        # Ids are made by JobSpec.job_id; anything else (a record edited by hand, a hostile id)
        # must not name a folder outside the queue's own.
        if not _SAFE_ID.fullmatch(job_id):
            raise UserError(f"'{job_id[:60]}' is not a job id (vtts-COMMAND-HASH): check the id")
        return self.directory / "jobs" / job_id

    # -- submitting -----------------------------------------------------------------------------
    def submit(
        self, command: str, input_file: str | os.PathLike[str], args: Sequence[str], out: str | None
    ) -> JobRecord:
        spec, files = build_spec(command, input_file, args, out)
        with self._records() as records:
            existing = records.get(spec.job_id)
        if existing is not None:
            existing = self.refresh(existing)
            if existing.state == "SUCCEEDED" and output_gone(existing):
                return self.resume(existing.id)  # says why in the record's message
            raise DuplicateJob(existing)
        url, slots = self.endpoint()
        client = self.client(url)
        working_dir = self._job_dir(spec.job_id) / "wd"
        shutil.rmtree(working_dir, ignore_errors=True)  # left by a submission that failed
        stage(spec, files, working_dir)
        with self._records() as records:
            record = records.create(spec, spec.job_id, url)
        try:
            self._submit(client, spec, spec.job_id, working_dir, slots)
        except BaseException:
            with self._records() as records:
                records.delete(spec.job_id)
            raise
        return record

    def _submit(
        self, client: Any, spec: JobSpec, submission_id: str, working_dir: Path, slots: bool
    ) -> None:
        arguments = submission(spec, submission_id, str(working_dir), slots)
        for attempt in range(20):
            try:
                client.submit_job(**arguments)
                return
            except RuntimeError as error:
                text = str(error)
                if "already exists" in text or "already been used" in text:
                    raise UserError(
                        f"the cluster already has a job with id {submission_id}: see "
                        f"`verified-tts jobs status {spec.job_id}`"
                    ) from error
                # a head that just started may not have registered its agent yet
                if "agent" in text.lower() and attempt < 19:
                    time.sleep(0.5)
                    continue
                raise UserError(f"the Jobs API refused the job: {text.splitlines()[0]}") from error

    # -- reading --------------------------------------------------------------------------------
    def resolve(self, job_id: str) -> JobRecord:
        with self._records() as records:
            exact = records.get(job_id)
            if exact is not None:
                return exact
            matches = records.find(job_id)
        if not matches:
            raise UserError(f"no job {job_id}: `verified-tts jobs list` shows the known jobs")
        if len(matches) > 1:
            raise UserError(
                f"job id {job_id} is ambiguous ({', '.join(m.id for m in matches)}): "
                "give more of it"
            )
        return matches[0]

    def refresh(self, record: JobRecord) -> JobRecord:
        """Bring an unfinished record up to date with Ray (no change when Ray is unreachable)."""
        if record.state not in ACTIVE_STATES:
            return record
        try:
            url = self.endpoint()[0]
        except UserError:
            return record  # no cluster now: `cluster down` already marked what it stopped
        try:
            info = self.client(url).get_job_info(record.submission_id)
        except UserError:
            return record
        except (RuntimeError, OSError) as error:
            if not _is_missing(error):
                return record
            with self._records() as records:
                return records.set_state(
                    record.id,
                    "FAILED",
                    "lost: the cluster restarted and no longer knows this job; "
                    f"`verified-tts jobs resume {record.id}` continues it from the store",
                )
        state = str(getattr(info.status, "value", info.status))
        if state not in ACTIVE_STATES:
            self._save_logs(record, url)
        with self._records() as records:
            return records.set_state(record.id, state, info.message or "")

    def status(self, job_id: str) -> JobRecord:
        record = self.refresh(self.resolve(job_id))
        with self._records() as records:
            return records.get(record.id) or record

    def list(self) -> list[JobRecord]:
        with self._records() as records:
            stored = records.all()
        return [self.refresh(r) for r in stored]

    def _log_path(self, record: JobRecord) -> Path:
        return self._job_dir(record.id) / f"attempt-{record.attempts}.log"

    def _save_logs(self, record: JobRecord, url: str) -> None:
        try:
            text = self.client(url).get_job_logs(record.submission_id)
        except (RuntimeError, OSError, UserError):
            return
        path = self._log_path(record)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def logs(
        self, job_id: str, *, follow: bool = False, write: Callable[[str], None] | None = None
    ) -> str:
        """The job's log (latest attempt); ``follow`` streams it through ``write`` until it ends."""
        record = self.status(job_id)
        saved = self._log_path(record)
        if record.state not in ACTIVE_STATES and saved.is_file():
            text = saved.read_text(encoding="utf-8")
            if write:
                write(text)
            return text
        try:
            client = self.client(self.endpoint()[0])
            if not follow:
                text = client.get_job_logs(record.submission_id)
                if write:
                    write(text)
                return text
            return self._follow(client, record, write or (lambda _: None))
        except (RuntimeError, OSError) as error:
            if _is_missing(error):
                raise UserError(
                    f"the log of job {record.id} was lost with the cluster it ran on"
                ) from error
            raise

    def _follow(self, client: Any, record: JobRecord, write: Callable[[str], None]) -> str:
        while self.status(record.id).state == "PENDING":  # no log to tail before it starts
            time.sleep(0.5)
        parts: list[str] = []

        async def tail() -> None:
            async for chunk in client.tail_job_logs(record.submission_id):
                parts.append(chunk)
                write(chunk)

        asyncio.run(tail())
        self.status(record.id)  # saves the finished attempt's log
        return "".join(parts)

    # -- changing -------------------------------------------------------------------------------
    def cancel(self, job_id: str, timeout_s: float = 60.0) -> JobRecord:
        record = self.status(job_id)
        if record.state not in ACTIVE_STATES:
            raise UserError(f"job {record.id} is already {record.state}; nothing to cancel")
        client = self.client(self.endpoint()[0])
        client.stop_job(record.submission_id)
        if record.state == "PENDING" and self.status(record.id).state == "PENDING":
            # Ray queues the stop until the job's supervisor gets a slot, then stops it before
            # any work; the record says STOPPED now, so the queue never shows it as waiting
            with self._records() as records:
                return records.set_state(
                    record.id, "STOPPED", "cancelled while PENDING, before it started"
                )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            record = self.status(record.id)
            if record.state not in ACTIVE_STATES:
                break
            time.sleep(0.5)
        return record

    def resume(self, job_id: str) -> JobRecord:
        """Submit a FAILED or STOPPED job again; it continues from the store in its output."""
        record = self.status(job_id)
        if record.state in ACTIVE_STATES:
            raise UserError(f"job {record.id} is {record.state}: nothing to resume")
        message = "resumed"
        if record.state == "SUCCEEDED":
            if not output_gone(record):
                raise UserError(
                    f"job {record.id} already SUCCEEDED; its output is in {record.output} "
                    "(delete that folder to run the job again)"
                )
            message = f"ran again: its output {record.output} was deleted after it SUCCEEDED"
        working_dir = self._job_dir(record.id) / "wd"
        if not (working_dir / SPEC_FILE).is_file():
            raise UserError(
                f"the staged inputs of job {record.id} are gone ({working_dir}): submit it again"
            )
        url, slots = self.endpoint()
        submission_id = f"{record.id}-{record.attempts + 1}"
        self._submit(self.client(url), record.spec, submission_id, working_dir, slots)
        with self._records() as records:
            return records.new_attempt(record.id, submission_id, url, message)

    def wait(self, job_id: str, timeout_s: float, poll_s: float = 1.0) -> JobRecord:
        """Poll until the job is finished (or ``timeout_s`` passed); returns the last record."""
        deadline = time.monotonic() + timeout_s
        record = self.status(job_id)
        while record.state in ACTIVE_STATES and time.monotonic() < deadline:
            time.sleep(poll_s)
            record = self.status(job_id)
        return record
