"""benchmarks/flags/short_line_signals.py: the rule that flags passed short lines stays inside its
budget, counts what it adds, and the AUC says which way a signal points."""

from __future__ import annotations

import pytest

from benchmarks.flags import short_line_signals


def _row(flagged: bool, judge_wer: float, wer: float) -> dict:
    return {"flagged": flagged, "judge_wer": judge_wer, "wer": wer, "text": "x",
            "judge_heard": "x", "asr_heard": "x"}  # fmt: skip


def test_the_rule_adds_no_more_cues_than_the_budget_leaves():
    # 40 cues, 1 flagged by the gates: a 5% budget leaves room for one more
    rows = [_row(True, 1.0, 1.0)] + [_row(False, 0.0, 0.0) for _ in range(36)]
    rows += [_row(False, 1.0, 1.0), _row(False, 1.0, 0.5), _row(False, 0.0, 0.5)]
    found = short_line_signals.rule_at_budget(rows, lambda r: r["wer"], 0.05)
    assert found["cues_it_may_add"] == 1
    assert found["added"] == 1 and found["bound"] == 1.0
    assert found["added_judge_hears_wrong"] == 1
    assert found["share_of_passed_wrong_caught"] == pytest.approx(0.5)
    # a bound that would add two (the tie at 0.5) is not taken
    tied = [_row(True, 1.0, 1.0)] + [_row(False, 0.0, 0.0) for _ in range(37)]
    tied += [_row(False, 1.0, 0.5), _row(False, 0.0, 0.5)]
    found = short_line_signals.rule_at_budget(tied, lambda r: r["wer"], 0.05)
    assert found["added"] == 0 and found["bound"] is None


def test_auc_says_which_way_a_signal_points():
    assert short_line_signals.auc([1.0, 2.0], [0.0, 0.5]) == 1.0
    assert short_line_signals.auc([0.0], [1.0]) == 0.0
    assert short_line_signals.auc([1.0], [1.0]) == 0.5
    assert short_line_signals.auc([], [1.0]) is None
