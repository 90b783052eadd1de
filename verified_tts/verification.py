"""Builds the verifier set of a render from its ``[verifiers.*]`` config tables.

Each verifier is loaded once here. A verifier that is configured off, or that has nothing to run
(the emotion verifier without a model), is listed with the reason in ``status`` so the summary
and the manifest say it did not score, instead of leaving a silent gap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.keys import stable_hash
from verified_tts.tables import options_from_table
from verifiers import DEFAULT_VERIFIERS, VERIFIERS, MayBeUnavailable, SpeakerEmbedder, Verifier

__all__ = ["LoadedVerifiers", "load_verifiers", "parse_verifier_table"]

_UNAVAILABLE_FIX = {"emotion": "no model configured: set [verifiers.emotion] model = ID_OR_DIR"}


@dataclass(frozen=True)
class LoadedVerifiers:
    """The verifiers that run, in scoring order, plus every verifier's status."""

    active: tuple[Verifier, ...]
    status: Mapping[str, Mapping[str, Any]]  # name -> {"available": bool, "reason"/"identity"}

    def identity(self) -> str:
        return stable_hash({v.name: dict(v.identity()) for v in self.active})

    def unavailable(self) -> dict[str, str]:
        """Verifier name -> why it did not score (switched off, or nothing to run)."""
        return {name: s["reason"] for name, s in self.status.items() if not s["available"]}

    def get(self, name: str) -> Verifier | None:
        return next((v for v in self.active if v.name == name), None)

    def with_verifier(self, verifier: Verifier) -> LoadedVerifiers:
        """The same set with ``verifier`` in place of the active one of its name."""
        active = tuple(verifier if v.name == verifier.name else v for v in self.active)
        entry = {"available": True, "identity": dict(verifier.identity())}
        return LoadedVerifiers(active, {**self.status, verifier.name: entry})

    def embed_reference(self, path: str) -> np.ndarray:
        """The unit speaker embedding of the user's reference WAV (``--voice-ref``)."""
        speaker = self.get("speaker")
        if not isinstance(speaker, SpeakerEmbedder):
            raise UserError(
                "--voice-ref needs the speaker verifier, which is switched off in the config "
                "([verifiers.speaker] enabled = false)"
            )
        return speaker.embed_file(path)

    @staticmethod
    def reference_id(path: str | None) -> str | None:
        if not path:
            return None
        return stable_hash(Path(path).read_bytes().hex()) if Path(path).is_file() else path


def parse_verifier_table(name: str, table: Mapping[str, Any]) -> tuple[bool, Any]:
    """``[verifiers.NAME]`` -> (enabled, options): unknown verifiers and keys are one-line errors.

    Cheap (no model is touched), so the config is checked with it before anything loads.
    """
    kind = VERIFIERS.get(name)
    if kind is None:
        raise UserError(f"unknown verifier '{name}': choose among {', '.join(VERIFIERS)}")
    table = dict(table)
    enabled = table.pop("enabled", True)
    if not isinstance(enabled, bool):
        raise UserError(f"[verifiers.{name}] enabled must be true or false (got {enabled!r})")
    return enabled, options_from_table(kind.options, table, f"[verifiers.{name}]")


def load_verifiers(
    tables: Mapping[str, Mapping[str, Any]],
    order: Sequence[str] = DEFAULT_VERIFIERS,
) -> LoadedVerifiers:
    """Load every enabled verifier once; ``enabled = false`` in a table switches one off."""
    active: list[Verifier] = []
    status: dict[str, dict[str, Any]] = {}
    for name in order:
        enabled, options = parse_verifier_table(name, tables.get(name, {}))
        if not enabled:
            status[name] = {"available": False, "reason": "switched off in the config"}
            continue
        verifier = VERIFIERS[name].load(options)
        reason = verifier.unavailable_reason if isinstance(verifier, MayBeUnavailable) else None
        if reason:  # e.g. the emotion verifier without a model: say so instead of a silent gap
            status[name] = {"available": False, "reason": _UNAVAILABLE_FIX.get(name, reason)}
            continue
        active.append(verifier)
        status[name] = {"available": True, "identity": dict(verifier.identity())}
    return LoadedVerifiers(tuple(active), status)
