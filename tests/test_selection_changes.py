"""What a render's summary says the selection changed: lines whose kept take is not candidate 0,
and lines given more takes than the first round, with why (`selection_changes`)."""

from __future__ import annotations

from types import SimpleNamespace

from verified_tts.output.run_manifest import (
    MORE_TAKES_EXPECTED_BETTER,
    MORE_TAKES_NONE_PASSED,
    selection_changes,
    selection_lines,
)
from verified_tts.selection.policy import default_policy


def take(wer: float) -> SimpleNamespace:
    return SimpleNamespace(metrics={"wer": wer, "asr_logprob": -0.2}, detail={})


def line(wers: list[float], winner: int) -> SimpleNamespace:
    return SimpleNamespace(candidates=[take(w) for w in wers], winner=winner)


def test_lines_given_more_takes_say_whether_the_first_round_had_a_passing_take():
    policy = default_policy()  # adaptive: a first round of two takes
    results = [
        line([0.0, 0.0], 0),  # stopped after the first round
        line([0.9, 0.8, 0.0, 0.0], 2),  # no take of the first two passed the word error gate
        line([0.0, 0.9, 0.0, 0.0], 3),  # one had passed: the verifiers went on for a better one
    ]
    changes = selection_changes(results, lambda _: policy, 8)
    assert changes["lines_take_changed"] == 2
    assert changes["lines_more_takes"] == 2
    assert changes["more_takes_because"] == {
        MORE_TAKES_NONE_PASSED: 1,
        MORE_TAKES_EXPECTED_BETTER: 1,
    }
    rows = dict(selection_lines({"utterances": 3, **changes}))
    assert rows["lines whose kept take is not the first"] == "2 of 3"
    assert rows["lines given more takes than the first round"].startswith("2 of 3 (1: no take")


def test_a_fixed_n_render_gives_no_line_more_takes():
    policy = default_policy(adaptive=False)
    changes = selection_changes([line([0.9, 0.0, 0.0], 1)], lambda _: policy, 3)
    assert changes["lines_more_takes"] == 0 and changes["more_takes_because"] == {}
