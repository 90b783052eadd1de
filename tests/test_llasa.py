"""Llasa on the real vLLM engine with a tiny random-weight Llasa-layout model and X-codec2.

Prompt tests compare our ids with the prompt written out by hand in the published Llama 3.2 chat
format, with the turns upstream's inference code builds (continue_final_message, speech tokens
spelled as ``<|s_N|>``). One engine
serves the module; it is shut down at the end so the next module can start its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from orpheus_fixtures import engine_test_options, tiny_models, vllm_skip_reason

from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest

VLLM_MISSING = vllm_skip_reason()
SPEECH_BASE = 128_264


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_models("llasa").model))


def _llama32_prompt(text: str, assistant: str, date: str = "26 Jul 2024") -> str:
    """Llasa's prompt written out by hand: its upstream inference code's two chat turns (the
    user asks "Convert the text to speech:" with the text between TEXT_UNDERSTANDING markers,
    the assistant turn is left open after its content, continue_final_message) in the published
    Llama 3.2 chat format, which opens with a system turn holding the knowledge cut-off and the
    date, and no system prompt of its own."""
    return (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        f"Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n"
        f"Convert the text to speech:<|TEXT_UNDERSTANDING_START|>{text}"
        "<|TEXT_UNDERSTANDING_END|><|eot_id|>"
        f"<|start_header_id|>assistant<|end_header_id|>\n\n{assistant}"
    )


def _ids(tokenizer, prompt: str) -> list[int]:
    # the prompt spells its special tokens (BOS included), so nothing is added around it
    return list(tokenizer(prompt, add_special_tokens=False).input_ids)


def test_prompt_is_upstreams_with_a_pinned_date(tokenizer):
    from verified_tts.generators.llasa import build_prompt_ids

    text = "The birch canoe slid on the smooth planks."
    ids = build_prompt_ids(tokenizer, text)
    written = _llama32_prompt(text, "<|SPEECH_GENERATION_START|>")
    assert tokenizer.decode(ids) == written
    assert ids == _ids(tokenizer, written)
    assert ids[0] == 128_000 and ids[-1] == 128_260  # BOS ... <|SPEECH_GENERATION_START|>
    assert 128_258 in ids and 128_259 in ids  # text understanding start/end
    # unpinned, the template writes today's date: another day would be another prompt
    other_day = _llama32_prompt(text, "<|SPEECH_GENERATION_START|>", date="01 Jan 2031")
    assert ids != _ids(tokenizer, other_day)
    assert "Today Date: 26 Jul 2024" in tokenizer.decode(ids)


def test_zero_shot_prompt_continues_the_clip(tokenizer):
    from verified_tts.generators.llasa import SpeechPrompt, build_prompt_ids

    ref = SpeechPrompt(text="Reference words.", codes=np.array([5, 65_535, 0]), digest="x")
    ids = build_prompt_ids(tokenizer, "Target words.", ref)
    # upstream: the clip's words, a space, the target's; the clip's codes open the answer
    written = _llama32_prompt(
        "Reference words. Target words.", "<|SPEECH_GENERATION_START|><|s_5|><|s_65535|><|s_0|>"
    )
    assert tokenizer.decode(ids) == written
    assert ids == _ids(tokenizer, written)
    assert ids[-3:] == [SPEECH_BASE + 5, SPEECH_BASE + 65_535, SPEECH_BASE]


def test_parse_counts_invalid_tokens_and_trims_the_prompt_audio():
    from verified_tts.generators.llasa import LlasaLayout, SpeechPrompt, _Ids

    class Tok:
        unk_token_id = None

        def convert_tokens_to_ids(self, token: str) -> int:
            if token == "<|SPEECH_GENERATION_END|>":
                return 128_261
            return SPEECH_BASE + int(token[4:-2])

    ids = _Ids(Tok(), "tiny")
    ref = SpeechPrompt(text="r", codes=np.array([7, 8]), digest="x")
    written = [SPEECH_BASE + 3, 42, SPEECH_BASE + 4, 128_261]
    plain = LlasaLayout(None, ids, None).parse(written, None)
    assert plain.codes.tolist() == [3, 4] and plain.dropped == 1 and plain.stopped
    cloned = LlasaLayout(None, ids, ref).parse([SPEECH_BASE + 3], None)
    assert cloned.codes.tolist() == [7, 8, 3] and cloned.trim_samples == 2 * 320
    assert cloned.frames == 1 and not cloned.stopped


def test_planner_limit_leaves_room_for_a_reference(tmp_path):
    import soundfile as sf

    from verified_tts.generators import utterance_max_chars

    clip = tmp_path / "ref.wav"
    sf.write(clip, np.zeros(16_000 * 10, dtype=np.float32), 16_000)
    plain = utterance_max_chars(GeneratorConfig(name="llasa"))
    cloned = utterance_max_chars(
        GeneratorConfig(name="llasa", voice_ref=str(clip), voice_ref_text="ten seconds")
    )
    assert plain == int((30 - 1.5) / 0.125) and cloned == int((20 - 1.5) / 0.125)
    assert utterance_max_chars(GeneratorConfig(name="espeak")) is None


def test_named_voices_are_refused_before_loading():
    from verified_tts.generators.llasa import load

    with pytest.raises(UserError, match="no named voices"):
        load(GeneratorConfig(name="llasa", voice="tara"))


# --- the engine ---------------------------------------------------------------------------------


def _config(**overrides) -> GeneratorConfig:
    models = tiny_models("llasa")
    options = engine_test_options(**overrides.pop("options", {}))
    fields = {"model": str(models.model), "codec": str(models.codec)}
    fields.update(overrides)
    return GeneratorConfig(name="llasa", options=options, **fields)


@pytest.fixture(scope="module")
def llasa():
    if VLLM_MISSING:
        pytest.skip(VLLM_MISSING)
    from verified_tts.generators import load_generator
    from verified_tts.generators.llasa import shutdown_engine

    generator = load_generator(_config())
    yield generator
    generator.close()
    shutdown_engine()


def _requests(text: str, key: str, seeds: list[int]) -> list[SynthesisRequest]:
    return [SynthesisRequest(key, k, seed, text) for k, seed in enumerate(seeds)]


@pytest.mark.vllm
@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
class TestEngine:
    def test_candidates_are_valid_speech_tokens_decoded_at_16k(self, llasa):
        candidates = llasa.sample(_requests("The birch canoe slid.", "u1", [1, 2, 3]))
        for c in candidates:
            info = c.info
            assert c.sample_rate == 16_000 and c.audio.dtype == np.float32
            assert info["dropped_frames"] == 0  # only speech ids were generated
            assert info["tokens"] == info["frames"] + (1 if info["stopped"] else 0)
            assert c.audio.shape == (info["frames"] * 320,)
        assert len({c.info["token_digest"] for c in candidates}) == 3

    def test_engine_in_this_process_leaves_torch_threads_settable(self, llasa):
        """On CPU the engine runs in-process where it can; the speaker verifier must still get
        one thread."""
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            assert torch.get_num_threads() == 1
        finally:
            torch.set_num_threads(before)

    def test_same_seed_same_tokens_alone_or_in_a_batch(self, llasa):
        batch = llasa.sample(_requests("Glue the sheet down.", "s", [5, 6, 7]))
        alone = llasa.sample(_requests("Glue the sheet down.", "s", [7]))[0]
        assert alone.info["token_digest"] == batch[2].info["token_digest"]
        assert np.array_equal(alone.audio, batch[2].audio)

    def test_unconstrained_random_weights_write_other_ids(self, llasa):
        from verified_tts.generators.llasa import load

        free = load(_config(options={"constrained": False}))
        assert free.llm is llasa.llm
        (c,) = free.sample(_requests("A random model rambles.", "f", [1]))
        # 128,264 of 193,800 ids are not speech: a random model mostly writes those
        assert c.info["dropped_frames"] > c.info["frames"]
        free.close()

    def test_zero_shot_prompt_and_trimmed_audio(self, llasa, tmp_path):
        import soundfile as sf

        from verified_tts.generators.llasa import load

        clip = tmp_path / "ref.wav"
        sf.write(clip, (0.1 * np.random.default_rng(0).standard_normal(16_000)), 16_000)
        cloned = load(_config(voice_ref=str(clip), voice_ref_text="The reference words."))
        assert cloned.llm is llasa.llm
        ref = cloned.reference
        assert ref is not None and abs(len(ref.codes) - 50) <= 2
        assert cloned.identity()["voice_prompt"] == ref.digest
        request = SynthesisRequest("z", 0, 3, "Target words.")
        prompt = cloned.prompt_ids(request)
        assert prompt[-len(ref.codes) :] == [SPEECH_BASE + int(c) for c in ref.codes]
        (candidate,) = cloned.sample([request])
        # the clip was decoded with the continuation and cut off: only new tokens remain
        assert candidate.info["zero_shot"] and candidate.info["prompt_tokens"] == len(prompt)
        assert candidate.audio.shape == (candidate.info["frames"] * 320,)
        cloned.close()


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
def test_engine_that_cannot_start_says_why_in_one_line(tmp_path: Path):
    """vLLM only says "see root cause above"; the one line must carry the cause itself."""
    models = tiny_models("llasa")
    book = tmp_path / "book.md"
    book.write_text("# One\n\nHello there.\n", encoding="utf-8")
    config = tmp_path / "big.toml"
    config.write_text("[generator.llasa]\nkv_cache_gib = 100000\n", encoding="utf-8")
    command = [sys.executable, "-m", "verified_tts", "render", str(book), "--generator", "llasa"]
    command += ["--model", str(models.model), "--codec", str(models.codec)]
    command += ["--out", str(tmp_path / "out"), "--config", str(config)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode != 0
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "vLLM could not" in line]
    assert lines, done.stderr[-2000:]
    line = lines[-1]
    assert "ValueError: Available memory" in line and "kv cache" in line  # the engine's reason
    assert "kv_cache_gib" in line and "engine log: " in line
    # the engine processes' tracebacks went to the log file, not around the one line
    assert "Traceback" not in done.stdout + done.stderr
    log = Path(line.split("engine log: ", 1)[1].split(";", 1)[0])
    assert "Traceback" in log.read_text()
    log.unlink()


def test_root_cause_prefers_the_inner_error():
    from verified_tts.generators.codec_lm_engine import root_cause

    lines = [
        "(Worker pid=7) ERROR 11-30 [executor.py:1063] Traceback (most recent call last):",
        "(Worker pid=7) ERROR 11-30 [executor.py:1063] ValueError: Available memory x",
        "(EngineCore pid=6) ERROR 11-30 [core.py:1] RuntimeError: Worker failed with error 'x'",
        "RuntimeError: Engine core initialization failed. See root cause above.",
    ]
    assert root_cause(lines) == "ValueError: Available memory x"
    worker = "(EngineCore pid=6) ERROR 11-30 [core.py:1] Exception: WorkerProc initialization "
    worker += "failed due to an exception in a background process. See stack trace for root cause."
    assert root_cause([lines[1], worker]) == "ValueError: Available memory x"
    assert root_cause(lines[2:]) == "RuntimeError: Worker failed with error 'x'"
    assert root_cause(["nothing here"]) is None


def test_engine_gets_its_own_processes_where_the_in_process_start_would_fail():
    """vLLM's in-process start reads ``vars()`` of every loaded module's objects; llvmlite's FFI
    wrapper (loaded with numba, by librosa) breaks that read, so the engine starts apart.

    In a process of its own: llvmlite, once imported, stays loaded, and every engine this pytest
    worker started after it would get its own processes too (two more vLLM imports)."""
    check = """
import os
import llvmlite.binding.ffi
from verified_tts.generators import codec_lm_engine as engine
engine._on_gpu = lambda: False
os.environ.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
assert not engine._modules_scannable()
assert not engine._engine_in_process()
assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
engine._user_multiprocessing = "0"  # a user's own choice is kept
assert engine._engine_in_process()
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
