"""Pronunciation candidates: each source's conversion to espeak-ng IPA, espeak-ng's dictionary
lookup, the book-level choice, the lexicon file it writes, and one small decision spoken by
Piper and scored by tiny.en."""

from __future__ import annotations

import re

import pytest

from verified_tts.pronounce.decide import Decision, Evidence, choose
from verified_tts.pronounce.lexicon_file import lexicon_text, write_decisions
from verified_tts.pronounce.sources import (
    arpabet_to_ipa,
    cmudict_readings,
    gruut_readings,
    gruut_to_ipa,
    misaki_gold,
    misaki_to_ipa,
    proposals,
    stress_variants,
)
from verified_tts.text.lexicon import PHONEMES, Lexicon, load_lexicon, make_entry


def test_conversions_of_each_source_notation():
    assert arpabet_to_ipa(["S", "AE1", "M", "AH0", "N"]) == "sˈæmən"
    assert arpabet_to_ipa(["B", "ER1", "D"]) == "bˈɜːd"
    assert arpabet_to_ipa(["B", "AH1", "T", "ER0"]) == "bˈʌɾɚ"  # the US flap, as espeak-ng
    with pytest.raises(ValueError, match="XX"):
        arpabet_to_ipa(["XX1"])
    assert gruut_to_ipa("s ˈæ m ə n") == "sˈæmən"
    assert gruut_to_ipa("b ˈɚ d") == "bˈɜːd"
    assert gruut_to_ipa("h ˈæ p i") == "hˈæpi"  # final unstressed i stays short
    assert gruut_to_ipa("t͡ʃ ˈɚ t͡ʃ") == "tʃˈɜːtʃ"  # no tie bars
    assert misaki_to_ipa("kwˈOθ") == "kwˈoʊθ"
    assert misaki_to_ipa("bəfˈɛl") == "bəfˈɛl"
    assert misaki_to_ipa("pɹˌɛɾəɹnˈæʧəɹəli") == "pɹˌɛɾɚnˈætʃəɹəli"


def test_stress_variants_move_the_primary_stress_to_full_vowels_only():
    assert stress_variants("pɹɪɾɚnˈætʃɚɹəli", 2) == ["pɹˈɪɾɚnætʃɚɹəli"]
    assert stress_variants("kˈæt") == []  # one vowel: nothing to move
    assert stress_variants("ˈæmɪkəbli", 1) == ["æmˈɪkəbli"]


def test_real_dictionaries_agree_with_espeak_ng_on_common_words():
    """On words espeak-ng knows, every source converted gives espeak-ng's own reading: the
    conversions are right on real data, not only on the examples above."""
    from verified_tts.pronounce.espeak_words import dialect_readings

    words = ["salmon", "bird", "father", "thought", "boat", "church", "judge", "happy", "butter"]
    espeak = dialect_readings(words, ("en-us",))
    for word in words:
        own = espeak[word][0][1]
        for source in (cmudict_readings, gruut_readings, misaki_gold):
            readings = source(word)
            assert own in readings, (word, source.__name__, readings, own)
            assert all(symbol in PHONEMES for r in readings for symbol in r)
    assert cmudict_readings("Biffin's") == [] and gruut_readings("houses")  # unknown / known
    assert misaki_gold("withal") == ["wɪðˈɔːl"]


def test_espeak_ng_says_which_words_it_guessed_by_rule():
    from verified_tts.pronounce.espeak_words import by_rule, dialect_readings

    guessed = by_rule(["salmon", "quoth", "withal", "Thorneycroft"])
    assert guessed == {"salmon": False, "quoth": False, "withal": True, "Thorneycroft": True}
    dialects = dict(dialect_readings(["quoth"])["quoth"])
    assert dialects["en-us"] == "kwˈoʊθ" and dialects["en-gb-x-rp"] == "kwˈɒθ"


def test_proposals_merge_sources_and_keep_espeak_ng_first():
    readings = proposals("befell", [("en-us", "bᵻfˈɛl"), ("en", "bɪfˈɛl")], stresses=1)
    assert readings[0].phonemes == "bᵻfˈɛl" and readings[0].sources == ("espeak-ng en-us",)
    merged = next(r for r in readings if r.phonemes == "bɪfˈɛl")
    assert {"espeak-ng en", "cmudict", "gruut"} <= set(merged.sources)
    assert len({r.phonemes.replace("ˌ", "") for r in readings}) == len(readings)


def _evidence(phonemes: str, logprob: float, wer: float = 0.1) -> Evidence:
    return Evidence(phonemes, ("src",), logprob, wer, ("heard",), 1.0)


def test_choice_keeps_espeak_ng_unless_another_reading_is_clearly_likelier():
    own, other = _evidence("a", -1.0), _evidence("b", -0.97)
    assert choose([own, other], margin=0.05) == 0  # within the margin: espeak-ng's stays
    assert choose([own, _evidence("b", -0.9)], margin=0.05) == 1
    assert choose([own, _evidence("b", -0.9, 0.3), _evidence("c", -0.9, 0.1)], 0.05) == 2


def test_lexicon_file_keeps_the_producers_entries_and_loads_back(tmp_path):
    producer = Lexicon(
        (make_entry(r"\bSt\. John\b", "Sinjin", regex=True, where="t"),
         make_entry("Hermione", {"say": "her-my-oh-nee"}, where="t")),
    )  # fmt: skip
    evidence = (_evidence("wɪðˈæl", -2.3), _evidence("wɪðˈɔːl", -1.9))
    decisions = [
        Decision("withal", 3, "by rule", "good withal.", "wɪðˈɔːl", ("misaki-gold",), True,
                 evidence),
        Decision("befel", 1, "by rule", "it befel", "bᵻfˈɛl", ("espeak-ng en-us",), False,
                 evidence[:1]),
    ]  # fmt: skip
    path = tmp_path / "book.lexicon.toml"
    sidecar = write_decisions(path, decisions, producer)
    loaded = load_lexicon(path)
    assert [e.pattern for e in loaded.entries] == [
        r"\bSt\. John\b", "Hermione", "withal", "befel"]  # fmt: skip
    assert loaded.entries[2].phonemes == "wɪðˈɔːl"
    text = path.read_text(encoding="utf-8")
    assert '"befel" = { keep = true }' in text  # a kept reading: kept, not doubted again
    assert loaded.entries[3].keep and loaded.apply("it befel") == ("it befel", (), ())
    assert re.search(r"# \* wɪðˈɔːl .*logprob -1\.900", text)
    assert sidecar.name == "book.lexicon.toml.json" and "misaki-gold" in sidecar.read_text()
    assert lexicon_text([]).count("[words]") == 1


@pytest.fixture(scope="module")
def piper_and_tiny():
    from verified_tts.generators import GeneratorConfig, load_generator
    from verified_tts.options.verifiers import WerOptions
    from verifiers import load_wer_verifier

    return load_generator(GeneratorConfig()), load_wer_verifier(WerOptions())


def test_a_doubtful_word_is_decided_by_spoken_takes_and_a_producer_entry_wins(piper_and_tiny):
    from verified_tts.pronounce.decide import DecideOptions, decide

    generator, verifier = piper_and_tiny
    sentences = ["The salmon was good withal, said Thorneycroft."]
    options = DecideOptions(seeds=1, max_readings=2, window=3)
    covered = [re.compile(r"(?<!\w)Thorneycroft(?!\w)", re.IGNORECASE)]
    decisions = decide(sentences, generator, verifier, covered=covered, options=options)
    assert [d.word for d in decisions] == ["withal"]  # salmon: in the dictionary; the other: ours
    (decision,) = decisions
    assert len(decision.readings) == 2 and decision.readings[0].sources[0] == "espeak-ng en-us"
    assert decision.readings[0].phonemes != decision.readings[1].phonemes
    for reading in decision.readings:
        assert len(reading.heard) == 1 and reading.heard[0].strip()  # what tiny.en heard
        assert reading.logprob < 0 and reading.wer >= 0
    assert decision.chosen == decision.readings[choose(decision.readings, options.margin)].phonemes
    assert decision.changed == (decision.chosen != decision.readings[0].phonemes)


def test_pronounce_command_refuses_a_bad_out_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from verified_tts.cli import app

    book = tmp_path / "book.md"
    book.write_text("# One\n\nQuoth the raven withal.\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["pronounce", str(book), "-o", str(tmp_path / "x.txt")])
    from verified_tts.errors import UserError

    # the one-line UserError that main() prints, raised before any model loads
    assert isinstance(result.exception, UserError)
    assert "the lexicon is a TOML file" in str(result.exception)


def test_pronounce_command_keeps_an_existing_lexicon_unless_forced(tmp_path):
    from typer.testing import CliRunner

    from verified_tts.cli import app
    from verified_tts.errors import UserError

    book = tmp_path / "book.md"
    book.write_text("# One\n\nQuoth the raven withal.\n", encoding="utf-8")
    edited = tmp_path / "book.lexicon.toml"
    edited.write_text('"withal" = { say = "with all" }\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["pronounce", str(book), "-o", str(edited)])
    # refused before any model loads; the producer's edits stay as they were
    assert isinstance(result.exception, UserError)
    assert "may hold your edits" in str(result.exception) and "--force" in str(result.exception)
    assert edited.read_text(encoding="utf-8") == '"withal" = { say = "with all" }\n'
