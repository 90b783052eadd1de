"""End-to-end checks that fail when adaptive early stopping or prefetching silently does nothing:
a render at N=8 must stop early where a candidate passed (and take all 8 with adaptivity off), and
with prefetch on, the next window's first round must be generated on the prefetch thread and then
used, not generated again."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

import pytest

from verified_tts.selection.policy import judge, round_targets, should_stop
from verified_tts.workflows.render import render

FIVE = (
    "# Five\n\nThe birch canoe slid on the smooth planks. Rice is often served in round "
    "bowls. The juice of lemons makes fine punch. The box was thrown beside the parked truck. "
    "Four hours of steady work faced us.\n"
)


def read_manifest(out):
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


class RecordingGenerator:
    """The real generator, noting which thread asked for how many candidates."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def sample(self, requests):
        self.calls.append((threading.current_thread().name, len(requests)))
        return self.inner.sample(requests)


def test_adaptive_render_stops_early_where_a_candidate_passed(
    small_book, tmp_path, synthesizer_factory
):
    adaptive = synthesizer_factory(candidates=8)
    render(small_book, tmp_path / "adaptive", adaptive.config, synthesizer=adaptive)
    manifest = read_manifest(tmp_path / "adaptive")
    counts = [len(u["candidates"]) for u in manifest["utterances"]]
    assert min(counts) < 8, "adaptive sampling took all 8 candidates for every utterance"
    for utterance, count in zip(manifest["utterances"], counts, strict=True):
        judgements = [judge(c["scores"], adaptive.policy) for c in utterance["candidates"]]
        if count < 8:  # stopped early: only because the policy said so, and not sooner
            assert should_stop(judgements, 8, adaptive.policy), utterance["text"]
            for earlier in (t for t in round_targets(8, adaptive.policy) if t < count):
                assert not should_stop(judgements[:earlier], 8, adaptive.policy)
    assert manifest["stats"]["candidates_generated"] == sum(counts)

    full = synthesizer_factory(candidates=8, adaptive=False)
    render(small_book, tmp_path / "full", full.config, synthesizer=full)
    manifest = read_manifest(tmp_path / "full")
    assert {len(u["candidates"]) for u in manifest["utterances"]} == {8}
    assert manifest["stats"]["candidates_generated"] == 8 * len(manifest["utterances"])


@dataclass(frozen=True)
class PrefetchRun:
    """One render of FIVE (N=4, windows of two lines): its manifest, the thread of each
    generation request and its size, and the thread of each WER scoring call."""

    manifest: dict
    generated: tuple[tuple[str, int], ...]
    scored_on: tuple[str, ...]


@pytest.fixture(scope="module")
def prefetch_runs(tmp_path_factory, synthesizer_factory) -> dict[bool, PrefetchRun]:
    """FIVE rendered with prefetch off and on, once for the module's prefetch checks."""
    folder = tmp_path_factory.mktemp("prefetch")
    book = folder / "five.md"
    book.write_text(FIVE, encoding="utf-8")
    wer = synthesizer_factory().verifiers.get("wer")
    score = wer.score
    scored_on: list[str] = []

    def recorded(clips):
        scored_on.append(threading.current_thread().name)
        return score(clips)

    runs = {}
    wer.score = recorded  # the session's verifier: restored below
    try:
        for prefetch in (False, True):
            scored_on.clear()
            synthesizer = synthesizer_factory(candidates=4, window=2, prefetch=prefetch)
            recorder = RecordingGenerator(synthesizer.generator)
            synthesizer.generator = recorder
            render(book, folder / str(prefetch), synthesizer.config, synthesizer=synthesizer)
            runs[prefetch] = PrefetchRun(
                read_manifest(folder / str(prefetch)), tuple(recorder.calls), tuple(scored_on)
            )
    finally:
        del wer.score
    return runs


def test_prefetch_generates_the_next_window_on_its_thread_and_the_window_uses_it(prefetch_runs):
    generated_on = {}
    for prefetch, run in prefetch_runs.items():
        by_thread: dict[str, int] = {}
        for thread, count in run.generated:
            kind = "prefetch" if thread.startswith("prefetch") else "main"
            by_thread[kind] = by_thread.get(kind, 0) + count
        generated_on[prefetch] = by_thread
        # nothing generated twice: every candidate in the manifest was made exactly once
        total = sum(len(u["candidates"]) for u in run.manifest["utterances"])
        assert sum(by_thread.values()) == total == run.manifest["stats"]["candidates_generated"]
        assert run.manifest["stats"]["candidates_reused"] == 0
    assert "prefetch" not in generated_on[False]
    assert generated_on[True].get("prefetch", 0) >= 2, generated_on
    # the main thread then needed fewer: prefetched candidates were used, not made again
    assert generated_on[True]["main"] < generated_on[False]["main"]


def test_prefetching_the_next_window_changes_no_winner(prefetch_runs):
    def picked(manifest):
        return [
            (u["key"], u["winner"], [c["seed"] for c in u["candidates"]])
            for u in manifest["utterances"]
        ]

    assert picked(prefetch_runs[True].manifest) == picked(prefetch_runs[False].manifest)


def test_prefetch_scores_the_next_window_ahead_with_the_scores_a_window_gives_itself(
    prefetch_runs,
):
    """The prefetch thread also scores the next window's first round, without its speaker
    reference (it is made from this window's winners), and the window finishes those scores: every
    score is what the render without prefetch gives, and nothing is scored twice."""

    def scores(manifest):
        return [
            (u["winner"], [(c["scores"], c["detail"], c["score"]) for c in u["candidates"]])
            for u in manifest["utterances"]
        ]

    off, on = prefetch_runs[False], prefetch_runs[True]
    assert scores(on.manifest) == scores(off.manifest)
    assert not any(t.startswith("prefetch") for t in off.scored_on)
    assert sum(t.startswith("prefetch") for t in on.scored_on) >= 2, on.scored_on
    assert len(on.scored_on) == len(off.scored_on)  # the windows used what was scored ahead
