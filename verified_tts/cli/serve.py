"""``verified-tts serve``: parses the options and runs the HTTP service (verified_tts.service)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verified_tts.cli.options import SynthesisArgs, synthesis_options
from verified_tts.cli.report import console, warn

__all__ = ["app"]

app = typer.Typer()


@app.command("serve")
@synthesis_options("candidates", "generator", "model", "voice", "seed", "adaptive", "config", "ray")
def serve_command(
    synthesis: SynthesisArgs,
    directory: Annotated[
        Path, typer.Option("--dir", help="The service's folder: store, records, jobs, Ray's files.")
    ] = Path("serve"),
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (only this machine by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: any free port).")
    ] = 8000,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="File whose first line is the token.")
    ] = None,
    replicas: Annotated[int, typer.Option("--replicas", help="Synthesis replicas.")] = 1,
    max_queue: Annotated[
        int, typer.Option("--max-queue", help="Speech requests in flight before 429.")
    ] = 64,
    num_cpus: Annotated[
        int | None,
        typer.Option(
            "--num-cpus",
            help="CPUs of the local Ray instance (default: the machine's). The Speaker takes 1, "
            "a job's generator 1 and each verifier 0.25, so 4 runs speech and a job on 2 cores.",
        ),
    ] = None,
) -> None:
    """Serve verified speech over HTTP (OpenAI-compatible /v1/audio/speech) on Ray Serve."""
    from verified_tts.service.launcher import ServeOptions, serve_forever

    if host not in ("127.0.0.1", "localhost", "::1"):
        warn(f"--host {host}: the service answers other machines; keep the token secret")
    options = ServeOptions(
        home=directory, host=host, port=port, ray=synthesis.ray, token_file=token_file,
        table=synthesis.table(), overrides=synthesis.overrides(), replicas=replicas,
        max_queue=max_queue, num_cpus=num_cpus,
    )  # fmt: skip
    try:
        serve_forever(
            options, say=lambda line: console.print(escape(line), soft_wrap=True, highlight=False)
        )
    except KeyboardInterrupt:
        console.print("[yellow]stopped:[/] answers and jobs are kept in " + escape(str(directory)))
