"""The dub's own gates: fitted on cue-shaped text, kept apart from the book gates.

Dubbing sends the verifiers short dialogue ("Scales!", "So...", "All right,") in slots of a
subtitle's timing, not the sentences a book is made of, so its gates are calibrated on that
(``verified-tts calibrate subs.srt``). The shipped set is one file in the ``gates.toml`` format
that calibrate writes, ``calibration/data/dub_gates.toml``, whose header names the benchmark
result it came from. :func:`dub_policy` gives the policy a dub runs under: every gate the config
left at the shipped book default is replaced by the dub gate of its metric, and the dub's gates on
metrics the book does not gate are added (a gate the user set in ``[selection.gates]`` stays as
set, and once the user has changed the book gates their set is theirs: no gate is added to it,
so a metric the user switched off stays off), and the
stretch gate holds each winner to the speed limit. The Whisper gates of the file were fitted
under one scorer (``packing`` in the file); under the other scorer they keep that scorer's own
book defaults.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from functools import cache
from importlib.resources import files
from typing import Any

from verified_tts.selection.policy import Gate, SelectionPolicy, default_gates

__all__ = ["DUB_GATES_FILE", "DUB_SPEED_LIMIT", "dub_gates", "dub_policy", "stretch_gate"]

DUB_GATES_FILE = "data/dub_gates.toml"  # in verified_tts.calibration
DUB_SPEED_LIMIT = 1.25  # the default --speed-limit
_WHISPER_METRICS = (
    "wer", "asr_logprob", "asr_min_logprob", "asr_min_take_logprob", "asr_insertions",
    "asr_deletions",
)  # fmt: skip


@cache
def _shipped() -> tuple[dict[str, Any], bool]:
    resource = files("verified_tts.calibration").joinpath(DUB_GATES_FILE)
    if not resource.is_file():
        return {}, True
    data = tomllib.loads(resource.read_text(encoding="utf-8"))
    gates = dict(data.get("selection", {}).get("gates", {}))
    return gates, bool(data.get("verifiers", {}).get("wer", {}).get("packing", True))


def dub_gates(packed_wer: bool = True) -> dict[str, Gate | None]:
    """Metric -> the shipped dub gate (None: the dub switches that metric's gate off)."""
    table, fitted_packed = _shipped()
    out: dict[str, Gate | None] = {}
    for metric, bounds in table.items():
        if metric in _WHISPER_METRICS and fitted_packed != packed_wer:
            continue  # fitted under the other Whisper scorer: that scorer's defaults stay
        out[metric] = Gate(metric, **{k: float(v) for k, v in bounds.items()}) if bounds else None
    return out


def stretch_gate(speed_limit: float) -> Gate:
    # margin: an adaptive run stops early only on a candidate that needs no stretch at all
    return Gate("stretch", max=speed_limit, margin=speed_limit - 1.0)


def dub_policy(
    policy: SelectionPolicy, speed_limit: float, packed_wer: bool = True
) -> SelectionPolicy:
    """``policy`` with the dub gates in place of the book defaults (see the module docstring)."""
    book = {gate.metric: gate for gate in default_gates(packed_wer)}
    dub = dub_gates(packed_wer)
    gates: list[Gate] = []
    for gate in policy.gates:
        if gate.metric == "stretch":
            continue
        if gate.metric in dub and book.get(gate.metric) == gate:
            chosen = dub[gate.metric]
            if chosen is not None:
                gates.append(chosen)
        else:
            gates.append(gate)
    present = {gate.metric for gate in policy.gates}
    # A policy's gates do not say which metric a user switched off (``duration_ratio = {}``)
    # and which the book never gated: a user who changed the book gates keeps their own set,
    # with only the gates left at the book's defaults replaced by the dub's.
    customised = set(policy.gates) != set(book.values())
    gates.extend(
        gate
        for metric, gate in dub.items()
        if gate is not None
        and metric not in present
        and metric not in book
        and metric != "stretch"
        and not customised
    )
    return replace(policy, gates=(*gates, stretch_gate(speed_limit)))
