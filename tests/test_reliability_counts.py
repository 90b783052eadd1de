"""benchmarks/distributed/reliability.py counts what it claims: a fuzz case that fails is counted
(and does not stop the run), not written down as a literal zero."""

from __future__ import annotations

import importlib.util
import sys
import types
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent


def _reliability():
    spec = importlib.util.spec_from_file_location(
        "reliability_benchmark", ROOT / "benchmarks" / "distributed" / "reliability.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fuzz_counts_failing_cases_and_runs_every_property(monkeypatch):
    fake = types.ModuleType("test_fuzz")
    fake.CASES = Counter()
    seen: list[int] = []

    @settings(max_examples=40, derandomize=True, database=None)
    @given(number=st.integers(0, 9))
    def test_a_fails_on_odd_numbers(number):
        fake.CASES["numbers"] += 1
        seen.append(number)
        if number % 2:
            raise ValueError(f"{number} is odd")  # a reader's traceback, as a user would see it

    @settings(max_examples=10, derandomize=True, database=None)
    @given(text=st.text(max_size=3))
    def test_b_always_holds(text):
        fake.CASES["text"] += 1

    fake.test_a_fails_on_odd_numbers = test_a_fails_on_odd_numbers
    fake.test_b_always_holds = test_b_always_holds
    monkeypatch.setitem(sys.modules, "test_fuzz", fake)
    figures = _reliability().fuzz(examples=40)
    odd = sum(number % 2 for number in seen)
    assert odd > 0 and len(seen) > odd  # the cases hypothesis drew held both kinds
    assert (
        figures["tracebacks"]
        == odd
        == figures["failures_per_property"]["test_a_fails_on_odd_numbers"]
    )
    assert figures["first_failure_per_property"]["test_a_fails_on_odd_numbers"].startswith(
        "ValueError: "
    )
    assert figures["cases_run"]["text"] > 0  # the property after the failing one still ran
    assert "test_b_always_holds" not in figures["failures_per_property"]
