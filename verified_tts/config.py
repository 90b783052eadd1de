"""Render configuration: the TOML file plus CLI overrides, read into a :class:`RenderConfig`.

The options types and their one reader live in :mod:`verified_tts.options`; this module is the
front door that the CLI and library callers use: :func:`read_config_file` parses the file with
one-line errors, and :func:`build_config` lays the CLI's values over it (a value of None is not
given), reads it, and checks what only the verifiers know: that every gate and weight of the
selection names a metric some verifier reports. Unknown keys are errors everywhere, so a typo
never silently falls back to a default.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options import (
    AssemblyOptions,
    RayOptions,
    RenderConfig,
    SelectionPolicy,
    from_table,
    overlay,
)
from verified_tts.voices import resolve_voice
from verifiers.registry import known_metrics

__all__ = [
    "CLI_KEYS",
    "AssemblyOptions",  # these three are verified_tts.options', importable here as before
    "RayOptions",
    "RenderConfig",
    "build_config",
    "check_metrics",
    "read_config_file",
]

# build_config's keyword -> where its value goes in the config table
CLI_KEYS: Mapping[str, str] = {
    "candidates": "candidates",
    "seed": "seed",
    "adaptive": "adaptive",
    "keep": "keep",
    "max_chars": "max_chars",
    "window": "window",
    "prefetch": "prefetch",
    "voices_dir": "voices_dir",
    "generator": "generator.name",
    "model": "generator.model",
    "codec": "generator.codec",
    "voice": "generator.voice",
    "voice_ref": "generator.voice_ref",
    "voice_ref_text": "generator.voice_ref_text",
    "search": "search.strategy",
    "budget": "search.budget_s",
}
_SECTIONS = ("production", "dub")  # keywords that take a mapping of that table's keys


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a TOML config file, with one-line errors for the usual mistakes."""
    path = Path(path)
    if not path.is_file():
        state = "is a folder" if path.is_dir() else "does not exist"
        raise UserError(f"config file {path} {state}: pass an existing TOML file")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise UserError(f"config file {path} is not UTF-8 text") from error
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"config file {path} is not valid TOML: {error}") from error


def build_config(file: Mapping[str, Any] | None = None, **overrides: Any) -> RenderConfig:
    """Merge defaults <- TOML table <- CLI overrides (None means "not given"): ``candidates``,
    ``generator``, ``voice`` ... (:data:`CLI_KEYS`), and ``production``/``dub`` as mappings of
    their tables' keys (a ``voices`` map is merged into the file's)."""
    unknown = sorted(set(overrides) - set(CLI_KEYS) - set(_SECTIONS))
    if unknown:
        raise TypeError(f"build_config() got unknown overrides: {', '.join(unknown)}")
    values = {CLI_KEYS[k]: v for k, v in overrides.items() if k in CLI_KEYS}
    for section in _SECTIONS:
        for key, value in dict(overrides.get(section) or {}).items():
            values[f"{section}.{key}"] = value
    config = from_table(RenderConfig, overlay(dict(file or {}), values))
    for policy in (config.selection, *config.voice_selection.values()):
        check_metrics(policy)
    # a catalogue voice name (hibari:heart, piper:joe) becomes the model and speaker that speak it
    generator = resolve_voice(config.generator, config.voices_dir)
    return replace(config, generator=generator) if generator != config.generator else config


def check_metrics(policy: SelectionPolicy) -> None:
    """Every gate and weight of ``policy`` names a metric that some verifier reports, so a typo
    (``speeker``, ``asr_logprb``) is an error instead of a gate that never applies."""
    known = known_metrics()
    for where, names in (
        ("[selection.gates]", [g.metric for g in policy.gates]),
        ("[selection.weights]", list(policy.weights)),
    ):
        unknown = [name for name in names if name not in known]
        if unknown:
            raise UserError(
                f"{where} {', '.join(unknown)}: no verifier reports such a metric; "
                f"known metrics: {', '.join(sorted(known))}"
            )
