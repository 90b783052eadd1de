"""Moved voices (``NAME@pitch+N``): more voices for a cast, given out by distinctness."""

from __future__ import annotations

import numpy as np
import pytest

from verified_tts.cast import find_cast
from verified_tts.casting.voice_order import distinct_order, moved_voices, similarity
from verified_tts.errors import UserError
from verified_tts.generators import SynthesisRequest, load_generator
from verified_tts.text.book import parse_book
from verified_tts.voices import catalogue, find_voice, own_speaker

TEXT = "The birch canoe slid on the smooth planks."


def _spoken(name: str, seed: int = 7):
    voice = find_voice(name)
    config = voice.generator_config()
    generator = load_generator(config)
    request = SynthesisRequest("u", 0, seed, TEXT, voice=config.voice)
    return generator, generator.sample([request])[0]


def _pitch(audio: np.ndarray, rate: int) -> float:
    """Median fundamental frequency (Hz) of the voiced frames (pYIN)."""
    import librosa

    f0, voiced, _ = librosa.pyin(audio, fmin=50, fmax=600, sr=rate)
    return float(np.nanmedian(f0[voiced]))


@pytest.mark.parametrize("plain", ["piper:en_US-joe-medium", "hibari:heart"])
def test_a_moved_voice_is_higher_at_its_own_pace_and_keyed_apart(plain):
    generator, base = _spoken(plain)
    moved_generator, up = _spoken(f"{plain}@pitch+4")
    _, down = _spoken(f"{plain}@pitch-4")
    assert up.sample_rate == down.sample_rate == base.sample_rate
    for clip in (up, down):  # spoken slower by the factor it is then sped up by
        assert abs(clip.duration_s / base.duration_s - 1) < 0.12, (clip.duration_s, base.duration_s)
    factor = 2 ** (4 / 12)
    own = _pitch(base.audio, base.sample_rate)
    rise = _pitch(up.audio, up.sample_rate) / own
    fall = _pitch(down.audio, down.sample_rate) / own
    assert abs(rise / factor - 1) < 0.08 and abs(fall * factor - 1) < 0.08, (rise, fall)
    # the plain voice's identity (so its store keys) is what it was; the moved one's differs
    assert "pitch" not in generator.identity()
    assert moved_generator.identity()["pitch"] == 4.0


def test_moved_word_timings_stay_inside_the_clip():
    _, up = _spoken("piper:en_US-joe-medium@pitch+4")
    words = up.info["timing"]["words"]
    assert words and max(row[6] for row in words) <= up.duration_s + 0.02


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("piper:joe@pitch+9", "semitones up to 6"),
        ("piper:joe@deeper", "not a pitch move"),
        ("hibari:heart@pitch+0", "not a pitch move"),
        ("espeak:en-us+f3@pitch+2", "only Piper and hibari voices"),
    ],
)
def test_bad_moves_are_one_line(name, says):
    with pytest.raises(UserError, match=says):
        find_voice(name)


def test_a_moved_voice_is_named_in_full_and_never_the_plain_one_loaded():
    voice = find_voice("piper:joe@pitch-2")
    assert voice.name == "piper:en_US-joe-medium@pitch-2"
    assert voice.options == {"pitch": -2.0} and voice.gender == "male"
    with pytest.raises(UserError, match="moved voice"):
        own_speaker("piper:joe@pitch-2", "piper", "en_US-joe-medium")


def test_the_catalogue_lists_the_moved_voices_measured_clear():
    listed = {v.name for v in catalogue()}
    measured = moved_voices()
    assert measured, "voice_similarity.json names no moved voice"
    assert set(measured) <= listed
    assert not {n for n in listed if "@" in n} - set(measured)


BOOK = """# One

"Good morning," said Mr. Brown. "It is cold."

"It is," said Mr. Green.

"Hello," said Mr. White.

"Where is the boat?" asked Mr. Brown.

"Here," said Mr. Green.

"Far away," said Mr. Brown.
"""


def test_cast_gives_the_most_distinct_voices_to_who_speaks_most():
    narrator = "piper:en_US-joe-medium"
    voices = catalogue()
    cast, characters = find_cast(parse_book(BOOK, dialogue=True), narrator=narrator, voices=voices)
    order = [c.name for c in characters]
    assert order[:3] == ["Mr. Brown", "Mr. Green", "Mr. White"], order
    male = [v.name for v in voices if v.gender == "male" and v.generator != "espeak"]
    ranked = distinct_order(male, narrator)
    given = [cast.characters[name] for name in order[:3]]
    assert given == [ranked[i % len(ranked)] for i in range(3)] and narrator not in given
    # each next voice is the least like the narrator and the ones before it
    first = max(similarity(ranked[0], narrator), 0)
    assert all(similarity(v, narrator) >= first for v in ranked[1:])
