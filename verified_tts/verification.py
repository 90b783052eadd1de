"""Builds the verifier set of a render from its ``[verifiers.*]`` options.

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
from verified_tts.options import VerifiersConfig, from_table
from verified_tts.storage.keys import stable_hash
from verifiers import DEFAULT_VERIFIERS, VERIFIERS, MayBeUnavailable, SpeakerEmbedder, Verifier

__all__ = ["LoadedVerifiers", "load_verifiers", "verifier_settings"]

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


def verifier_settings(
    settings: VerifiersConfig | Mapping[str, Any],
) -> VerifiersConfig:
    """The verifiers' options from a :class:`VerifiersConfig` or a mapping of their tables
    (``{"wer": {"packing": False}}``; options objects are taken as they are)."""
    if isinstance(settings, VerifiersConfig):
        return settings
    return from_table(VerifiersConfig, settings, "[verifiers]")


def load_verifiers(
    settings: VerifiersConfig | Mapping[str, Any],
    order: Sequence[str] = DEFAULT_VERIFIERS,
) -> LoadedVerifiers:
    """Load every enabled verifier once; ``enabled = false`` in a table switches one off."""
    settings = verifier_settings(settings)
    active: list[Verifier] = []
    status: dict[str, dict[str, Any]] = {}
    for name in order:
        options = settings.get(name)
        if options is None:
            raise UserError(f"unknown verifier '{name}': choose among {', '.join(VERIFIERS)}")
        if not options.enabled:
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
