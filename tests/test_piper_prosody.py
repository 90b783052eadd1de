"""Piper takes that differ in prosody: each take after the first draws its own length scale,
phoneme durations and punctuation pauses from its seed; take 0 stays the voice's own reading."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pytest

from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.generators.piper import PiperGenerator

TEXT = "The birch canoe slid on the smooth planks, and the rain, at last, began to fall."
VARIED = {"length_jitter": 0.06, "duration_jitter": 0.1, "pause_jitter": 0.4}


def digest(audio: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(audio).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def plain():
    return load_generator(GeneratorConfig(name="piper"))


@pytest.fixture(scope="module")
def varied(plain):
    return PiperGenerator(plain.voice, replace(plain.options, **VARIED), plain.speaker)


def takes(generator, count=4, key="u", first=0):
    return generator.sample(
        [SynthesisRequest(key, k, 100 + k, TEXT) for k in range(first, first + count)]
    )


@pytest.fixture(scope="module")
def plain_takes(plain):
    return takes(plain)


@pytest.fixture(scope="module")
def varied_takes(varied):
    return takes(varied)


def test_take_0_is_the_voice_own_reading_and_later_takes_differ_in_length(
    plain_takes, varied_takes
):
    same, wide = plain_takes, varied_takes
    assert digest(wide[0].audio) == digest(same[0].audio)  # the N=1 render is unchanged
    assert "prosody" not in wide[0].info and "prosody" in wide[1].info
    assert len({round(t.duration_s, 3) for t in wide}) == 4
    spread = np.std([t.duration_s for t in wide]) / np.mean([t.duration_s for t in wide])
    narrow = np.std([t.duration_s for t in same]) / np.mean([t.duration_s for t in same])
    assert spread > narrow


def test_a_take_is_a_function_of_its_seed_alone(varied, varied_takes):
    varied.sample([SynthesisRequest("w", 1, 7, "Something else, entirely.")])
    again = takes(varied, count=2, key="v", first=1)  # another key, the same seeds and text
    assert [digest(t.audio) for t in varied_takes[1:3]] == [digest(t.audio) for t in again]


def test_each_take_is_held_to_the_length_it_was_drawn_to_have(varied_takes):
    own = [t.duration_s / t.info["timing"]["predicted_s"] for t in varied_takes]
    assert all(0.93 < ratio < 1.07 for ratio in own), own
    # against the voice's own length (take 0's) the takes, drawn longer and shorter, spread wider
    voice = [t.duration_s / varied_takes[0].info["timing"]["predicted_s"] for t in varied_takes]
    assert np.std(own) < np.std(voice) / 2, (own, voice)


def test_variation_is_part_of_the_identity(plain, varied):
    assert "prosody" not in plain.identity()
    assert varied.identity()["prosody"]["pause_jitter"] == 0.4
    assert varied.identity()["sampling"] == plain.identity()["sampling"]
