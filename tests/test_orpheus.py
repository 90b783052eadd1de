"""The Orpheus generator on the real vLLM engine with a tiny random-weight Orpheus-layout model.

One engine is built per test process (the generator module keeps one per process, and every
generator here uses the same engine options), so the engine tests share its start-up cost.
Tests that need no engine (prompt layout, option checks, errors before loading) need neither
vllm nor SNAC and always run; the others are skipped only under ``VTTS_SKIP_ENGINE``.
"""

from __future__ import annotations

import numpy as np
import pytest
from orpheus_fixtures import build_tokenizer, engine_test_options, tiny_models, vllm_skip_reason

from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest
from verified_tts.generators.codecs.snac import AUDIO_TOKEN_BASE, SAMPLES_PER_FRAME
from verified_tts.generators.orpheus import (
    TAGS,
    VOICES,
    OrpheusOptions,
    VoicePrompt,
    build_prompt_ids,
    max_tokens_for,
)

VLLM_MISSING = vllm_skip_reason()
needs_vllm = [
    pytest.mark.vllm,
    pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or ""),
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("orpheus-tokenizer")
    build_tokenizer(folder)  # the tiny model's own tokenizer, without building the model
    return AutoTokenizer.from_pretrained(str(folder))


def _named(model: str) -> GeneratorConfig:
    """A config naming a model that is not there (no tiny model is built for it)."""
    return GeneratorConfig(name="orpheus", model=model, options=engine_test_options())


def _config(**overrides) -> GeneratorConfig:
    models = tiny_models()
    options = engine_test_options(**overrides.pop("options", {}))
    fields = {"model": str(models.model), "codec": str(models.codec), "voice": "tara"}
    fields.update(overrides)
    return GeneratorConfig(name="orpheus", options=options, **fields)


# --- no engine needed ---------------------------------------------------------------------------


def test_prompt_layout(tokenizer):
    text = "Well <laugh> that was close."
    ids = build_prompt_ids(tokenizer, text, "leah")
    body = tokenizer("leah: " + text).input_ids
    assert body[0] == 128_000  # the tokenizer's own BOS, as Llama-3 encodes
    assert ids == [128_259, *body, 128_009, 128_260, 128_261, 128_257]
    # the inline tag reaches the model as text, untouched
    assert tokenizer.decode(ids[1:-4], skip_special_tokens=True) == "leah: " + text


def test_zero_shot_prompt_puts_reference_turn_first(tokenizer):
    codes = np.array([[1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14]])
    ref = VoicePrompt(text="Reference words.", codes=codes, digest="x")
    ids = build_prompt_ids(tokenizer, "Target words.", None, ref)
    ref_text = tokenizer("Reference words.").input_ids
    target = tokenizer("Target words.").input_ids
    audio = [AUDIO_TOKEN_BASE + k * 4096 + c for row in codes for k, c in enumerate(row)]
    expected = [128_259, *ref_text, 128_009, 128_260, 128_261, 128_257, *audio, 128_258, 128_262]
    expected += [128_259, *target, 128_009, 128_260, 128_261, 128_257]
    assert ids == expected


def test_max_tokens_whole_frames_and_bounded():
    opts = OrpheusOptions()
    short, long = max_tokens_for("Hi.", opts), max_tokens_for("word " * 2000, opts)
    assert short == opts.max_tokens_min and long == opts.max_tokens_max
    middle = max_tokens_for("x" * 100, opts)
    assert short < middle < long and middle % 7 == 0
    # 100 chars at 0.125 s each + 1.5 s slack = 14 s, about 82 tokens a second
    assert abs(middle / (14.0 * 7 * 24000 / 2048) - 1) < 0.01


def test_options_are_checked():
    with pytest.raises(UserError, match="unknown option 'temprature'"):
        OrpheusOptions.from_mapping({"temprature": 0.7})
    with pytest.raises(UserError, match="top_p"):
        OrpheusOptions.from_mapping({"top_p": 0})
    assert OrpheusOptions.from_mapping({"repetition-penalty": 1.3}).repetition_penalty == 1.3
    assert OrpheusOptions() == OrpheusOptions.from_mapping({})
    defaults = OrpheusOptions()
    assert (defaults.temperature, defaults.top_p, defaults.repetition_penalty) == (0.6, 0.9, 1.1)
    assert defaults.constrained is True


def test_unknown_voice_lists_the_known_ones():
    from verified_tts.generators.orpheus import load

    with pytest.raises(UserError) as err:  # checked before anything heavy is imported
        load(GeneratorConfig(name="orpheus", voice="bob", options=engine_test_options()))
    message = str(err.value)
    assert "'bob'" in message and all(v in message for v in VOICES)


@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
def test_uncached_hub_model_is_one_clear_error(monkeypatch):
    from verified_tts.generators.orpheus import load

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError) as err:
        load(_named("nobody-here/orpheus-not-cached"))
    message = str(err.value)
    assert "nobody-here/orpheus-not-cached" in message and "--model" in message
    assert "\n" not in message


def test_a_mistyped_model_is_said_before_the_engine_is_imported(monkeypatch, tmp_path):
    # importing vLLM takes seconds; a wrong --model must not wait for it
    from verified_tts.generators import codec_lm_load
    from verified_tts.generators.orpheus import load

    def too_early(generator: str) -> None:
        raise AssertionError("vLLM imported before the model's files were found")

    monkeypatch.setattr(codec_lm_load, "import_vllm", too_early)
    with pytest.raises(UserError, match="does not exist"):
        load(_named(str(tmp_path / "no-such-folder")))


def test_without_vllm_the_extra_is_named_before_any_file_is_looked_for(monkeypatch, tmp_path):
    import sys

    from verified_tts.errors import MissingExtra
    from verified_tts.generators.orpheus import load

    monkeypatch.setitem(sys.modules, "vllm", None)  # as if it were not installed
    with pytest.raises(MissingExtra, match=r"verified-tts\[orpheus-cpu\]"):
        load(_named(str(tmp_path / "no-such-folder")))


# --- the logits processor, driven the way vLLM drives it ----------------------------------------


@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
def test_logits_processor_masks_by_frame_position():
    import torch
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality

    from verified_tts.generators.codec_lm_logits import EXTRA_ARG, CodecGrammarLogitsProcessor
    from verified_tts.generators.orpheus import END_OF_SPEECH, frame_grammar

    proc = CodecGrammarLogitsProcessor(None, torch.device("cpu"), False)  # type: ignore[arg-type]
    on = SamplingParams(extra_args={EXTRA_ARG: frame_grammar()})
    off = SamplingParams()
    outs = {0: [], 1: [5] * 3, 2: [AUDIO_TOKEN_BASE] * 7}
    proc.update_state(
        BatchUpdate(
            batch_size=3,
            removed=[],
            added=[(0, on, None, outs[0]), (1, off, None, outs[1]), (2, on, None, outs[2])],
            moved=[],
        )
    )
    logits = torch.randn(3, 156_940)
    free_row = logits[1].clone()
    out = proc.apply(logits)
    assert torch.equal(out[1], free_row)  # unconstrained request untouched
    for row, position, stop in ((0, 0, False), (2, 0, True)):
        finite = torch.isfinite(out[row]).nonzero().flatten().tolist()
        block = list(
            range(AUDIO_TOKEN_BASE + 4096 * position, AUDIO_TOKEN_BASE + 4096 * (position + 1))
        )
        assert finite == ([END_OF_SPEECH] if stop else []) + block  # ascending ids
    # the engine appends to the live lists; the processor follows
    outs[0].append(AUDIO_TOKEN_BASE)
    outs[2].append(AUDIO_TOKEN_BASE)
    proc.update_state(
        BatchUpdate(
            batch_size=2, removed=[1], added=[], moved=[(2, 1, MoveDirectionality.UNIDIRECTIONAL)]
        )
    )
    out = proc.apply(torch.randn(2, 156_940))
    for row in (0, 1):  # both at frame position 1 now, mid-frame: no end-of-speech
        finite = torch.isfinite(out[row]).nonzero().flatten()
        assert finite.min().item() == AUDIO_TOKEN_BASE + 4096 and finite.numel() == 4096


# --- the engine ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def orpheus():
    if VLLM_MISSING:
        pytest.skip(VLLM_MISSING)
    from verified_tts.generators import load_generator

    generator = load_generator(_config())
    yield generator
    generator.close()
    # The engine stays up: test_search (the same xdist group, after this module) loads the same
    # settings and gets this engine back, and shuts it down when it is done; a process's next
    # engine of other settings replaces it (codec_lm_engine.get_engine).


def _requests(text: str, key: str, seeds: list[int], voice: str | None = None):
    return [SynthesisRequest(key, k, seed, text, voice) for k, seed in enumerate(seeds)]


@pytest.mark.vllm
@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
class TestEngine:
    def test_candidates_decode_to_24k_audio(self, orpheus):
        requests = _requests("The birch canoe slid.", "u1", [11, 12]) + _requests(
            "Glue the sheet <sigh> down.", "u2", [21, 22], voice="leo"
        )
        candidates = orpheus.sample(requests)
        assert [(c.utterance_key, c.index, c.seed) for c in candidates] == [
            (r.utterance_key, r.index, r.seed) for r in requests
        ]
        for c in candidates:
            info = c.info
            assert c.sample_rate == 24_000 and c.audio.dtype == np.float32
            assert info["dropped_frames"] == 0  # constrained decoding: every frame decodes
            assert info["frames"] >= 1
            assert info["tokens"] == 7 * info["frames"] + (1 if info["stopped"] else 0)
            assert c.audio.shape == (info["frames"] * SAMPLES_PER_FRAME,)
            assert np.abs(c.audio).max() > 0
            assert info["tokens"] <= info["max_tokens"] + 1
        assert candidates[2].info["voice"] == "leo" and candidates[0].info["voice"] == "tara"
        assert len({c.info["token_digest"] for c in candidates}) == 4

    def test_same_seed_same_tokens_alone_or_in_a_batch(self, orpheus):
        text = "It's easy to tell the depth of a well."
        batch = orpheus.sample(_requests(text, "s", [5, 6, 7]))
        alone = orpheus.sample(_requests(text, "s", [7]))[0]
        assert alone.info["token_digest"] == batch[2].info["token_digest"]
        assert np.array_equal(alone.audio, batch[2].audio)
        assert len({c.info["token_digest"] for c in batch}) == 3  # seeds do matter

    def test_bounded_window_gives_the_same_candidates(self, orpheus):
        from verified_tts.generators.orpheus import load

        narrow = load(_config(options={"in_flight": 1}))
        assert narrow.llm is orpheus.llm  # one engine per process, reused
        requests = _requests("Four hours of steady work faced us.", "w", [1, 2])
        wide = orpheus.sample(requests)
        one_at_a_time = narrow.sample(requests)
        assert [c.info["token_digest"] for c in one_at_a_time] == [
            c.info["token_digest"] for c in wide
        ]
        narrow.close()

    def test_unconstrained_random_weights_emit_malformed_frames(self, orpheus):
        from verified_tts.generators.orpheus import load

        free = load(_config(options={"constrained": False}))
        assert free.identity()["constrained"] is False and orpheus.identity()["constrained"]
        candidates = free.sample(_requests("A random model rambles.", "f", [1, 2]))
        for c in candidates:
            # a random model picks from 156,940 ids; almost no 7-token run is a valid frame
            assert c.info["dropped_frames"] >= 5
            assert c.info["frames"] * 7 + c.info["dropped_frames"] * 7 >= c.info["tokens"] - 7
        free.close()

    def test_unknown_voice_in_a_request(self, orpheus):
        with pytest.raises(UserError, match="unknown Orpheus voice 'bob'"):
            orpheus.sample(_requests("Hello.", "v", [1], voice="bob"))

    def test_zero_shot_voice_prompt(self, orpheus, tmp_path):
        import soundfile as sf

        from verified_tts.generators.orpheus import load

        clip = tmp_path / "ref.wav"
        rng = np.random.default_rng(0)
        sf.write(clip, (0.1 * rng.standard_normal(16000)).astype(np.float32), 16000)
        cloned = load(
            _config(voice=None, voice_ref=str(clip), voice_ref_text="The reference words.")
        )
        assert cloned.llm is orpheus.llm
        assert cloned.reference is not None and cloned.reference.codes.shape == (12, 7)
        assert cloned.identity()["voice_prompt"] == cloned.reference.digest
        plain = orpheus.prompt_ids(SynthesisRequest("z", 0, 1, "Target words."))
        prompt = cloned.prompt_ids(SynthesisRequest("z", 0, 1, "Target words."))
        assert len(prompt) > len(plain) + 12 * 7  # reference turn (with its codes) comes first
        (candidate,) = cloned.sample([SynthesisRequest("z", 0, 1, "Target words.")])
        assert candidate.info["zero_shot"] and candidate.info["dropped_frames"] == 0
        assert candidate.info["prompt_tokens"] == len(prompt)
        cloned.close()


def test_tags_are_the_upstream_set():
    assert set(TAGS) == {
        "<laugh>",
        "<chuckle>",
        "<sigh>",
        "<cough>",
        "<sniffle>",
        "<groan>",
        "<yawn>",
        "<gasp>",
    }
