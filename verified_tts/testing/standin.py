"""Stand-ins for measuring the driver: a generator and a verifier with a fixed cost, real audio.

How many candidates per second can one driver coordinate (store writes, object transfers, rounds
and selection), whatever the models cost? ``benchmarks/distributed/driver_ceiling.py`` answers it
with these: the generator sleeps ``seconds_per_candidate`` for each request and returns seeded noise
as long as the text would take to read (``words_per_second``), at a real sample rate, so every
transfer and FLAC write is the size a real candidate's is; the verifier sleeps ``seconds_per_clip``
per clip and reports one seeded score, so selection has real work. Sleeping costs no CPU, so one
machine can hold as many stand-in actors as a cluster of real nodes would. Selected by config only
(``[generator] name = "standin"``, the ``standin`` verifier by name), never a default.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from verified_tts.generators.base import Candidate, SynthesisRequest
from verified_tts.options.generation import StandInGeneratorOptions
from verified_tts.options.verifiers import StandInVerifierOptions
from verifiers.base import Clip, Score

__all__ = [
    "StandInGenerator",
    "StandInGeneratorOptions",
    "StandInVerifier",
    "StandInVerifierOptions",
    "METRICS",
    "load",
    "load_standin_verifier",
]

METRICS = ("standin",)  # what the stand-in verifier reports


class StandInGenerator:
    """Sleeps, then returns seeded noise of a real candidate's length."""

    name = "standin"
    model = "standin"

    def __init__(self, options: StandInGeneratorOptions) -> None:
        self.options = options
        self.sample_rate = options.sample_rate

    def identity(self) -> Mapping[str, Any]:
        return {"generator": self.name, **asdict(self.options)}

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        time.sleep(self.options.seconds_per_candidate * len(requests))
        out = []
        for request in requests:
            words = max(1, len(request.text.split()))
            frames = int(self.sample_rate * (0.3 + words / self.options.words_per_second))
            noise = np.random.default_rng(request.seed).standard_normal(frames)
            out.append(
                Candidate(
                    request.utterance_key,
                    request.index,
                    request.seed,
                    (0.05 * noise).astype(np.float32),
                    self.sample_rate,
                )
            )
        return out


def load(config: Any) -> StandInGenerator:
    """The generator registry's loader: ``[generator.standin]`` options."""
    return StandInGenerator(config.options)


class StandInVerifier:
    """Sleeps, then scores each clip with a number drawn from its audio (stable per candidate)."""

    name = "standin"

    def __init__(self, options: StandInVerifierOptions) -> None:
        self.options = options

    def identity(self) -> Mapping[str, Any]:
        return {"verifier": self.name, **asdict(self.options)}

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        time.sleep(self.options.seconds_per_clip * len(clips))
        scores = []
        for clip in clips:
            digest = hashlib.sha256(np.ascontiguousarray(clip.audio[:4096]).tobytes()).digest()
            value = int.from_bytes(digest[:8], "little") / 2**64
            scores.append(Score(metrics={"standin": value}))
        return scores


def load_standin_verifier(options: StandInVerifierOptions) -> StandInVerifier:
    return StandInVerifier(options)
