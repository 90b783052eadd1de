"""Generators: the registry that turns a :class:`GeneratorConfig` into a loaded generator.

Each generator lives in its own module with a ``load(config) -> Generator`` function, imported
only when chosen, so the heavy engines (vLLM, SNAC) are never imported for the embedded default,
Piper on onnxruntime. Every generator's options type is in :mod:`verified_tts.options.generation`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from verified_tts.errors import UserError
from verified_tts.generators.base import Candidate, Generator, SynthesisRequest
from verified_tts.options.generation import DEFAULT_GENERATOR, GeneratorConfig

__all__ = [
    "DEFAULT_GENERATOR",
    "GENERATORS",
    "Candidate",
    "Generator",
    "GeneratorConfig",
    "SynthesisRequest",
    "load_generator",
    "utterance_max_chars",
    "voice_languages",
]

# name -> module with a `load(config)` function
GENERATORS: Mapping[str, str] = {
    "espeak": "verified_tts.generators.espeak",
    "orpheus": "verified_tts.generators.orpheus",
    "llasa": "verified_tts.generators.llasa",
    "spark": "verified_tts.generators.spark",
    "piper": "verified_tts.generators.piper",
    # a stand-in with a fixed cost per candidate, for measuring the driver; never a default
    "standin": "verified_tts.testing.standin",
}


def load_generator(config: GeneratorConfig) -> Generator:
    """Import the chosen generator's module and load it (models are loaded here, once)."""
    module_name = GENERATORS.get(config.name)
    if module_name is None:
        known = ", ".join(sorted(GENERATORS))
        raise UserError(f"unknown generator '{config.name}': choose one of {known}")
    module = importlib.import_module(module_name)
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
