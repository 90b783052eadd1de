"""Llasa on vLLM: the codec-LM generator with the Llasa layout and X-codec2 16 kHz.

Llasa (HKUSTAudio Llasa-1B/3B/8B, zhenye234/LLaSA_training) is a Llama 3 with 8 special tokens
after Llama's 128,256 ids (TEXT_UNDERSTANDING_START/END = 128258/128259, SPEECH_GENERATION_START/END
= 128260/128261, ...) and 65,536 speech tokens ``<|s_N|>`` from id 128264: one X-codec2 code each,
50 a second. The prompt is the Llama 3 chat template with the user turn "Convert the text to
speech:<|TEXT_UNDERSTANDING_START|>{text}<|TEXT_UNDERSTANDING_END|>" and an assistant turn opened
with <|SPEECH_GENERATION_START|> and continued by the model until SPEECH_GENERATION_END. The
Llama 3.2 template writes today's date into the system turn unless it is given one; it is pinned
here (:data:`PINNED_DATE`), or the prompt, the samples and every content address would change
with the calendar. Zero-shot (``voice_ref`` + ``voice_ref_text``): the clip's text goes before
the target text and the clip's X-codec2 codes open the assistant turn; the model continues the
clip, so its audio is decoded with the continuation (one context for the codec) and then cut off.
Llasa was trained on 2,048 tokens of text and speech together, which sets the engine's context.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators.base import SynthesisRequest
from verified_tts.generators.codec_lm import (
    CodecLMGenerator,
    Parsed,
    load_tokenizer,
    read_clip,
)
from verified_tts.generators.codec_lm_engine import (
    engine_kwargs,
    get_engine,
    import_vllm,
    shutdown_engine,
)
from verified_tts.generators.codecs.xcodec2 import (
    CODEBOOK_SIZE,
    HOP,
    SAMPLE_RATE,
    Xcodec2Codec,
    load_codec,
)
from verified_tts.models import hub_snapshot, locate_model
from verified_tts.options.generation import GeneratorConfig, LlasaOptions

__all__ = [
    "CONTEXT",
    "DEFAULT_CODEC",
    "DEFAULT_MODEL",
    "PINNED_DATE",
    "LlasaLayout",
    "LlasaOptions",
    "SpeechPrompt",
    "build_prompt_ids",
    "load",
    "shutdown_engine",
]

DEFAULT_MODEL = "HKUSTAudio/Llasa-1B"
DEFAULT_CODEC = "HKUSTAudio/xcodec2-hf"
PINNED_DATE = "26 Jul 2024"  # the Llama 3.2 template's own fallback date
CONTEXT = 2048  # Llasa's training length: text and speech together
TOKENS_PER_SECOND = SAMPLE_RATE / HOP  # 50
SPEECH_START = "<|SPEECH_GENERATION_START|>"
SPEECH_END = "<|SPEECH_GENERATION_END|>"
TEXT_START = "<|TEXT_UNDERSTANDING_START|>"
TEXT_END = "<|TEXT_UNDERSTANDING_END|>"


def languages(config: GeneratorConfig) -> tuple[str, ...]:
    """Llasa is trained on English and Chinese speech."""
    return ("en", "zh")


@dataclass(frozen=True, eq=False)
class SpeechPrompt:
    """A zero-shot reference: the clip's words and its X-codec2 codes."""

    text: str
    codes: np.ndarray  # (n,) int64
    digest: str

    @property
    def seconds(self) -> float:
        return len(self.codes) * HOP / SAMPLE_RATE


def _chat_ids(tokenizer: Any, text: str) -> list[int]:
    chat = [
        {"role": "user", "content": f"Convert the text to speech:{TEXT_START}{text}{TEXT_END}"},
        {"role": "assistant", "content": SPEECH_START},
    ]
    ids = tokenizer.apply_chat_template(
        chat, tokenize=True, continue_final_message=True, date_string=PINNED_DATE
    )
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return [int(i) for i in ids]


class _Ids:
    """Llasa's special ids, read from the tokenizer and checked against the layout."""

    def __init__(self, tokenizer: Any, label: str) -> None:
        def one(token: str) -> int:
            value = tokenizer.convert_tokens_to_ids(token)
            if not isinstance(value, int) or value == tokenizer.unk_token_id:
                raise UserError(
                    f"Llasa model '{label}': its tokenizer has no {token}; is this a Llasa model?"
                )
            return value

        self.speech_end = one(SPEECH_END)
        self.speech_base = one("<|s_0|>")
        if one(f"<|s_{CODEBOOK_SIZE - 1}|>") != self.speech_base + CODEBOOK_SIZE - 1:
            raise UserError(f"Llasa model '{label}': its speech tokens are not contiguous")


def build_prompt_ids(
    tokenizer: Any, text: str, reference: SpeechPrompt | None = None, speech_base: int = 128_264
) -> list[int]:
    """Llasa prompt ids: the chat turns, the assistant turn open at SPEECH_GENERATION_START.

    With a reference, its text precedes the target text and its codes continue the open turn.
    """
    if reference is None:
        return _chat_ids(tokenizer, text)
    sep = "" if reference.text.endswith((" ", "\n")) else " "
    ids = _chat_ids(tokenizer, f"{reference.text}{sep}{text}")
    return ids + [speech_base + int(c) for c in reference.codes]


class LlasaLayout:
    """Llasa's prompts, grammar and token parsing."""

    name = "llasa"
    sample_rate = SAMPLE_RATE
    samples_per_frame = HOP
    tokens_per_second = TOKENS_PER_SECOND

    def __init__(self, tokenizer: Any, ids: _Ids, reference: SpeechPrompt | None) -> None:
        self.tokenizer = tokenizer
        self.ids = ids
        self.reference = reference
        self.voice = None

    def prompt_ids(self, request: SynthesisRequest) -> list[int]:
        return build_prompt_ids(self.tokenizer, request.text, self.reference, self.ids.speech_base)

    def grammar(self, request: SynthesisRequest) -> dict[str, Any]:
        base = self.ids.speech_base
        segment = {"cycle": [[[base, base + CODEBOOK_SIZE]]], "min": 1, "max": None, "step": 1}
        return {"segments": [segment], "stop": [self.ids.speech_end]}

    def stop_ids(self) -> list[int]:
        return [self.ids.speech_end]

    def parse(self, token_ids: Sequence[int], request: SynthesisRequest) -> Parsed:
        stopped = bool(token_ids) and token_ids[-1] == self.ids.speech_end
        ids = np.asarray(token_ids[:-1] if stopped else token_ids, dtype=np.int64)
        codes = ids - self.ids.speech_base
        ok = (codes >= 0) & (codes < CODEBOOK_SIZE)
        codes = codes[ok]
        trim = 0
        if self.reference is not None and codes.size:
            # Decode the clip with its continuation (one context for the codec), cut it after.
            codes = np.concatenate([self.reference.codes, codes])
            trim = len(self.reference.codes) * HOP
        return Parsed(codes, int(ok.sum()), int((~ok).sum()), stopped, trim)

    def identity(self) -> dict[str, Any]:
        return {
            "voice_prompt": self.reference.digest if self.reference else None,
            "chat_date": PINNED_DATE,
        }

    def info(self, request: SynthesisRequest) -> dict[str, Any]:
        return {"zero_shot": self.reference is not None}


def _speech_prompt(codec: Xcodec2Codec, clip: str, text: str) -> SpeechPrompt:
    audio, rate = read_clip(clip)
    codes = codec.encode(audio, rate)
    digest = hashlib.sha256(codes.astype(np.int64).tobytes() + text.encode()).hexdigest()[:16]
    return SpeechPrompt(text=text, codes=codes, digest=digest)


def load(config: GeneratorConfig) -> CodecLMGenerator:
    """Load (or reuse) the engine, the tokenizer, X-codec2 and the zero-shot prompt, up front."""
    options = config.options
    if config.voice:
        raise UserError(
            f"Llasa has no named voices (got --voice {config.voice}): clone one with "
            "--voice-ref CLIP.wav --voice-ref-text 'its words'"
        )
    if config.voice_ref_text and not config.voice_ref:
        raise UserError("--voice-ref-text needs --voice-ref (the clip that says it)")
    import_vllm("llasa")
    model = str(config.model or DEFAULT_MODEL)
    codec_source = str(config.codec or DEFAULT_CODEC)
    model_dir = Path(
        locate_model(
            model,
            what="Llasa model",
            option="--model",
            fetch=hub_snapshot(["*.json", "*.safetensors", "tokenizer*"]),
        ).path
    )
    llm = get_engine(
        engine_kwargs(model_dir, options, default_max_len=CONTEXT),
        label="Llasa",
        table=options.TABLE,
    )
    tokenizer = load_tokenizer(
        options.tokenizer or model_dir, model, generator="Llasa", table=options.TABLE
    )
    ids = _Ids(tokenizer, model)
    codec = load_codec(codec_source, device=options.codec_device, max_batch=options.codec_batch)
    reference = None
    if config.voice_ref and config.voice_ref_text:
        reference = _speech_prompt(codec, config.voice_ref, config.voice_ref_text)
    return CodecLMGenerator(
        layout=LlasaLayout(tokenizer, ids, reference),
        llm=llm,
        codec=codec,
        model=model,
        codec_source=codec_source,
        options=options,
    )
