"""``verified-tts cluster ...`` and ``verified-tts jobs ...``: the Ray cluster and job queue CLI.

Two typer sub-apps that :mod:`verified_tts.cli.commands` mounts. ``cluster up|down|status`` manage
the local loopback head (:mod:`verified_tts.cluster.head`); ``jobs submit render|dub FILE
[options]``, ``list``, ``status``, ``logs [--follow]``, ``cancel`` and ``resume`` drive the queue
(:mod:`jobs.queue`). ``jobs submit`` forwards every option it does not know to the render or dub
command, after checking them against that command's own parser, so a typo fails at submission and
not on the cluster. Every command takes ``--json`` and then prints exactly one JSON object (``jobs
list``: one array) on stdout, errors included (``{"error": ...}``, non-zero exit).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from verified_tts.errors import UserError

__all__ = ["cluster_app", "jobs_app"]

console = Console(stderr=True)

cluster_app = typer.Typer(
    help="Start, stop and inspect a local Ray head bound to 127.0.0.1.", no_args_is_help=True
)
jobs_app = typer.Typer(
    help="Queue render and dub jobs on a Ray cluster (Ray Jobs API).", no_args_is_help=True
)
submit_app = typer.Typer(help="Submit a render or dub job.", no_args_is_help=True)
jobs_app.add_typer(submit_app, name="submit")
stage_app = typer.Typer(
    help="Stage a render or dub job on shared storage for a KubeRay RayJob (nothing is "
    "submitted); prints the RayJob spec fields (docs/kubernetes.md).",
    no_args_is_help=True,
)
jobs_app.add_typer(stage_app, name="stage")

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
DirOption = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="Cluster state and job records (default $VERIFIED_TTS_CLUSTER_DIR or "
        "~/.local/state/verified-tts/cluster).",
    ),
]
AddressOption = Annotated[
    str | None,
    typer.Option(
        "--address", help="Jobs API of an existing cluster, e.g. http://HEAD:8265 (default: local)."
    ),
]
JobIdArgument = Annotated[str, typer.Argument(help="Job id (a unique prefix is enough).")]
PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def _emit(as_json: bool, payload: Any, human: Callable[[], None]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()
    else:
        human()


@contextmanager
def _errors(as_json: bool) -> Iterator[None]:
    """With --json, errors are JSON too (one object on stdout), still with a non-zero exit."""
    try:
        yield
    except UserError as error:
        if not as_json:
            raise
        payload: dict[str, Any] = {"error": str(error)}
        record = getattr(error, "record", None)
        if record is not None:  # a duplicate: point at the first job
            payload.update({"id": record.id, "state": record.state})
        sys.stdout.write(json.dumps(payload) + "\n")
        raise typer.Exit(error.exit_code) from None


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


# ------------------------------------------------------------------------------------------------
# cluster


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
    port: Annotated[int | None, typer.Option("--port", help="GCS port (default 6379).")] = None,
    dashboard_port: Annotated[
        int | None, typer.Option("--dashboard-port", help="Dashboard/Jobs API port (8265).")
    ] = None,
    state_dir: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Start a local Ray head on 127.0.0.1 (dashboard on loopback only)."""
    from dataclasses import asdict

    from verified_tts.cluster import head as cluster

    with _errors(as_json):
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

    _emit(as_json, {**asdict(state), "started": started}, human)


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

    with _errors(as_json):
        stopped = cluster.down(state_dir)

    def human() -> None:
        console.print("cluster stopped" if stopped else "no cluster was running")

    _emit(as_json, {"stopped": stopped, "state_dir": str(cluster.state_dir(state_dir))}, human)


@cluster_app.command("status")
def cluster_status(state_dir: DirOption = None, as_json: JsonOption = False) -> None:
    """Resources (total / free) and the jobs on the local head."""
    from verified_tts.cluster import head as cluster

    with _errors(as_json):
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

    _emit(as_json, info, human)


# ------------------------------------------------------------------------------------------------
# jobs


def _queue(state_dir: Path | None, address: str | None) -> Any:
    from jobs.queue import JobQueue

    return JobQueue(state_dir, address)


def _check_options(ctx: typer.Context, command: str, input_file: Path, args: Sequence[str]) -> None:
    """Parse the forwarded options with the real command, so a typo fails now.

    The command is found through the root of the running command line, not by importing the
    app that mounts this module (which would make the two modules import each other).
    """
    from typer._click.exceptions import ClickException

    group = ctx.find_root().command
    target = group.commands[command]  # type: ignore[attr-defined]
    try:
        target.make_context(command, [str(input_file), *args])
    except ClickException as error:
        raise UserError(f"`{command}` options: {error.format_message()}") from error


def _submit(
    command: str,
    ctx: typer.Context,
    input_file: Path,
    out: Path | None,
    state_dir: Path | None,
    address: str | None,
    as_json: bool,
) -> None:
    with _errors(as_json):
        args = list(ctx.args)
        _check_options(ctx, command, input_file, args)
        record = _queue(state_dir, address).submit(
            command, input_file, args, str(out) if out else None
        )

    def human() -> None:
        if record.attempts > 1:  # the same spec SUCCEEDED before and its output was deleted
            console.print(f"job {record.id} {escape(record.message)}")
        console.print(
            f"submitted job [bold]{record.id}[/] ({record.state}); output in {record.output}\n"
            f"follow it: verified-tts jobs logs {record.id} --follow"
        )

    _emit(
        as_json,
        {
            "id": record.id,
            "state": record.state,
            "output": record.output,
            "attempts": record.attempts,
            "message": record.message,
        },
        human,
    )


OutOption = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Output folder where the job runs (default out/<name>)."),
]


@submit_app.command("render", context_settings=PASSTHROUGH)
def submit_render(
    ctx: typer.Context,
    book: Annotated[Path, typer.Argument(help="Markdown book.", show_default=False)],
    out: OutOption = None,
    state_dir: DirOption = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """Queue `verified-tts render BOOK`; any render option may follow BOOK."""
    _submit("render", ctx, book, out, state_dir, address, as_json)


@submit_app.command("dub", context_settings=PASSTHROUGH)
def submit_dub(
    ctx: typer.Context,
    subtitles: Annotated[Path, typer.Argument(help="SRT or WebVTT file.", show_default=False)],
    out: OutOption = None,
    state_dir: DirOption = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """Queue `verified-tts dub SUBTITLES`; any dub option may follow SUBTITLES."""
    _submit("dub", ctx, subtitles, out, state_dir, address, as_json)


StageDirOption = Annotated[
    Path,
    typer.Option("--dir", help="Folder on the volume every pod mounts; the job's dir goes in it."),
]
ImagePythonOption = Annotated[
    str, typer.Option("--python", help="The job image's interpreter (default: python).")
]


def _stage(
    command: str,
    ctx: typer.Context,
    input_file: Path,
    out: Path | None,
    directory: Path,
    python: str,
    as_json: bool,
) -> None:
    with _errors(as_json):
        args = list(ctx.args)
        _check_options(ctx, command, input_file, args)
        from jobs.kubernetes import rayjob_fields, stage_job

        spec, working_dir = stage_job(
            command, input_file, args, str(out) if out else None, directory
        )
        fields = rayjob_fields(spec, str(working_dir), python=python)

    def human() -> None:
        import yaml

        console.print(f"staged job {spec.job_id} in {working_dir}; output in {spec.out}")
        sys.stdout.write("# RayJob spec fields (docs/kubernetes/rayjob.yaml)\n")
        sys.stdout.write(yaml.safe_dump(fields, sort_keys=False))

    _emit(as_json, {"id": spec.job_id, "working_dir": str(working_dir), "rayjob": fields}, human)


@stage_app.command("render", context_settings=PASSTHROUGH)
def stage_render(
    ctx: typer.Context,
    book: Annotated[Path, typer.Argument(help="Book to render.", show_default=False)],
    directory: StageDirOption,
    out: OutOption = None,
    python: ImagePythonOption = "python",
    as_json: JsonOption = False,
) -> None:
    """Stage `verified-tts render BOOK` for a RayJob; any render option may follow BOOK."""
    _stage("render", ctx, book, out, directory, python, as_json)


@stage_app.command("dub", context_settings=PASSTHROUGH)
def stage_dub(
    ctx: typer.Context,
    subtitles: Annotated[Path, typer.Argument(help="SRT or WebVTT file.", show_default=False)],
    directory: StageDirOption,
    out: OutOption = None,
    python: ImagePythonOption = "python",
    as_json: JsonOption = False,
) -> None:
    """Stage `verified-tts dub SUBTITLES` for a RayJob; any dub option may follow SUBTITLES."""
    _stage("dub", ctx, subtitles, out, directory, python, as_json)


def _record_table(records: Sequence[Any], title: str) -> Table:
    table = Table(title=title)
    for column in ("id", "state", "command", "input", "submitted", "attempts", "output"):
        table.add_column(column)
    for r in records:
        table.add_row(
            r.id,
            r.state,
            r.spec.command,
            escape(r.spec.input_name),
            _when(r.submitted_at),
            str(r.attempts),
            escape(r.output),
        )
    return table


@jobs_app.command("list")
def jobs_list(
    state_dir: DirOption = None, address: AddressOption = None, as_json: JsonOption = False
) -> None:
    """Every known job, oldest first (also jobs of an earlier run of the cluster)."""
    with _errors(as_json):
        records = _queue(state_dir, address).list()
    payload = [
        {k: v for k, v in r.as_dict().items() if k not in ("spec", "history")} for r in records
    ]
    _emit(as_json, payload, lambda: console.print(_record_table(records, "jobs")))


@jobs_app.command("status")
def jobs_status(
    job_id: JobIdArgument,
    state_dir: DirOption = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """A job's state, message, output folder and state history."""
    with _errors(as_json):
        record = _queue(state_dir, address).status(job_id)

    def human() -> None:
        console.print(_record_table([record], f"job {record.id}"))
        if record.message:
            console.print(f"message: {escape(record.message)}")
        for change in record.history:
            console.print(
                f"  {_when(change.at)}  attempt {change.attempt}  {change.state:<9} "
                f"{escape(change.message)}"
            )

    _emit(as_json, record.as_dict(), human)


@jobs_app.command("logs")
def jobs_logs(
    job_id: JobIdArgument,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Stream until the job ends.")
    ] = False,
    state_dir: DirOption = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """A job's log (its latest attempt). With --json --follow: one object once it has ended."""
    queue = _queue(state_dir, address)

    def write(text: str) -> None:
        if not as_json:
            sys.stdout.write(text)
            sys.stdout.flush()

    with _errors(as_json):
        text = queue.logs(job_id, follow=follow, write=write)
        record = queue.status(job_id)
    _emit(as_json, {"id": record.id, "state": record.state, "logs": text}, lambda: None)


@jobs_app.command("cancel")
def jobs_cancel(
    job_id: JobIdArgument,
    state_dir: DirOption = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop a PENDING or RUNNING job (its finished utterances stay in the store)."""
    with _errors(as_json):
        record = _queue(state_dir, address).cancel(job_id)
    _emit(
        as_json,
        {"id": record.id, "state": record.state, "message": record.message},
        lambda: console.print(f"job {record.id}: {record.state}"),
    )


@jobs_app.command("resume")
def jobs_resume(
    job_id: JobIdArgument,
    state_dir: DirOption = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """Submit a FAILED or STOPPED job again; it continues from the store."""
    with _errors(as_json):
        record = _queue(state_dir, address).resume(job_id)
    payload = {
        "id": record.id,
        "state": record.state,
        "attempts": record.attempts,
        "submission_id": record.submission_id,
    }
    _emit(
        as_json,
        payload,
        lambda: console.print(
            f"job {record.id} resubmitted (attempt {record.attempts}, {record.state})"
            + ("" if record.message == "resumed" else f": {escape(record.message)}")
        ),
    )
