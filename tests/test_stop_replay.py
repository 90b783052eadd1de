"""benchmarks/selection/stop_replay.py over a real adaptive render: the render's own setting replays
its decisions exactly, a sooner stop is replayed from the takes it made, and a later one is
refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from benchmarks.selection import stop_replay
from verified_tts.output.manifest import read_manifest
from verified_tts.workflows.render import render

ROOT = Path(__file__).resolve().parent.parent


def test_the_recorded_setting_replays_the_render_and_a_later_stop_is_refused(
    small_book, tmp_path, synthesizer_factory
):
    synthesizer = synthesizer_factory(candidates=8, keep="all")
    policy = replace(synthesizer.config.selection, rounds=(2, 4), stop="expected_gain",
                     stop_gain=0.01, prior_spread=0.3, prior_weight=8.0)  # fmt: skip
    config = synthesizer.config.variant(selection=policy)
    synthesizer = synthesizer.variant(config)
    render(small_book, tmp_path / "out", config, synthesizer=synthesizer)
    manifest = read_manifest(tmp_path / "out")
    recorded = stop_replay.recorded_policy(manifest.selection)
    assert recorded.rounds == (2, 4) and recorded.stop_gain == 0.01
    takes = [[(c.scores, c.detail) for c in u.candidates] for u in manifest.utterances]
    for u, made in zip(manifest.utterances, takes, strict=True):
        outcome = stop_replay.replay(made, recorded)
        assert (outcome.winner, outcome.takes, outcome.flagged) == (
            u.winner, len(u.candidates), u.flagged
        )
    # a sooner stop needs no take the render did not make
    sooner = replace(recorded, stop_gain=10.0)
    assert all(
        stop_replay.replay(made, sooner).takes <= len(made) for made in takes
    )
    # a rule that never stops early wants takes that lines stopped before making
    never = replace(recorded, stop_gain=0.0)
    stopped_early = [made for made in takes if len(made) < 8]
    assert stopped_early, "the render stopped no line early: nothing to refuse"
    assert all(stop_replay.replay(made, never) is None for made in stopped_early)


def test_gate_replay_variants_replace_one_gate_and_keep_its_margin():
    from benchmarks.flags import gate_replay
    from verified_tts.selection.policy import Gate, SelectionPolicy

    shipped = SelectionPolicy(gates=(Gate("speaker", min=0.8), Gate("wer", max=0.5, margin=0.3)))
    (without, policy), *bounded = gate_replay.variants(shipped, "wer", "max", [0.3, 0.75])
    assert without == "without" and policy.gates == (Gate("speaker", min=0.8),)
    assert [name for name, _ in bounded] == ["max 0.3", "max 0.75"]
    for (_, policy), bound in zip(bounded, (0.3, 0.75), strict=True):
        assert policy.gates == (Gate("speaker", min=0.8), Gate("wer", max=bound, margin=0.3))
        assert policy.rounds == shipped.rounds and policy.stop_gain == shipped.stop_gain


def _setting(takes: float, gain: float, low: float) -> dict:
    paired = {"mean_gain": gain, "ci95": [low, gain + 0.01]}
    return {"takes_per_utterance": takes, "judge_gain_over_candidate0": paired}


def test_the_budget_rule_takes_the_largest_gain_that_fits():
    rendered = _setting(4.0, 0.014, 0.007)
    rows = [
        _setting(4.0, 0.014, 0.007),  # over the budget
        _setting(2.3, 0.012, 0.004),  # the largest gain within it
        _setting(2.0, 0.012, 0.003),  # as large, fewer takes: preferred on a tie
        _setting(2.4, 0.020, -0.001),  # its interval reaches 0
    ]
    chosen = stop_replay.choose_setting(rows, rendered, 2.4, "budget")
    assert chosen is rows[2]
    # the old rule wants the render's gain, which nothing within 2.4 keeps
    assert stop_replay.choose_setting(rows, rendered, 2.4, "keep-gain") is None
    assert stop_replay.choose_setting(rows, rendered, 4.0, "keep-gain") is rows[0]
