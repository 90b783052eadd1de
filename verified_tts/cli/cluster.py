"""``verified-tts cluster up|down|status``: the local Ray head on loopback.

A typer group that :mod:`verified_tts.cli.commands` mounts; each command calls
:mod:`verified_tts.cluster.head`. With ``--json`` each prints exactly one JSON object on stdout,
errors included (``{"error": ...}``, non-zero exit; :class:`verified_tts.cli.report.Report`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from verified_tts.cli.report import JsonOption, Report, console
from verified_tts.errors import UserError

__all__ = ["DirOption", "cluster_app"]

cluster_app = typer.Typer(
    help="Start, stop and inspect a local Ray head bound to 127.0.0.1.", no_args_is_help=True
)

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="Cluster state and job records (default $VERIFIED_TTS_CLUSTER_DIR or "
        "~/.local/state/verified-tts/cluster).",
    ),
]


@cluster_app.command("up")
def cluster_up(
    num_cpus: Annotated[
        int | None, typer.Option("--num-cpus", help="CPUs Ray may schedule (default: all).")
    ] = None,
    num_gpus: Annotated[
        int | None, typer.Option("--num-gpus", help="GPUs Ray may schedule (default: detected).")
    ] = None,
    object_store_mb: Annotated[
        int, typer.Option("--object-store-mb", help="Shared-memory object store size.")
    ] = 512,
    max_jobs: Annotated[
        int, typer.Option("--max-jobs", help="Jobs running at once; the rest wait PENDING.")
    ] = 1,
    nodes: Annotated[
        int,
        typer.Option(
            "--nodes",
            help="Nodes on this machine: the head plus NODES-1 worker nodes, each with its share "
            "of --num-cpus (for trying multi-node runs locally).",
        ),
    ] = 1,
    worker_resources: Annotated[
        str | None,
        typer.Option(
            "--worker-resources",
            help="Custom resources of each worker node as JSON, e.g. '{\"gpu_slot\": 2}'.",
        ),
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", min=1, max=65535, help="GCS port (default 6379).")
    ] = None,
    dashboard_port: Annotated[
        int | None,
        typer.Option("--dashboard-port", min=1, max=65535, help="Dashboard/Jobs API port (8265)."),
    ] = None,
    state_dir: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Start a local Ray head on 127.0.0.1 (dashboard on loopback only)."""
    from dataclasses import asdict

    from verified_tts.cluster import head as cluster

    with Report(as_json).errors():
        if not as_json:
            console.print("starting a Ray head on 127.0.0.1 ...")
        state, started = cluster.up(
            directory=state_dir,
            num_cpus=num_cpus,
            num_gpus=num_gpus,
            object_store_mb=object_store_mb,
            port=port,
            dashboard_port=dashboard_port,
            max_jobs=max_jobs,
            nodes=nodes,
            worker_resources=_resources_json(worker_resources),
        )

    def human() -> None:
        verb = "started" if started else "already running"
        console.print(
            f"cluster {verb}: address {state.gcs_address}, dashboard {state.dashboard_url}, "
            f"{state.nodes} node(s), {state.num_cpus} CPUs, {state.max_jobs} job(s) at once; "
            f"state in {state.state_dir}"
        )

    Report(as_json).emit({**asdict(state), "started": started}, human)


def _resources_json(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(
            f"--worker-resources is not JSON ({error.msg}): write it as '{{\"gpu_slot\": 2}}'"
        ) from error
    if not isinstance(value, dict):
        raise UserError("--worker-resources must be a JSON object, e.g. '{\"gpu_slot\": 2}'")
    return value


@cluster_app.command("down")
def cluster_down(state_dir: DirOption = None, as_json: JsonOption = False) -> None:
    """Stop the local Ray head (job records are kept)."""
    from verified_tts.cluster import head as cluster

    with Report(as_json).errors():
        stopped = cluster.down(state_dir)

    def human() -> None:
        console.print("cluster stopped" if stopped else "no cluster was running")

    Report(as_json).emit(
        {"stopped": stopped, "state_dir": str(cluster.state_dir(state_dir))}, human
    )


@cluster_app.command("status")
def cluster_status(state_dir: DirOption = None, as_json: JsonOption = False) -> None:
    """Resources (total / free) and the jobs on the local head."""
    from verified_tts.cluster import head as cluster

    with Report(as_json).errors():
        info = cluster.status(state_dir)

    def human() -> None:
        if not info["running"]:
            console.print(f"no cluster running (state in {info['state_dir']})")
            return
        table = Table(title=f"Ray cluster {info['address']}", show_header=False)
        table.add_row("dashboard", info["dashboard"])
        table.add_row("nodes", str(info["nodes"]))
        for node in info.get("node_list", []):
            kind = "head" if node["head"] else "worker"
            custom = {
                k: v for k, v in node["resources"].items() if "memory" not in k and k != "CPU"
            }
            table.add_row(
                f"  {kind} {node['id'][:12]}",
                escape(f"{node['resources'].get('CPU', 0):g} CPU {json.dumps(custom)}"),
            )
        table.add_row("jobs at once", str(info["max_jobs"]))
        total, free = info["resources"]["total"], info["resources"]["available"]
        for name, value in total.items():
            if "memory" in name:  # bytes: show GiB
                table.add_row(
                    name, f"{free.get(name, 0) / 2**30:.2f} GiB free of {value / 2**30:.2f}"
                )
            else:
                table.add_row(escape(name), f"{free.get(name, 0):g} free of {value:g}")
        for job in info["jobs"]:
            table.add_row(f"job {job['id']}", f"{job['state']}: {job['command']} {job['input']}")
        console.print(table)

    Report(as_json).emit(info, human)
