"""Spark-TTS on vLLM: the codec-LM generator with the Spark-TTS layout and BiCodec 16 kHz.

Spark-TTS 0.5B (SparkAudio/Spark-TTS, a Qwen2.5-0.5B) writes BiCodec tokens: 32 global tokens
``<|bicodec_global_N|>`` (N < 4096: the speaker) and 50 semantic tokens a second
``<|bicodec_semantic_N|>`` (N < 8192: the content). Prompts are raw strings, no chat template:

- voice creation (``--voice female:low:moderate``, gender:pitch:speed):
  ``<|task_controllable_tts|><|start_content|>TEXT<|end_content|><|start_style_label|>
  <|gender_G|><|pitch_label_P|><|speed_label_S|><|end_style_label|>``, after which the model
  writes ``<|start_acoustic_token|>``, the 32 globals, ``<|end_global_token|>`` and the semantic
  tokens. A book keeps one voice: the globals are drawn once per voice (one seeded, constrained
  request on a fixed sentence), kept, and placed after the style labels of every utterance's
  prompt, so the model only writes semantic tokens and every utterance has the same speaker.
- cloning (``--voice-ref clip.wav``): ``<|task_tts|><|start_content|>TEXT<|end_content|>
  <|start_global_token|>{the clip's 32 globals}<|end_global_token|>``; with ``--voice-ref-text``
  the clip's words precede TEXT and ``<|start_semantic_token|>`` and the clip's semantic tokens
  end the prompt (the model continues the clip; only its own tokens are decoded).

Generation stops at ``<|end_semantic_token|>`` or ``<|im_end|>``. Token ids are read from the
model's tokenizer by name.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators.base import SynthesisRequest
from verified_tts.generators.codec_lm import (
    CodecLMGenerator,
    Job,
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
from verified_tts.generators.codecs.bicodec import (
    GLOBAL_SIZE,
    GLOBAL_TOKENS,
    HOP,
    SAMPLE_RATE,
    SEMANTIC_SIZE,
    load_codec,
)
from verified_tts.models import hub_snapshot, locate_model
from verified_tts.options.generation import GeneratorConfig, SparkOptions

__all__ = [
    "DEFAULT_MODEL",
    "GENDERS",
    "LEVELS",
    "SparkLayout",
    "SparkOptions",
    "SparkVoice",
    "clone_prompt",
    "control_prompt",
    "load",
    "parse_voice",
    "shutdown_engine",
]

DEFAULT_MODEL = "SparkAudio/Spark-TTS-0.5B"
GENDERS = {"female": 0, "male": 1}
LEVELS = {"very_low": 0, "low": 1, "moderate": 2, "high": 3, "very_high": 4}
DEFAULT_VOICE = "female:moderate:moderate"
VOICE_TEXT = "The birch canoe slid on the smooth planks."  # the sentence a voice is drawn on
TOKENS_PER_SECOND = SAMPLE_RATE / HOP  # 50 semantic tokens


def languages(config: GeneratorConfig) -> tuple[str, ...]:
    """Spark-TTS is trained on English and Chinese speech."""
    return ("en", "zh")


@dataclass(frozen=True)
class SparkVoice:
    """A created voice: gender, pitch and speed labels."""

    gender: str
    pitch: str
    speed: str

    @property
    def label(self) -> str:
        return f"{self.gender}:{self.pitch}:{self.speed}"


def parse_voice(text: str) -> SparkVoice:
    """``female:low:moderate`` (gender:pitch:speed; pitch and speed default to moderate)."""
    parts = [p.strip().lower().replace("-", "_") for p in text.split(":")]
    parts += ["moderate"] * (3 - len(parts))
    levels = ", ".join(LEVELS)
    valid = len(parts) == 3 and parts[0] in GENDERS and parts[1] in LEVELS and parts[2] in LEVELS
    if not valid:
        raise UserError(
            f"Spark voice '{text}' must read GENDER:PITCH:SPEED with gender female or male and "
            f"pitch and speed one of {levels} (e.g. --voice female:low:moderate)"
        )
    return SparkVoice(*parts)


def control_prompt(text: str, voice: SparkVoice) -> str:
    """Upstream's voice-creation prompt."""
    labels = (
        f"<|gender_{GENDERS[voice.gender]}|><|pitch_label_{LEVELS[voice.pitch]}|>"
        f"<|speed_label_{LEVELS[voice.speed]}|>"
    )
    return (
        f"<|task_controllable_tts|><|start_content|>{text}<|end_content|>"
        f"<|start_style_label|>{labels}<|end_style_label|>"
    )


def clone_prompt(
    text: str,
    global_codes: Sequence[int],
    prompt_text: str | None = None,
    semantic_codes: Sequence[int] = (),
) -> str:
    """Upstream's cloning prompt (with the clip's words and semantic tokens when known)."""
    globals_ = "".join(f"<|bicodec_global_{int(i)}|>" for i in global_codes)
    content = f"{prompt_text}{text}" if prompt_text else text
    prompt = (
        f"<|task_tts|><|start_content|>{content}<|end_content|>"
        f"<|start_global_token|>{globals_}<|end_global_token|>"
    )
    if prompt_text:
        prompt += "<|start_semantic_token|>" + "".join(
            f"<|bicodec_semantic_{int(i)}|>" for i in semantic_codes
        )
    return prompt


@dataclass(frozen=True, eq=False)
class Reference:
    """A cloned voice: the clip's global and semantic codes (and words, when given)."""

    global_codes: np.ndarray
    semantic_codes: np.ndarray
    text: str | None
    digest: str


def _ranges(ids: np.ndarray) -> list[list[int]]:
    """Sorted ids as half-open [lo, hi) runs."""
    ids = np.sort(ids)
    breaks = np.nonzero(np.diff(ids) != 1)[0]
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(ids) - 1]])
    return [[int(ids[s]), int(ids[e]) + 1] for s, e in zip(starts, ends, strict=True)]


class _Ids:
    """Spark-TTS's token ids, read from the tokenizer by name."""

    def __init__(self, tokenizer: Any, label: str) -> None:
        def one(token: str) -> int:
            value = tokenizer.convert_tokens_to_ids(token)
            if not isinstance(value, int) or value == tokenizer.unk_token_id or value is None:
                raise UserError(
                    f"Spark-TTS model '{label}': its tokenizer has no {token}; is this the "
                    "Spark-TTS LLM folder (Spark-TTS-0.5B/LLM)?"
                )
            return value

        self.global_ids = np.array([one(f"<|bicodec_global_{i}|>") for i in range(GLOBAL_SIZE)])
        self.semantic_ids = np.array(
            [one(f"<|bicodec_semantic_{i}|>") for i in range(SEMANTIC_SIZE)]
        )
        self.start_acoustic = one("<|start_acoustic_token|>")
        self.start_global = one("<|start_global_token|>")
        self.end_global = one("<|end_global_token|>")
        self.start_semantic = one("<|start_semantic_token|>")
        self.end_semantic = one("<|end_semantic_token|>")
        self.im_end = one("<|im_end|>")
        top = int(max(self.global_ids.max(), self.semantic_ids.max())) + 1
        self.semantic_code = np.full(top, -1, dtype=np.int64)
        self.semantic_code[self.semantic_ids] = np.arange(SEMANTIC_SIZE)
        self.global_code = np.full(top, -1, dtype=np.int64)
        self.global_code[self.global_ids] = np.arange(GLOBAL_SIZE)

    def stops(self) -> list[int]:
        return [self.end_semantic, self.im_end]


class SparkLayout:
    """Spark-TTS's prompts, grammars, per-voice global tokens and token parsing."""

    name = "spark"
    sample_rate = SAMPLE_RATE
    samples_per_frame = HOP
    tokens_per_second = TOKENS_PER_SECOND

    def __init__(
        self,
        tokenizer: Any,
        ids: _Ids,
        *,
        voice: SparkVoice | None,
        reference: Reference | None,
        voice_seed: int,
    ) -> None:
        self.tokenizer = tokenizer
        self.ids = ids
        self.default_voice = voice
        self.voice = voice.label if voice else None
        self.reference = reference
        self.voice_seed = voice_seed
        self.draw: Callable[[list[int], int], list[int]] | None = None  # set by load()
        self._voices: dict[str, list[int]] = {}  # voice label -> drawn acoustic prefix ids
        self._lock = threading.Lock()

    def encode(self, text: str) -> list[int]:
        return [int(i) for i in self.tokenizer(text, add_special_tokens=False).input_ids]

    # --- voices ---------------------------------------------------------------------------------

    def voice_draw_grammar(self) -> dict[str, Any]:
        """<|start_acoustic_token|>, optionally <|start_global_token|>, then exactly 32 globals."""
        return {
            "segments": [
                {
                    "cycle": [[[self.ids.start_acoustic, self.ids.start_acoustic + 1]]],
                    "min": 1,
                    "max": 1,
                },
                {
                    "cycle": [[[self.ids.start_global, self.ids.start_global + 1]]],
                    "min": 0,
                    "max": 1,
                },
                {
                    "cycle": [_ranges(self.ids.global_ids)],
                    "min": GLOBAL_TOKENS,
                    "max": GLOBAL_TOKENS,
                },
            ],
            "stop": [self.ids.end_global],
        }

    def voice_tokens(self, voice: SparkVoice) -> list[int]:
        """The acoustic prefix (start marker, 32 globals, end marker) of a created voice."""
        with self._lock:
            if voice.label not in self._voices:
                if self.draw is None:
                    raise RuntimeError("SparkLayout.draw is not set (use spark.load)")
                prompt = self.encode(control_prompt(VOICE_TEXT, voice))
                digest = hashlib.sha256(f"{voice.label}:{self.voice_seed}".encode()).digest()
                tokens = self.draw(prompt, int.from_bytes(digest[:8], "little") >> 1)
                if self.global_codes(tokens).size != GLOBAL_TOKENS:
                    raise UserError(
                        f"Spark-TTS did not write 32 global tokens for voice '{voice.label}' "
                        f"(got {tokens[:8]}...): is --model the Spark-TTS LLM?"
                    )
                if not tokens or tokens[-1] != self.ids.end_global:
                    tokens = [*tokens, self.ids.end_global]
                self._voices[voice.label] = tokens
            return self._voices[voice.label]

    def global_codes(self, tokens: Sequence[int]) -> np.ndarray:
        ids = np.asarray([t for t in tokens if t < len(self.ids.global_code)], dtype=np.int64)
        codes = self.ids.global_code[ids] if ids.size else ids
        return codes[codes >= 0]

    def _voice_of(self, request: SynthesisRequest) -> SparkVoice | None:
        if request.voice:
            return parse_voice(request.voice)
        return self.default_voice

    # --- the layout -----------------------------------------------------------------------------

    def prompt_ids(self, request: SynthesisRequest) -> list[int]:
        voice = self._voice_of(request)
        if self.reference is not None and not request.voice:
            ref = self.reference
            return self.encode(
                clone_prompt(request.text, ref.global_codes, ref.text, ref.semantic_codes)
            )
        assert voice is not None
        return self.encode(control_prompt(request.text, voice)) + self.voice_tokens(voice)

    def grammar(self, request: SynthesisRequest) -> dict[str, Any]:
        semantic = {"cycle": [_ranges(self.ids.semantic_ids)], "min": 1, "max": None}
        opener = [[self.ids.start_semantic, self.ids.start_semantic + 1]]
        segments = [{"cycle": [opener], "min": 0, "max": 1}, semantic]
        if self.reference is not None and self.reference.text and not request.voice:
            segments = [semantic]  # the prompt already opened the semantic tokens
        return {"segments": segments, "stop": self.ids.stops()}

    def stop_ids(self) -> list[int]:
        return self.ids.stops()

    def globals_for(self, request: SynthesisRequest) -> np.ndarray:
        voice = self._voice_of(request)
        if self.reference is not None and not request.voice:
            return self.reference.global_codes
        assert voice is not None
        return self.global_codes(self.voice_tokens(voice))

    def parse(self, token_ids: Sequence[int], request: SynthesisRequest) -> Parsed:
        stopped = bool(token_ids) and token_ids[-1] in self.ids.stops()
        ids = np.asarray(token_ids[:-1] if stopped else token_ids, dtype=np.int64)
        ids = ids[ids != self.ids.start_semantic]  # a structural marker, not a dropped token
        inside = ids < len(self.ids.semantic_code)
        codes = np.full(ids.shape, -1, dtype=np.int64)
        codes[inside] = self.ids.semantic_code[ids[inside]]
        ok = codes >= 0
        return Parsed(
            (self.globals_for(request), codes[ok]), int(ok.sum()), int((~ok).sum()), stopped
        )

    def identity(self) -> dict[str, Any]:
        voices = {label: self.global_codes(t).tolist() for label, t in self._voices.items()}
        return {
            "voice": self.voice,
            "voice_prompt": self.reference.digest if self.reference else None,
            "voice_seed": self.voice_seed,
            # the drawn speakers themselves: same voice, same tokens, or a different address
            "voice_globals": voices.get(self.voice or ""),
        }

    def info(self, request: SynthesisRequest) -> dict[str, Any]:
        voice = request.voice or self.voice
        return {
            "voice": voice,
            "zero_shot": self.reference is not None and not request.voice,
            # the speaker this candidate was decoded with: one created voice, one speaker
            "global_codes": self.globals_for(request).tolist(),
        }


def _locate_lm(model: str) -> Path:
    root = Path(
        locate_model(
            model,
            what="Spark-TTS model",
            option="--model",
            fetch=hub_snapshot(["LLM/*", "*.json", "*.safetensors", "tokenizer*", "*.txt"]),
        ).path
    )
    return root / "LLM" if (root / "LLM" / "config.json").is_file() else root


def load(config: GeneratorConfig) -> CodecLMGenerator:
    """Load (or reuse) the engine, the tokenizer and BiCodec; clone or prepare the voice."""
    options = config.options
    if config.voice_ref_text and not config.voice_ref:
        raise UserError("--voice-ref-text needs --voice-ref (the clip that says it)")
    voice = parse_voice(config.voice) if config.voice else None
    if voice is None and not config.voice_ref:
        voice = parse_voice(DEFAULT_VOICE)
    import_vllm("spark")
    model = str(config.model or DEFAULT_MODEL)
    codec_source = str(config.codec or config.model or DEFAULT_MODEL)
    lm_dir = _locate_lm(model)
    llm = get_engine(
        engine_kwargs(lm_dir, options, default_max_len=4096), label="Spark-TTS", table=options.TABLE
    )
    tokenizer = load_tokenizer(
        options.tokenizer or lm_dir, model, generator="Spark-TTS", table=options.TABLE
    )
    ids = _Ids(tokenizer, model)
    codec = load_codec(codec_source, device=options.codec_device, max_batch=options.codec_batch)
    reference = None
    if config.voice_ref and voice is None:
        audio, rate = read_clip(config.voice_ref)
        global_codes, semantic_codes = codec.encode(audio, rate)
        text = config.voice_ref_text or None
        digest = hashlib.sha256(
            global_codes.tobytes() + semantic_codes.tobytes() + (text or "").encode()
        ).hexdigest()[:16]
        reference = Reference(
            global_codes, semantic_codes if text else semantic_codes[:0], text, digest
        )
    layout = SparkLayout(
        tokenizer, ids, voice=voice, reference=reference, voice_seed=options.voice_seed
    )
    generator = CodecLMGenerator(
        layout=layout,
        llm=llm,
        codec=codec,
        model=model,
        codec_source=codec_source,
        options=options,
    )

    def draw(prompt: list[int], seed: int) -> list[int]:
        request = SynthesisRequest("voice", 0, seed, VOICE_TEXT)
        params = generator.sampling_params(
            request,
            len(prompt),
            budget=GLOBAL_TOKENS + 3,
            grammar=layout.voice_draw_grammar(),
            stop=[ids.end_global],
        )
        out: list[list[int]] = []
        generator.drive(
            [Job(prompt, params)], lambda done: out.extend(list(c.token_ids) for _, c in done)
        )
        return out[0]

    layout.draw = draw
    if voice is not None:
        layout.voice_tokens(voice)  # drawn now: the identity names the book's speaker
    return generator
