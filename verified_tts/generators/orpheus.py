"""Orpheus on vLLM: the codec-LM generator with the Orpheus layout and SNAC 24 kHz.

Orpheus (canopyai/Orpheus-TTS) is a Llama-3 whose output ids are SNAC frames of 7 tokens. This
module is its layout for :mod:`verified_tts.generators.codec_lm`: the prompt (a human turn with
``voice: text``, then start-of-speech; with ``voice_ref`` + ``voice_ref_text`` the clip's text and
SNAC codes first, as one finished turn, the way the pretrained model saw its training data), the
grammar that keeps every frame valid, frame parsing (malformed frames dropped whole and counted)
and ``load(config)``, which builds the engine (one per process), the tokenizer, SNAC and the voice
prompt once, up front.
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
    token_budget,
)
from verified_tts.generators.codec_lm_engine import (
    engine_kwargs,
    get_engine,
    import_vllm,
    shutdown_engine,
)
from verified_tts.generators.codecs.snac import (
    AUDIO_TOKEN_BASE,
    CODEBOOK_SIZE,
    FRAME_TOKENS,
    SAMPLE_RATE,
    SAMPLES_PER_FRAME,
    SnacCodec,
    frames_to_ids,
    load_codec,
    parse_frames,
)
from verified_tts.models import hub_snapshot, locate_model
from verified_tts.options.generation import GeneratorConfig, OrpheusOptions

__all__ = [
    "DEFAULT_CODEC",
    "DEFAULT_MODEL",
    "TAGS",
    "VOICES",
    "OrpheusGenerator",
    "OrpheusLayout",
    "OrpheusOptions",
    "VoicePrompt",
    "build_prompt_ids",
    "frame_grammar",
    "load",
    "max_tokens_for",
    "shutdown_engine",
]

DEFAULT_MODEL = "canopylabs/orpheus-3b-0.1-ft"
DEFAULT_CODEC = "hubertsiuzdak/snac_24khz"
VOICES = ("tara", "leah", "jess", "leo", "dan", "mia", "zac", "zoe")
TAGS = ("<laugh>", "<chuckle>", "<sigh>", "<cough>", "<sniffle>", "<groan>", "<yawn>", "<gasp>")

# Orpheus control ids (canopyai/Orpheus-TTS, from its training-data layout).
BEGIN_OF_TEXT = 128_000
END_OF_TEXT = 128_009
START_OF_SPEECH = 128_257
END_OF_SPEECH = 128_258
START_OF_HUMAN = 128_259
END_OF_HUMAN = 128_260
START_OF_AI = 128_261
END_OF_AI = 128_262
TOKENS_PER_SECOND = FRAME_TOKENS * SAMPLE_RATE / SAMPLES_PER_FRAME  # about 82

OrpheusGenerator = CodecLMGenerator


def max_tokens_for(text: str, options: OrpheusOptions) -> int:
    """Token budget for speaking ``text``: whole frames, within the configured bounds."""
    return token_budget(text, options, TOKENS_PER_SECOND)


def languages(config: GeneratorConfig) -> tuple[str, ...]:
    """What the named voices speak: the finetuned checkpoints are English."""
    return ("en",)


def frame_grammar() -> dict[str, Any]:
    """Whole SNAC frames (position k of a frame in its 4096-id block), end-of-speech between."""
    blocks = [
        [[AUDIO_TOKEN_BASE + k * CODEBOOK_SIZE, AUDIO_TOKEN_BASE + (k + 1) * CODEBOOK_SIZE]]
        for k in range(FRAME_TOKENS)
    ]
    segment = {"cycle": blocks, "min": FRAME_TOKENS, "max": None, "step": FRAME_TOKENS}
    return {"segments": [segment], "stop": [END_OF_SPEECH]}


@dataclass(frozen=True, eq=False)
class VoicePrompt:
    """A zero-shot reference: the clip's words and its SNAC frames, as a finished turn."""

    text: str
    codes: np.ndarray  # (n, 7)
    digest: str  # hash of the clip's frames and text: part of the generator's identity

    @property
    def seconds(self) -> float:
        return self.codes.shape[0] * SAMPLES_PER_FRAME / SAMPLE_RATE


def _text_ids(tokenizer: Any, text: str) -> list[int]:
    ids = list(tokenizer(text).input_ids)
    # Orpheus was trained on Llama-3 encodings, which start with <|begin_of_text|>; a
    # tokenizer saved without that post-processor must not silently drop it.
    if not ids or ids[0] != BEGIN_OF_TEXT:
        ids.insert(0, BEGIN_OF_TEXT)
    return ids


def build_prompt_ids(
    tokenizer: Any, text: str, voice: str | None, reference: VoicePrompt | None = None
) -> list[int]:
    """Orpheus prompt ids: [reference turn] + human turn with ``voice: text`` + start of speech.

    Inline tags such as ``<laugh>`` stay in the text: Orpheus reads them as ordinary text.
    """
    body = f"{voice}: {text}" if voice else text
    ids = [START_OF_HUMAN, *_text_ids(tokenizer, body), END_OF_TEXT, END_OF_HUMAN]
    ids += [START_OF_AI, START_OF_SPEECH]
    if reference is None:
        return ids
    ref = [START_OF_HUMAN, *_text_ids(tokenizer, reference.text), END_OF_TEXT, END_OF_HUMAN]
    ref += [START_OF_AI, START_OF_SPEECH, *frames_to_ids(reference.codes)]
    ref += [END_OF_SPEECH, END_OF_AI]
    return ref + ids


def _check_voice(voice: str | None) -> str | None:
    if voice is None or voice in VOICES:
        return voice
    raise UserError(f"unknown Orpheus voice '{voice}': choose one of {', '.join(VOICES)}")


class OrpheusLayout:
    """Orpheus's prompts, grammar and frame parsing."""

    name = "orpheus"
    sample_rate = SAMPLE_RATE
    samples_per_frame = SAMPLES_PER_FRAME
    tokens_per_second = TOKENS_PER_SECOND

    def __init__(self, tokenizer: Any, voice: str | None, reference: VoicePrompt | None) -> None:
        self.tokenizer = tokenizer
        self.voice = voice
        self.reference = reference

    def prompt_ids(self, request: SynthesisRequest) -> list[int]:
        voice = _check_voice(request.voice) if request.voice else self.voice
        return build_prompt_ids(self.tokenizer, request.text, voice, self.reference)

    def grammar(self, request: SynthesisRequest) -> dict[str, Any]:
        return frame_grammar()

    def stop_ids(self) -> list[int]:
        return [END_OF_SPEECH]

    def parse(self, token_ids: Sequence[int], request: SynthesisRequest) -> Parsed:
        stopped = bool(token_ids) and token_ids[-1] == END_OF_SPEECH
        frames = parse_frames(token_ids[:-1] if stopped else token_ids)
        return Parsed(frames.codes, frames.frames, frames.dropped, stopped)

    def identity(self) -> dict[str, Any]:
        return {
            "voice": self.voice,
            "voice_prompt": self.reference.digest if self.reference else None,
        }

    def info(self, request: SynthesisRequest) -> dict[str, Any]:
        return {"voice": request.voice or self.voice, "zero_shot": self.reference is not None}


def _voice_prompt(codec: SnacCodec, clip: str, text: str) -> VoicePrompt:
    audio, rate = read_clip(clip)
    codes = codec.encode(audio, rate)
    digest = hashlib.sha256(codes.astype(np.int64).tobytes() + text.encode()).hexdigest()[:16]
    return VoicePrompt(text=text, codes=codes, digest=digest)


def load(config: GeneratorConfig) -> CodecLMGenerator:
    """Load (or reuse) the engine, the tokenizer, SNAC and the voice prompt: once, up front."""
    options = config.options
    voice = _check_voice(config.voice)
    import_vllm("orpheus")  # a missing extra is reported before anything is downloaded
    model = str(config.model or DEFAULT_MODEL)
    codec_source = str(config.codec or DEFAULT_CODEC)
    zero_shot = bool(config.voice_ref and config.voice_ref_text)
    if config.voice_ref_text and not config.voice_ref:
        raise UserError("--voice-ref-text needs --voice-ref (the clip that says it)")
    if voice is None and not zero_shot:
        voice = VOICES[0]  # the finetuned checkpoints expect a speaker name; tara is upstream's
    model_dir = Path(
        locate_model(
            model,
            what="Orpheus model",
            option="--model",
            fetch=hub_snapshot(["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt"]),
        ).path
    )
    # The engine first: vLLM forks its workers, and forking before any thread pool, tokenizer
    # thread or CUDA context exists in this process is what keeps that safe.
    llm = get_engine(engine_kwargs(model_dir, options), label="Orpheus", table=options.TABLE)
    tokenizer = load_tokenizer(
        options.tokenizer or model_dir, model, generator="Orpheus", table=options.TABLE
    )
    codec = load_codec(codec_source, device=options.codec_device, max_batch=options.codec_batch)
    reference = None
    if zero_shot:
        assert config.voice_ref is not None and config.voice_ref_text is not None
        reference = _voice_prompt(codec, config.voice_ref, config.voice_ref_text)
    return CodecLMGenerator(
        layout=OrpheusLayout(tokenizer, voice, reference),
        llm=llm,
        codec=codec,
        model=model,
        codec_source=codec_source,
        options=options,
    )
