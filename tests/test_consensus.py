"""The takes of a sentence compared: shared doubt (the ASR model's) against a take's own, the
listener's reference, and reasons in words."""

from __future__ import annotations

import pytest

from verified_tts.selection.consensus import (
    SHARED_CEILING,
    SPEAKER_ALLOWANCE,
    SPEAKER_CEILING,
    judge_all,
    shared_hard_words,
    shared_voice_shortfall,
    take_views,
    token_words,
    with_take_metrics,
)
from verified_tts.selection.policy import Gate, SelectionPolicy
from verified_tts.selection.reasons import candidate_reasons, heard_for, utterance_reasons
from verifiers.reference import heard_text

TOKENS = [" The", " B", "iff", "in", "'s", " gate", "-", "posts", " fell", "."]


def _detail(logprobs, transcript="The Biffin's gate-posts fell.", tokens=TOKENS):
    return {"tokens": list(tokens), "token_logprobs": list(logprobs), "transcript": transcript,
            "reference": "The Biffin's gate-posts fell."}  # fmt: skip


CLEAN = [-0.1, -11.0, -0.2, -0.3, -0.1, -0.2, -0.4, -0.2, -0.1, -0.3]  # the name: hard for all
OTHER = [-0.2, -10.0, -0.1, -0.2, -0.2, -0.1, -0.3, -0.3, -0.2, -0.2]
SKIPPED = [-0.1, -10.5, -0.2, -0.3, -0.1, -9.0, -0.4, -0.2, -0.1, -0.3]  # "gate" not read


def test_a_word_hard_in_every_take_is_not_held_against_one_take():
    views = take_views([_detail(CLEAN), _detail(OTHER), _detail(SKIPPED)])
    shift = SHARED_CEILING - (-10.0)  # the best take's doubt below the ceiling is shared
    assert views[0].min_take_logprob == pytest.approx(-11.0 + shift)
    assert views[1].min_take_logprob == pytest.approx(SHARED_CEILING)
    # the take that skipped a common word keeps all of that doubt: it is its own
    assert views[2].min_take_logprob == pytest.approx(-9.0) and views[2].worst_index == 5
    assert [v.compared for v in views] == [3, 3, 3]


def test_a_lone_take_keeps_its_plain_worst_token_and_other_references_are_not_compared():
    (alone,) = take_views([_detail(CLEAN)])
    assert alone.min_take_logprob == -11.0 and alone.compared == 1
    other_text = _detail(OTHER, tokens=[" A"] * len(TOKENS))
    views = take_views([_detail(CLEAN), other_text, {"transcript": "x"}])
    assert views[0].min_take_logprob == -11.0 and views[2] is None


def test_gate_on_the_take_metric_judges_a_lone_take_by_its_worst_token():
    policy = SelectionPolicy(gates=(Gate("asr_min_take_logprob", min=-7.0),), adaptive=False)
    metrics = {"asr_min_logprob": -11.0, "asr_logprob": -1.2}
    (lone,) = judge_all([(metrics, _detail(CLEAN))], policy)
    assert not lone.passed and lone.failed == ("asr_min_take_logprob",)
    pair = judge_all([(metrics, _detail(CLEAN)), (metrics, _detail(OTHER))], policy)
    assert all(j.passed for j in pair)
    # without token log-probs the plain worst token stands in for the take metric
    (bare,) = judge_all([(metrics, {})], policy)
    assert not bare.passed
    added = with_take_metrics([metrics, metrics], [_detail(CLEAN), _detail(OTHER)])
    assert added[1]["asr_min_take_logprob"] == pytest.approx(SHARED_CEILING)


def _voice(*similarities, against="book"):
    metrics = [{"speaker": s} for s in similarities]
    details = [{"speaker_against": against} if against != "book" else {} for _ in similarities]
    return metrics, details


def test_a_voice_every_take_shares_is_the_line_s_and_a_take_unlike_its_line_still_fails():
    bound = SPEAKER_CEILING - SPEAKER_ALLOWANCE / 2  # a bound the shared part can reach
    policy = SelectionPolicy(gates=(Gate("speaker_take", min=bound),), adaptive=False)
    best = bound - SPEAKER_ALLOWANCE / 4  # every take of the line a little below the bound
    metrics, details = _voice(best, best - 0.01, best - 0.35)  # the last: another voice
    shared = SPEAKER_CEILING - best
    assert shared_voice_shortfall(metrics, details) == [pytest.approx(shared)] * 3
    judged = judge_all(list(zip(metrics, details, strict=True)), policy)
    assert [j.passed for j in judged] == [True, True, False]
    added = with_take_metrics(metrics, details)
    assert added[0]["speaker_take"] == pytest.approx(SPEAKER_CEILING)
    assert added[2]["speaker"] == best - 0.35  # the similarity itself is kept as it was
    # a lone take has nothing to compare with: judged by its own similarity, as before
    (lone,) = judge_all([(metrics[0], details[0])], policy)
    assert not lone.passed and lone.failed == ("speaker_take",)
    # a line whose every take is further below than the allowance is another voice throughout
    far = bound - SPEAKER_ALLOWANCE - 0.05
    metrics, details = _voice(far, far - 0.01)
    assert shared_voice_shortfall(metrics, details) == [SPEAKER_ALLOWANCE] * 2
    assert not any(j.passed for j in judge_all(list(zip(metrics, details, strict=True)), policy))


def test_takes_judged_against_different_references_are_not_compared():
    metrics, details = _voice(0.70, 0.95)
    details[0] = {"speaker_against": "short takes"}
    assert shared_voice_shortfall(metrics, details) == [0.0, 0.0]
    assert shared_voice_shortfall([{"speaker": 0.9}, {}], [{}, {}]) == [0.0, None]


def test_a_line_that_passes_only_on_what_its_takes_share_gets_a_note_to_listen_once():
    bound = SPEAKER_CEILING - SPEAKER_ALLOWANCE / 2
    best = bound - 0.01
    metrics = with_take_metrics(*_voice(best, best - 0.02))
    takes = [(m, {}, ()) for m in metrics]
    bounds = {"speaker_take": {"min": bound}}
    reasons = utterance_reasons(takes, 0, False, text="What?", bounds=bounds)
    assert [(r.kind, r.flag) for r in reasons] == [("check_voice", False)]
    assert f"{best:.2f} at best" in reasons[0].text
    # a line whose best take is above the bound needs no note
    metrics = with_take_metrics(*_voice(bound + 0.01, bound - 0.02))
    assert utterance_reasons([(m, {}, ()) for m in metrics], 0, False, text="So!",
                             bounds=bounds) == []  # fmt: skip


def test_a_failed_speaker_take_says_the_similarity_and_the_bound_it_was_held_to():
    metrics = {"speaker": 0.60, "speaker_take": 0.66}
    (reason,) = candidate_reasons(
        metrics, {}, ("speaker_take",), text="Who?", bounds={"speaker_take": {"min": 0.81}}
    )
    assert reason.kind == "voice"
    assert "similarity 0.60, at least 0.75 expected" in reason.text


def test_token_words_and_shared_hard_words():
    words = token_words(_detail(CLEAN))
    assert [w for w in words] == [
        (0, "The"), (1, "Biffin's"), (1, "Biffin's"), (1, "Biffin's"), (1, "Biffin's"),
        (2, "gate"), (None, "-"), (3, "posts"), (4, "fell"), (None, "."),
    ]  # fmt: skip
    assert shared_hard_words([_detail(CLEAN), _detail(OTHER)]) == ["Biffin's"]
    assert shared_hard_words([_detail(CLEAN)]) == []  # one take says nothing about the others


@pytest.mark.parametrize(
    ("written", "heard"),
    [
        ("He thus addressed him:", "He thus addressed him."),
        ('"Sirrah," said the Wolf, "you insulted me."', "Sirrah, said the Wolf, you insulted me."),
        (
            "a Ravenel--Foulke by name--had the good-luck",
            "a Ravenel, Foulke by name, had the good-luck",
        ),
        ("the wing (added later), and", "the wing added later, and"),
        ("It was late; the cart came", "It was late, the cart came"),
        ("Chapter IV. The Promise", "Chapter 4. The Promise"),
        ("II. The Fox and the Grapes", "2. The Fox and the Grapes"),
        ("I wouldn't go to the boys' room, Mr. Lee.", "I wouldn't go to the boys' room, Mr. Lee."),
        ("she began--", "she began."),
    ],
)
def test_heard_text_is_what_a_transcript_of_a_good_reading_holds(written, heard):
    assert heard_text(written) == heard


def test_heard_for_finds_what_was_heard_in_place_of_a_word():
    reference = "The Biffin's gate-posts fell."
    assert heard_for(reference, "The Biffens gate posts fell.", 1) == "Biffens"
    assert heard_for(reference, "The gate posts fell.", 1) == ""
    assert heard_for(reference, "The Biffin's gate posts fell.", 1) == "Biffin's"


def test_candidate_reasons_say_what_a_listener_hears():
    detail = {**_detail(SKIPPED, transcript="The Biffin's posts fell."), "worst_token_index": 5,
              "longest_silence_start_s": 1.1}  # fmt: skip
    metrics = {
        "asr_min_take_logprob": -9.0, "duration_ratio": 1.4, "max_internal_silence_s": 1.8,
        "leading_silence_s": 0.1, "trailing_silence_s": 0.1, "duration_s": 4.0,
        "asr_insertions": 2.0, "speaker": 0.7, "clipping": 0.002,
    }  # fmt: skip
    failed = ["asr_min_take_logprob", "duration_ratio", "max_internal_silence_s",
              "asr_insertions", "speaker", "clipping"]  # fmt: skip
    said = candidate_reasons(metrics, detail, failed, text="The Biffin's gate-posts fell.",
                             bounds={"speaker": {"min": 0.81}})  # fmt: skip
    texts = [r.text for r in said]
    assert said[0].kind == "missing_word" and texts[0] == "the word 'gate' is not heard"
    assert "reads 40% longer than expected for its text" in texts
    assert "1.8 s silence after 'gate'" in texts
    assert texts[3].startswith("2 words heard that the text does not have")
    assert "at least 0.81 expected" in texts[4] and said[5].kind == "clipping"
    short = candidate_reasons({"duration_ratio": 0.6}, {}, ["duration_ratio"], text="x")
    assert short[0].text == "reads 40% shorter than expected for its text"
    garbled = {
        **_detail(SKIPPED, transcript="The Biffin's date posts fell."),
        "worst_token_index": 5,
    }
    (unclear,) = candidate_reasons(
        {"asr_min_logprob": -9.0},
        garbled,
        ["asr_min_logprob"],
        text="The Biffin's gate-posts fell.",
    )
    assert unclear.text == "the word 'gate' is unclear (heard 'date')" and unclear.word == "gate"


def test_a_take_heard_as_other_words_says_which_words():
    def said(transcript: str, text: str):
        (reason,) = candidate_reasons({"wer": 1.0}, {"transcript": transcript}, ["wer"], text=text)
        return reason

    author = said("and offer.", '"An author!')
    assert author.kind == "misheard" and author.word == "An"
    assert author.text == "2 of 2 words heard differently: 'An author' heard as 'and offer'"
    drum = said("When forked lightnings flash, my wardrobe tissue here.",
                "When forked lightnings flash, My war-drum 'tis you hear.")  # fmt: skip
    assert drum.text == "5 of 10 words heard differently: 'war drum tis' heard as " \
        "'wardrobe tissue here'" and drum.word == "war"  # fmt: skip
    assert said("Oh", '"Oh, deah!').text == "1 word of 2 heard differently: 'deah' is not heard"
    assert said("", "Oh, dear!").text == "none of the words is heard"


def test_utterance_reasons_flagged_and_notes():
    takes = [({"asr_min_take_logprob": -1.0}, _detail(CLEAN), ()),
             ({"asr_min_take_logprob": -1.0}, _detail(OTHER), ())]  # fmt: skip
    notes = utterance_reasons(takes, 0, False, text="The Biffin's gate-posts fell.")
    assert [(r.kind, r.word, r.flag) for r in notes] == [("check_pronunciation", "Biffin's", False)]
    assert notes[0].as_dict()["flag"] is False
    flagged = utterance_reasons(
        [({"duration_ratio": 1.5}, {}, ("duration_ratio",))], 0, True, text="x"
    )
    assert [r.kind for r in flagged] == ["too_long"] and "flag" not in flagged[0].as_dict()


def test_a_note_says_what_every_take_was_heard_as_in_place_of_the_word():
    def note(*transcripts: str) -> str:
        takes = [({}, _detail(CLEAN if i % 2 else OTHER, transcript=t), ())
                 for i, t in enumerate(transcripts)]  # fmt: skip
        (reason,) = utterance_reasons(takes, 0, False, text="The Biffin's gate-posts fell.")
        assert reason.word == "Biffin's"
        return reason.text

    alike = note("The Boffin's gate-posts fell.", "The Boffin's gate posts fell.")
    assert "doubts it in every take alike, heard as 'Boffin's' in every take (add" in alike
    two = note("The Boffin's gate-posts fell.", "The Puffin's gate-posts fell.",
               "The Boffin's gate-posts fell.")  # fmt: skip
    assert "heard as 'Boffin's' or 'Puffin's' (add" in two
    assert "heard as" not in note("The Biffin's gate-posts fell.", "The Boffin's gate-posts fell.")
    assert ", not heard in any take (add" in note("The gate-posts fell.", "The gate posts fell.")


def test_an_n_k_arm_compares_its_own_first_k_takes():
    from verified_tts.workflows.ab import arm_winners

    policy = SelectionPolicy(gates=(Gate("asr_min_take_logprob", min=-7.0),), adaptive=False)

    def take(index, logprobs):
        return {"index": index, "scores": {"asr_min_logprob": min(logprobs), "asr_logprob": -1.0},
                "passed": False, "score": -1.0, "detail": _detail(logprobs)}  # fmt: skip

    takes = [take(0, CLEAN), take(1, OTHER)]
    assert arm_winners(takes, policy, 1) == (0, True)  # alone, the name sinks it
    assert arm_winners(takes, policy, 2)[1] is False  # beside a second take it is shared
