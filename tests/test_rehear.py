"""Ranking by hearing alone (``[selection] rank = "heard_alone"``, verified_tts.selection.rehear).

The pure rule first: among the takes that pass, the fewest word errors heard alone wins, the lower
index on a tie; a take that failed a gate never wins for being heard well; where a passing take was
not heard alone, or the policy ranks by score, the weighted score ranks as before. Then a render
with packed scoring: the passing takes of every line with two or more are heard alone, the
metric is in the manifest, the winner is the rule's, and a second run hears nothing again.
"""

from __future__ import annotations

from dataclasses import replace

from verified_tts.selection.policy import HEARD_ALONE, choose, default_policy, judge
from verified_tts.storage.store import Store
from verified_tts.text.book import parse_book

ALONE = default_policy(rank="heard_alone")
SCORE = default_policy(rank="score")


def _take(logprob: float, alone: float | None = None, fails: bool = False) -> dict[str, float]:
    metrics = {"asr_logprob": logprob, "asr_min_logprob": -1.0, "speaker": 0.95, "wer": 0.0}
    if fails:
        metrics["asr_insertions"] = 5.0  # over the insertions gate
    if alone is not None:
        metrics[HEARD_ALONE] = alone
    return metrics


def _winner(takes: list[dict[str, float]], policy=ALONE) -> tuple[int, bool]:
    return choose([judge(m, policy) for m in takes])


def test_the_fewest_errors_heard_alone_win_over_the_better_score():
    # the score prefers take 1; heard alone, take 2 has no error
    takes = [_take(-0.30, 0.10), _take(-0.10, 0.05), _take(-0.40, 0.0)]
    assert _winner(takes) == (2, False)
    assert _winner(takes, SCORE) == (1, False)  # the weighted score's pick, as before


def test_a_tie_heard_alone_keeps_the_lower_index():
    takes = [_take(-0.30, 0.0), _take(-0.10, 0.0), _take(-0.20, 0.1)]
    assert _winner(takes) == (0, False)
    assert _winner(takes[1:]) == (0, False)  # take 1 of the line, first of these


def test_a_take_that_fails_a_gate_never_wins_for_being_heard_well():
    takes = [_take(-0.30, 0.2), _take(-0.10, 0.0, fails=True), _take(-0.35, 0.1)]
    assert _winner(takes) == (2, False)
    # with one take passing, there is nothing to hear alone: it wins
    assert _winner([_take(-0.30, None), _take(-0.1, 0.0, fails=True)]) == (0, False)


def test_the_score_ranks_where_a_passing_take_was_not_heard_alone():
    takes = [_take(-0.30, 0.0), _take(-0.10, None), _take(-0.40, 0.0)]
    assert _winner(takes) == (1, False)


def test_a_render_hears_the_passing_takes_alone(tmp_path, synthesizer_factory):
    base = synthesizer_factory(candidates=3, adaptive=False)
    config = replace(base.config, selection=replace(base.config.selection, rank="heard_alone"))
    synth = base.variant(config)
    book = "# One\n\nThe birch canoe slid on the smooth planks. Rice is often served in bowls.\n"
    utterances = synth.plan(parse_book(book).segments)
    store = Store(tmp_path / "store")
    results = synth.run(utterances, store)
    heard = 0
    for result in results:
        passing = [c for c in result.candidates if c.passed]
        if len(passing) < 2:
            continue
        heard += 1
        assert all(HEARD_ALONE in c.metrics for c in passing)
        best = min(passing, key=lambda c: (c.metrics[HEARD_ALONE], c.index))
        assert result.winner == best.index
    assert heard >= 1  # some line had two passing takes to compare
    assert synth.stats.seconds.get(f"verify:{HEARD_ALONE}", 0.0) > 0.0

    # a fresh decision from the same store hears nothing again: the scores were stored
    other = base.variant(replace(config, selection=replace(config.selection, stop_gain=0.5)))
    repeated = other.run(utterances, store)
    assert [r.winner for r in repeated] == [r.winner for r in results]
    assert other.stats.seconds.get(f"verify:{HEARD_ALONE}", 0.0) == 0.0
