"""Spark-TTS on the real vLLM engine with a tiny random-weight Spark-layout model and BiCodec.

Prompt tests build upstream's strings (SparkAudio/Spark-TTS cli/SparkTTS.py) and compare ids.
The engine tests check that a created voice's 32 global tokens are drawn once and reused for
every utterance (one speaker per book), that only semantic ids are generated, and cloning.
"""

from __future__ import annotations

import numpy as np
import pytest
from orpheus_fixtures import engine_test_options, tiny_models, vllm_skip_reason

from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest

VLLM_MISSING = vllm_skip_reason()


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_models("spark").model))


def test_voice_labels_parse_and_bad_ones_list_the_choices():
    from verified_tts.generators.spark import parse_voice

    assert parse_voice("female:low:moderate").label == "female:low:moderate"
    assert parse_voice("Male:very-high").label == "male:very_high:moderate"
    with pytest.raises(UserError) as err:
        parse_voice("robot:low:low")
    assert "very_low, low, moderate, high, very_high" in str(err.value)


def test_control_prompt_is_upstreams(tokenizer):
    from verified_tts.generators.spark import control_prompt, parse_voice

    text = "The birch canoe slid."
    prompt = control_prompt(text, parse_voice("male:very_low:high"))
    # upstream: TASK_TOKEN_MAP["controllable_tts"], start_content, text, end_content,
    # start_style_label, gender, pitch, speed labels, end_style_label, joined
    assert prompt == (
        "<|task_controllable_tts|><|start_content|>The birch canoe slid.<|end_content|>"
        "<|start_style_label|><|gender_1|><|pitch_label_0|><|speed_label_3|><|end_style_label|>"
    )
    ids = tokenizer(prompt).input_ids
    names = tokenizer.convert_ids_to_tokens(ids)
    assert names[0] == "<|task_controllable_tts|>" and names[-1] == "<|end_style_label|>"
    assert names[-4:-1] == ["<|gender_1|>", "<|pitch_label_0|>", "<|speed_label_3|>"]


def test_clone_prompts_are_upstreams():
    from verified_tts.generators.spark import clone_prompt

    globals_ = [3, 4095] + [0] * 30
    g = "".join(f"<|bicodec_global_{i}|>" for i in globals_)
    assert clone_prompt("Hello.", globals_) == (
        f"<|task_tts|><|start_content|>Hello.<|end_content|><|start_global_token|>{g}"
        "<|end_global_token|>"
    )
    with_text = clone_prompt("Hello.", globals_, "Ref words. ", [7, 8191])
    assert with_text == (
        f"<|task_tts|><|start_content|>Ref words. Hello.<|end_content|><|start_global_token|>{g}"
        "<|end_global_token|><|start_semantic_token|><|bicodec_semantic_7|>"
        "<|bicodec_semantic_8191|>"
    )


# --- the engine ---------------------------------------------------------------------------------


def _config(**overrides) -> GeneratorConfig:
    models = tiny_models("spark")
    options = engine_test_options(**overrides.pop("options", {}))
    fields = {"model": str(models.model), "codec": str(models.codec), "voice": "female:low:high"}
    fields.update(overrides)
    return GeneratorConfig(name="spark", options=options, **fields)


@pytest.fixture(scope="module")
def spark():
    if VLLM_MISSING:
        pytest.skip(VLLM_MISSING)
    from verified_tts.generators import load_generator
    from verified_tts.generators.spark import shutdown_engine

    generator = load_generator(_config())
    yield generator
    generator.close()
    shutdown_engine()


def _requests(text: str, key: str, seeds: list[int], voice: str | None = None) -> list:
    return [SynthesisRequest(key, k, seed, text, voice) for k, seed in enumerate(seeds)]


@pytest.mark.vllm
@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
class TestEngine:
    def test_a_created_voice_is_drawn_once_and_kept_for_the_book(self, spark, tokenizer):
        from verified_tts.generators.spark import control_prompt, parse_voice

        layout = spark.layout
        drawn = layout.voice_tokens(parse_voice("female:low:high"))
        names = tokenizer.convert_ids_to_tokens(drawn)
        assert names[0] == "<|start_acoustic_token|>" and names[-1] == "<|end_global_token|>"
        speaker = layout.global_codes(drawn)
        assert speaker.shape == (32,)
        assert spark.identity()["voice_globals"] == speaker.tolist()
        texts = ["The birch canoe slid.", "Glue the sheet down.", "It is easy to tell."]
        for i, text in enumerate(texts):
            request = SynthesisRequest(f"u{i}", 0, i, text)
            ids = spark.prompt_ids(request)
            upstream = tokenizer(control_prompt(text, parse_voice("female:low:high"))).input_ids
            assert ids == upstream + drawn  # upstream's prompt, then the book's speaker
            assert np.array_equal(layout.globals_for(request), speaker)
        assert len(layout._voices) == 1  # one draw for the whole book

    def test_candidates_are_semantic_tokens_decoded_at_16k(self, spark):
        candidates = spark.sample(_requests("The birch canoe slid.", "u1", [1, 2]))
        for c in candidates:
            info = c.info
            assert c.sample_rate == 16_000 and info["dropped_frames"] == 0
            assert info["tokens"] - info["frames"] - int(info["stopped"]) in (0, 1)  # marker
            assert c.audio.shape == (info["frames"] * 320,) and info["voice"] == "female:low:high"
            assert info["global_codes"] == spark.identity()["voice_globals"]  # the book's speaker
        again = spark.sample(_requests("The birch canoe slid.", "u1", [2]))[0]
        assert again.info["token_digest"] == candidates[1].info["token_digest"]
        assert np.array_equal(again.audio, candidates[1].audio)

    def test_the_same_voice_draws_the_same_speaker_and_another_seed_another(self, spark):
        from verified_tts.generators.spark import load

        same = load(_config())
        other = load(_config(options={"voice_seed": 1}))
        assert same.llm is spark.llm
        assert same.identity()["voice_globals"] == spark.identity()["voice_globals"]
        assert other.identity()["voice_globals"] != spark.identity()["voice_globals"]
        same.close()
        other.close()

    def test_a_request_voice_gets_its_own_speaker(self, spark):
        (c,) = spark.sample(_requests("Hello there.", "d", [4], voice="male:moderate:low"))
        assert c.info["voice"] == "male:moderate:low" and c.info["dropped_frames"] == 0
        assert len(spark.layout._voices) == 2

    def test_cloning_from_a_clip_with_and_without_its_words(self, spark, tmp_path, tokenizer):
        import soundfile as sf

        from verified_tts.generators.spark import clone_prompt, load

        clip = tmp_path / "ref.wav"
        sf.write(clip, (0.1 * np.random.default_rng(0).standard_normal(32_000)), 16_000)
        plain = load(_config(voice=None, voice_ref=str(clip)))
        ref = plain.reference
        assert ref is not None and ref.global_codes.shape == (32,) and ref.text is None
        request = SynthesisRequest("c", 0, 1, "Target words.")
        assert (
            plain.prompt_ids(request)
            == tokenizer(clone_prompt("Target words.", ref.global_codes)).input_ids
        )
        worded = load(_config(voice=None, voice_ref=str(clip), voice_ref_text="Ref words. "))
        wref = worded.reference
        assert wref is not None and abs(len(wref.semantic_codes) - 100) <= 2
        ids = worded.prompt_ids(request)
        assert (
            ids
            == tokenizer(
                clone_prompt("Target words.", wref.global_codes, "Ref words. ", wref.semantic_codes)
            ).input_ids
        )
        (c,) = worded.sample([request])
        assert c.info["zero_shot"] and c.info["dropped_frames"] == 0
        assert c.audio.shape == (c.info["frames"] * 320,)  # only the new tokens are decoded
        plain.close()
        worded.close()


def test_the_planner_cuts_utterances_to_the_layouts_limit(tmp_path):
    from verified_tts.config import RenderConfig
    from verified_tts.text.book import load_book

    spark = RenderConfig(generator=GeneratorConfig(name="spark"))
    orpheus = RenderConfig(generator=GeneratorConfig(name="orpheus"))
    assert spark.utterance_chars() == int((30 - 1.5) / 0.125) < spark.max_chars
    assert orpheus.utterance_chars() == orpheus.max_chars  # 40 s allows more than 250 chars
    tighter = RenderConfig(generator=GeneratorConfig(name="spark", options={"max_speech_s": 10.0}))
    sentence = "word " * 60  # 300 characters, one sentence
    book = tmp_path / "book.md"
    book.write_text(f"# T\n\n{sentence.strip()}.\n", encoding="utf-8")
    pieces = [s.spoken for s in load_book(book, max_chars=tighter.utterance_chars()).segments]
    assert tighter.utterance_chars() == 68
    assert len(pieces) > 4 and all(len(p) <= 68 for p in pieces)
