"""A local Ray head for verified-tts: ``cluster up``, ``cluster down``, ``cluster status``.

``up`` runs ``ray start --head --block`` as a detached process of its own session, bound to
127.0.0.1 only (Ray's multi-node mode is switched off for it, which keeps every Ray server and
the dashboard on loopback), with a small CPU count and object store, and a custom resource
``verified_tts_job`` whose count is the cluster's limit on concurrent jobs: the job queue asks one
unit per job, so Ray keeps the rest PENDING instead of oversubscribing the machine. The head's
address, dashboard URL and process id are written to ``cluster.json`` in the state directory
(``$VERIFIED_TTS_CLUSTER_DIR``, else ``$XDG_STATE_HOME/verified-tts/cluster``, else
``~/.local/state/verified-tts/cluster``), beside the SQLite job records that outlive the
cluster. ``down`` signals only that process (Ray's own ``ray stop`` would stop every Ray process
of the user), which shuts down the head's children, and marks jobs that were still running as
lost so ``jobs resume`` can continue them.

``up --nodes K`` adds K-1 worker nodes on this machine (:mod:`verified_tts.cluster.node`), each
with its share of the CPUs and any custom resources given for them (``{"gpu_slot": 2}`` stands in
for accelerators on a CPU machine), so multi-node placement, node loss and resource requests can be
tried locally; ``down`` stops the worker nodes first, then the head.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from verified_tts.cluster.node import is_worker_node, spawn_worker_node, stop_worker_node
from verified_tts.cluster.state import (
    JOB_RESOURCE,
    STATE_FILE,
    ClusterState,
    import_ray,
    is_head,
    prefer_loopback,
    read_state,
    reap,
    spawn_detached,
    state_dir,
    use_token_auth,
)
from verified_tts.errors import MissingExtra, UserError
from verified_tts.storage.atomic import write_json_atomic

__all__ = [
    "JOB_RESOURCE",
    "ClusterState",
    "down",
    "read_state",
    "state_dir",
    "status",
    "up",
]

HEAD_LOG = "head.log"
NODE_LOG = "node-{index}.log"
# a queued job waits for a slot, however long; Ray's default fails it after 15 minutes
PENDING_TIMEOUT_S = 7 * 24 * 3600


def _free_port(preferred: int | None = None) -> int:
    for candidate in ([preferred] if preferred else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return int(probe.getsockname()[1])
    raise UserError("no free TCP port on 127.0.0.1")


def _ray_command() -> list[str]:
    if importlib.util.find_spec("ray") is None:
        raise MissingExtra("`verified-tts cluster`", "ray", "ray")
    # the same interpreter as ours, so workers import the same verified-tts
    script = Path(sys.executable).with_name("ray")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]


def _ray_temp_dir(directory: Path) -> Path:
    # Ray puts unix sockets under its temp dir, and socket paths are limited to 107 bytes
    preferred = directory / "ray"
    if len(str(preferred)) <= 40:
        return preferred
    digest = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"vtts-ray-{digest}"


def _node_temp_dir(temp_dir: Path, index: int) -> Path:
    return temp_dir.with_name(f"{temp_dir.name}-n{index}")


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


def _dashboard_ready(url: str) -> bool:
    """Whether the Jobs API answers. Ray's own client is asked, not a bare HTTP request: since
    Ray 2.60 a head requires its token (``~/.ray/auth_token``, made by ``ray start``), which the
    client sends and a bare request would not."""
    import_ray()
    from ray.job_submission import JobSubmissionClient

    try:
        JobSubmissionClient(url).list_jobs()
    except Exception:  # noqa: BLE001 - any failure to answer means "not yet"
        return False
    return True


def up(
    *,
    directory: str | os.PathLike[str] | None = None,
    num_cpus: int | None = None,
    num_gpus: int | None = None,
    object_store_mb: int = 512,
    port: int | None = None,
    dashboard_port: int | None = None,
    max_jobs: int = 1,
    nodes: int = 1,
    worker_resources: dict[str, float] | None = None,
    timeout_s: float = 120.0,
) -> tuple[ClusterState, bool]:
    """Start the local head and ``nodes - 1`` worker nodes (or find them running); returns the
    state and whether it was started. ``num_cpus`` is the whole cluster's, shared out evenly
    (at least one a node); ``worker_resources`` are each worker node's custom resources."""
    where = state_dir(directory)
    existing = read_state(where)
    if existing is not None and existing.alive():
        return existing, False
    if existing is not None:  # a head that died without `down`: its worker nodes go with it
        for pid in existing.workers:
            stop_worker_node(pid)
    _check_limits(max_jobs, object_store_mb, nodes, worker_resources)
    command = _ray_command()
    use_token_auth()  # before the head is spawned, so it and its clients agree on the mode
    where.mkdir(parents=True, exist_ok=True)
    temp_dir = _ray_temp_dir(where.resolve())  # Ray refuses a relative one
    num_cpus = num_cpus or os.cpu_count() or 1
    share = max(1, num_cpus // nodes)
    gcs_port = port or _free_port(6379)  # Ray's usual ports when free, any free ones otherwise
    web_port = dashboard_port or _free_port(8265)
    args = _head_args(gcs_port, web_port, share, num_gpus, object_store_mb, max_jobs, temp_dir)
    log_path = where / HEAD_LOG
    process = _spawn_head([*command, *args], where, log_path)
    state = ClusterState(
        state_dir=str(where),
        pid=process.pid,
        gcs_address=f"127.0.0.1:{gcs_port}",
        dashboard_url=f"http://127.0.0.1:{web_port}",
        temp_dir=str(temp_dir),
        num_cpus=int(num_cpus),
        num_gpus=num_gpus,
        object_store_mb=int(object_store_mb),
        max_jobs=int(max_jobs),
        started_at=time.time(),
        log=str(log_path),
        nodes=int(nodes),
        worker_resources=dict(worker_resources) if worker_resources else None,
    )
    _wait_until_ready(process, state.dashboard_url, log_path, timeout_s)
    write_json_atomic(where / STATE_FILE, asdict(state))
    # one node at a time: raylets starting together can pick the same free port and one dies
    for index in range(1, nodes):
        worker = spawn_worker_node(
            state.gcs_address,
            num_cpus=share,
            resources=dict(worker_resources or {}),
            object_store_mb=object_store_mb,
            # a session folder of its own: nodes sharing one remove each other's unpacked job
            # working dirs as "unused" while the job still runs in them
            temp_dir=str(_node_temp_dir(temp_dir, index)),
            log_path=where / NODE_LOG.format(index=index),
            cwd=where,
        )
        state = replace(state, workers=(*state.workers, worker.pid))
        write_json_atomic(where / STATE_FILE, asdict(state))  # `down` finds every node started
        _wait_for_node(state, index, worker, timeout_s)
    return state, True


def _check_limits(
    max_jobs: int, object_store_mb: int, nodes: int, worker_resources: dict[str, float] | None
) -> None:
    if max_jobs < 1:
        raise UserError(f"--max-jobs must be at least 1 (got {max_jobs})")
    if object_store_mb < 80:
        raise UserError(
            f"--object-store-mb must be at least 80 (Ray's minimum; got {object_store_mb})"
        )
    if nodes < 1:
        raise UserError(f"--nodes must be at least 1 (the head; got {nodes})")
    for name, amount in (worker_resources or {}).items():
        if not isinstance(amount, (int, float)) or isinstance(amount, bool) or amount <= 0:
            raise UserError(
                f"--worker-resources {name} must be a positive number (got {amount!r}), "
                "e.g. --worker-resources '{\"gpu_slot\": 2}'"
            )
        if name in ("CPU", "GPU", "memory", "object_store_memory"):
            raise UserError(
                f"--worker-resources names Ray's own resource {name}: give custom ones only"
            )


def _alive_nodes(dashboard_url: str) -> int | None:
    """Live nodes as the dashboard's state API counts them (None when it does not answer)."""
    import_ray()
    from ray.util.state import list_nodes

    try:
        nodes = list_nodes(address=dashboard_url, limit=1000, raise_on_missing_output=False)
    except Exception:  # noqa: BLE001 - a head that does not answer counts no node
        return None
    return sum(1 for node in nodes if node.state == "ALIVE")


def _wait_for_node(
    state: ClusterState, index: int, worker: subprocess.Popen[bytes], timeout_s: float
) -> None:
    """Wait until worker node ``index`` has joined (the head counts it alive and the node has
    said so in its log: the head sees it a moment before the node's own start-up returns); one
    that exits or is too slow stops the whole cluster with one error."""
    log = Path(state.state_dir) / NODE_LOG.format(index=index)
    deadline = time.monotonic() + timeout_s
    while (_alive_nodes(state.dashboard_url) or 0) < index + 1 or not _says_joined(log):
        if worker.poll() is not None:
            down(state.state_dir)
            raise UserError(
                f"worker node {index} exited during start-up (code {worker.returncode}): "
                f"{_tail(log)} (full log: {log})"
            )
        if time.monotonic() > deadline:
            down(state.state_dir)
            raise UserError(f"worker node {index} did not join in {timeout_s:.0f} s; see {log}")
        time.sleep(0.5)


def _says_joined(log: Path) -> bool:
    try:
        return " joined " in log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False


def _head_args(
    gcs_port: int,
    web_port: int,
    num_cpus: int,
    num_gpus: int | None,
    object_store_mb: int,
    max_jobs: int,
    temp_dir: Path,
) -> list[str]:
    """``ray start`` arguments for a loopback-only head with the job-slot resource."""
    args = [
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={gcs_port}",
        "--include-dashboard=true",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={web_port}",
        # Ray's fixed defaults (10001, 52365) would collide with a second cluster on the machine
        f"--ray-client-server-port={_free_port()}",
        f"--dashboard-agent-listen-port={_free_port()}",
        f"--num-cpus={num_cpus}",
        f"--object-store-memory={object_store_mb * 1024 * 1024}",
        f"--resources={json.dumps({JOB_RESOURCE: max_jobs})}",
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]
    if num_gpus is not None:
        args.append(f"--num-gpus={num_gpus}")
    return args


def _spawn_head(argv: list[str], where: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """Start the head detached (it survives this command; ``down`` signals it alone)."""
    return spawn_detached(
        argv,
        where,
        log_path,
        {
            "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",  # nothing to drain on a laptop head
            "RAY_JOB_START_TIMEOUT_SECONDS": str(PENDING_TIMEOUT_S),
        },
    )


def _wait_until_ready(
    process: subprocess.Popen[bytes], dashboard_url: str, log_path: Path, timeout_s: float
) -> None:
    """Wait for the dashboard to answer; a head that exits or is too slow is one clear error
    (and a slow one is stopped)."""
    deadline = time.monotonic() + timeout_s
    while not _dashboard_ready(dashboard_url):
        if process.poll() is not None:
            raise UserError(
                f"the Ray head exited during start-up (code {process.returncode}): "
                f"{_tail(log_path)} (full log: {log_path})"
            )
        if time.monotonic() > deadline:
            _stop(process.pid, 10.0)
            raise UserError(f"the Ray head did not come up in {timeout_s:.0f} s; see {log_path}")
        time.sleep(0.5)


def _stop(pid: int, timeout_s: float) -> None:
    if not is_head(pid):
        return
    os.kill(pid, signal.SIGTERM)  # the head's handler stops its own children
    deadline = time.monotonic() + timeout_s
    while is_head(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    # stragglers of the session the head led: all of them started by `up`
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    reap(pid)


def down(directory: str | os.PathLike[str] | None = None, timeout_s: float = 60.0) -> bool:
    """Stop the local head; False when none was running. Job records are kept."""
    where = state_dir(directory)
    state = read_state(where)
    if state is None:
        return False
    was_alive = state.alive()
    for pid in state.workers:  # first: a node outliving its head waits for it for a minute
        stop_worker_node(pid, timeout_s)
    _stop(state.pid, timeout_s)
    (where / STATE_FILE).unlink(missing_ok=True)
    temp = Path(state.temp_dir)
    if temp.name.startswith("vtts-ray-") and temp.parent == Path(tempfile.gettempdir()):
        # our short-path stand-ins for <state>/ray: Ray's session files, nothing kept
        shutil.rmtree(temp, ignore_errors=True)
        for index in range(1, state.nodes):
            shutil.rmtree(_node_temp_dir(temp, index), ignore_errors=True)
    from jobs.records import JobRecords

    with JobRecords.open(where) as records:
        records.mark_unfinished_lost("the cluster was stopped (`verified-tts cluster down`)")
    return was_alive


def status(directory: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Is the head up; its resources (total and free) and the jobs on it."""
    where = state_dir(directory)
    state = read_state(where)
    if state is None or not state.alive():
        return {"running": False, "state_dir": str(where)}

    def clean(resources: dict[str, float]) -> dict[str, float]:
        return {k: round(v, 3) for k, v in sorted(resources.items()) if not k.startswith("node:")}

    prefer_loopback(state.gcs_address)
    ray = import_ray()
    connected_here = not ray.is_initialized()
    if connected_here:
        ray.init(address=state.gcs_address, log_to_driver=False, logging_level="ERROR")
    try:
        total = ray.cluster_resources()
        free = ray.available_resources()
        nodes = [
            {
                "id": node["NodeID"],
                "head": "node:__internal_head__" in node.get("Resources", {}),
                "resources": clean(node.get("Resources", {})),
            }
            for node in ray.nodes()
            if node.get("Alive")
        ]
    finally:
        if connected_here:
            ray.shutdown()
    from jobs.queue import JobQueue

    active = [
        {"id": r.id, "state": r.state, "command": r.spec.command, "input": r.spec.input_name}
        for r in JobQueue(where).list()
        if r.state in ("PENDING", "RUNNING")
    ]

    return {
        "running": True,
        "state_dir": str(where),
        "address": state.gcs_address,
        "dashboard": state.dashboard_url,
        "pid": state.pid,
        "nodes": len(nodes),
        "node_list": nodes,
        "worker_nodes_started": sum(1 for pid in state.workers if is_worker_node(pid)),
        "max_jobs": state.max_jobs,
        "resources": {"total": clean(total), "available": clean(free)},
        "jobs": active,
    }
