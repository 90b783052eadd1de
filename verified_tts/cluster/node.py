"""Worker nodes of a local multi-node cluster: ``cluster up --nodes K`` starts K-1 of these.

Each worker node is a process of its own session running ``python -m verified_tts.cluster.node``,
which starts one Ray raylet with its own CPUs, object store and custom resources, joined to the
local head, and stops it again on SIGTERM. Everything stays on 127.0.0.1: the head runs in Ray's
single-machine mode (which keeps every server on loopback), and in that mode ``ray start
--address`` refuses to add a node, so the node is started the way Ray's own
``ray.cluster_utils.Cluster`` adds nodes for multi-node testing on one machine. A node killed from
outside (SIGKILL of its process group) is exactly a lost machine to the rest of the cluster, which
is what the node-loss tests do.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from verified_tts.cluster.state import process_alive, reap, spawn_detached
from verified_tts.errors import UserError

__all__ = ["is_worker_node", "main", "spawn_worker_node", "stop_worker_node"]

_MODULE = "verified_tts.cluster.node"


def spawn_worker_node(
    gcs_address: str,
    *,
    num_cpus: int,
    resources: dict[str, float],
    object_store_mb: int,
    temp_dir: str,
    log_path: Path,
    cwd: Path,
) -> subprocess.Popen[bytes]:
    """Start one worker node detached (its own session, so ``down`` can stop it alone)."""
    argv = [
        sys.executable,
        "-m",
        _MODULE,
        "--address",
        gcs_address,
        "--num-cpus",
        str(num_cpus),
        "--resources",
        json.dumps(resources),
        "--object-store-mb",
        str(object_store_mb),
        "--temp-dir",
        temp_dir,
    ]
    return spawn_detached(argv, cwd, log_path)


def is_worker_node(pid: int) -> bool:
    """Is ``pid`` a live worker-node process of ours (not a recycled pid)?"""
    reap(pid)
    if not process_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the pid
    return _MODULE.encode() in cmdline


def stop_worker_node(pid: int, timeout_s: float = 30.0) -> None:
    """SIGTERM (the node stops its raylet and workers), then SIGKILL of what is left."""
    if not is_worker_node(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while is_worker_node(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    reap(pid)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {_MODULE}", description=__doc__)
    parser.add_argument("--address", required=True, help="the head's GCS address, HOST:PORT")
    parser.add_argument("--num-cpus", type=int, required=True)
    parser.add_argument("--resources", default="{}", help="custom resources as JSON")
    parser.add_argument("--object-store-mb", type=int, default=200)
    parser.add_argument("--temp-dir", required=True)
    args = parser.parse_args(argv)
    # before Ray is imported: Ray reads it once, and without it 127.0.0.1 becomes the machine's
    # external address, where a loopback-only head does not listen
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        from ray._private.node import Node
        from ray._private.parameter import RayParams
    except ImportError as error:
        raise UserError("a worker node needs Ray: pip install 'verified-tts[ray]'") from error

    params = RayParams(
        node_ip_address="127.0.0.1",
        gcs_address=args.address,
        num_cpus=args.num_cpus,
        num_gpus=0,
        resources=json.loads(args.resources),
        object_store_memory=args.object_store_mb * 1024 * 1024,
        # ports of their own, picked by the OS: several nodes share this machine
        min_worker_port=0,
        max_worker_port=0,
        node_manager_port=0,
        include_log_monitor=False,  # the head's log monitor already reads this machine's logs
        temp_dir=args.temp_dir,
    )
    params.dashboard_agent_listen_port = None
    node = Node(params, head=False, shutdown_at_exit=True, spawn_reaper=True)
    print(f"worker node {node.node_id} joined {args.address}", flush=True)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _frame: stopping.append(signum))
    while not stopping:
        time.sleep(0.5)
    node.kill_all_processes(check_alive=False, allow_graceful=True, wait=True)
    print(f"worker node {node.node_id} stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
