"""``verified-tts jobs ...``: the job queue on a Ray cluster (Ray Jobs API).

A typer group that :mod:`verified_tts.cli.commands` mounts. ``jobs submit render|dub FILE
[options]``, ``stage``, ``list``, ``status``, ``logs [--follow]``, ``cancel`` and ``resume``
drive the queue (:mod:`jobs.queue`). ``jobs submit`` forwards every option it does not know to
the render or dub command, after checking them against that command's own parser, so a typo fails
at submission and not on the cluster. Every command takes ``--json`` and then prints exactly one
JSON object (``jobs list``: one array) on stdout, errors included (``{"error": ...}``, non-zero
exit; :class:`verified_tts.cli.report.Report`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from verified_tts.cli.cluster import DirOption
from verified_tts.cli.report import JsonOption, Report, console
from verified_tts.cli.tables import copy_table
from verified_tts.errors import UserError

__all__ = ["jobs_app"]

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

AddressOption = Annotated[
    str | None,
    typer.Option(
        "--address", help="Jobs API of an existing cluster, e.g. http://HEAD:8265 (default: local)."
    ),
]
JobIdArgument = Annotated[str, typer.Argument(help="Job id (a unique prefix is enough).")]
PASSTHROUGH = {"allow_extra_args": True, "ignore_unknown_options": True}


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


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
    with Report(as_json).errors():
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

    Report(as_json).emit(
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
    with Report(as_json).errors():
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

    Report(as_json).emit(
        {"id": spec.job_id, "working_dir": str(working_dir), "rayjob": fields}, human
    )


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
    columns = ("id", "state", "command", "input", "submitted", "attempts", "output")
    table = copy_table(title, columns, keys=("id",))
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
    with Report(as_json).errors():
        records = _queue(state_dir, address).list()
    payload = [
        {k: v for k, v in r.as_dict().items() if k not in ("spec", "history")} for r in records
    ]
    Report(as_json).emit(payload, lambda: console.print(_record_table(records, "jobs")))


@jobs_app.command("status")
def jobs_status(
    job_id: JobIdArgument,
    state_dir: DirOption = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """A job's state, message, output folder and state history."""
    with Report(as_json).errors():
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

    Report(as_json).emit(record.as_dict(), human)


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

    with Report(as_json).errors():
        text = queue.logs(job_id, follow=follow, write=write)
        record = queue.status(job_id)
    Report(as_json).emit({"id": record.id, "state": record.state, "logs": text}, lambda: None)


@jobs_app.command("cancel")
def jobs_cancel(
    job_id: JobIdArgument,
    state_dir: DirOption = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop a PENDING or RUNNING job (its finished utterances stay in the store)."""
    with Report(as_json).errors():
        record = _queue(state_dir, address).cancel(job_id)
    Report(as_json).emit(
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
    with Report(as_json).errors():
        record = _queue(state_dir, address).resume(job_id)
    payload = {
        "id": record.id,
        "state": record.state,
        "attempts": record.attempts,
        "submission_id": record.submission_id,
    }
    Report(as_json).emit(
        payload,
        lambda: console.print(
            f"job {record.id} resubmitted (attempt {record.attempts}, {record.state})"
            + ("" if record.message == "resumed" else f": {escape(record.message)}")
        ),
    )
