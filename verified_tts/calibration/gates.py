"""Recommended gates: the set of gate sides and bounds that catch the most faults at a target
false-alarm rate on clean candidates.

Every side's bound is placed on the clean values (``roc.threshold_at``) so that it rejects ``m``
clean cases; the search chooses which sides to gate and each side's ``m``. Greedy forward selection
first (add the side that raises the mean recall over fault kinds most, with one common ``m`` for
all chosen sides, as long as the union of the gates rejects at most the target share of clean cases
and the gain is worth a gate), then a local search that moves one clean rejection at a time between
sides, or drops a side, while the mean recall improves. A gate must buy at least ``min_gain`` of
mean recall: a side that only catches what the others already catch costs false alarms on unseen
data for nothing. Every figure here is in-sample; the workflow reports a two-fold held-out check
beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from verified_tts.calibration.roc import Side, flags, threshold_at
from verified_tts.options import Gate, SelectionPolicy

__all__ = ["Recommendation", "apply", "gates_toml", "recommend", "recommended_policy"]


@dataclass(frozen=True)
class Recommendation:
    thresholds: Mapping[Side, float]  # the calibrated gates (fixed ones not included)
    false_alarm: float  # share of clean cases rejected by fixed and calibrated gates together
    recall: Mapping[str, float]  # fault kind -> share rejected


def apply(
    thresholds: Mapping[Side, float], metrics: Mapping[str, np.ndarray], size: int
) -> np.ndarray:
    """Union of the gates over ``size`` cases whose metrics are ``metrics[name][case]``."""
    out = np.zeros(size, dtype=bool)
    for side, bound in thresholds.items():
        if side.metric in metrics:
            out |= flags(side, metrics[side.metric], bound)
    return out


def recommend(
    clean: Mapping[str, np.ndarray],
    faulted: Mapping[str, Mapping[str, np.ndarray]],
    sides: Sequence[Side],
    target: float,
    *,
    fixed: Mapping[Side, float] | None = None,
    min_gain: float = 0.005,
) -> Recommendation:
    """Choose gate sides and bounds (see the module docstring). ``clean[metric]`` holds one value
    per clean case, ``faulted[kind][metric]`` one per faulted case of that kind. ``fixed`` gates
    (physical limits such as clipping, kept as configured) always apply and spend their share
    of the false-alarm budget first."""
    sides = [s for s in sides if s.metric in clean]
    n_clean = len(next(iter(clean.values()))) if clean else 0
    budget = int(math.floor(target * n_clean + 1e-9))
    kinds = list(faulted)
    # flag arrays per side and per m, computed once
    bounds = {s: [threshold_at(s, clean[s.metric], m / n_clean) for m in range(budget + 1)]
              for s in sides}  # fmt: skip
    clean_flags = {s: [flags(s, clean[s.metric], b) for b in bounds[s]] for s in sides}
    fault_flags = {
        s: {k: [flags(s, faulted[k][s.metric], b) for b in bounds[s]] for k in kinds}
        for s in sides
        if all(s.metric in faulted[k] for k in kinds)
    }
    sides = [s for s in sides if s in fault_flags]
    fixed = {s: b for s, b in (fixed or {}).items() if s.metric in clean}
    fixed_clean = apply(fixed, clean, n_clean)
    fixed_faults = {k: apply(fixed, faulted[k], _size(faulted[k])) for k in kinds}

    def evaluate(choice: Mapping[Side, int]) -> tuple[float, float, dict[str, float]]:
        false = fixed_clean.copy()
        for s, m in choice.items():
            false |= clean_flags[s][m]
        recall = {}
        for k in kinds:
            caught = fixed_faults[k].copy()
            for s, m in choice.items():
                caught |= fault_flags[s][k][m]
            recall[k] = float(caught.mean()) if caught.size else 0.0
        mean = float(np.mean(list(recall.values()))) if recall else 0.0
        return mean, float(false.mean()) if n_clean else 0.0, recall

    def allowed(fa: float) -> bool:
        return fa <= target + 1e-12

    choice: dict[Side, int] = {}
    best, _, _ = evaluate(choice)
    while True:  # greedy forward selection with one common m
        step = None
        for side in sides:
            if side in choice or any(
                c.metric == side.metric and c.bound == side.bound for c in choice
            ):
                continue
            for m in range(budget, -1, -1):
                trial = {s: m for s in (*choice, side)}
                score, fa, _ = evaluate(trial)
                if allowed(fa):
                    if score > best + min_gain and (step is None or score > step[0]):
                        step = (score, trial)
                    break
        if step is None:
            break
        best, choice = step[0], dict(step[1])
    improved = True
    while improved:  # local search: move one clean rejection, or drop a side
        improved = False
        moves: list[dict[Side, int]] = []
        for s in choice:
            if choice[s] < budget:
                moves.append({**choice, s: choice[s] + 1})
            moves.append({k: v for k, v in choice.items() if k != s})
            for t in choice:
                if t != s and choice[s] > 0 and choice[t] < budget:
                    moves.append({**choice, s: choice[s] - 1, t: choice[t] + 1})
        for move in moves:
            score, fa, _ = evaluate(move)
            dropped = len(move) < len(choice)
            # dropping a gate is worth a little recall; anything else must improve
            if allowed(fa) and (score > best + 1e-9 or (dropped and score > best - min_gain)):
                best, choice, improved = score, move, True
                break
    _, fa, recall = evaluate(choice)
    return Recommendation({s: bounds[s][m] for s, m in choice.items()}, fa, recall)


def _size(metrics: Mapping[str, np.ndarray]) -> int:
    return len(next(iter(metrics.values()))) if metrics else 0


def recommended_policy(
    current: SelectionPolicy,
    thresholds: Mapping[Side, float],
    calibrated: Sequence[str],
    clean: Mapping[str, np.ndarray],
    *,
    margin_pass: float = 0.8,
) -> SelectionPolicy:
    """``current`` with the gates of every ``calibrated`` metric replaced by the recommendation
    (a calibrated metric with no recommended side loses its gate); other gates stay.

    Each gate's margin (the adaptive early stop needs every gate passed with margin) is set so
    that ``margin_pass`` of the clean candidates pass that gate with margin.
    """
    gates: dict[str, Gate] = {g.metric: g for g in current.gates}
    for metric in calibrated:
        gates.pop(metric, None)
    by_metric: dict[str, dict[str, float]] = {}
    for side, bound in thresholds.items():
        by_metric.setdefault(side.metric, {})[side.bound] = bound
    for metric, bounds in by_metric.items():
        values = np.asarray(clean.get(metric, []), dtype=np.float64)
        values = values[~np.isnan(values)]
        margins = []
        for bound, value in bounds.items():
            if values.size == 0:
                continue
            if bound == "max":
                margins.append(value - float(np.quantile(values, margin_pass)))
            else:
                margins.append(float(np.quantile(values, 1.0 - margin_pass)) - value)
        margin = max(0.0, min(margins)) if margins else 0.0
        gates[metric] = Gate(
            metric,
            min=_round(bounds.get("min"), up=False),
            max=_round(bounds.get("max"), up=True),
            margin=_round(margin, up=False) or 0.0,
        )
    return replace(current, gates=tuple(gates.values()))


def _round(value: float | None, *, up: bool) -> float | None:
    """Four significant digits, rounded outward so a clean case on the bound still passes."""
    if value is None or not math.isfinite(value):
        return None
    if value == 0:
        return 0.0
    scale = 10.0 ** (math.floor(math.log10(abs(value))) - 3)
    steps = math.ceil(value / scale - 1e-9) if up else math.floor(value / scale + 1e-9)
    return float(f"{steps * scale:.4g}")


def _toml_value(value: float) -> str:
    text = repr(float(value))
    return text if ("." in text or "e" in text or "inf" in text) else text + ".0"


def gates_toml(data: Mapping[str, Any]) -> str:
    """The recommended ``[selection.gates]`` as TOML: calibrated gates with bounds, calibrated
    metrics without a gate switched off (``{}``), other gates as the config had them."""
    generator = data["generator"]
    lines = [
        f"# Gates recommended by `verified-tts calibrate` for generator {generator['name']}"
        + (f", voice {generator['voice']}" if generator.get("voice") else ""),
        f"# on {data['utterances']} utterances ({data['clean']['cases']} clean candidates, "
        f"{sum(f['cases'] for f in data['faults'])} faulted copies): at most "
        f"{data['false_alarm_target']:.0%} false alarms on clean candidates.",
        "# Use: verified-tts render BOOK --config gates.toml (or paste the table into a config).",
        "",
        "[selection.gates]",
    ]
    recommended = {g["metric"]: g for g in data["gates"]["recommended"]}
    for metric in data["gates"]["calibrated_metrics"]:
        if metric not in recommended:
            lines.append(f"{metric} = {{}}  # no gate: it bought no recall at this budget")
    for metric, gate in recommended.items():
        parts = [f"{k} = {_toml_value(gate[k])}" for k in ("min", "max") if gate[k] is not None]
        if gate["margin"]:
            parts.append(f"margin = {_toml_value(gate['margin'])}")
        lines.append(f"{metric} = {{ {', '.join(parts)} }}")
    model = (data.get("duration_model") or {}).get("options")
    if model:  # the text's duration model the duration gates were calibrated against
        lines += ["", "[verifiers.signal]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in model.items()]
    return "\n".join(lines) + "\n"
