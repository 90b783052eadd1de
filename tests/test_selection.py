import pytest

from verified_tts.errors import UserError
from verified_tts.selection.policy import (
    PACKED_STOP,
    Gate,
    SelectionPolicy,
    choose,
    default_policy,
    expected_gain,
    judge,
    per_clip_policy,
    round_targets,
    should_stop,
)

POLICY = SelectionPolicy(
    gates=(Gate("wer", max=0.5, margin=0.5), Gate("duration_ratio", min=0.5, max=2.0)),
    weights={"asr_logprob": 1.0, "speaker": 1.0},
    first_round=2,
    step=0,
    stop="margin",
)


def test_gates_then_score():
    good = judge({"wer": 0.0, "duration_ratio": 1.0, "asr_logprob": -0.5}, POLICY)
    assert good.passed and good.passed_with_margin and good.score == -0.5
    ok = judge({"wer": 0.2, "duration_ratio": 1.0, "asr_logprob": -0.1}, POLICY)
    assert ok.passed and not ok.passed_with_margin
    bad = judge({"wer": 0.8, "duration_ratio": 3.0, "asr_logprob": 0.0}, POLICY)
    assert not bad.passed and bad.failed == ("wer", "duration_ratio")
    # the failing candidate has the best score but cannot win over passing ones
    assert choose([bad, good, ok]) == (2, False)


def test_missing_metric_does_not_apply_its_gate():
    judgement = judge({"asr_logprob": -1.0}, POLICY)
    assert judgement.passed and judgement.failed == ()


def test_none_passing_keeps_fewest_failures_and_flags():
    worse = judge({"wer": 0.9, "duration_ratio": 5.0, "asr_logprob": 0.0}, POLICY)
    fewer = judge({"wer": 0.9, "duration_ratio": 1.0, "asr_logprob": -3.0}, POLICY)
    assert choose([worse, fewer]) == (1, True)


def test_prefix_choice_is_the_arm_of_a_smaller_n():
    judgements = [
        judge({"wer": 0.1, "duration_ratio": 1.0, "asr_logprob": s}, POLICY)
        for s in (-0.9, -0.4, -0.7, -0.1)
    ]
    assert choose(judgements[:1]) == (0, False)
    assert choose(judgements[:2]) == (1, False)
    assert choose(judgements[:3]) == (1, False)
    assert choose(judgements) == (3, False)


def test_ties_go_to_the_lower_index():
    a = judge({"asr_logprob": -1.0}, POLICY)
    assert choose([a, a, a]) == (0, False)


def test_round_targets_and_stop():
    assert round_targets(8, POLICY) == (2, 4, 8)
    assert round_targets(6, POLICY) == (2, 4, 6)
    assert round_targets(1, POLICY) == (1,)
    fixed = SelectionPolicy(gates=POLICY.gates, weights=POLICY.weights, adaptive=False)
    assert round_targets(8, fixed) == (8,)
    assert should_stop([judge({"wer": 0.0}, POLICY)])
    assert not should_stop([judge({"wer": 0.3}, POLICY)])


def test_policy_from_config_table():
    policy = SelectionPolicy.from_mapping(
        {"gates": {"wer": {"max": 0.3}, "speaker": {}}, "weights": {"speaker": 2}}
    )
    gates = {g.metric: g for g in policy.gates}
    assert gates["wer"].max == 0.3 and "speaker" not in gates
    assert policy.weights["speaker"] == 2.0
    assert policy.identity() != SelectionPolicy().identity()
    with pytest.raises(UserError, match="unknown"):
        SelectionPolicy.from_mapping({"gate": {}})
    with pytest.raises(UserError, match="wer"):
        SelectionPolicy.from_mapping({"gates": {"wer": 0.3}})


def test_packed_whisper_scoring_gets_its_own_min_logprob_gate():
    from verified_tts.config import build_config

    per_clip_config = build_config({"verifiers": {"wer": {"packing": False}}})
    per_clip = {g.metric: g for g in per_clip_config.selection.gates}
    packed_config = build_config({})  # packed scoring is the default
    packed = {g.metric: g for g in packed_config.selection.gates}
    # a left-out word costs less log-prob after the preceding clips' texts: a tighter bound
    assert packed["asr_min_take_logprob"].min > per_clip["asr_min_take_logprob"].min
    # and the word error gate, chosen on packed scoring of real prose, is the packed profile's
    assert packed["wer"].max == 0.5 and "wer" not in per_clip
    own = ("asr_min_take_logprob", "wer")
    assert {m: g for m, g in packed.items() if m not in own} == {
        m: g for m, g in per_clip.items() if m not in own
    }
    assert packed_config.selection.identity() != per_clip_config.selection.identity()
    assert (
        packed_config.selection.gates
        == build_config({"verifiers": {"wer": {"packing": True}}}).selection.gates
    )
    # a gate the user sets wins over either default
    mine = build_config(
        {
            "verifiers": {"wer": {"packing": True}},
            "selection": {"gates": {"asr_min_logprob": {"min": -9.0}}},
        }
    )
    assert {g.metric: g for g in mine.selection.gates}["asr_min_logprob"].min == -9.0


def test_packed_whisper_scoring_gets_its_own_rounds_and_stop_settings():
    from verified_tts.config import build_config

    names = ("rounds", "first_round", "step", "stop_gain", "prior_spread", "prior_weight")
    per_clip = build_config({"verifiers": {"wer": {"packing": False}}}).selection
    packed = build_config({}).selection  # packing is the default
    assert {name: getattr(packed, name) for name in PACKED_STOP} == dict(PACKED_STOP)
    assert {name: getattr(per_clip, name) for name in names} == {
        name: getattr(SelectionPolicy(), name) for name in names
    }
    assert packed == default_policy(packed_wer=True)
    assert round_targets(8, packed) != round_targets(8, per_clip)
    # back to per-clip scoring (a rerender's sentence): gates, rounds and stop settings follow
    assert per_clip_policy(packed) == per_clip
    # what the user sets stays, with either scorer
    mine = build_config(
        {"verifiers": {"wer": {"packing": True}}, "selection": {"stop_gain": 0.123}}
    ).selection
    assert mine.stop_gain == 0.123
    assert per_clip_policy(mine).stop_gain == 0.123
    # a schedule of first_round and step is the user's own, not the packed default's rounds
    stepped = build_config(
        {"verifiers": {"wer": {"packing": True}}, "selection": {"first_round": 3, "step": 2}}
    ).selection
    assert round_targets(8, stepped) == (3, 5, 7, 8)


def test_default_rounds_one_candidate_at_a_time():
    assert round_targets(8, SelectionPolicy()) == (1, 2, 3, 4, 5, 6, 7, 8)
    assert round_targets(3, SelectionPolicy(first_round=1, step=2)) == (1, 3)


def test_explicit_rounds():
    policy = SelectionPolicy(rounds=(1, 2, 4))
    assert round_targets(8, policy) == (1, 2, 4, 8)
    assert round_targets(3, policy) == (1, 2, 3)
    assert round_targets(1, policy) == (1,)


def test_expected_gain_stop():
    policy = SelectionPolicy(
        gates=POLICY.gates,
        weights={"asr_logprob": 1.0},
        stop="expected_gain",
        stop_gain=0.02,
        prior_spread=0.3,
        prior_weight=2.0,
    )

    def cand(logprob, wer=0.0):
        return judge({"wer": wer, "duration_ratio": 1.0, "asr_logprob": logprob}, policy)

    # a candidate the ASR model reads almost perfectly leaves little to gain: stop
    assert should_stop([cand(-0.01)], 8, policy)
    # a poor reading with 7 more to come: go on
    assert not should_stop([cand(-0.8)], 8, policy)
    # no candidate left: nothing to gain
    assert expected_gain([cand(-0.8)], 0, policy) == 0.0
    # fewer remaining candidates, less to expect
    assert expected_gain([cand(-0.8)], 1, policy) < expected_gain([cand(-0.8)], 7, policy)
    # widely spread scores so far promise more than tightly bunched ones at the same best
    spread = expected_gain([cand(-0.3), cand(-1.5)], 6, policy)
    tight = expected_gain([cand(-0.3), cand(-0.32)], 6, policy)
    assert spread > tight
    # a failing candidate alone never stops an utterance early
    assert not should_stop([cand(-0.01, wer=0.9)], 8, policy)
    # the margin rule is unchanged for policies that keep it
    assert should_stop([cand(-0.8)], 8, POLICY)


def test_stop_settings_from_config_table():
    policy = SelectionPolicy.from_mapping(
        {"stop": "expected_gain", "stop_gain": 0.01, "rounds": [4, 1, 2]}
    )
    assert policy.stop == "expected_gain" and policy.rounds == (1, 2, 4)
    assert policy.identity() != SelectionPolicy.from_mapping({"stop": "margin"}).identity()
    with pytest.raises(UserError, match="stop"):
        SelectionPolicy.from_mapping({"stop": "sometimes"})
    with pytest.raises(UserError, match="rounds"):
        SelectionPolicy.from_mapping({"rounds": [0, 2]})
    with pytest.raises(UserError, match="stop_gain"):
        SelectionPolicy.from_mapping({"stop_gain": -1})
    with pytest.raises(UserError, match="step"):
        SelectionPolicy.from_mapping({"step": -1})


def test_gates_and_weights_must_name_a_metric_some_verifier_reports():
    from verified_tts.config import build_config

    with pytest.raises(UserError, match=r"\[selection.gates\] speeker: no verifier reports"):
        build_config({"selection": {"gates": {"speeker": {"min": 0.8}}}})
    with pytest.raises(UserError, match=r"\[selection.weights\] asr_logprb: .*known metrics: "):
        build_config({"selection": {"weights": {"asr_logprb": 2}}})
    # any metric a verifier reports may be gated or weighted, and switched off
    config = build_config(
        {"selection": {"gates": {"stretch": {"max": 1.3}, "wer": {"max": 0.5}, "speaker": {}},
                       "weights": {"duration_fit": 2.0}}}
    )  # fmt: skip
    assert {g.metric for g in config.selection.gates} >= {"stretch", "wer"}
