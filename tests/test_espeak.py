import hashlib

import numpy as np
import pytest

from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.generators.espeak import EspeakOptions, draw_prosody

TEXT = "The birch canoe slid on the smooth planks."


def digest(audio: np.ndarray) -> str:
    return hashlib.sha256(audio.tobytes()).hexdigest()


@pytest.fixture(scope="module")
def generator():
    return load_generator(GeneratorConfig(name="espeak"))


def test_same_seed_same_bytes_whatever_came_before(generator):
    first = generator.sample([SynthesisRequest("u", 0, 11, TEXT)])[0]
    generator.sample([SynthesisRequest("u", 1, 99, "Something else entirely, and longer.")])
    again = generator.sample([SynthesisRequest("u", 0, 11, TEXT)])[0]
    assert digest(first.audio) == digest(again.audio)
    assert first.sample_rate == 22050 and first.audio.dtype == np.float32
    assert 1.5 < first.duration_s < 5.0
    assert 0.05 < float(np.max(np.abs(first.audio))) <= 1.0


def test_seeds_draw_different_prosody_inside_bounds(generator):
    options = EspeakOptions()
    draws = [draw_prosody(seed, options) for seed in range(50)]
    assert len({(d.rate, d.pitch, d.variant) for d in draws}) > 30
    assert all(options.rate[0] <= d.rate <= options.rate[1] for d in draws)
    assert {d.variant for d in draws} == set(options.variants)
    batch = generator.sample([SynthesisRequest("u", k, 1000 + k, TEXT) for k in range(3)])
    assert [c.index for c in batch] == [0, 1, 2]
    assert len({digest(c.audio) for c in batch}) == 3


def test_options_from_config_and_errors():
    generator = load_generator(
        GeneratorConfig(name="espeak", options={"rate": [120, 130]}, voice="f3")
    )
    assert generator.options.rate == (120, 130) and generator.options.variants == ("f3",)
    assert generator.identity()["options"]["variants"] == ("f3",)
    with pytest.raises(UserError, match="unknown"):
        load_generator(GeneratorConfig(name="espeak", options={"speed": 2}))
    with pytest.raises(UserError, match="no --model"):
        load_generator(GeneratorConfig(name="espeak", model="/some/model"))
    with pytest.raises(UserError, match="unknown generator"):
        load_generator(GeneratorConfig(name="nope"))
    with pytest.raises(UserError, match="no voice variant no-such-variant"):
        load_generator(GeneratorConfig(name="espeak", voice="no-such-variant"))
