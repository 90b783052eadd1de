"""Every ``verified-tts ...`` line in the README's and docs' shell blocks parses with the real
command line: the command exists, its options exist and take what the line gives them, and no
line uses a spelling that is deprecated (the CLI says so on stderr)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer._click.exceptions import ClickException
from typer.main import get_command

from verified_tts.cli import app

ROOT = Path(__file__).resolve().parents[1]
SHELL = ("", "bash", "sh", "shell", "console")


def _shell_blocks(text: str) -> list[str]:
    """The fenced blocks of ``text`` in a shell language (or none), fences paired in order."""
    blocks, current, language = [], None, ""
    for line in text.splitlines():
        fence = re.match(r"\s*```(\w*)", line)
        if fence and current is None:
            current, language = [], fence.group(1)
        elif fence:
            if language in SHELL:
                blocks.append("\n".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def _lines() -> list[tuple[str, str]]:
    found = []
    docs = ROOT / "docs"
    research = sorted(docs.glob("research/*.md"))
    for path in [ROOT / "README.md", *sorted(docs.glob("*.md")), *research]:
        for block in _shell_blocks(path.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip().removeprefix("$ ")
                if line.startswith("verified-tts "):
                    found.append((path.name, line))
    return found


def _invocations(line: str) -> list[list[str]]:
    words = shlex.split(line, comments=True)
    calls: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", ";", "|"):
            calls.append([])
        else:
            calls[-1].append(word)
    return [call[1:] for call in calls if call and call[0] == "verified-tts"]


LINES = _lines()


def test_the_docs_have_command_lines_to_check():
    assert len(LINES) > 30
    assert {"README.md", "ray.md", "dubbing.md"} <= {name for name, _ in LINES}


@pytest.mark.parametrize(("doc", "line"), LINES, ids=[f"{d}:{i}" for i, (d, _) in enumerate(LINES)])
def test_each_command_line_parses(doc, line, capsys):
    root = get_command(app)
    for args in _invocations(line):
        command, path = root, []
        while args and args[0] in getattr(command, "commands", {}):
            path.append(args[0])
            command = command.commands[args.pop(0)]
        assert path, f"{doc}: no such command in {line!r}"
        try:
            command.make_context(" ".join(path), list(args))
        except ClickException as error:
            pytest.fail(f"{doc}: {line!r}: {error.format_message()}")
        assert "deprecated" not in capsys.readouterr().err, f"{doc}: {line!r}"


def test_a_wrong_option_is_caught():
    root = get_command(app)
    with pytest.raises(ClickException):
        root.commands["render"].make_context("render", ["book.md", "--no-such-option"])
