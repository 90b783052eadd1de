"""``verified-tts calibrate``: what the verifiers catch, gates calibrated on injected faults.

The configured generator reads plain sentences (the shipped Harvard sentences, or the first
``sentences`` segments of a book) ``candidates`` times each with the render's seeds; then every
requested fault kind is made once per sentence from one of its clean candidates (text faults are
synthesised from the altered text with that candidate's seed and verified against the original
text; audio faults edit the clean audio; see :mod:`verified_tts.calibration.faults`). All clips are
scored by the configured verifiers in batches. The speaker reference is the user's ``voice_ref`` or
the centroid of the clean candidates, as a render would settle on. From the scores: per fault kind
and gate side the ROC AUC, the bound at the target false-alarm rate and its recall; the recall of
the current gates; recommended gates (:mod:`verified_tts.calibration.gates`) with a two-fold
held-out check; and best-of-N selection simulated at fault rates 0.1/0.3/0.5
(:mod:`verified_tts.calibration.simulate`) under both gate sets. Writes ``calibrate.json``,
``gates.toml`` (a ``[selection.gates]`` table that ``--config`` accepts), ``calibrate.html`` and
the audio of a few caught and missed cases.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.calibration.faults import (
    FAULT_KINDS,
    TEXT_FAULTS,
    audio_fault,
    content_words,
    parse_kinds,
    text_fault,
)
from verified_tts.calibration.gates import recommend, recommended_policy
from verified_tts.calibration.roc import Side, auc, flags, roc_points, threshold_at
from verified_tts.calibration.simulate import faulted_winner_share
from verified_tts.config import RenderConfig
from verified_tts.errors import UserError
from verified_tts.generators import SynthesisRequest, load_generator
from verified_tts.keys import candidate_seed
from verified_tts.pipeline import plan_utterances
from verified_tts.selection import Gate, SelectionPolicy, judge
from verified_tts.text.book import Segment, load_book, parse_book
from verified_tts.verification import load_verifiers
from verifiers import Clip

__all__ = [
    "CALIBRATED_SIDES",
    "FIXED_SIDES",
    "GOALS",
    "CalibrateOptions",
    "CalibrationResult",
    "builtin_sentences",
    "calibrate",
    "gates_toml",
    "reanalyse",
]

# The gate sides the calibration may set; every other gate of the config is kept as it is.
CALIBRATED_SIDES: tuple[Side, ...] = (
    Side("wer", "max"),
    Side("asr_logprob", "min"),
    Side("asr_min_logprob", "min"),
    Side("asr_insertions", "max"),
    Side("asr_deletions", "max"),
    Side("duration_ratio", "max"),
    Side("duration_ratio", "min"),
    Side("speech_ratio", "max"),
    Side("speech_ratio", "min"),
    Side("speaker", "min"),
)
# Physical limits that keep their configured gates: measured and reported, never switched off
# because another metric happens to catch the same faults here.
# A long pause inside a long sentence barely moves its duration, so the silence gate stays even
# where the duration gate catches every inserted pause in short calibration sentences.
FIXED_SIDES: tuple[Side, ...] = (
    Side("max_internal_silence_s", "max"),
    Side("clipping", "max"),
    Side("leading_silence_s", "max"),
    Side("trailing_silence_s", "max"),
)
# recall goals at the target false-alarm rate (issue 11); kinds without one are measured only
GOALS: Mapping[str, float] = {
    "skip": 0.95, "repeat": 0.95, "truncate": 0.95, "babble": 0.95, "silence": 0.95, "voice": 0.90,
}  # fmt: skip
_CHUNK = 32  # clips per verifier call: big enough to batch, small enough to show progress


@dataclass(frozen=True)
class CalibrateOptions:
    """What to measure. ``candidates`` clean candidates per sentence; the selection is simulated
    at the ``ns`` that do not exceed it."""

    sentences: int = 40
    candidates: int = 8
    kinds: tuple[str, ...] = FAULT_KINDS
    false_alarm: float = 0.05
    fault_rates: tuple[float, ...] = (0.1, 0.3, 0.5)
    ns: tuple[int, ...] = (1, 2, 4, 8)
    trials: int = 200  # simulated selections per utterance and (p, N)
    examples: int = 1  # caught and missed cases per kind with players in the HTML

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
class Case:
    """One scored clip: clean candidate or faulted copy."""

    utterance: int
    kind: str  # "clean" or a fault kind
    source: int  # the clean candidate it was made from (its own index when clean)
    description: str
    audio: np.ndarray = field(repr=False)
    sample_rate: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    transcript: str | None = None


@dataclass(frozen=True)
class CalibrationResult:
    out_dir: Path
    json_path: Path
    html_path: Path
    gates_path: Path
    data: Mapping[str, Any]


def builtin_sentences() -> list[str]:
    """The 720 Harvard sentences shipped with the package (IEEE 1969, public domain)."""
    text = (
        files("verified_tts.calibration")
        .joinpath("data/harvard-sentences.txt")
        .read_text(encoding="utf-8")
    )
    return [line.strip() for line in text.splitlines() if line.strip()]


def _segments(book: Path | None, count: int, max_chars: int) -> list[Segment]:
    if book is None:
        source = "\n\n".join(builtin_sentences()[:count])
        return list(parse_book(source, max_chars=max_chars).segments)[:count]
    segments = [s for s in load_book(book, max_chars=max_chars).segments if s.kind != "heading"]
    segments = [s for s in segments if len(s.spoken.split()) >= 3]
    if len(segments) < 2:
        raise UserError(
            f"{book} has fewer than 2 sentences of 3 words or more to calibrate on: "
            "give a longer book, or leave BOOK out to use the built-in sentences"
        )
    return segments[:count]


def calibrate(
    book: Path | None,
    out: Path,
    config: RenderConfig,
    options: CalibrateOptions | None = None,
    *,
    on_stage: Callable[[str], None] | None = None,
) -> CalibrationResult:
    """Run the whole calibration (see the module docstring) and write its files into ``out``."""
    options = options or CalibrateOptions()
    say = on_stage or (lambda _: None)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a folder: choose a folder path")
    started = time.perf_counter()
    seconds: dict[str, float] = {}
    segments = _segments(book, options.sentences, config.max_chars)

    say("loading generator and verifiers")
    mark = time.perf_counter()
    generator = load_generator(config.generator)
    verifiers = load_verifiers(config.verifiers)
    seconds["load"] = time.perf_counter() - mark
    utterances = plan_utterances(
        segments, generator, base_seed=config.seed, voice=config.generator.voice
    )

    say(f"generating {len(utterances)} x {options.candidates} clean candidates")
    mark = time.perf_counter()
    requests = [
        SynthesisRequest(
            u.key, k, candidate_seed(u.key, k), u.segment.spoken, u.voice, u.segment.emotion
        )  # fmt: skip
        for u in utterances
        for k in range(options.candidates)
    ]
    clean_audio = _sample(generator, requests)
    cases = [
        Case(
            i // options.candidates, "clean", i % options.candidates, "", c.audio, c.sample_rate
        )  # fmt: skip
        for i, c in enumerate(clean_audio)
    ]
    seconds["generate_clean"] = time.perf_counter() - mark

    say(f"injecting faults: {', '.join(options.kinds)}")
    mark = time.perf_counter()
    faulted, skipped = _inject(utterances, cases, options, generator, config.seed)
    cases.extend(faulted)
    seconds["inject"] = time.perf_counter() - mark

    say(f"scoring {len(cases)} clips")
    mark = time.perf_counter()
    cases = _score(cases, utterances, verifiers, say)
    seconds["verify"] = time.perf_counter() - mark

    say("analysing")
    mark = time.perf_counter()
    data = _analyse(cases, options, config.selection, len(utterances))
    data["generator"] = {
        "name": config.generator.name,
        "voice": config.generator.voice,
        "identity": dict(generator.identity()),
    }
    data["verifiers"] = {k: dict(v) for k, v in verifiers.status.items()}
    data["utterances"] = len(utterances)
    data["candidates_per_utterance"] = options.candidates
    data["input"] = str(book) if book else "built-in Harvard sentences"
    data["skipped_faults"] = skipped
    data["options"] = {k: list(v) if isinstance(v, tuple) else v
                       for k, v in asdict(options).items()}  # fmt: skip
    seconds["analyse"] = time.perf_counter() - mark

    from verified_tts.output.calibrate_report import write_calibration, write_examples

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(
            f"cannot create the output folder {out} ({error.strerror}): choose a writable --out"
        ) from error
    data["examples"] = write_examples(out, cases, utterances, data)
    data["cases"] = [
        {"utterance": c.utterance, "kind": c.kind, "source": c.source,
         "description": c.description, "metrics": c.metrics, "heard": c.transcript}
        for c in cases
    ]  # fmt: skip
    seconds["total"] = time.perf_counter() - started
    data["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    json_path, html_path, gates_path = write_calibration(out, data, gates_toml(data))
    return CalibrationResult(out, json_path, html_path, gates_path, data)


def reanalyse(
    data: Mapping[str, Any], current: SelectionPolicy, options: CalibrateOptions | None = None
) -> dict[str, Any]:
    """The analysis of an earlier run's scored cases (``calibrate.json`` keeps them) under
    other current gates or another target, without generating or scoring anything again."""
    options = options or CalibrateOptions(kinds=tuple(f["kind"] for f in data["faults"]))
    cases = [
        Case(
            c["utterance"],
            c["kind"],
            c["source"],
            c["description"],
            np.zeros(0, np.float32),
            0,
            {k: (math.nan if v is None else float(v)) for k, v in c["metrics"].items()},
            c.get("heard"),
        )  # fmt: skip
        for c in data["cases"]
    ]
    return _analyse(cases, options, current, int(data["utterances"]))


def _sample(generator: Any, requests: Sequence[SynthesisRequest]) -> list[Any]:
    out: list[Any] = []
    for start in range(0, len(requests), _CHUNK):  # an engine gets a chunk in flight at once
        out.extend(generator.sample(requests[start : start + _CHUNK]))
    return out


def _inject(
    utterances: Sequence[Any],
    clean: Sequence[Case],
    options: CalibrateOptions,
    generator: Any,
    seed: int,
) -> tuple[list[Case], dict[str, int]]:
    """One faulted copy of every kind per utterance, from a clean candidate that changes with
    the kind so that no single candidate carries every fault."""
    per = options.candidates
    pool_words: set[str] = set()
    for u in utterances:
        words = u.segment.spoken.split()
        pool_words.update(words[i].strip(".,;:!?\"'").lower() for i in content_words(words))
    pool = sorted(pool_words)
    faulted: list[Case] = []
    text_requests: list[tuple[Case, SynthesisRequest]] = []
    skipped: dict[str, int] = {}
    for i, utterance in enumerate(utterances):
        for kind_index, kind in enumerate(options.kinds):
            rng = np.random.default_rng([seed, i, FAULT_KINDS.index(kind)])
            source = (i + kind_index) % per
            base = clean[i * per + source]
            try:
                if kind in TEXT_FAULTS:
                    others = [w for w in pool if w not in utterance.segment.spoken.lower()]
                    fault = text_fault(kind, utterance.segment.spoken, rng, others)
                    request = SynthesisRequest(
                        f"{utterance.key}:{kind}", source, candidate_seed(utterance.key, source),
                        fault.text, utterance.voice, utterance.segment.emotion,
                    )  # fmt: skip
                    case = Case(i, kind, source, fault.description, np.zeros(0, np.float32))
                    text_requests.append((case, request))
                else:
                    other = clean[((i + 1) % len(utterances)) * per + source].audio
                    made = audio_fault(kind, base.audio, base.sample_rate, rng, other)
                    faulted.append(
                        Case(i, kind, source, made.description, made.audio, base.sample_rate)
                    )
            except ValueError:  # a sentence too short for this fault
                skipped[kind] = skipped.get(kind, 0) + 1
    made = _sample(generator, [r for _, r in text_requests])
    for (case, _), candidate in zip(text_requests, made, strict=True):
        faulted.append(
            Case(
                case.utterance,
                case.kind,
                case.source,
                case.description,
                candidate.audio,
                candidate.sample_rate,
            )  # fmt: skip
        )
    faulted.sort(key=lambda c: (c.utterance, FAULT_KINDS.index(c.kind)))
    return faulted, skipped


def _score(
    cases: Sequence[Case], utterances: Sequence[Any], verifiers: Any, say: Callable[[str], None]
) -> list[Case]:
    """Every verifier over every clip in chunks; the speaker metric against the reference."""
    scored: list[Case] = []
    embeddings: list[np.ndarray | None] = []
    for start in range(0, len(cases), _CHUNK):
        chunk = cases[start : start + _CHUNK]
        clips = [
            Clip(
                audio=c.audio,
                sample_rate=c.sample_rate,
                text=utterances[c.utterance].segment.text,
                spoken=utterances[c.utterance].segment.spoken,
                emotion=utterances[c.utterance].segment.emotion,
            )
            for c in chunk
        ]
        metrics: list[dict[str, float]] = [{} for _ in chunk]
        details: list[dict[str, Any]] = [{} for _ in chunk]
        chunk_embeddings: list[np.ndarray | None] = [None] * len(chunk)
        for verifier in verifiers.active:
            for j, score in enumerate(verifier.score(clips)):
                metrics[j].update({k: float(v) for k, v in score.metrics.items()})
                details[j].update(score.detail)
                if score.embedding is not None:
                    chunk_embeddings[j] = np.asarray(score.embedding, dtype=np.float64)
        for case, m, d in zip(chunk, metrics, details, strict=True):
            scored.append(
                Case(
                    case.utterance,
                    case.kind,
                    case.source,
                    case.description,
                    case.audio,
                    case.sample_rate,
                    m,
                    d.get("transcript"),
                )  # fmt: skip
            )
        embeddings.extend(chunk_embeddings)
        say(f"scored {min(start + _CHUNK, len(cases))} of {len(cases)} clips")
    clean = [
        e for c, e in zip(scored, embeddings, strict=True) if c.kind == "clean" and e is not None
    ]
    if clean:
        reference = np.mean(clean, axis=0)
        reference /= np.linalg.norm(reference) or 1.0
        for case, embedding in zip(scored, embeddings, strict=True):
            if embedding is not None:  # both unit vectors: the dot product is the cosine
                case.metrics["speaker"] = float(np.dot(reference, embedding))
    return scored


def _matrix(cases: Sequence[Case], names: Sequence[str]) -> dict[str, np.ndarray]:
    return {
        name: np.array([c.metrics.get(name, math.nan) for c in cases], dtype=np.float64)
        for name in names
    }


def _rejected(cases: Sequence[Case], policy: SelectionPolicy) -> np.ndarray:
    return np.array([not judge(c.metrics, policy).passed for c in cases], dtype=bool)


def _gate_flags(gate: Gate, cases: Sequence[Case]) -> np.ndarray:
    out = []
    for c in cases:
        verdict = gate.check(c.metrics)
        out.append(verdict is not None and not verdict[0])
    return np.array(out, dtype=bool)


def _share(mask: np.ndarray) -> float:
    return float(mask.mean()) if mask.size else math.nan


def _analyse(
    cases: Sequence[Case], options: CalibrateOptions, current: SelectionPolicy, n_utt: int
) -> dict[str, Any]:
    target = options.false_alarm
    clean = [c for c in cases if c.kind == "clean"]
    by_kind = {k: [c for c in cases if c.kind == k] for k in options.kinds}
    by_kind = {k: v for k, v in by_kind.items() if v}
    names = sorted({s.metric for s in (*CALIBRATED_SIDES, *FIXED_SIDES)})
    reported = [
        s for s in (*CALIBRATED_SIDES, *FIXED_SIDES) if any(s.metric in c.metrics for c in clean)
    ]
    sides = [s for s in reported if s in CALIBRATED_SIDES]
    clean_m = _matrix(clean, names)
    fault_m = {k: _matrix(v, names) for k, v in by_kind.items()}
    current_gates = {g.metric: g for g in current.gates}
    fixed = _fixed(current)

    rec = recommend(clean_m, fault_m, sides, target, fixed=fixed)
    calibrated = [s.metric for s in sides]
    policy = recommended_policy(current, rec.thresholds, sorted(set(calibrated)), clean_m)
    held_out = _held_out(clean, by_kind, sides, names, target, current)

    metric_rows = []
    for side in reported:
        bound = threshold_at(side, clean_m[side.metric], target)
        gate = current_gates.get(side.metric)
        gate_bound = None if gate is None else (gate.max if side.bound == "max" else gate.min)
        metric_rows.append(
            {
                "metric": side.metric,
                "bound": side.bound,
                "label": side.label,
                "current_gate": gate_bound,
                "false_alarm_current": _share(flags(side, clean_m[side.metric], gate_bound))
                if gate_bound is not None
                else None,
                "threshold_at_target": bound,
                "false_alarm_at_threshold": _share(flags(side, clean_m[side.metric], bound)),
                "clean_median": float(np.nanmedian(clean_m[side.metric])),
            }
        )

    clean_current = _rejected(clean, current)
    clean_recommended = _rejected(clean, policy)
    faults = []
    roc: dict[str, list[dict[str, Any]]] = {}
    for kind, group in by_kind.items():
        per_metric = []
        for side in reported:
            values = fault_m[kind][side.metric]
            bound = threshold_at(side, clean_m[side.metric], target)
            gate = current_gates.get(side.metric)
            gate_bound = None if gate is None else (gate.max if side.bound == "max" else gate.min)
            per_metric.append(
                {
                    "metric": side.metric,
                    "bound": side.bound,
                    "auc": auc(side, clean_m[side.metric], values),
                    "threshold": bound,
                    "recall_at_threshold": _share(flags(side, values, bound)),
                    "recall_current_gate": _share(flags(side, values, gate_bound))
                    if gate_bound is not None
                    else None,
                }
            )
        ranked = sorted(
            (m for m in per_metric if not math.isnan(m["auc"])),
            key=lambda m: (-m["auc"], -m["recall_at_threshold"]),
        )
        best = ranked[0] if ranked else None
        roc[kind] = [
            {
                "label": f"{m['metric']} {'high' if m['bound'] == 'max' else 'low'}",
                "points": roc_points(
                    Side(m["metric"], m["bound"]), clean_m[m["metric"]], fault_m[kind][m["metric"]]
                ),
            }
            for m in ranked[:3]
        ]
        faults.append(
            {
                "kind": kind,
                "cases": len(group),
                "recall": _share(_rejected(group, current)),
                "recall_at_target": _share(_rejected(group, policy)),
                "held_out_recall": held_out["recall"].get(kind),
                "goal": GOALS.get(kind),
                "auc": best["auc"] if best else None,
                "best_metric": f"{best['metric']} ({best['bound']})" if best else None,
                "metrics": per_metric,
            }
        )
    selection = _simulate(cases, options, current, policy, n_utt)
    return {
        "false_alarm_target": target,
        "clean": {
            "cases": len(clean),
            "false_alarm": _share(clean_current),
            "false_alarm_recommended": _share(clean_recommended),
            "held_out_false_alarm": held_out["false_alarm"],
        },
        "faults": faults,
        "metrics": metric_rows,
        "gates": {
            "current": [asdict(g) for g in current.gates],
            "recommended": [asdict(g) for g in policy.gates],
            "calibrated_metrics": sorted(set(calibrated)),
        },
        "selection": selection,
        "roc": roc,
        "goals": _goals(faults, selection, _share(clean_recommended), target),
    }


def _fixed(current: SelectionPolicy) -> dict[Side, float]:
    """The configured bounds of the fixed sides (those the config gates at all)."""
    gates = {g.metric: g for g in current.gates}
    out = {}
    for side in FIXED_SIDES:
        gate = gates.get(side.metric)
        bound = None if gate is None else (gate.max if side.bound == "max" else gate.min)
        if bound is not None:
            out[side] = float(bound)
    return out


def _held_out(
    clean: Sequence[Case],
    by_kind: Mapping[str, Sequence[Case]],
    sides: Sequence[Side],
    names: Sequence[str],
    target: float,
    current: SelectionPolicy,
) -> dict[str, Any]:
    """Two folds by utterance parity: gates fitted on one half, measured on the other."""
    false_alarms, recalls = [], {k: [] for k in by_kind}
    for fold in (0, 1):

        def part(group: Sequence[Case], same: bool, fold: int = fold) -> list[Case]:
            return [c for c in group if (c.utterance % 2 == fold) == same]

        fit_clean = _matrix(part(clean, True), names)
        fit_faults = {k: _matrix(part(v, True), names) for k, v in by_kind.items()}
        fitted = recommend(fit_clean, fit_faults, sides, target, fixed=_fixed(current))
        policy = recommended_policy(current, fitted.thresholds, sorted({s.metric for s in sides}),
                                    fit_clean)  # fmt: skip
        false_alarms.append(_share(_rejected(part(clean, False), policy)))
        for k, v in by_kind.items():
            recalls[k].append(_share(_rejected(part(v, False), policy)))
    return {
        "false_alarm": float(np.nanmean(false_alarms)),
        "recall": {k: float(np.nanmean(v)) for k, v in recalls.items() if v},
    }


def _simulate(
    cases: Sequence[Case],
    options: CalibrateOptions,
    current: SelectionPolicy,
    recommended: SelectionPolicy,
    n_utt: int,
) -> list[dict[str, Any]]:
    rows = []
    for name, policy in (("current", current), ("recommended", recommended)):
        clean: list[list[Any]] = [[] for _ in range(n_utt)]
        bad: list[list[Any]] = [[] for _ in range(n_utt)]
        for c in cases:
            (clean if c.kind == "clean" else bad)[c.utterance].append(judge(c.metrics, policy))
        keep = [i for i in range(n_utt) if bad[i]]
        for p in options.fault_rates:
            for n in options.ns:
                point = faulted_winner_share(
                    [clean[i] for i in keep],
                    [bad[i] for i in keep],
                    p=p,
                    n=n,
                    trials=options.trials,
                    rng=np.random.default_rng([int(p * 1000), n]),
                )
                rows.append(
                    {
                        "p": p,
                        "n": n,
                        "gates": name,
                        "faulted_winners": point.faulted_winners,
                        "flagged": point.flagged,
                        "trials": point.trials,
                    }
                )
    return rows


def _goals(
    faults: Sequence[Mapping[str, Any]],
    selection: Sequence[Mapping[str, Any]],
    false_alarm: float,
    target: float,
) -> dict[str, Any]:
    out: dict[str, Any] = {"false_alarm": {"value": false_alarm, "goal": target,
                                           "met": false_alarm <= target + 1e-12}}  # fmt: skip
    for f in faults:
        if f["goal"] is not None:
            out[f["kind"]] = {"value": f["recall_at_target"], "goal": f["goal"],
                              "met": f["recall_at_target"] >= f["goal"]}  # fmt: skip
    point = next(
        (s for s in selection if s["gates"] == "recommended" and s["p"] == 0.3 and s["n"] == 4),
        None,
    )
    if point is not None:
        out["faulted_winners_p0.3_n4"] = {"value": point["faulted_winners"], "goal": 0.01,
                                          "met": point["faulted_winners"] <= 0.01}  # fmt: skip
    return out


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
    return "\n".join(lines) + "\n"
