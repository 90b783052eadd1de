"""The command line's shape: the shared options declared once, every command mounted one way,
and ``--json`` meaning one thing (one JSON object on stdout) in every command that takes it, with
the producer's commands' old ``--json FILE`` still writing the file and saying it is deprecated."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import numpy as np
import soundfile as sf
import typer
from typer.main import get_command
from typer.testing import CliRunner

from verified_tts.cli import app
from verified_tts.cli.options import SHARED_OPTIONS, SynthesisArgs, synthesis_options

CLI_DIR = Path(__file__).resolve().parents[1] / "verified_tts" / "cli"
runner = CliRunner()


def _commands(group, path=()):
    """(path, click command) for every leaf command under ``group``."""
    for name, command in getattr(group, "commands", {}).items():
        if getattr(command, "commands", None):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _book(tmp_path: Path) -> Path:
    book = tmp_path / "book.md"
    book.write_text("# Tale\n\n## One\n\nThe wolf ran.\n\n## Two\n\nA lamb sat by the river.\n")
    return book


def test_each_shared_option_is_declared_once():
    source = "\n".join(path.read_text(encoding="utf-8") for path in CLI_DIR.glob("*.py"))
    for flag in ("--generator", "--model", "--codec", "--voice-ref", "--seed", "--config"):
        assert len(re.findall(rf'typer\.Option\(\s*"{flag}"', source)) == 1, flag


def test_the_commands_that_synthesise_take_the_same_declarations():
    root = get_command(app)
    for name in ("render", "dub", "ab", "calibrate", "rerender"):
        options = {p.name: p for p in root.commands[name].params}
        for shared in ("generator", "model", "codec", "voice", "seed", "config"):
            assert shared in options, (name, shared)
            declared = SHARED_OPTIONS[shared].__metadata__[0]
            assert options[shared].help == declared.help


def test_the_option_group_reaches_the_command_as_one_value():
    seen: list[SynthesisArgs] = []
    toy = typer.Typer()

    @toy.command()
    @synthesis_options("seed", "voice", "config")
    def speak(
        synthesis: SynthesisArgs,
        word: Annotated[str, typer.Argument()],
        loud: bool = False,
    ) -> None:
        seen.append(synthesis)

    result = runner.invoke(toy, ["hi", "--seed", "7", "--voice", "f3"])
    assert result.exit_code == 0, result.output
    assert seen == [SynthesisArgs(seed=7, voice="f3")]
    assert seen[0].overrides() == {"seed": 7, "voice": "f3"}
    assert runner.invoke(toy, ["hi", "--model", "x"]).exit_code != 0  # not one it took


def test_json_is_a_flag_that_prints_to_stdout_everywhere():
    with_json = [path for path, command in _commands(get_command(app))
                 if any("--json" in p.opts for p in command.params)]  # fmt: skip
    assert {("check",), ("words",), ("chapters",), ("voices",), ("jobs", "list")} <= set(with_json)
    for path, command in _commands(get_command(app)):
        for param in command.params:
            if "--json" in getattr(param, "opts", ()):
                assert param.is_flag, path


def test_json_prints_one_object_and_the_old_spelling_still_writes_the_file(tmp_path):
    book = _book(tmp_path)
    printed = runner.invoke(app, ["chapters", str(book), "--json"])
    assert printed.exit_code == 0, printed.output
    data = json.loads(printed.stdout)
    assert [c["title"] for c in data["chapters"]] == ["Tale", "One", "Two"]
    assert "deprecated" not in printed.stderr

    old = tmp_path / "chapters.json"
    written = runner.invoke(app, ["chapters", str(book), "--json", str(old)])
    assert written.exit_code == 0, written.output
    assert json.loads(old.read_text())["chapters"] == data["chapters"]
    assert "deprecated: --json" in written.stderr and "--json-out" in written.stderr
    assert "Tale" in written.stderr and written.stdout == ""  # the human table, on stderr

    new = tmp_path / "words.json"
    words = runner.invoke(app, ["words", str(book), "--json-out", str(new), "--json"])
    assert words.exit_code == 0, words.output
    assert json.loads(new.read_text()) == json.loads(words.stdout)
    assert "deprecated" not in words.stderr


def test_json_before_an_audio_file_checks_it_instead_of_overwriting_it(tmp_path):
    take = tmp_path / "take.wav"
    sf.write(take, np.zeros(2205, dtype=np.float32), 22050)
    before = take.read_bytes()
    result = runner.invoke(app, ["check", "--json", str(take)])
    assert take.read_bytes() == before
    data = json.loads(result.stdout)
    assert data["files"][0]["path"].endswith("take.wav") and data["passed"] is False
    assert result.exit_code == 1  # silence fails ACX


def test_json_errors_are_json_too(tmp_path):
    result = runner.invoke(app, ["chapters", str(tmp_path / "missing.md"), "--json"])
    assert result.exit_code != 0
    assert "error" in json.loads(result.stdout)
