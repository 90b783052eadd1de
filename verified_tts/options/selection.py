"""``[selection]``: gates, weights and the adaptive schedule, and the profiles that tune them.

A profile is a file of the package (``verified_tts/profiles/NAME.toml``) in the format
``verified-tts calibrate`` writes its ``gates.toml`` in: a ``[selection]`` table with every
gate, weight and stop setting of one scorer, and a header naming the benchmark result that
produced it (``# benchmark: ...``). The WER verifier names its profile (``[verifiers.wer]
profile``, by default ``packed`` or ``per_clip`` after its scorer); a config's ``[selection]``
table is read on top of it: a gate given there replaces the profile's gate of that metric, an
empty table (``speaker = {}``) switches that gate off, weights and stop settings given replace
the profile's, and ``first_round`` or ``step`` without ``rounds`` are the user's own schedule.
Adding a profile is adding its file: the ``[selection.gates]`` that calibrate recommends, with
the weights and the stop settings, and a ``# benchmark:`` line naming the result file(s) in
``benchmarks/results/`` that produced them; a config then names it (``[verifiers.wer] profile =
"NAME"``). :class:`SelectionPolicy`'s own defaults are the ``per_clip`` profile's. The pure
functions that apply a policy are in :mod:`verified_tts.selection.policy`.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, fields, replace
from functools import cache, lru_cache
from importlib.resources import files
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options.reference import OptionDoc, register_reference
from verified_tts.options.schema import (
    Reading,
    option,
    read_fields,
    read_value,
    register_table,
    table_label,
)
from verified_tts.storage.keys import stable_hash

__all__ = [
    "ALONE_LINES",
    "BASE_PROFILE",
    "DEFAULT_PROFILE",
    "RANK_RULES",
    "STOP_RULES",
    "Gate",
    "Profile",
    "SelectionPolicy",
    "convert_policy",
    "load_profile",
    "profile_names",
    "read_policy",
    "write_policy",
]

DEFAULT_PROFILE = "packed"  # the profile of the default WER scorer (packing = true)
BASE_PROFILE = "per_clip"  # the profile SelectionPolicy()'s defaults come from
# "margin": stop once a candidate passed every gate with margin. "expected_gain": stop once the
# best passing candidate's score is unlikely to be beaten by much by the candidates still to come
# (verified_tts.selection.policy.expected_gain); on a good voice most candidates pass with margin,
# and the gain is many small improvements, which "margin" throws away.
STOP_RULES = ("margin", "expected_gain")
# How the takes that pass are ranked. "score": by the weighted score. "heard_alone": where two or
# more pass, each is heard again by the WER verifier in a Whisper window of its own (beam search)
# and the one with the fewest word errors wins, ties to the lower index
# (verified_tts.selection.rehear): packed scores compare takes heard beside different sentences.
RANK_RULES = ("score", "heard_alone")
# Which lines heard_alone hears: "all" (every line with two or more passing takes), or
# "differing" (only those whose passing takes the packed scoring heard as different words; where
# they were heard alike the weighted score ranks, as without hearing alone).
ALONE_LINES = ("all", "differing")
_BOUNDS = ("min", "max", "margin")
_KINDS = {"gates": "table of { min, max, margin }", "weights": "table of float",
          "rounds": "list of int", "stop": "str", "first_round": "int", "step": "int",
          "rank": "str", "alone_beam": "int", "alone_lines": "str"}  # fmt: skip
_SCHEDULE = ("first_round", "step", "rounds", "stop", "stop_gain", "prior_spread", "prior_weight",
             "rank", "alone_beam", "alone_lines")  # fmt: skip


# A metric computed from a sentence's takes together (verified_tts.selection.consensus) is, for a
# take judged alone, the take's own metric: a gate on it applies to a lone take through that one.
_STANDS_IN = {"asr_min_take_logprob": "asr_min_logprob", "speaker_take": "speaker"}


@dataclass(frozen=True)
class Gate:
    """A bound on one metric. ``margin`` tightens it for the adaptive early stop."""

    metric: str
    min: float | None = None
    max: float | None = None
    margin: float = 0.0

    def check(self, metrics: Mapping[str, float]) -> tuple[bool, bool] | None:
        """(passed, passed with margin), or None when the metric was not reported."""
        value = metrics.get(self.metric, metrics.get(_STANDS_IN.get(self.metric, "")))
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        passed = (self.min is None or value >= self.min) and (self.max is None or value <= self.max)
        with_margin = (self.min is None or value >= self.min + self.margin) and (
            self.max is None or value <= self.max - self.margin
        )
        return passed, passed and with_margin


def _base(name: str) -> Any:
    return lambda: getattr(load_profile(BASE_PROFILE).policy, name)


@dataclass(frozen=True)
class SelectionPolicy:
    """Gates, weights and the adaptive schedule; ``identity()`` keys stored decisions.

    The defaults are the ``per_clip`` profile's; a render's config reads its ``[selection]``
    table on top of the profile its WER verifier names."""

    gates: tuple[Gate, ...] = option(
        factory=_base("gates"), doc="METRIC = { min, max, margin }; {} switches a gate off"
    )
    weights: Mapping[str, float] = option(
        factory=_base("weights"), doc="METRIC = weight of the ranking score"
    )
    adaptive: bool = option(True, "Sample in rounds and stop early (the top-level adaptive)")
    first_round: int = option(factory=_base("first_round"), doc="Candidates in the first round")
    step: int = option(factory=_base("step"), doc="Candidates added per round; 0 doubles")
    rounds: tuple[int, ...] = option(
        factory=_base("rounds"), doc="Explicit round targets, overriding first_round and step"
    )
    stop: str = option(factory=_base("stop"), doc="Early stop rule: margin or expected_gain")
    stop_gain: float = option(
        factory=_base("stop_gain"),
        doc="expected_gain: stop when fewer score points are expected",
        convert=float,
    )
    prior_spread: float = option(
        factory=_base("prior_spread"),
        doc="expected_gain: prior spread of scores, per unit of -asr_logprob",
        convert=float,
    )
    prior_weight: float = option(
        factory=_base("prior_weight"),
        doc="expected_gain: how many candidates' worth the prior counts",
        convert=float,
    )
    rank: str = option(
        factory=_base("rank"),
        doc="How passing takes are ranked: score, or heard_alone (each heard again alone)",
    )
    alone_beam: int = option(
        factory=_base("alone_beam"),
        doc="heard_alone: the beam size of hearing alone (1: greedy decoding)",
    )
    alone_lines: str = option(
        factory=_base("alone_lines"),
        doc="heard_alone: which lines are heard alone: all, or differing (only those whose "
        "passing takes were heard as different words)",
    )

    def __post_init__(self) -> None:
        if self.first_round < 1:
            raise UserError("[selection] first_round must be at least 1")
        if self.step < 0:
            raise UserError("[selection] step must be 0 (double each round) or more")
        if any(not isinstance(r, int) or isinstance(r, bool) or r < 1 for r in self.rounds):
            raise UserError("[selection] rounds must be a list of candidate counts, e.g. [1, 2, 8]")
        if self.stop not in STOP_RULES:
            raise UserError(
                f"[selection] stop = {self.stop!r} is not a rule: use {' or '.join(STOP_RULES)}"
            )
        if self.rank not in RANK_RULES:
            raise UserError(
                f"[selection] rank = {self.rank!r} is not a ranking: use {' or '.join(RANK_RULES)}"
            )
        beam = self.alone_beam
        if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
            raise UserError(
                f"[selection] alone_beam = {beam!r} is not a beam size: use a whole number, "
                "1 (greedy) or more"
            )
        if self.alone_lines not in ALONE_LINES:
            raise UserError(
                f"[selection] alone_lines = {self.alone_lines!r} is not a choice: use "
                f"{' or '.join(ALONE_LINES)}"
            )
        for name in ("stop_gain", "prior_spread", "prior_weight"):
            if not getattr(self, name) >= 0:
                raise UserError(f"[selection] {name} must be zero or more")

    def identity(self) -> str:
        hearing = (self.alone_beam, self.alone_lines) if self.rank == "heard_alone" else (5, "all")
        return stable_hash(
            {
                "gates": [asdict(g) for g in self.gates],
                "weights": dict(self.weights),
                "adaptive": self.adaptive,
                "first_round": self.first_round,
                "step": self.step,
                "rounds": list(self.rounds),
                "stop": self.stop,
                "stop_gain": self.stop_gain,
                "prior_spread": self.prior_spread,
                "prior_weight": self.prior_weight,
                # named only when not the weighted score, so stored decisions keep their keys
                **({} if self.rank == "score" else {"rank": self.rank}),
                # likewise how heard_alone hears, named only where it ranks and hears otherwise
                # than it first did (beam 5, every line)
                **({"alone": list(hearing)} if hearing != (5, "all") else {}),
            }
        )

    @classmethod
    def from_mapping(
        cls, table: Mapping[str, Any], *, adaptive: bool = True, packed_wer: bool = True
    ) -> SelectionPolicy:
        """The ``[selection]`` table on top of the packed (default) or per-clip profile."""
        profile = load_profile(DEFAULT_PROFILE if packed_wer else BASE_PROFILE)
        return read_policy(table, Reading(("selection",)), profile.policy, adaptive=adaptive)


def read_policy(
    table: Mapping[str, Any],
    reading: Reading,
    base: SelectionPolicy | None,
    *,
    adaptive: bool = True,
) -> SelectionPolicy:
    """A ``[selection]`` table on top of ``base`` (a profile's policy; see the module doc).
    With no ``base`` (a profile file itself) every gate, weight and setting is the table's."""
    if not isinstance(table, Mapping):
        raise UserError(
            f"{reading.label} must be a table ([{reading.label.strip('[]')}] with key = value "
            f"lines), not {type(table).__name__} {table!r:.40}"
        )
    values = read_fields(
        SelectionPolicy, table, reading, skip=("gates", "weights", "adaptive"),
        extra=("gates", "weights"),
    )  # fmt: skip
    gates = _read_gates(table.get("gates", {}), reading.child("gates"), base)
    raw_weights = read_value(Mapping[str, float], table.get("weights", {}), reading, "weights")
    weights = {k: float(v) for k, v in raw_weights.items()} if base is not None else raw_weights
    if base is None:
        missing = [name for name in (*_SCHEDULE, "gates", "weights") if name not in table]
        if missing:
            raise UserError(f"the profile's {reading.label} needs {', '.join(missing)}")
        return SelectionPolicy(gates=gates, weights=weights, adaptive=adaptive, **values)
    own_steps = "first_round" in values or "step" in values
    if "rounds" not in values and own_steps:
        values["rounds"] = ()  # the user's schedule, not the profile's rounds
    if "rounds" in values:
        values["rounds"] = tuple(sorted(set(values["rounds"])))
    return replace(
        base, gates=gates, weights={**base.weights, **weights}, adaptive=adaptive, **values
    )


def _read_gates(table: Any, reading: Reading, base: SelectionPolicy | None) -> tuple[Gate, ...]:
    if not isinstance(table, Mapping):
        raise UserError(f"{reading.label} must be a table of METRIC = {{ min, max, margin }}")
    gates = {gate.metric: gate for gate in (base.gates if base is not None else ())}
    for metric, bounds in table.items():
        if not isinstance(bounds, Mapping) or set(bounds) - set(_BOUNDS):
            raise UserError(
                f"{reading.label} {metric} must be a table with min, max and/or margin, "
                f"e.g. {metric} = {{ max = 0.5 }}"
            )
        if not bounds:
            gates.pop(metric, None)
            continue
        numbers = {k: read_value(float, v, reading, f"{metric} {k}") for k, v in bounds.items()}
        if base is None:  # a profile's gates are kept as written
            gates[metric] = Gate(metric, **numbers)
            continue
        gate = Gate(metric, **{k: float(v) for k, v in numbers.items()})
        # a gate restated as the profile has it stays the profile's (same identity)
        gates[metric] = gates[metric] if gates.get(metric) == gate else gate
    return tuple(gates.values())


def write_policy(policy: SelectionPolicy, base: SelectionPolicy | None) -> dict[str, Any]:
    """The ``[selection]`` table that :func:`read_policy` reads back as ``policy`` on top of
    ``base``: every gate (``{}`` for the base's gates the policy lacks), weight and setting."""
    gates: dict[str, Any] = {
        g.metric: {k: getattr(g, k) for k in _BOUNDS if getattr(g, k) is not None}
        for g in policy.gates
    }
    for gate in base.gates if base is not None else ():
        gates.setdefault(gate.metric, {})
    return {
        "gates": gates,
        "weights": dict(policy.weights),
        **{name: list(v) if name == "rounds" else v
           for name in _SCHEDULE if (v := getattr(policy, name)) is not None},
    }  # fmt: skip


def convert_policy(
    policy: SelectionPolicy, source: SelectionPolicy, target: SelectionPolicy
) -> SelectionPolicy:
    """``policy`` moved from one profile's defaults to another's: each gate and setting that is
    ``source``'s becomes ``target``'s; what the user set stays as set."""
    wanted = {gate.metric: gate for gate in target.gates}
    was = {gate.metric: gate for gate in source.gates}
    gates = []
    for gate in policy.gates:
        if was.get(gate.metric) == gate and gate.metric in wanted:
            gates.append(wanted[gate.metric])
        elif was.get(gate.metric) != gate:
            gates.append(gate)
    schedule = {
        name: getattr(target, name)
        for name in (*_SCHEDULE, "weights")
        if getattr(policy, name) == getattr(source, name) != getattr(target, name)
    }
    return replace(policy, gates=tuple(gates), **schedule)


# ------------------------------------------------------------------------------------------------
# profiles


@dataclass(frozen=True)
class Profile:
    """A shipped profile: its name, the benchmark results its header names, and its policy."""

    name: str
    benchmarks: tuple[str, ...]
    header: str
    policy: SelectionPolicy


def _folder() -> Any:
    return files("verified_tts").joinpath("profiles")


@lru_cache(maxsize=1)
def profile_names() -> tuple[str, ...]:
    """The profiles the package ships (``verified_tts/profiles/*.toml``)."""
    return tuple(sorted(p.name[:-5] for p in _folder().iterdir() if p.name.endswith(".toml")))


@cache
def load_profile(name: str) -> Profile:
    """The profile ``name``; an unknown one is a one-line error listing the shipped ones."""
    if name not in profile_names():
        raise UserError(
            f"no selection profile '{name}': choose one of {', '.join(profile_names())}"
        )
    text = _folder().joinpath(f"{name}.toml").read_text(encoding="utf-8")
    header = [line[1:].strip() for line in text.splitlines() if line.startswith("#")]
    named = [line.split(":", 1)[1] for line in header if line.lower().startswith("benchmark:")]
    benchmarks = tuple(
        word.strip(",;()") for line in named for word in line.split() if ".json" in word
    )
    table = tomllib.loads(text)
    reading = Reading(("selection",))
    if set(table) != {"selection"}:
        raise UserError(f"profile {name}: holds only a {table_label(reading.keys)} table")
    policy = read_policy(table["selection"], reading, None)
    return Profile(name, benchmarks, "\n".join(header), policy)


def _read_standalone(cls: type, table: Mapping[str, Any], reading: Reading) -> SelectionPolicy:
    table = dict(table)
    adaptive = read_value(bool, table.pop("adaptive", True), reading, "adaptive")
    return read_policy(table, reading, load_profile(BASE_PROFILE).policy, adaptive=adaptive)


def _write_standalone(policy: SelectionPolicy) -> dict[str, Any]:
    table = write_policy(policy, load_profile(BASE_PROFILE).policy)
    return {"adaptive": policy.adaptive, **table}


def describe_policy(keys: tuple[str, ...], profile: str = DEFAULT_PROFILE) -> Iterator[OptionDoc]:
    """The reference rows of ``[selection]``, with the defaults of ``profile``."""
    policy = load_profile(profile).policy
    table = write_policy(policy, None)
    for spec in fields(SelectionPolicy):
        if spec.name == "adaptive":
            continue
        kind = _KINDS.get(spec.name, "float")
        doc = str(spec.metadata.get("doc", "")) + f" (default: the {profile} profile's)"
        yield OptionDoc(table_label(keys), spec.name, kind, table[spec.name], doc)


register_table(SelectionPolicy, read=_read_standalone, write=_write_standalone)
register_reference(SelectionPolicy, lambda cls, keys: describe_policy(keys))
