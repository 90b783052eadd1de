"""Lines read in several ways: text forms where the normaliser guesses, a line's readings, their
keys (a take is a pure function of what it says, and the decided lexicon finds it), the first
round's takes, the doubtful words and their readings, and the book-level choice."""

from __future__ import annotations

import pytest

from verified_tts.pipeline import plan_utterances
from verified_tts.pronounce.book_decision import TakeEvidence, decide
from verified_tts.pronounce.candidates import WordReadings
from verified_tts.pronounce.sources import Variant, fold
from verified_tts.storage.keys import candidate_key, candidate_seed
from verified_tts.text.book import Book, Chapter, Segment
from verified_tts.text.lexicon import Lexicon, apply_lexicon, replaced_phonemes
from verified_tts.text.normalize import normalize_text
from verified_tts.text.readings import line_readings, word_entries
from verified_tts.text.text_forms import spoken_forms


def _segment(text: str, phonemes=()) -> Segment:
    return Segment(0, 1, 0, text, normalize_text(text), "paragraph", 1, "sentence",
                   phonemes=tuple(phonemes))  # fmt: skip


class _Generator:
    name = "fake"
    model = "fake"
    sample_rate = 16000

    def identity(self):
        return {"generator": "fake"}


def test_text_forms_offer_the_other_reading_of_each_guess_the_normalisers_own_first():
    forms = spoken_forms("There was St. Patrick, she said.", "There was Saint Patrick, she said.")
    assert [f.spoken for f in forms] == ["There was Saint Patrick, she said.",
                                         "There was Street Patrick, she said."]  # fmt: skip
    assert forms[0].choices == (("St.", "Saint"),) and forms[1].choices == (("St.", "Street"),)
    ends = spoken_forms("He lived on Main St.", normalize_text("He lived on Main St."))
    assert [f.spoken for f in ends] == ["He lived on Main Street.", "He lived on Main Saint."]
    year = spoken_forms("In 1847 it fell.", normalize_text("In 1847 it fell."))
    assert [f.spoken for f in year][1] == "In one thousand eight hundred and forty-seven it fell."
    king = spoken_forms("and Charles I was beheaded.", "and Charles I was beheaded.")
    assert king[1].spoken == "and Charles the First was beheaded."
    assert spoken_forms("I think so.", "I think so.") == ()  # nothing guessed
    # a line whose spoken text is not the normaliser's own (a lexicon respelled it) has no forms
    assert spoken_forms("Dr. Who came.", "Doctor Hoo came.") == ()


def test_a_line_takes_each_reading_in_turn_and_its_takes_are_the_decided_lexicons():
    segment = _segment("Thorneycroft spoke withal, said Thorneycroft.")
    words = {"withal": ["", "wɪðˈɔːl", "wˈɪðæl"], "Thorneycroft": ["", "θˈɔːɹnikɹɑːft"]}
    readings = line_readings(segment, words)
    assert len(readings) == 3  # the most readings a word has; the first is the line as it is
    assert readings[0].phonemes == () and readings[0].spoken == segment.spoken
    assert readings[1].phonemes == (("Thorneycroft", "θˈɔːɹnikɹɑːft"), ("withal", "wɪðˈɔːl"))
    assert dict(readings[2].words) == {"Thorneycroft": "", "withal": "wˈɪðæl"}
    assert line_readings(segment, {"withal": [""]}) == ()  # one way: no readings

    (line,) = plan_utterances([segment], _Generator(), base_seed=0, voice=None,
                              readings=[readings])  # fmt: skip
    # take k is candidate k // 3 of reading k % 3, keyed and seeded by that reading's own key
    reading, key, number = line.take(4)
    assert reading is line.readings[1] and number == 1
    assert line.take_key(4) == candidate_key(key, 1)
    request = line.request(4)
    assert request.seed == candidate_seed(key, 1) and request.phonemes == reading.phonemes
    # the book decided reading 1 for both words: the plain plan of the decided book is keyed by
    # that reading's key, so the takes made while the words were in doubt are found again
    decided = Lexicon(word_entries(dict(readings[1].words)))  # type: ignore[arg-type]
    book = Book(None, (Chapter(0, None, (segment,)),))
    (after,) = apply_lexicon(book, decided).segments
    (plain,) = plan_utterances([after], _Generator(), base_seed=0, voice=None)
    assert plain.key == key and plain.take_key(1) == line.take_key(4)
    # and reading 0 is the line as a render without candidates keys it
    (before,) = plan_utterances([segment], _Generator(), base_seed=0, voice=None)
    assert line.take_key(0) == before.take_key(0) and line.key != before.key


def test_a_later_lexicon_entry_for_a_word_replaces_its_phonemes():
    pairs = (("withal", "wɪðˈæl"), ("Bob", "bˈɑːb"))
    assert replaced_phonemes(pairs, (("Withal", "wɪðˈɔːl"),)) == (
        ("Bob", "bˈɑːb"), ("Withal", "wɪðˈɔːl"))  # fmt: skip


def test_the_first_round_holds_a_take_of_each_reading():
    from verified_tts.selection.best_of_n import takes_by_round
    from verified_tts.selection.policy import default_policy

    segment = _segment("The salmon was good withal.")
    readings = line_readings(segment, {"withal": ["", "a", "b"]})
    (line,) = plan_utterances([segment], _Generator(), base_seed=0, voice=None,
                              readings=[readings])  # fmt: skip
    (plain,) = plan_utterances([segment], _Generator(), base_seed=0, voice=None)
    policy = default_policy()
    assert takes_by_round(8, policy, plain) == (2, 4, 6, 8)
    assert takes_by_round(8, policy, line) == (3, 4, 6, 8)
    assert takes_by_round(2, policy, line) == (2,)


def test_readings_that_sound_alike_are_one_and_a_dictionary_in_other_notation_agrees():
    assert fold("dˈɑːɹɾᵻd") == fold("dˈɑːɹtɪd")  # the flap and ᵻ are espeak-ng's notation
    assert fold("ɹˈeɪvnəl") != fold("ɹˈævɪnɛl")
    from verified_tts.pronounce.candidates import DoubtOptions, doubtful

    found = {w.word: w for w in doubtful(
        ["Ravenel darted in, said Ravenel; the salmon was withal glimmering."],
        options=DoubtOptions(max_readings=3))}  # fmt: skip
    assert "darted" not in found and "salmon" not in found  # the dictionaries agree
    assert found["Ravenel"].count == 2 and found["Ravenel"].why == "by rule"
    assert found["Ravenel"].readings[0].sources == ("espeak-ng en-us",)
    assert len({fold(v.phonemes) for v in found["Ravenel"].readings}) == len(
        found["Ravenel"].readings)  # fmt: skip
    # a word the ASR model doubted in every take is doubted, unless it is a common one
    heard = doubtful(["Not a whit, said he, in the end."], heard=["whit", "in"])
    assert [(w.word, w.why) for w in heard] == [("whit", "heard otherwise")]


def _take(line: str, reading: str, logprob: float | None, heard: bool) -> TakeEvidence:
    return TakeEvidence(line, 0, reading, logprob, -1.0, heard, "", False)


def test_the_book_keeps_espeak_ngs_reading_unless_another_is_clearly_heard_better():
    word = WordReadings("withal", 3, "by rule", (
        Variant("wɪðˈæl", ("espeak-ng en-us",)), Variant("wɪðˈɔːl", ("misaki-gold",))))  # fmt: skip
    # heard as the word in more takes: chosen, over every line's takes
    takes = [_take("a", "", -3.0, False), _take("b", "", -2.0, False),
             _take("a", "wɪðˈɔːl", -2.5, True), _take("b", "wɪðˈɔːl", -2.5, False)]  # fmt: skip
    decision = decide(word, takes, margin=0.5)
    assert decision.changed and decision.chosen == "wɪðˈɔːl"
    assert decision.chosen_sources == ("misaki-gold",)
    own, other = decision.readings
    assert (own.takes, own.lines, own.heard_word) == (2, 2, 0.0) and other.heard_word == 0.5
    # a little likelier only: espeak-ng's stays
    close = [_take("a", "", -2.0, False), _take("a", "wɪðˈɔːl", -1.8, False)]
    assert not decide(word, close, margin=0.5).changed
    # a reading no take said is never chosen
    assert not decide(word, [_take("a", "", -9.0, False)], margin=0.5).changed


@pytest.mark.parametrize("written", ["Dr. Smith came.", "It was 1999.", "Charles II was king."])
def test_each_form_is_the_line_normalised_with_the_place_written_out(written):
    forms = spoken_forms(written, normalize_text(written))
    assert len(forms) == 2 and forms[0].spoken == normalize_text(written)
    assert all(f.choices for f in forms)


def test_candidates_without_the_dictionaries_name_the_extra_before_any_model_loads(
    tmp_path, monkeypatch
):
    from verified_tts.config import build_config
    from verified_tts.errors import UserError
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.render import render

    monkeypatch.setattr("verified_tts.pronounce.sources.available_sources", lambda names=(): ())
    monkeypatch.setattr(Synthesizer, "load", classmethod(lambda cls, config: pytest.fail("loaded")))
    book = tmp_path / "book.md"
    book.write_text("# Words\n\nThe salmon was good withal.\n", encoding="utf-8")
    config = build_config({"pronunciation": {"candidates": True}})
    with pytest.raises(UserError) as error:
        render(book, tmp_path / "out", config)
    assert "pip install 'verified-tts[pronounce]'" in str(error.value)
    assert "\n" not in str(error.value)
