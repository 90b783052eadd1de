"""Piper takes that differ in prosody: each take after the first draws its own length scale,
phoneme durations and punctuation pauses from its seed; take 0 stays the voice's own reading."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pytest

from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.generators.piper import PiperGenerator
from verified_tts.pipeline import plan_utterances
from verified_tts.selection.policy import default_policy
from verified_tts.selection.strategy import RenderContext
from verified_tts.storage.keys import candidate_key
from verified_tts.storage.results import RunStats
from verified_tts.storage.store import Store
from verified_tts.text.book import Segment

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


def test_take_0_keeps_its_key_and_seed_and_the_store_reuses_it(plain, varied, tmp_path):
    """Variation keys only the takes it changes: a varied render's take 0 is the plain render's,
    under the same key and seed; a later take keeps its seed (the same noise) under a key that
    names its variation, so a changed setting is never answered with a stale take."""
    segment = Segment(0, 0, 0, TEXT, TEXT, "paragraph", 1, "end")
    wider = PiperGenerator(plain.voice, replace(varied.options, pause_jitter=0.5), plain.speaker)
    before, after, other = (
        plan_utterances([segment], g, base_seed=0, voice=None)[0] for g in (plain, varied, wider)
    )
    assert candidate_key(after.key, 0) == candidate_key(before.key, 0)
    assert after.request(0).seed == before.request(0).seed
    assert after.request(1).seed == before.request(1).seed
    assert len({candidate_key(u.key, 1) for u in (before, after, other)}) == 3
    with Store(tmp_path / "store") as store:

        def context(generator):
            return RenderContext(generator, None, default_policy(), store, RunStats(), 2, "p")

        context(plain).sample([(before, 0)])
        run = context(varied)
        made = run.sample([(after, 0), (after, 1)])
        assert (run.stats.candidates_reused, run.stats.candidates_generated) == (1, 1)
        assert made[0].key == candidate_key(before.key, 0) and made[1].seed == after.request(1).seed
