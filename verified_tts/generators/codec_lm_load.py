"""Loading a codec LM: every file resolved first, then the engine, the tokenizer and the codec.

Orpheus, Llasa and Spark-TTS load the same way and differ in data: the model's default id and the
files its folder needs, where the codec comes from (its own id, or the model's own folder), the
engine's default context and what errors call it. A :class:`CodecLMFamily` holds that data and
:func:`load_parts` does the loading for all three: the model folder, the codec folder and the
voice reference are found (and a missing one reported in one line) before the engine starts,
because starting vLLM takes long and a typo in ``--codec`` should not wait for it. The engine
comes first among the heavy parts: vLLM forks its workers, and forking before any thread pool,
tokenizer thread or CUDA context exists in this process is what keeps that safe. Each codec sits
behind :class:`Codec`; each generator module keeps only what is its own: the voice it checks and
the layout it builds over the parts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators.codec_lm import CodecLMGenerator, load_tokenizer
from verified_tts.generators.codec_lm_engine import (
    DEFAULT_MAX_LEN,
    engine_kwargs,
    get_engine,
    import_vllm,
    require_vllm,
)
from verified_tts.models import hub_snapshot, locate_model
from verified_tts.options.generation import CodecLMOptions, GeneratorConfig

__all__ = [
    "Codec",
    "CodecLMFamily",
    "CodecLMParts",
    "ResolvedFiles",
    "build_generator",
    "load_parts",
    "resolve_files",
]


class Codec(Protocol):
    """What a codec LM's codec does for the shared generator: codes to audio and back."""

    max_batch: int

    def decode_batch(self, items: Sequence[tuple[Any, int]]) -> list[np.ndarray]: ...

    def encode(self, audio: np.ndarray, sample_rate: int) -> Any: ...


@dataclass(frozen=True)
class CodecLMFamily:
    """The data that tells one codec LM's loading from another's."""

    name: str  # the generator's name, which is also the extra that installs its engine
    label: str  # what messages call the model ("Orpheus", "Spark-TTS")
    default_model: str
    default_codec: str | None  # None: the codec lives in the model's own folder
    model_files: tuple[str, ...]  # hub patterns of what the model folder needs
    locate_codec: Callable[[str], Path]
    load_codec: Callable[..., Codec]
    lm_subfolder: str | None = None  # the LM's folder inside the model folder, when it has one
    default_max_len: int = DEFAULT_MAX_LEN  # the engine's context when the options give none


@dataclass(frozen=True)
class ResolvedFiles:
    """Every file a codec LM needs, found before anything is built."""

    model: str  # as given (or the default id): what the identity names
    lm_dir: Path  # the folder the engine and the tokenizer load
    codec_source: str  # as given (or the default): what the identity names
    codec_dir: Path
    voice_ref: Path | None


@dataclass(frozen=True, eq=False)
class CodecLMParts:
    """The loaded engine, tokenizer and codec of one codec LM, with the files they came from."""

    files: ResolvedFiles
    llm: Any
    tokenizer: Any
    codec: Codec
    options: CodecLMOptions


def resolve_files(config: GeneratorConfig, family: CodecLMFamily) -> ResolvedFiles:
    """The model folder, the codec folder and the voice reference, or one line for the first
    that is missing."""
    if config.voice_ref_text and not config.voice_ref:
        raise UserError("--voice-ref-text needs --voice-ref (the clip that says it)")
    voice_ref = None
    if config.voice_ref:
        voice_ref = Path(config.voice_ref).expanduser()
        if not voice_ref.is_file():
            raise UserError(
                f"the voice reference '{config.voice_ref}' does not exist: pass a WAV (or FLAC) "
                "file of the voice with --voice-ref"
            )
    model = str(config.model or family.default_model)
    root = Path(
        locate_model(
            model,
            what=f"{family.label} model",
            option="--model",
            fetch=hub_snapshot(list(family.model_files)),
        ).path
    )
    lm_dir = root
    if family.lm_subfolder and (root / family.lm_subfolder / "config.json").is_file():
        lm_dir = root / family.lm_subfolder
    codec_source = str(config.codec or family.default_codec or model)
    codec_dir = family.locate_codec(str(root) if not config.codec and family.default_codec is None
                                    else codec_source)  # fmt: skip
    return ResolvedFiles(model, lm_dir, codec_source, codec_dir, voice_ref)


def load_parts(config: GeneratorConfig, family: CodecLMFamily) -> CodecLMParts:
    """Resolve every file, then load (or reuse) the engine, the tokenizer and the codec once."""
    options = config.options
    require_vllm(family.name)  # a missing extra is reported before anything is downloaded
    # the files before the engine's import: a mistyped --model or --codec is said at once
    files = resolve_files(config, family)
    import_vllm(family.name)
    llm = get_engine(
        engine_kwargs(files.lm_dir, options, default_max_len=family.default_max_len),
        label=family.label,
        table=options.TABLE,
    )
    tokenizer = load_tokenizer(
        options.tokenizer or files.lm_dir, files.model, generator=family.label, table=options.TABLE
    )
    codec = family.load_codec(
        files.codec_dir, device=options.codec_device, max_batch=options.codec_batch
    )
    return CodecLMParts(files, llm, tokenizer, codec, options)


def build_generator(parts: CodecLMParts, layout: Any) -> CodecLMGenerator:
    """The shared generator over ``layout`` and the loaded parts."""
    return CodecLMGenerator(
        layout=layout,
        llm=parts.llm,
        codec=parts.codec,
        model=parts.files.model,
        codec_source=parts.files.codec_source,
        options=parts.options,
    )
