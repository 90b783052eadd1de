"""How every command reports: human lines on stderr, or with ``--json`` one JSON value on stdout.

:class:`Report` is the one reporter: ``emit(payload, human)`` prints ``payload`` as JSON on stdout
with ``--json`` (and writes it to ``--json-out FILE`` when that is given), or calls ``human`` to
print tables and lines on stderr; inside ``errors()`` a :class:`~verified_tts.errors.UserError`
becomes ``{"error": ...}`` on stdout under ``--json`` (still a non-zero exit). ``--json`` means
"print JSON on stdout" for every command, as in gh or kubectl; the producer's commands once wrote
a file with ``--json FILE``, which :class:`JsonFileCompat` still accepts, saying on stderr that
``--json-out FILE`` is the spelling now. :class:`RunProgress` is the progress bar that render,
dub and ab hand to the library, and :func:`interruptible` turns Ctrl-C into a line saying the
finished work is kept.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from typer.core import TyperCommand

from verified_tts.errors import UserError

__all__ = [
    "JsonFileCompat",
    "JsonOption",
    "JsonOutOption",
    "Report",
    "RunProgress",
    "console",
    "interruptible",
    "warn",
]

console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
JsonOutOption = Annotated[
    Path | None,
    typer.Option("--json-out", help="Also write the JSON to this file (the human output stays)."),
]


def warn(message: str) -> None:
    console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


class Report:
    """One command's output: JSON on stdout (``as_json``), a JSON file (``json_out``), or the
    human lines on stderr."""

    def __init__(self, as_json: bool = False, json_out: Path | None = None) -> None:
        self.as_json = as_json
        self.json_out = json_out

    def emit(self, payload: Any, human: Callable[[], None] = lambda: None) -> None:
        if self.json_out is not None:
            from verified_tts.storage.atomic import write_text_atomic

            write_text_atomic(self.json_out, json.dumps(payload, indent=2, ensure_ascii=False,
                                                        default=str) + "\n")  # fmt: skip
        if self.as_json:
            sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
            sys.stdout.flush()
        else:
            human()

    def say(self, line: str) -> None:
        """A progress line for people: on stderr, and not at all under ``--json``."""
        if not self.as_json:
            console.print(line)

    @contextmanager
    def errors(self) -> Iterator[None]:
        """With ``--json``, a user error is JSON too (one object on stdout), with its exit code."""
        try:
            yield
        except UserError as error:
            if not self.as_json:
                raise
            payload: dict[str, Any] = {"error": str(error)}
            record = getattr(error, "record", None)
            if record is not None:  # a duplicate job: point at the first one
                payload.update({"id": record.id, "state": record.state})
            sys.stdout.write(json.dumps(payload) + "\n")
            raise typer.Exit(error.exit_code) from None


class JsonFileCompat(TyperCommand):
    """A command whose ``--json FILE`` wrote a file before ``--json`` meant stdout: that spelling
    still works, as ``--json-out FILE``, with a note on stderr.

    The word after ``--json`` is taken as the old FILE when it is not an option and either the
    command takes no arguments, or it names a ``.json`` file or nothing that exists (so
    ``check --json take.wav`` checks take.wav instead of overwriting it)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        takes_arguments = any(p.param_type_name == "argument" for p in self.params)
        rewritten: list[str] = []
        rest = list(args)
        while rest:
            word = rest.pop(0)
            if word == "--":
                rewritten += [word, *rest]
                break
            if word.startswith("--json="):
                rewritten += self._old_spelling(word.partition("=")[2])
            elif word == "--json" and rest and _old_file(rest[0], takes_arguments):
                rewritten += self._old_spelling(rest.pop(0))
            else:
                rewritten.append(word)
        return super().parse_args(ctx, rewritten)

    @staticmethod
    def _old_spelling(path: str) -> list[str]:
        console.print(
            f"[yellow]deprecated:[/] --json {escape(path)} is now --json-out {escape(path)} "
            "(--json alone prints the JSON on stdout)",
            highlight=False,
            soft_wrap=True,
        )
        return ["--json-out", path]


def _old_file(word: str, takes_arguments: bool) -> bool:
    if word.startswith("-"):
        return False
    if not takes_arguments:
        return True
    return word.lower().endswith(".json") or not Path(word).exists()


class RunProgress:
    """Progress-bar callbacks that render, dub and ab hand to the library; ``record`` (a queued
    job's :class:`jobs.progress.ProgressFile`) is told the same progress."""

    def __init__(self, label: str, generator: str, record: Any = None) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task(label, total=None, note="0 flagged")
        self.flagged = 0
        self.judging: TaskID | None = None
        self.generator = generator
        self.record = record

    def callbacks(self) -> dict[str, Callable[..., None]]:
        """The keywords a workflow takes: ``on_loading``, ``on_start``, ``on_result``."""
        return {
            "on_loading": self.on_loading,
            "on_start": self.on_start,
            "on_result": self.on_result,
        }

    def judge_callbacks(self) -> dict[str, Callable[..., None]]:
        """The keywords of an A/B workflow's judging, shown as a second bar: ``on_judge_start``,
        ``on_judged``."""
        return {"on_judge_start": self.on_judge_start, "on_judged": self.on_judged}

    def on_judge_start(self, total: int) -> None:
        self.judging = self.progress.add_task("judging takes", total=total, note="")
        self.progress.start()

    def on_judged(self, count: int) -> None:
        self.progress.update(self.judging, advance=count)

    def on_loading(self) -> None:
        console.print(f"loading models for {self.generator} ...")

    def on_start(self, total: int) -> None:
        self.progress.update(self.task, total=total)
        self.progress.start()
        if self.record is not None:
            self.record.start(total)

    def on_result(self, result: Any) -> None:  # result: UtteranceResult
        self.flagged += result.flagged
        self.progress.update(self.task, advance=1, note=f"{self.flagged} flagged")
        if self.record is not None:
            self.record.advance(bool(result.flagged))


@contextmanager
def interruptible(progress: RunProgress | None = None) -> Iterator[None]:
    """Stop the progress bar on the way out; Ctrl-C says the work is kept and exits 130."""
    bar = progress.progress if progress is not None else None
    try:
        yield
    except KeyboardInterrupt:
        if bar is not None and bar.live.is_started:
            bar.stop()
        console.print(
            "[yellow]interrupted:[/] finished utterances are kept in the output folder's store; "
            "run the same command again to resume",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    finally:
        if bar is not None and bar.live.is_started:
            bar.stop()
