"""Tables a user copies from show their key column whole in an 80-column terminal.

``verified-tts voices`` once showed "piper:en_US…" at 80 columns; the name is what a user types
into ``--voice`` and a cast file, so every voice name must appear whole on one line. The same
rule holds for the other tables with a key to copy (job ids, files, words, cast voices): they are
built with :func:`verified_tts.cli.tables.copy_table`, checked here on long keys.
"""

from __future__ import annotations

import json
import os
import subprocess

from rich.console import Console

from tests.conftest import CLI, ROOT
from verified_tts.cli.tables import copy_table


def test_voices_names_are_whole_at_80_columns():
    env = {**os.environ, "COLUMNS": "80", "TERM": "xterm"}
    listing = subprocess.run(
        [*CLI, "voices", "--language", "all", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    names = [v["name"] for v in json.loads(listing.stdout)["voices"]]
    assert any(n.startswith("piper:en_US") for n in names) and len(names) > 10
    shown = subprocess.run(
        [*CLI, "voices", "--language", "all"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines() + shown.stderr.splitlines()
    assert lines and max(len(line) for line in lines) <= 80
    cells = {cell.strip() for line in lines for cell in line.split("│")}
    missing = [n for n in names if n not in cells]
    assert not missing, f"cut at 80 columns: {missing[:5]}"
    assert not any(line.count("…") for line in lines)


def test_copy_table_keeps_long_keys_whole_and_folds_the_rest():
    key = "job-20261204-131500-a1b2c3d4e5f6"
    output = "/very/long/output/folder/that/cannot/fit/in/its/share/of/eighty/columns/out"
    table = copy_table("jobs", ("id", "state", "command", "output"), keys=("id",))
    table.add_row(key, "running", "render", output)
    console = Console(width=80, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(table)
    text = console.export_text()
    assert key in text and "…" not in text
    # the long path is folded over lines, not cut: every character is still shown
    folded = "".join(
        line.split("│")[4].strip() for line in text.splitlines() if line.count("│") == 5
    )
    assert folded == output
