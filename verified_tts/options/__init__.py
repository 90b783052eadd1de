"""Every options type of verified-tts, and the one reader and writer of their TOML tables.

The config file, the CLI, the manifest and the job queue all speak these frozen dataclasses:
:class:`RenderConfig` and its tables (:mod:`.generation`, :mod:`.verifiers`, :mod:`.selection`,
:mod:`.output`, :mod:`.run`). :func:`from_table` reads any of them from a table and
:func:`to_table` writes it back (:mod:`.schema`); :func:`reference` lists every option with its
doc (:mod:`.reference`); :func:`overlay` and :func:`table_paths` work on raw tables
(:mod:`.tables`). Selection profiles (the shipped gates and stop settings of each scorer) are
files of the package, ``verified_tts/profiles/NAME.toml``. This package imports nothing of the
project but ``verified_tts.errors`` and ``verified_tts.storage.keys``, so every module can use it.
"""

from __future__ import annotations

from collections.abc import Iterator

from verified_tts.options.generation import (
    DEFAULT_GENERATOR,
    GENERATOR_OPTIONS,
    CodecLMOptions,
    EspeakOptions,
    GeneratorConfig,
    HibariOptions,
    LlasaOptions,
    OrpheusOptions,
    PiperOptions,
    SparkOptions,
)
from verified_tts.options.output import FORMATS, AssemblyOptions, DubOptions, ProductionOptions
from verified_tts.options.pronunciation import PronunciationOptions
from verified_tts.options.reference import OptionDoc
from verified_tts.options.reference import reference as _reference
from verified_tts.options.render import RenderConfig
from verified_tts.options.run import (
    FAULT_KINDS,
    PROCESS_VERIFIERS,
    STRATEGIES,
    CalibrateOptions,
    JudgeOptions,
    RayOptions,
    SearchOptions,
)
from verified_tts.options.schema import from_table, option, to_table
from verified_tts.options.selection import (
    BASE_PROFILE,
    DEFAULT_PROFILE,
    STOP_RULES,
    Gate,
    Profile,
    SelectionPolicy,
    load_profile,
    profile_names,
)
from verified_tts.options.tables import overlay, table_paths
from verified_tts.options.verifiers import (
    DurationFitOptions,
    EmotionOptions,
    SignalOptions,
    SpeakerOptions,
    VerifiersConfig,
    WerOptions,
)

__all__ = [
    "BASE_PROFILE",
    "DEFAULT_GENERATOR",
    "DEFAULT_PROFILE",
    "FAULT_KINDS",
    "FORMATS",
    "GENERATOR_OPTIONS",
    "PROCESS_VERIFIERS",
    "STOP_RULES",
    "STRATEGIES",
    "AssemblyOptions",
    "CalibrateOptions",
    "CodecLMOptions",
    "DubOptions",
    "DurationFitOptions",
    "EmotionOptions",
    "EspeakOptions",
    "HibariOptions",
    "Gate",
    "GeneratorConfig",
    "JudgeOptions",
    "LlasaOptions",
    "OptionDoc",
    "OrpheusOptions",
    "PiperOptions",
    "ProductionOptions",
    "Profile",
    "PronunciationOptions",
    "RayOptions",
    "RenderConfig",
    "SearchOptions",
    "SelectionPolicy",
    "SignalOptions",
    "SparkOptions",
    "SpeakerOptions",
    "VerifiersConfig",
    "WerOptions",
    "from_table",
    "load_profile",
    "option",
    "overlay",
    "profile_names",
    "reference",
    "table_paths",
    "to_table",
]


def reference(cls: type = RenderConfig) -> Iterator[OptionDoc]:
    """(table, key, type, default, doc) of every option of ``cls`` (the whole config file by
    default; ``CalibrateOptions`` and ``JudgeOptions`` are the workflows' flags)."""
    return _reference(cls)
