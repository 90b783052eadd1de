"""Ranking by hearing alone (``[selection] rank = "heard_alone"``, verified_tts.selection.rehear).

The pure rule first: among the takes that pass, the fewest word errors heard alone wins, the lower
index on a tie; a take that failed a gate never wins for being heard well; where a passing take was
not heard alone, or the policy ranks by score, the weighted score ranks as before; with
``alone_lines = "differing"`` only the lines whose passing takes were heard as different words are
heard alone; a bad ``alone_beam`` or ``alone_lines`` is a one-line error, and how a line is heard
keys its stored decision. Then renders with packed scoring: the passing takes of every line with
two or more are heard alone, the metric is in the manifest, the winner is the rule's, and a second
run hears nothing again; greedily and only where the takes were heard differently, the lines heard
alike rank by score and are not heard.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from verified_tts.errors import UserError
from verified_tts.options.selection import SelectionPolicy
from verified_tts.selection.consensus import judge_all
from verified_tts.selection.policy import HEARD_ALONE, choose, default_policy, judge
from verified_tts.selection.rehear import contenders, hear_alone, heard_differently
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


def test_only_lines_heard_as_different_words_are_heard_alone_when_asked():
    passing = [judge(_take(-0.3), ALONE), judge(_take(-0.2), ALONE), judge(_take(-0.4), ALONE)]
    alike = ["The birch canoe slid.", "the birch canoe slid", "The birch  canoe, slid!"]
    assert not heard_differently(alike)  # the same words once normalised as the WER is
    assert contenders(passing) == [0, 1, 2]  # every line with two or more passing takes
    assert contenders(passing, alike) == []
    differing = [*alike[:2], "the birch canoe slit"]
    assert heard_differently(differing)
    assert contenders(passing, differing) == [0, 1, 2]
    assert contenders(passing, [*alike[:2], None]) == [0, 1, 2]  # not heard: counted as different
    # only the passing takes are compared: a failing take heard otherwise does not count
    failing = [passing[0], judge(_take(-0.1, fails=True), ALONE), passing[1]]
    assert contenders(failing, [alike[0], "something else", alike[1]]) == []
    assert contenders(failing, [alike[0], "something else", "the birch canoe slit"]) == [0, 2]


def test_a_wer_verifier_that_cannot_hear_alone_is_said_once_not_kept_silent(caplog):
    class Opaque:  # a verifier, or a proxy of one, that cannot be reconfigured to hear alone
        pass

    takes = [object(), object()]
    line = (None, takes, [], ALONE)
    context = SimpleNamespace(verifiers={"wer": Opaque()})
    with caplog.at_level("WARNING", logger="verified_tts.selection"):
        assert hear_alone(context, [line]) == [takes]  # the takes as they were: the score ranks
        assert hear_alone(context, [line]) == [takes]
    said = [r.getMessage() for r in caplog.records if "cannot hear a take alone" in r.getMessage()]
    assert len(said) == 1 and "Opaque" in said[0]
    caplog.clear()
    # no Whisper verifier at all is the documented case: the score ranks, nothing to say
    assert hear_alone(SimpleNamespace(verifiers={}), [line]) == [takes]
    assert not caplog.records


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"alone_beam": 0}, "alone_beam = 0 is not a beam size"),
        ({"alone_beam": -2}, "alone_beam = -2 is not a beam size"),
        ({"alone_lines": "some"}, "alone_lines = 'some' is not a choice: use all or differing"),
    ],
)
def test_a_bad_way_of_hearing_alone_is_a_one_line_error(table, message):
    with pytest.raises(UserError, match=message) as caught:
        SelectionPolicy.from_mapping(table)
    assert "\n" not in str(caught.value)


def test_how_a_line_is_heard_alone_keys_the_decision_only_where_it_ranks():
    first = default_policy(rank="heard_alone", alone_beam=5, alone_lines="all")
    greedy = replace(first, alone_beam=1)
    differing = replace(first, alone_lines="differing")
    assert len({first.identity(), greedy.identity(), differing.identity()}) == 3
    score = default_policy(rank="score", alone_beam=5, alone_lines="all")
    assert replace(score, alone_beam=1, alone_lines="differing").identity() == score.identity()


def test_a_render_hears_the_passing_takes_alone(tmp_path, synthesizer_factory):
    base = synthesizer_factory(candidates=3, adaptive=False)
    selection = replace(base.config.selection, rank="heard_alone", alone_lines="all")
    config = replace(base.config, selection=selection)
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


def test_a_render_hears_alone_greedily_only_the_lines_heard_as_different_words(
    tmp_path, synthesizer_factory
):
    base = synthesizer_factory(candidates=4, adaptive=False)
    selection = replace(
        base.config.selection, rank="heard_alone", alone_beam=1, alone_lines="differing"
    )
    synth = base.variant(replace(base.config, selection=selection))
    book = (
        "# One\n\nThe birch canoe slid on the smooth planks. Glue the sheet to the dark blue "
        "background. It's easy to tell the depth of a well. Rice is often served in round bowls.\n"
    )
    results = synth.run(synth.plan(parse_book(book).segments), Store(tmp_path / "store"))
    kinds = set()
    for result in results:
        passing = [c for c in result.candidates if c.passed]
        if len(passing) < 2:
            continue
        if heard_differently([c.detail.get("transcript") for c in passing]):
            kinds.add("differing")
            assert all(HEARD_ALONE in c.metrics for c in passing)
            best = min(passing, key=lambda c: (c.metrics[HEARD_ALONE], c.index))
            assert result.winner == best.index
        else:
            kinds.add("alike")  # not heard alone: the weighted score ranks, as under rank = score
            assert not any(HEARD_ALONE in c.metrics for c in result.candidates)
            takes = [(c.metrics, c.detail) for c in result.candidates]
            assert result.winner == choose(judge_all(takes, selection))[0]
    assert kinds  # some line had two passing takes
    heard = synth.stats.seconds.get(f"verify:{HEARD_ALONE}", 0.0)
    assert (heard > 0.0) == ("differing" in kinds)
