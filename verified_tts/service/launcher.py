"""Start the service: Ray (local or ``--ray``), Serve on loopback, the app, then one line.

:func:`serve_forever` starts a local Ray head in the service's own folder (or joins the given
cluster), starts Serve's HTTP proxy on ``host:port`` (127.0.0.1 unless asked; port 0 picks a free
one), deploys :func:`~verified_tts.service.app.build_app`, waits until ``GET /v1/models`` answers
with the token, and only then says ``http://HOST:PORT/v1`` and the token. No accepted job is lost
to a restart: a stop (Ctrl-C, SIGTERM) takes the folder's head down and its unfinished jobs are
marked lost, and the next start resumes them from the store; a start after a kill (the head
outlived its driver) takes that head over, and its jobs go on where they are. It runs until
interrupted, then shuts down Serve and the Ray it started, as it does when a start fails half-way.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError

__all__ = ["ServeOptions", "serve_forever"]


@dataclass(frozen=True)
class ServeOptions:
    """What ``verified-tts serve`` was asked for."""

    home: Path
    host: str = "127.0.0.1"
    port: int = 0
    ray: str | None = None
    token_file: Path | None = None
    table: dict[str, Any] | None = None
    overrides: dict[str, Any] | None = None
    replicas: int = 1
    max_queue: int = 64
    max_batch: int = 32
    batch_wait_s: float = 0.05
    max_body: int = 1 << 20
    max_input_chars: int = 4096
    start_timeout_s: float = 120.0
    num_cpus: int | None = None  # the local Ray instance's CPUs (Ray counts the machine's)


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _answers(url: str, token: str) -> bool:
    request = urllib.request.Request(f"{url}/models", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _resume_lost(queue: Any, say: Callable[[str], None]) -> None:
    for record in queue.list():
        if record.state == "FAILED" and record.message.startswith("lost"):
            queue.resume(record.id)
            say(f"resumed job {record.id}: the service stopped before it finished")


class _Running:
    """What one start brought up, so that a stop, or a start that fails half-way, takes down
    exactly that: Serve and the driver's connection, and the head when it is this folder's."""

    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.ray: Any = None
        self.own_head = False

    def stop(self) -> None:
        try:
            if self.ray is not None and self.ray.is_initialized():
                from ray import serve

                try:
                    serve.shutdown()
                finally:
                    self.ray.shutdown()
        finally:
            if self.own_head:
                from verified_tts.cluster import head

                head.down(self.options.home.resolve() / "jobs")


def _wait_serve_gone(ray: Any, home: Path, timeout_s: float = 30.0) -> None:
    """Wait until the old Serve's named actors are gone: its controller kills its proxy without
    waiting, and a new Serve started meanwhile adopts the dying proxy by name and fails with it."""
    deadline = time.monotonic() + timeout_s
    while any(
        actor["namespace"] == "serve" for actor in ray.util.list_named_actors(all_namespaces=True)
    ):
        if time.monotonic() > deadline:
            raise UserError(
                f"the Ray Serve that the last start of this folder left running did not stop "
                f"within {timeout_s:.0f} s; stop its head with "
                f"`verified-tts cluster down --state-dir {home}` and start again (the jobs it "
                "accepted are resumed from the queue)"
            )
        time.sleep(0.2)


def _connect(options: ServeOptions, running: _Running, say: Callable[[str], None]) -> str | None:
    """Ray up and this driver connected; returns the Jobs API address (None: the head's own)."""
    from verified_tts.cluster.state import import_ray

    ray = running.ray = import_ray()
    if options.ray:
        context = ray.init(address=options.ray, logging_level="WARNING", log_to_driver=False)
        dashboard = context.dashboard_url
        return f"http://{dashboard}" if dashboard else None
    # a head of our own, started as `verified-tts cluster up` starts one (every port free, the
    # dashboard agent's included: ray.init would take Ray's fixed 52365, which another Ray on the
    # machine may hold, and then the Jobs API never takes a job), its state in the queue's
    # folder, so `verified-tts jobs --state-dir DIR/jobs` reaches it too
    from ray import serve

    from verified_tts.cluster import head

    home = options.home.resolve()
    running.own_head = True
    # any free ports, not Ray's usual 6379 and 8265 first: other Ray instances on the machine
    # start there too, and one that takes the port between our probe and our start fails ours
    state, fresh = head.up(
        directory=home / "jobs",
        num_cpus=options.num_cpus,
        max_jobs=1,
        port=_free_port("127.0.0.1"),
        dashboard_port=_free_port("127.0.0.1"),
    )
    ray.init(address=state.gcs_address, logging_level="WARNING", log_to_driver=False)
    if not fresh:
        # the last serve of this folder was killed before it could stop: its head still runs the
        # jobs it accepted, and they go on; its Serve (the old port and token) gives way to ours
        serve.shutdown()
        _wait_serve_gone(ray, home / "jobs")
        say("took over the Ray head the last start of this folder left running: its jobs go on")
    return None  # the queue reads the head from its state: job slots included


def start(options: ServeOptions, say: Callable[[str], None], running: _Running) -> tuple[str, str]:
    """Start everything (recorded in ``running``); returns (base URL, token)."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from verified_tts.cluster.state import import_ray
    from verified_tts.service.auth import digest, load_token

    import_ray()
    try:
        from ray import serve
    except ImportError as error:
        raise UserError(
            "`verified-tts serve` needs Ray Serve: pip install 'verified-tts[ray]'"
        ) from error
    from verified_tts.service.app import build_app

    # importing Serve set its logger to INFO; the start is one line, ours
    logging.getLogger("ray.serve").setLevel(logging.WARNING)

    token = load_token(options.token_file)  # before Ray: a bad file stops nothing that runs
    home = options.home.resolve()
    (home / "service").mkdir(parents=True, exist_ok=True)
    port = options.port or _free_port(options.host)
    jobs_address = _connect(options, running, say)
    serve.start(http_options={"host": options.host, "port": port})
    settings = {
        "table": options.table or {},
        "overrides": options.overrides or {},
        "home": str(home / "service"),
        "state_dir": str(home / "jobs"),
        "jobs_address": jobs_address,
        "token_digest": digest(token),
        "max_queue": options.max_queue,
        "max_batch": options.max_batch,
        "batch_wait_s": options.batch_wait_s,
        "max_body": options.max_body,
        "max_input_chars": options.max_input_chars,
        "replicas": options.replicas,
        "started_at": time.time(),
        "event_poll_s": 1.0,
    }
    serve.run(build_app(settings), name="verified-tts", route_prefix="/", blocking=False)
    url = f"http://{options.host}:{port}/v1"
    deadline = time.monotonic() + options.start_timeout_s
    while not _answers(url, token):
        if time.monotonic() > deadline:
            raise UserError(
                f"the service did not answer at {url} within {options.start_timeout_s:.0f} s"
            )
        time.sleep(0.2)
    if jobs_address or not options.ray:
        from jobs.queue import JobQueue

        _resume_lost(JobQueue(home / "jobs", jobs_address), say)
    return url, token


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def serve_forever(options: ServeOptions, say: Callable[[str], None]) -> None:
    """Start, print the address line, and run until interrupted; then shut down what started."""
    started = time.perf_counter()
    running = _Running(options)
    signal.signal(signal.SIGTERM, _interrupt)  # a service manager's stop shuts down as Ctrl-C
    try:
        url, token = start(options, say, running)
        # a driver joining a cluster gets Ray's own SIGTERM handler (exit at once): ours again,
        # so a stop shuts Serve and our head down
        signal.signal(signal.SIGTERM, _interrupt)
        say(f"{url} token {token} (ready in {time.perf_counter() - started:.1f} s)")
        while True:
            time.sleep(1)
    finally:
        running.stop()
