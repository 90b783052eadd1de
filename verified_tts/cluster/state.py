"""Where the local head's state lives and how a process reaches Ray: the cluster side's leaf.

The state directory (``$VERIFIED_TTS_CLUSTER_DIR``, else ``$XDG_STATE_HOME/verified-tts/cluster``,
else ``~/.local/state/verified-tts/cluster``) holds ``cluster.json``, written by ``cluster up``
(:mod:`verified_tts.cluster.head`), beside the SQLite job records (:mod:`jobs.records`). The head,
the Ray backend and the job queue all read it through this module, which imports nothing else of
the project but its errors, so none of them has to import another.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from verified_tts.errors import MissingExtra

__all__ = [
    "spawn_detached",
    "JOB_RESOURCE",
    "LOOPBACK_HOSTS",
    "STATE_FILE",
    "ClusterState",
    "import_ray",
    "use_token_auth",
    "is_head",
    "prefer_loopback",
    "process_alive",
    "read_state",
    "reap",
    "resolve_address",
    "state_dir",
]

JOB_RESOURCE = "verified_tts_job"  # one unit per running job: the concurrent-job limit
STATE_FILE = "cluster.json"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def state_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """Where the cluster's state and the job records live."""
    if directory:
        return Path(directory).expanduser()
    if os.environ.get("VERIFIED_TTS_CLUSTER_DIR"):
        return Path(os.environ["VERIFIED_TTS_CLUSTER_DIR"]).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "verified-tts" / "cluster"


def _process_state(pid: int) -> str | None:
    """The process's state letter from /proc (None when it does not exist)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (macOS): fall back on a signal probe
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return "S"
        return "S"
    return stat.rsplit(")", 1)[-1].split()[0]


def reap(pid: int) -> None:
    # the head is our child only in the process that started it (tests): collect its exit
    # status, or a zombie would look alive
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def process_alive(pid: int) -> bool:
    """Does ``pid`` exist and run (a zombie does not)?"""
    return _process_state(pid) not in (None, "Z", "X")


def is_head(pid: int) -> bool:
    reap(pid)
    if not process_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the pid
    # guard against a recycled pid: only ever signal our own `ray start --head --block`
    return b"start" in cmdline and b"--head" in cmdline and b"--block" in cmdline


@dataclass(frozen=True)
class ClusterState:
    """What ``cluster up`` wrote: enough to reach, inspect and stop the head."""

    state_dir: str
    pid: int
    gcs_address: str  # HOST:PORT for ray.init / --ray
    dashboard_url: str  # http://HOST:PORT for the Jobs API
    temp_dir: str
    num_cpus: int
    num_gpus: int | None
    object_store_mb: int
    max_jobs: int
    started_at: float
    log: str
    nodes: int = 1  # the head plus nodes - 1 worker nodes on this machine
    workers: tuple[int, ...] = ()  # pids of the worker-node processes
    worker_resources: dict[str, float] | None = None  # custom resources of each worker node

    def alive(self) -> bool:
        return is_head(self.pid)


def read_state(directory: str | os.PathLike[str] | None = None) -> ClusterState | None:
    path = state_dir(directory) / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ClusterState(**{**data, "workers": tuple(data.get("workers", ()))})
    except (FileNotFoundError, TypeError, AttributeError, json.JSONDecodeError):
        return None


def resolve_address(address: str | None) -> str:
    """``auto`` -> the job's cluster (``RAY_ADDRESS``), else `verified-tts cluster up`'s, else Ray's
    own discovery; anything else is used as given (``HOST:PORT`` or ``ray://HOST:PORT``)."""
    if address and address != "auto":
        return address
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    state = read_state()
    if state is not None and state.alive():
        return state.gcs_address
    return "auto"


def _host(address: str) -> str:
    bare = address.split("://", 1)[-1]
    return bare.rsplit(":", 1)[0].strip("[]") if ":" in bare else bare


def prefer_loopback(address: str) -> None:
    """Keep a driver of a loopback-only cluster on 127.0.0.1.

    Ray replaces 127.0.0.1 by the machine's first external address unless multi-node clusters are
    off (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0), and a head bound to loopback is not listening
    there. The constant is read when Ray is imported, so an already imported Ray is patched too.
    """
    if _host(address) not in LOOPBACK_HOSTS:
        return
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    if "ray" in sys.modules and os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0":
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False


def use_token_auth() -> None:
    """Make this process and the Ray processes it starts speak Ray's token authentication.

    Since Ray 2.60 a head turns token authentication on when a token exists
    (``~/.ray/auth_token``, which ``ray.init`` makes on its first local start) while a client
    process still defaults to no token, so its Jobs API and state API requests would be refused
    with 401. In token mode ``ray start`` refuses to start without a token, so on a machine where
    Ray never ran one is made here as ``ray.init`` would make it (:func:`_ensure_token`). Ray
    reads the mode once per process, so it is set before Ray is first used; a user who set
    ``RAY_AUTH_MODE`` keeps their choice. Older Ray versions have no such default and are left as
    they are.
    """
    if "RAY_AUTH_MODE" in os.environ or _ray_version() < (2, 60):
        return
    _ensure_token()
    os.environ["RAY_AUTH_MODE"] = "token"
    if "ray._raylet" in sys.modules:  # already imported: refresh the mode Ray has cached
        with contextlib.suppress(Exception):
            sys.modules["ray._raylet"].Config.initialize("")


def _ensure_token() -> None:
    """Make ``~/.ray/auth_token`` when no token is given anywhere Ray looks for one.

    Linked into place whole, and only if none is there: two processes starting Ray at once on a
    fresh machine must not each write a token of their own (one's head would refuse the other's
    clients), nor read a half-written one."""
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    path = Path.home() / ".ray" / "auth_token"
    if path.is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".auth_token.{os.getpid()}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32))  # Ray's own format: 256 random bits in hex
    try:
        with contextlib.suppress(FileExistsError):  # the first process's token wins
            os.link(draft, path)
    finally:
        draft.unlink(missing_ok=True)


def _ray_version() -> tuple[int, ...]:
    try:
        release = importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        return (0,)
    return tuple(int(part) for part in release.split(".")[:2] if part.isdigit())


def import_ray() -> ModuleType:
    """``import ray`` with token authentication set up, or the one-line error that names the
    extra to install."""
    use_token_auth()
    try:
        import ray
    except ImportError as error:
        raise MissingExtra("the Ray backend", "ray", "ray") from error
    return ray


def spawn_detached(
    argv: list[str], where: Path, log_path: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a Ray process (a head or a worker node) detached, in a session of its own so that
    ``down`` signals it alone, logging to ``log_path``. Ray keeps 127.0.0.1 as the node address
    and binds loopback only in its single-machine mode; ``env`` adds to that."""
    environment = {
        **os.environ,
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
        **(env or {}),
    }
    environment.pop("RAY_ADDRESS", None)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=where,
            env=environment,
            start_new_session=True,
        )
