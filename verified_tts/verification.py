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
from verifiers import Verifier

__all__ = ["LoadedVerifiers", "load_verifiers"]


@dataclass(frozen=True)
class LoadedVerifiers:
    """The verifiers that run, in scoring order, plus every verifier's status."""

    active: tuple[Verifier, ...]
    status: Mapping[str, Mapping[str, Any]]  # name -> {"available": bool, "reason"/"identity"}

    def identity(self) -> str:
        return stable_hash({v.name: dict(v.identity()) for v in self.active})

    def get(self, name: str) -> Verifier | None:
        return next((v for v in self.active if v.name == name), None)

    def embed_reference(self, path: str) -> np.ndarray:
        """The unit speaker embedding of the user's reference WAV (``--voice-ref``)."""
        speaker = self.get("speaker")
        if speaker is None:
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


def _options(cls: type, table: Mapping[str, Any], name: str) -> Any:
    return options_from_table(cls, table, f"[verifiers.{name}]")


def load_verifiers(
    tables: Mapping[str, Mapping[str, Any]],
    order: Sequence[str] = ("signal", "wer", "speaker", "emotion"),
) -> LoadedVerifiers:
    """Load every enabled verifier once; ``enabled = false`` in a table switches one off."""
    import verifiers as v

    active: list[Verifier] = []
    status: dict[str, dict[str, Any]] = {}
    for name in order:
        table = dict(tables.get(name, {}))
        if not table.pop("enabled", True):
            status[name] = {"available": False, "reason": "switched off in the config"}
            continue
        if name == "signal":
            verifier: Verifier = v.SignalVerifier(_options(v.SignalOptions, table, name))
        elif name == "wer":
            verifier = v.load_wer_verifier(_options(v.WerOptions, table, name))
        elif name == "speaker":
            verifier = v.load_speaker_verifier(_options(v.SpeakerOptions, table, name))
        elif name == "duration_fit":  # dubbing only: the dub command asks for it
            verifier = v.DurationFitVerifier(_options(v.DurationFitOptions, table, name))
        elif name == "emotion":
            options = _options(v.EmotionOptions, table, name)
            if not options.model:
                status[name] = {
                    "available": False,
                    "reason": "no model configured: set [verifiers.emotion] model = ID_OR_DIR",
                }
                continue
            verifier = v.load_emotion_verifier(options)
        else:
            raise UserError(f"unknown verifier '{name}'")
        active.append(verifier)
        status[name] = {"available": True, "identity": dict(verifier.identity())}
    return LoadedVerifiers(tuple(active), status)
