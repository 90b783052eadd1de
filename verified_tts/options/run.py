"""``[search]`` and ``[ray]``, and the options of the calibrate and A/B workflows.

``[search]`` chooses best-of-N or verifier-guided beam search
(:mod:`verified_tts.selection.search`); ``[ray]`` sizes the Ray backend, which decides where and how
fast work runs, never the audio, so no content key includes it. :class:`CalibrateOptions` and
:class:`JudgeOptions` are the settings of ``verified-tts calibrate`` and of the A/B judge
(command-line flags, not config tables).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options.schema import from_table, option
from verified_tts.options.tables import overlay

__all__ = [
    "AUDIO_FAULTS",
    "FAULT_KINDS",
    "PROCESS_VERIFIERS",
    "STRATEGIES",
    "TEXT_FAULTS",
    "CalibrateOptions",
    "JudgeOptions",
    "RayOptions",
    "SearchOptions",
    "parse_kinds",
]

STRATEGIES = ("best-of-n", "beam")
PROCESS_VERIFIERS = ("speaker", "emotion", "wer")  # the verifiers that can score partial audio
TEXT_FAULTS = ("skip", "repeat", "substitute")
AUDIO_FAULTS = ("truncate", "babble", "silence", "voice", "clip")
FAULT_KINDS = (*TEXT_FAULTS, *AUDIO_FAULTS)


@dataclass(frozen=True)
class SearchOptions:
    """``[search]`` (``--search`` and ``--budget`` override it)."""

    strategy: str = option("best-of-n", "best-of-n, or beam: verifier-guided partial search")
    width: int = option(2, "Beam: beams kept after each step (W)")
    expansions: int = option(4, "Beam: continuations per live beam and step (E)")
    chunk_s: float = option(1.0, "Beam: seconds of audio per continuation (C)")
    budget_s: float | None = option(None, "Seconds of audio generated per utterance, at most")
    process: tuple[str, ...] = option(PROCESS_VERIFIERS, "Beam: verifiers scoring partial audio")
    speaker_weight: float = option(1.0, "Beam: weight of speaker similarity")
    emotion_weight: float = option(1.0, "Beam: weight of the target emotion")
    text_weight: float = option(1.0, "Beam: weight of the partial-transcript error")

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise UserError(
                f"--search must be one of {', '.join(STRATEGIES)} (got '{self.strategy}')"
            )
        if int(self.width) < 1 or int(self.expansions) < 1:
            raise UserError(
                f"[search] width and expansions must be at least 1 "
                f"(got {self.width} and {self.expansions})"
            )
        if not (math.isfinite(self.chunk_s) and self.chunk_s > 0):
            raise UserError(
                f"[search] chunk_s must be a positive number of seconds (got {self.chunk_s})"
            )
        if self.budget_s is not None and not (math.isfinite(self.budget_s) and self.budget_s > 0):
            raise UserError(
                f"--budget must be a positive number of seconds of audio (got {self.budget_s})"
            )
        unknown = [name for name in self.process if name not in PROCESS_VERIFIERS]
        if unknown:
            raise UserError(
                f"[search] process names unknown verifiers {unknown}: choose among "
                + ", ".join(PROCESS_VERIFIERS)
            )

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any] | None, **overrides: Any) -> SearchOptions:
        """The ``[search]`` table with ``overrides`` (None: not given) on top."""
        return from_table(cls, overlay(dict(table or {}), overrides), "[search]")

    @property
    def beam(self) -> bool:
        return self.strategy == "beam"

    def identity(self) -> dict[str, Any] | None:
        """What enters the content keys: None for plain best-of-N, so its keys are unchanged."""
        if not self.beam:
            return None if self.budget_s is None else {"budget_s": self.budget_s}
        return asdict(self)

    def label(self) -> str:
        if self.beam:
            return f"beam:{self.width}x{self.expansions}"
        return "best-of-n"


@dataclass(frozen=True)
class RayOptions:
    """``[ray]``: resources of the Ray backend (``--ray``)."""

    replicas: int = option(1, "Generator actors, each holding one engine")
    generator_num_gpus: float = option(0.0, "GPUs per generator actor")
    generator_num_cpus: float = option(1.0, "CPUs per generator actor")
    verifier_num_gpus: float = option(0.0, "GPUs per verifier actor")
    verifier_num_cpus: float = option(0.25, "CPUs per verifier actor (fits beside a generator)")
    pool_size: int = option(1, "Actors per verifier")
    pools: Mapping[str, int] = option(factory=dict, doc="Per-verifier pool sizes: NAME = actors")
    chunk: int = option(0, "Requests per actor call; 0: each batch split evenly over the actors")
    max_in_flight: int = option(2, "Calls queued per actor: the backpressure bound")
    max_restarts: int = option(3, "Times Ray restarts a killed actor (elsewhere if its node died)")
    max_task_retries: int = option(3, "Times a call lost with its actor is retried")
    accelerator: str = option(
        "GPU", "What the *_num_gpus settings ask for: GPU, or a custom resource standing in"
    )
    spread: bool = option(True, "Spread each pool's actors over the nodes (Ray's SPREAD)")
    check_resources: bool = option(
        True, "Refuse actors no node can hold; false on an autoscaling cluster"
    )
    warm_idle_s: float = option(
        1800.0,
        "Keep CPU verifier actors loaded on the cluster for later runs with the same verifier "
        "settings until idle this long (seconds); 0: each run loads its own",
    )

    def __post_init__(self) -> None:
        sizes = {"replicas": self.replicas, "pool_size": self.pool_size, **dict(self.pools)}
        for name, value in {**sizes, "max_in_flight": self.max_in_flight}.items():
            if int(value) < 1:
                raise UserError(f"[ray] {name} must be at least 1 (got {value})")
        if self.warm_idle_s < 0:
            raise UserError(f"[ray] warm_idle_s must be 0 or more (got {self.warm_idle_s})")
        if not self.accelerator or self.accelerator in ("CPU", "memory", "object_store_memory"):
            raise UserError(
                "[ray] accelerator must be GPU or a custom resource name "
                f"(got {self.accelerator!r})"
            )


def parse_kinds(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """Fault kinds from "skip,repeat" or a list; ValueError names an unknown one."""
    if value is None:
        return FAULT_KINDS
    items = value.split(",") if isinstance(value, str) else [k for v in value for k in v.split(",")]
    kinds = tuple(dict.fromkeys(k.strip() for k in items if k.strip()))
    unknown = [k for k in kinds if k not in FAULT_KINDS]
    if unknown or not kinds:
        raise ValueError(
            f"unknown fault kind(s) {', '.join(unknown) or '(none given)'}: "
            f"choose from {', '.join(FAULT_KINDS)}"
        )
    return kinds


@dataclass(frozen=True)
class CalibrateOptions:
    """What ``calibrate`` measures: ``candidates`` clean candidates per sentence; the selection
    is simulated at the ``ns`` that do not exceed it."""

    sentences: int = option(40, "Sentences (utterances) to calibrate on")
    candidates: int = option(8, "Clean candidates per sentence")
    kinds: tuple[str, ...] = option(FAULT_KINDS, "Fault kinds to inject")
    false_alarm: float = option(0.05, "Target share of clean candidates rejected")
    fault_rates: tuple[float, ...] = option((0.1, 0.3, 0.5), "Fault rates the selection is run at")
    ns: tuple[int, ...] = option((1, 2, 4, 8), "N the selection is simulated at")
    trials: int = option(200, "Simulated selections per utterance and (rate, N)")
    examples: int = option(1, "Caught and missed cases per kind with players in the HTML")
    chapters: str | None = option(
        None, 'A book\'s chapters to take sentences from, 1-based: "1-14"'
    )

    def __post_init__(self) -> None:
        if not 0.0 < self.false_alarm < 1.0:
            raise UserError(
                f"--false-alarm must lie strictly between 0 and 1 (got {self.false_alarm}); "
                "e.g. --false-alarm 0.05 for 5 %"
            )
        if self.sentences < 2:
            raise UserError(f"--sentences must be at least 2 (got {self.sentences})")
        if self.candidates < 1:
            raise UserError(f"--candidates must be at least 1 (got {self.candidates})")
        # the simulation draws N distinct clean candidates: N up to the candidates made
        object.__setattr__(self, "ns", tuple(n for n in self.ns if n <= self.candidates) or (1,))
        try:
            object.__setattr__(self, "kinds", parse_kinds(self.kinds))
        except ValueError as error:
            raise UserError(f"--faults: {error}") from None


@dataclass(frozen=True)
class JudgeOptions:
    """The A/B judge's model and decoding. Beam search by default: the judge should be as good
    an ear as the machine affords, it runs once per distinct winner, not once per candidate."""

    model: str = option(doc="bundled:base, a faster-whisper id or a folder")
    beam_size: int = option(5, "Beam size")
    compute_type: str = option("int8", "CTranslate2 compute type")
    batch_size: int = option(16, "Most clips per call (fewer where a worker would wait)")
    cpu_threads: int = option(0, "CTranslate2 threads; 0: its default")
