"""Shared fixtures: small books and one loaded embedded-default synthesizer per test session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The embedded default must run offline, in tests as in CI.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
CLI = [sys.executable, "-m", "verified_tts"]

SMALL_BOOK = """# A Small Book

## One

The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.

## Two

It's easy to tell the depth of a well.
"""


@pytest.fixture
def small_book(tmp_path: Path) -> Path:
    path = tmp_path / "book.md"
    path.write_text(SMALL_BOOK, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def synthesizer_factory():
    """Load espeak and the verifiers once per session; tests pick N and adaptivity per run.

    espeak, not the Piper default: these tests render many candidates and are about the pipeline,
    not the voice (tests/test_piper.py renders with Piper end to end)."""
    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer

    loaded = Synthesizer.load(build_config({}, candidates=2, generator="espeak"))

    def make(**overrides):
        config = build_config({}, **{"candidates": 2, "generator": "espeak", **overrides})
        return Synthesizer(loaded.generator, loaded.verifiers, config)

    return make


@pytest.fixture(scope="session")
def review_render(tmp_path_factory, synthesizer_factory):
    """A small book (three chapters, N=3 fixed, WAV/FLAC/M4B/MP3) rendered once per session for the
    review tests; each test module reviews its own copy (see tests/review_kit.py)."""
    from review_kit import BOOK

    from verified_tts.workflows.render import render

    folder = tmp_path_factory.mktemp("review-render")
    book = folder / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    synthesizer = synthesizer_factory(candidates=3, adaptive=False,
                                      production={"formats": "wav,flac,m4b,mp3"})  # fmt: skip
    render(book, folder / "out", synthesizer.config, synthesizer=synthesizer)
    return book, folder / "out", synthesizer


# Under pytest-xdist (`make test`: -n 2 --dist loadgroup) a module's tests stay on one worker, in
# order, so a module-scoped fixture is built once and a walk-through module (a review that goes on
# from the decision before) sees its steps in sequence; the modules that share one engine, one Ray
# cluster or the session's review render stay together, so none of those is built twice.
_GROUPS = {
    "test_orpheus.py": "orpheus-engine",
    "test_search.py": "orpheus-engine",
    "test_llasa.py": "llasa-engine",
    "test_spark.py": "spark-engine",
    "test_jobs.py": "ray",
    "test_jobs_load.py": "ray",
    "test_ray_backend.py": "ray",
    "test_ray_multinode.py": "ray",
    "test_service_faults.py": "ray",
    "test_service_http.py": "ray",
    "test_review_app.py": "review-render",
    "test_review_browser.py": "review-render",
    "test_review_deliver.py": "review-render",
    "test_review_index.py": "review-render",
    "test_review_producer.py": "review-render",
    "test_review_speakers.py": "review-render",
}
# modules that render, dub or review a whole book or film: `make test` runs them, `make test-fast`
# (the inner loop) leaves them out with the engine, Ray and browser tests
_END_TO_END = {
    "test_ab.py", "test_adaptive_prefetch.py", "test_calibrate_cli.py", "test_cast.py",
    "test_cast_render.py", "test_cli_errors.py", "test_damage.py", "test_dub_films.py",
    "test_dub_video.py", "test_dubbing.py", "test_pronounce_render.py",
    "test_readalong_render.py", "test_render.py",
    "test_rerender.py", "test_review_app.py", "test_review_deliver.py", "test_review_producer.py",
    "test_user_path.py",
}  # fmt: skip
# modules of independent long tests with no shared fixture: each test goes where a worker is free
_SPREAD = {"test_user_path.py"}
# The longest work units, longest first (a full run's per-group times, `make test`'s junit or
# --durations): xdist hands units out in collection order (`--no-loadscope-reorder` in the
# Makefile), so these start while every worker is free and the run does not end on one worker
# finishing a 60-second render while the other idles. A unit not named here keeps its place.
_LONGEST_FIRST = (
    "ray", "orpheus-engine", "review-render", "test_user_path.py", "llasa-engine",
    "spark-engine", "test_cast.py", "test_readalong_render.py", "test_crash.py",
    "test_render.py", "test_damage.py", "test_dub_films.py", "test_calibrate_cli.py",
)  # fmt: skip


def _work_unit(name: str) -> str:
    return _GROUPS.get(name, name)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups off the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        group = item.nodeid if name in _SPREAD else _work_unit(name)
        item.add_marker(pytest.mark.xdist_group(group))
        if name in _END_TO_END:
            item.add_marker(pytest.mark.e2e)
        if "ray_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.ray)  # it starts the cluster: not in make test-fast
    rank = {unit: place for place, unit in enumerate(_LONGEST_FIRST)}
    # a stable sort: each module's tests keep their order (a walk-through goes on in sequence)
    items.sort(key=lambda item: rank.get(_work_unit(item.path.name), len(rank)))


# The shared Ray cluster (test_ray_backend.SharedCluster) idles at about a tenth of a core, and
# its tests run first: it ends after the last test that uses it here, not at the session's end.
# Every such test is in the "ray" work unit, which xdist gives to one worker whole.
_cluster_left_key = pytest.StashKey[int]()


def pytest_collection_finish(session):
    uses = sum("ray_cluster" in getattr(item, "fixturenames", ()) for item in session.items)
    session.config.stash[_cluster_left_key] = uses


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if "ray_cluster" not in getattr(item, "fixturenames", ()):
        return
    left = item.config.stash.get(_cluster_left_key, 0) - 1
    item.config.stash[_cluster_left_key] = left
    if left == 0:
        from test_ray_backend import SharedCluster

        SharedCluster.end()
