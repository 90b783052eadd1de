"""Generators: the registry that turns a :class:`GeneratorConfig` into a loaded generator.

Each generator lives in its own module with a ``load(config) -> Generator`` function, imported
only when chosen, so the heavy engines (vLLM, SNAC) are never imported for the embedded default,
Piper on onnxruntime. Every generator's options type is in :mod:`verified_tts.options.generation`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass

from verified_tts.errors import UserError
from verified_tts.generators.base import Candidate, Generator, SynthesisRequest
from verified_tts.options.generation import DEFAULT_GENERATOR, GeneratorConfig

__all__ = [
    "DEFAULT_GENERATOR",
    "GENERATORS",
    "GENERATOR_SPECS",
    "GeneratorSpec",
    "Candidate",
    "Generator",
    "GeneratorConfig",
    "SynthesisRequest",
    "generator_help",
    "load_generator",
    "utterance_max_chars",
    "voice_languages",
]

@dataclass(frozen=True)
class GeneratorSpec:
    """A generator, declared once: its name, the module whose ``load(config)`` builds it, the
    ``[generator]`` keys it takes besides its own table, the extra its engine comes in (None: the
    base install) and the phrase the CLI's help gives it (None: not listed, as for stand-ins)."""

    name: str
    module: str
    accepts: frozenset[str]  # of model, codec, voice, voice_ref, voice_ref_text
    extra: str | None = None
    summary: str | None = ""

    def check(self, config: GeneratorConfig) -> None:
        """One line for a ``[generator]`` key (or its flag) that this generator does not take."""
        for key in ("model", "codec", "voice", "voice_ref", "voice_ref_text"):
            if getattr(config, key) is not None and key not in self.accepts:
                takes = ", ".join(f"--{k.replace('_', '-')}" for k in _KEYS if k in self.accepts)
                raise UserError(
                    f"the {self.name} generator has no --{key.replace('_', '-')} "
                    f"(it takes {takes or 'none of --model, --codec, --voice'}): drop it, "
                    "or choose a generator that takes it with --generator"
                )


_KEYS = ("model", "codec", "voice", "voice_ref", "voice_ref_text")
_CODEC_LM = frozenset(_KEYS)

SPECS: tuple[GeneratorSpec, ...] = (
    GeneratorSpec(
        "piper",
        "verified_tts.generators.piper",
        frozenset({"model", "voice", "voice_ref"}),
        summary="embedded default",
    ),
    GeneratorSpec(
        "espeak", "verified_tts.generators.espeak", frozenset({"voice", "voice_ref"}),
        summary="fastest",
    ),  # fmt: skip
    GeneratorSpec("orpheus", "verified_tts.generators.orpheus", _CODEC_LM, extra="orpheus"),
    GeneratorSpec(
        "llasa", "verified_tts.generators.llasa", _CODEC_LM - {"voice"}, extra="llasa"
    ),  # fmt: skip
    GeneratorSpec("spark", "verified_tts.generators.spark", _CODEC_LM, extra="spark"),
    GeneratorSpec(
        "hibari", "verified_tts.generators.hibari", frozenset({"model", "voice", "voice_ref"}),
        summary="embedded, female",
    ),  # fmt: skip
    # a stand-in with a fixed cost per candidate, for measuring the driver; never a default
    GeneratorSpec("standin", "verified_tts.testing.standin", frozenset(), summary=None),
)
GENERATOR_SPECS: Mapping[str, GeneratorSpec] = {spec.name: spec for spec in SPECS}
# name -> module with a `load(config)` function
GENERATORS: Mapping[str, str] = {spec.name: spec.module for spec in SPECS}


def generator_help() -> str:
    """The ``--generator`` help, from the declarations: every listed generator, in order."""
    names = [
        f"{spec.name} ({spec.summary})" if spec.summary else spec.name
        for spec in SPECS
        if spec.summary is not None
    ]
    return ", ".join(names[:-1]) + f" or {names[-1]}." if len(names) > 1 else names[0]


def load_generator(config: GeneratorConfig) -> Generator:
    """Import the chosen generator's module and load it (models are loaded here, once)."""
    spec = GENERATOR_SPECS.get(config.name)
    if spec is None:
        known = ", ".join(sorted(GENERATOR_SPECS))
        raise UserError(f"unknown generator '{config.name}': choose one of {known}")
    spec.check(config)
    module = importlib.import_module(spec.module)
    return module.load(config)


def utterance_max_chars(config: GeneratorConfig) -> int | None:
    """The longest utterance (characters) the chosen generator speaks well, if it has a limit
    (codec LMs degrade past their ``max_speech_s``): :meth:`GeneratorConfig.max_chars`. The
    planner cuts utterances to the smaller of this and ``max_chars`` in the config."""
    return config.max_chars()


def voice_languages(config: GeneratorConfig) -> tuple[str, ...] | None:
    """The languages (BCP 47 tags) the configured voice speaks, read without loading a model;
    None when the generator cannot say. Each module's ``languages(config)`` knows its own."""
    module_name = GENERATORS.get(config.name)
    if module_name is None:
        return None
    languages = getattr(importlib.import_module(module_name), "languages", None)
    return (tuple(languages(config)) or None) if callable(languages) else None
