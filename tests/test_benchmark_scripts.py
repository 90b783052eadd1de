"""The benchmark scripts stay runnable: each imports against today's package, and each that runs
as ``python -m benchmarks....`` parses its command line, so ``--help`` says what it measures
instead of running it and rewriting a committed result. No test runs the benchmarks themselves
(they take minutes to hours), so a name the package renames or removes shows here first; a changed
return shape shows only when the benchmark runs."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(path for path in (ROOT / "benchmarks").rglob("*.py") if path.name != "__init__.py")


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _runs_as_main(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def _parses_arguments(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Attribute | ast.Name)
        and (getattr(node, "attr", None) or getattr(node, "id", None)) == "ArgumentParser"
        for node in ast.walk(tree)
    )


def test_the_scripts_are_found():
    assert len(SCRIPTS) > 40
    assert any(path.name == "attribution_accuracy.py" for path in SCRIPTS)


@pytest.mark.parametrize("path", SCRIPTS, ids=[_module(p) for p in SCRIPTS])
def test_each_script_imports_and_a_runnable_one_parses_its_command_line(path: Path):
    importlib.import_module(_module(path))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if _runs_as_main(tree):
        assert _parses_arguments(tree), f"{_module(path)} runs on --help: give it an ArgumentParser"


def test_a_script_without_a_parser_is_caught():
    runs = ast.parse('def main():\n    print(1)\n\nif __name__ == "__main__":\n    main()\n')
    assert _runs_as_main(runs) and not _parses_arguments(runs)
    parses = ast.parse("import argparse\nargparse.ArgumentParser().parse_args()\n")
    assert _parses_arguments(parses)
