"""Verification speed: per-clip against packed Whisper scoring, at equal selection quality.

Generates N candidates for Harvard sentences (the package's copy, benchmarks/common/harvard.py) with
the chosen generator, scores every candidate once with the signal and speaker verifiers, then with
each WER verifier setting below, one ``score`` call per window of utterances with all N candidates
in it (what a fixed-N render hands the verifier). For every setting it reports clips per second
(wall and CPU), where the time goes (Whisper encode / generate / align), the winners of the real
selection policy (N=2, 4, 8 fixed and N=8 adaptive replayed on the same scores) and how often they
agree with the per-clip baseline, beside two controls of the baseline's own stability (float32
instead of int8; every clip after 1 s of silence) and each winner's regret by the baseline's own
scores, and how far its ranking scores move from the baseline's within an utterance (beside the
baseline's own spread between candidates); for packed settings, the worst-token bound that rejects
as many candidates as the per-clip gate (how the packed gate was set). N=8 adaptive is also run
round by round as a render runs it (``n8_adaptive_rounds``): a packed score depends on the other
utterances of its round, so there the same candidate can score differently than in the fixed-N call
(``adaptive_rounds``); and one utterance per call, as a rerender scores (``scored_alone``). Whisper
base (``bundled:base``, never used by the verifiers) judges candidate 0 and every setting's N=8
winner: the A/B gain (judge WER of candidate 0 minus that of the winner) with a paired bootstrap 95
% interval, per setting and as the paired difference to the baseline. Finally it renders the first
sentences at N=1 and N=8 adaptive with each of --render-settings (fresh stores), for the real-time
factor, the CPU seconds, the stage seconds and how often an adaptive render picks the baseline's
winners. Writes benchmarks/results/verify_speed.json (or --out).

Usage: python -m benchmarks.speed.verify_speed [--generator espeak] [--first 600] [--sentences 64]
       [--n 8] [--settings baseline packed ...] [--render-sentences 32] [--skip-render]
       [--skip-judge] [--skip-rounds] [--render-settings baseline packed ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.harvard import sentences as harvard_sentences
from verified_tts.errors import UserError
from verified_tts.paired import paired_gain

ROOT = Path(__file__).resolve().parents[2]

# name -> [verifiers.wer] options. "baseline" is per-clip scoring with a beam-5 transcript (the
# default), against which packing is measured; spelled out so it stays so whatever the default.
PER_CLIP: Mapping[str, Any] = {"packing": False, "beam_size": 5}
PACKED: Mapping[str, Any] = {"packing": True, "beam_size": 5}
SETTINGS: Mapping[str, Mapping[str, Any]] = {
    "baseline": PER_CLIP,
    "packed": PACKED,
    "packed-greedy": {**PACKED, "beam_size": 1},
    "greedy": {**PER_CLIP, "beam_size": 1},
    "packed-int16": {**PACKED, "compute_type": "int16"},
    "packed-float32": {**PACKED, "compute_type": "float32"},
    "baseline-float32": {**PER_CLIP, "compute_type": "float32"},  # do winners flip by numerics?
    "baseline-shifted": PER_CLIP,  # ... or when every clip is heard 1 s later (LEADING_SILENCE_S)
    "baseline-1-thread": {**PER_CLIP, "cpu_threads": 1},
    "packed-1-thread": {**PACKED, "cpu_threads": 1},
}


# Settings that score each clip after this much silence: the per-clip scorer with its clips
# moved, which a scorer of the reading itself should barely notice.
LEADING_SILENCE_S: Mapping[str, float] = {"baseline-shifted": 1.0}


class _TimedModel:
    """Wraps the CTranslate2 Whisper model to sum the seconds of each call by method."""

    def __init__(self, model: Any, seconds: dict[str, float]) -> None:
        self._model, self._seconds = model, seconds

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._model, name)
        if name not in ("encode", "generate", "align"):
            return attribute

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return attribute(*args, **kwargs)
            finally:
                self._seconds[name] = self._seconds.get(name, 0.0) + time.perf_counter() - started

        return timed


def sentences(first: int, count: int) -> list[str]:
    return harvard_sentences(first, count)


def generate(generator_name: str, texts: Sequence[str], n: int) -> list[list[Any]]:
    from verified_tts.generators import GeneratorConfig, load_generator
    from verified_tts.generators.base import SynthesisRequest
    from verified_tts.storage.keys import candidate_seed

    generator = load_generator(GeneratorConfig(name=generator_name))
    requests = [
        SynthesisRequest(f"u{i}", k, candidate_seed(f"verify-speed:{text}", k), text)
        for i, text in enumerate(texts)
        for k in range(n)
    ]
    out = generator.sample(requests)
    return [out[i * n : (i + 1) * n] for i in range(len(texts))]


def base_metrics(texts: Sequence[str], candidates: Sequence[Sequence[Any]], window: int) -> dict:
    """Signal and speaker metrics of every candidate (the same for every WER setting)."""
    from verified_tts.selection.scoring import score_clips, unit_centroid
    from verified_tts.storage.results import RunStats
    from verifiers import Clip, SignalVerifier, load_speaker_verifier

    speaker = load_speaker_verifier()
    first = [
        Clip(c[0].audio, c[0].sample_rate, t)
        for t, c in zip(texts[:window], candidates[:window], strict=True)
    ]
    reference = unit_centroid(speaker.embed(first))
    signal = SignalVerifier()
    metrics: list[list[dict[str, float]]] = []
    started = time.perf_counter()
    timing = RunStats()
    for text, group in zip(texts, candidates, strict=True):
        clips = [
            Clip(c.audio, c.sample_rate, text, spoken=text, speaker_reference=reference)
            for c in group
        ]
        scores = score_clips([signal, speaker], clips, timer=timing.timer)
        metrics.append([dict(s.metrics) for s in scores])
    return {
        "metrics": metrics,
        "seconds": time.perf_counter() - started,
        "speaker_seconds": timing.seconds["speaker"],
        "reference": reference,
    }


def cached_score_setting(
    key: Mapping[str, Any],
    name: str,
    options: Mapping[str, Any],
    texts: Sequence[str],
    candidates: Sequence[Sequence[Any]],
    window: int,
) -> dict:
    """:func:`score_setting`, kept in benchmarks/work/verify_speed so a rerun that adds a setting
    does not pay again for the others. The key holds the inputs and the verifier's source code;
    a cached entry keeps the timings of the run that measured it and says so."""
    import hashlib

    lead = LEADING_SILENCE_S.get(name)
    shift = {"leading_silence_s": lead} if lead else {}
    sources = [ROOT / "verifiers" / f for f in ("wer.py", "wer_packed.py", "wer_packing.py",
                                                 "textnorm.py")]  # fmt: skip
    digest = hashlib.sha256(
        json.dumps(
            {**key, "count": len(texts), "options": dict(options), **shift}, sort_keys=True
        ).encode()
        + b"".join(path.read_bytes() for path in sources)
    ).hexdigest()[:16]
    path = ROOT / "benchmarks" / "work" / "verify_speed" / f"{name}-{digest}.json"
    if path.is_file():
        return {**json.loads(path.read_text()), "cached": True}
    scored = score_setting(name, options, texts, candidates, window)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scored))
    return scored


def heard(candidate: Any, lead: float) -> np.ndarray:
    """The candidate's audio as a setting's scorer hears it: after ``lead`` s of silence."""
    audio = np.asarray(candidate.audio, dtype=np.float32).reshape(-1)
    if not lead:
        return audio
    silence = np.zeros(round(lead * candidate.sample_rate), dtype=np.float32)
    return np.concatenate([silence, audio])


def score_setting(
    name: str,
    options: Mapping[str, Any],
    texts: Sequence[str],
    candidates: Sequence[Sequence[Any]],
    window: int,
) -> dict:
    """Score all candidates with one WER setting, one call per window of utterances."""
    from verifiers import Clip, WerOptions, load_wer_verifier

    verifier = load_wer_verifier(WerOptions(**options))
    seconds: dict[str, float] = {}
    calls = []
    lead = LEADING_SILENCE_S.get(name, 0.0)
    for start in range(0, len(texts), window):
        calls.append(
            [
                Clip(heard(c, lead), c.sample_rate, text)
                for text, group in zip(
                    texts[start : start + window], candidates[start : start + window], strict=True
                )
                for c in group
            ]
        )
    verifier.score(calls[0][: min(len(calls[0]), 16)])  # warm-up: first-call allocations
    verifier._model = _TimedModel(verifier._model, seconds)
    scores = []
    wall, cpu = time.perf_counter(), time.process_time()
    for clips in calls:
        scores.extend(verifier.score(clips))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(candidates[0])
    clips_total = len(scores)
    audio = sum(len(c.audio) / c.sample_rate for group in candidates for c in group)
    return {
        "setting": name,
        "options": dict(options),
        "identity": dict(verifier.identity()),
        "clips": clips_total,
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "clips_per_second": round(clips_total / wall, 3),
        "clips_per_cpu_second": round(clips_total / cpu, 3),
        "audio_seconds_per_second": round(audio / wall, 2),
        "whisper_seconds": {k: round(v, 2) for k, v in seconds.items()},
        "other_seconds": round(wall - sum(seconds.values()), 2),
        "mean_wer": round(statistics.fmean(s.metrics["wer"] for s in scores), 4),
        "mean_asr_logprob": round(
            statistics.fmean(s.metrics.get("asr_logprob", float("nan")) for s in scores), 4
        ),
        "_scores": [[dict(scores[i * n + k].metrics) for k in range(n)] for i in range(len(texts))],
        "_transcripts": [
            [str(scores[i * n + k].detail.get("transcript", "")) for k in range(n)]
            for i in range(len(texts))
        ],
    }


def winners(
    metrics: Sequence[Sequence[Mapping[str, float]]], n: int, packed: bool = False
) -> dict[str, list[int]]:
    """The shipped selection policy's winners (with the packed scorer's gates when ``packed``):
    fixed N=2,4,..,n and adaptive N=n (its own rounds and stop rule, replayed on the fixed-N
    scores)."""
    from verified_tts.selection.policy import (
        choose,
        default_policy,
        judge,
        round_targets,
        should_stop,
    )

    policy = default_policy(packed)
    out: dict[str, list[int]] = {}
    judged = [[judge(m, policy) for m in row] for row in metrics]
    k = 2
    while k <= n:
        out[f"n{k}"] = [choose(row[:k])[0] for row in judged]
        k *= 2
    adaptive, used = [], []
    for row in judged:
        for target in round_targets(n, policy):
            if target == n or should_stop(row[:target], n, policy):
                adaptive.append(choose(row[:target])[0])
                used.append(target)
                break
    out[f"n{n}_adaptive"] = adaptive
    out["_adaptive_candidates"] = used
    return out


def setting_scorer(name: str) -> tuple[Any, Any]:
    """The shipped selection policy for a setting's WER scorer (packed or per-clip gates), and
    that scorer loaded."""
    from verified_tts.selection.policy import default_policy
    from verifiers import WerOptions, load_wer_verifier

    options = SETTINGS[name]
    policy = default_policy(bool(options.get("packing")))
    return policy, load_wer_verifier(WerOptions(**options))


def adaptive_rounds(
    name: str,
    texts: Sequence[str],
    candidates: Sequence[Sequence[Any]],
    signal_and_speaker: Sequence[Sequence[Mapping[str, float]]],
    fixed: Sequence[Sequence[Mapping[str, float]]],
    window: int,
    n: int,
) -> dict:
    """N=8 adaptive as a render runs it: per window of utterances, one ``score`` call per round
    with only the candidates that round adds (verified_tts.pipeline's loop). A per-clip score
    depends on the clip alone, so its rounds must pick what the replay on the fixed-N scores
    picks; a packed score depends on which utterances share the window, and later rounds pack
    fewer of them, so the same candidate can score differently than in the fixed-N call."""
    from verified_tts.selection.policy import choose, judge, round_targets, should_stop
    from verifiers import Clip

    policy, verifier = setting_scorer(name)
    lead = LEADING_SILENCE_S.get(name, 0.0)
    chosen: dict[int, int] = {}
    used: list[int] = []
    changes: list[float] = []
    started = time.perf_counter()
    for start in range(0, len(texts), window):
        active = list(range(start, min(start + window, len(texts))))
        have: dict[int, list[Any]] = {i: [] for i in active}
        for target in round_targets(n, policy):
            if not active:
                break
            wanted = [(i, k) for i in active for k in range(len(have[i]), target)]
            clips = [
                Clip(heard(candidates[i][k], lead), candidates[i][k].sample_rate, texts[i])
                for i, k in wanted
            ]
            for (i, k), score in zip(wanted, verifier.score(clips), strict=True):
                merged = {**signal_and_speaker[i][k], **score.metrics}
                have[i].append(judge(merged, policy))
                changes.append(
                    have[i][-1].score
                    - judge({**signal_and_speaker[i][k], **fixed[i][k]}, policy).score
                )
            still = []
            for i in active:
                if target < n and not should_stop(have[i], n, policy):
                    still.append(i)
                else:
                    chosen[i] = choose(have[i])[0]
                    used.append(len(have[i]))
            active = still
    return {
        "winners": [chosen[i] for i in range(len(texts))],
        "seconds": round(time.perf_counter() - started, 2),
        "mean_candidates": round(statistics.fmean(used), 3),
        "score_change_vs_fixed_call": {
            "mean": round(statistics.fmean(changes), 4),
            "sd": round(statistics.pstdev(changes), 4),
            "max_abs": round(max(abs(c) for c in changes), 4),
        },
    }


def scored_alone(
    name: str,
    texts: Sequence[str],
    candidates: Sequence[Sequence[Any]],
    signal_and_speaker: Sequence[Sequence[Mapping[str, float]]],
    fixed: Sequence[Sequence[Mapping[str, float]]],
) -> dict:
    """Every other utterance's candidates scored in a call of their own, as a rerender scores
    one utterance (packed: each candidate alone in its window), against the same candidates'
    scores from the fixed-N call, where up to 7 other sentences shared each window."""
    from verified_tts.selection.policy import judge
    from verifiers import Clip

    policy, verifier = setting_scorer(name)
    score_changes, logprob_changes = [], []
    rejected = {"alone": 0, "fixed_call": 0}
    for i in range(0, len(texts), 2):
        clips = [Clip(c.audio, c.sample_rate, texts[i]) for c in candidates[i]]
        for k, score in enumerate(verifier.score(clips)):
            alone = judge({**signal_and_speaker[i][k], **score.metrics}, policy)
            with_others = judge({**signal_and_speaker[i][k], **fixed[i][k]}, policy)
            score_changes.append(alone.score - with_others.score)
            logprob_changes.append(score.metrics["asr_logprob"] - fixed[i][k]["asr_logprob"])
            rejected["alone"] += not alone.passed
            rejected["fixed_call"] += not with_others.passed
    return {
        "clips": len(score_changes),
        "score_change": {
            "mean": round(statistics.fmean(score_changes), 4),
            "sd": round(statistics.pstdev(score_changes), 4),
        },
        "asr_logprob_change_mean": round(statistics.fmean(logprob_changes), 4),
        "rejected": rejected,
    }


def score_noise(
    baseline_metrics: Sequence[Sequence[Mapping[str, float]]],
    metrics: Sequence[Sequence[Mapping[str, float]]],
    packed: bool,
) -> dict:
    """How far a setting's ranking scores move from the baseline's on the same candidates, within
    an utterance (a shift common to all candidates of an utterance changes no winner): the
    standard deviation of the score difference after removing each utterance's mean difference,
    beside the baseline's own spread of scores between candidates of an utterance."""
    from verified_tts.selection.policy import default_policy, judge

    reference = default_policy(packed_wer=False)
    policy = default_policy(packed)
    centred, spread = [], []
    for base_row, row in zip(baseline_metrics, metrics, strict=True):
        base_scores = [judge(m, reference).score for m in base_row]
        differences = [judge(m, policy).score - b for m, b in zip(row, base_scores, strict=True)]
        mean = statistics.fmean(differences)
        centred.extend(d - mean for d in differences)
        spread.append(statistics.pstdev(base_scores))
    return {
        "within_utterance_sd": round(statistics.pstdev(centred), 4),
        "baseline_within_utterance_spread": round(statistics.fmean(spread), 4),
    }


def repeatable_agreement(picks: Mapping[str, Mapping[str, list[int]]]) -> dict:
    """Winner agreement with the baseline, counted only on the utterances whose baseline winner
    survives a change of numerics alone (the same per-clip scoring in float32 instead of int8
    picks the same candidate): elsewhere the baseline's own choice is within its noise."""
    reference, control = picks["baseline"], picks["baseline-float32"]
    out: dict[str, Any] = {}
    for name, arms in picks.items():
        if name in ("baseline", "baseline-float32"):
            continue
        out[name] = {}
        for arm, chosen in arms.items():
            if arm.startswith("_"):
                continue
            kept = [
                i
                for i, (a, b) in enumerate(zip(reference[arm], control[arm], strict=True))
                if a == b
            ]
            same = sum(chosen[i] == reference[arm][i] for i in kept)
            out[name][arm] = {
                "utterances": len(kept),
                "agreement": round(same / len(kept), 4) if kept else None,
            }
    return out


def matched_min_logprob_bound(
    baseline_scores: Sequence[Sequence[Mapping[str, float]]],
    scores: Sequence[Sequence[Mapping[str, float]]],
) -> dict:
    """The asr_min_logprob bound at which a scorer rejects as many of these candidates as the
    per-clip scorer does at its shipped gate: halfway between the k-th and (k+1)-th lowest of the
    scorer's values, k the per-clip rejections (how PACKED_WER_GATES was set)."""
    from verified_tts.selection.policy import PER_CLIP_GATES

    bound = next(g.min for g in PER_CLIP_GATES if g.metric == "asr_min_logprob")
    reference = [m["asr_min_logprob"] for row in baseline_scores for m in row]
    values = sorted(m["asr_min_logprob"] for row in scores for m in row)
    k = sum(v < bound for v in reference)
    return {
        "per_clip_gate": bound,
        "per_clip_rejected": k,
        "candidates": len(reference),
        "matched_bound": round((values[k - 1] + values[k]) / 2, 3) if 0 < k < len(values) else None,
        "rejected_at_per_clip_gate": sum(v < bound for v in values),
    }


def winner_regret(
    baseline_metrics: Sequence[Sequence[Mapping[str, float]]],
    picks: Mapping[str, Mapping[str, list[int]]],
) -> dict:
    """How much worse each setting's winner is by the baseline's own scores: per utterance, the
    baseline score of the baseline's winner minus that of the setting's winner (0 where they
    agree), and how many of the setting's winners fail a baseline gate. Different winners that
    the baseline itself scores within a few hundredths are a near-tie, not a different choice."""
    from verified_tts.selection.policy import PER_CLIP_GATES, SelectionPolicy, judge

    policy = SelectionPolicy(gates=PER_CLIP_GATES)
    judged = [[judge(m, policy) for m in row] for row in baseline_metrics]
    reference = picks["baseline"]
    out: dict[str, Any] = {}
    for name, arms in picks.items():
        if name == "baseline":
            continue
        out[name] = {}
        for arm in ("n8", "n8_adaptive", "n8_adaptive_rounds"):
            if arm not in arms:
                continue
            regrets = [
                row[b].score - row[w].score
                for row, w, b in zip(judged, arms[arm], reference[arm], strict=True)
            ]
            out[name][arm] = {
                "mean": round(statistics.fmean(regrets), 4),
                "median": round(float(np.median(regrets)), 4),
                "p90": round(float(np.percentile(regrets, 90)), 4),
                "within_0.01": round(sum(r <= 0.01 for r in regrets) / len(regrets), 4),
                "within_0.03": round(sum(r <= 0.03 for r in regrets) / len(regrets), 4),
                "fail_baseline_gates": sum(
                    not row[w].passed for row, w in zip(judged, arms[arm], strict=True)
                ),
            }
    return out


def judge_gains(
    texts: Sequence[str],
    candidates: Sequence[Sequence[Any]],
    picks: Mapping[str, Mapping[str, list[int]]],
    judge_name: str,
) -> dict:
    """Judge WER of candidate 0 and of each setting's winners; gains with paired intervals."""
    from verified_tts.workflows.judge import load_judge
    from verifiers import Clip

    judge = load_judge(judge_name)
    wanted = sorted(
        {(i, 0) for i in range(len(texts))}
        | {
            (i, w)
            for arms in picks.values()
            for arm, ws in arms.items()
            if not arm.startswith("_")
            for i, w in enumerate(ws)
        }  # fmt: skip
    )
    started = time.perf_counter()
    judged: dict[tuple[int, int], float] = {}
    for start in range(0, len(wanted), 16):
        batch = wanted[start : start + 16]
        clips = [
            Clip(candidates[i][k].audio, candidates[i][k].sample_rate, texts[i]) for i, k in batch
        ]
        for key, (wer, _) in zip(batch, judge.transcribe(clips), strict=True):
            judged[key] = wer
    result: dict[str, Any] = {
        "judge": dict(judge.identity()),
        "clips_judged": len(wanted),
        "seconds": round(time.perf_counter() - started, 2),
        "candidate0_judge_wer": round(
            statistics.fmean(judged[(i, 0)] for i in range(len(texts))), 4
        ),
        "settings": {},
    }
    base = picks.get("baseline")
    for name, arms in picks.items():
        per_arm = {}
        for arm, ws in arms.items():
            if arm.startswith("_") or arm == "n2":
                continue
            gains = [judged[(i, 0)] - judged[(i, w)] for i, w in enumerate(ws)]
            entry = {
                "judge_wer": round(statistics.fmean(judged[(i, w)] for i, w in enumerate(ws)), 4),
                "gain_over_candidate0": paired_gain(gains).as_dict(),
            }
            if base is not None and name != "baseline":
                # paired difference of the two settings' winners: > 0 means this setting's
                # winners are better by the judge than the baseline's
                entry["gain_over_baseline"] = paired_gain(
                    [
                        judged[(i, b)] - judged[(i, w)]
                        for i, (w, b) in enumerate(zip(ws, base[arm], strict=True))
                    ]  # fmt: skip
                ).as_dict()
            per_arm[arm] = entry
        result["settings"][name] = per_arm
    return result


def render_runs(
    generator: str, texts: Sequence[str], work: Path, settings: Sequence[str]
) -> list[dict]:
    """Render the sentences at N=1 and N=8 adaptive with each WER setting, in fresh stores."""
    from verified_tts.config import build_config
    from verified_tts.workflows.render import render

    book = work / "book.md"
    book.write_text("# Harvard sentences\n\n" + "\n\n".join(texts) + "\n", encoding="utf-8")
    runs = []
    for setting in settings:
        for n, adaptive in ((1, False), (8, True)):
            suffix = "" if setting == "baseline" else f"-{setting}"
            name = f"n{n}{'-adaptive' if adaptive else ''}{suffix}"
            config = build_config(
                {"generator": {"name": generator}, "verifiers": {"wer": dict(SETTINGS[setting])}},
                candidates=n,
                adaptive=adaptive,
            )
            started, cpu_started = time.perf_counter(), time.process_time()
            render(book, work / name, config)
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu_started  # every thread of this process
            manifest = json.loads((work / name / "manifest.json").read_text())
            load = manifest["stats"]["seconds"].get("load", 0.0)
            speech = sum(u["candidates"][u["winner"]]["duration_s"] for u in manifest["utterances"])
            runs.append(
                {
                    "run": name,
                    "n": n,
                    "adaptive": adaptive,
                    "wer_setting": setting,
                    "wall_seconds": round(wall, 2),
                    "load_seconds": round(load, 2),
                    "speech_seconds": round(speech, 2),
                    "real_time_factor": round((wall - load) / speech, 4),
                    "cpu_seconds": round(cpu, 2),
                    "cpu_seconds_per_speech_second": round(cpu / speech, 4),
                    "candidates_generated": manifest["stats"]["candidates_generated"],
                    "seconds_per_stage": manifest["stats"]["seconds"],
                    "_winners": [u["winner"] for u in manifest["utterances"]],
                }
            )
    adaptive_winners = {r["wer_setting"]: r.pop("_winners") for r in runs if r["adaptive"]}
    for run in runs:
        run.pop("_winners", None)
    reference = adaptive_winners.get("baseline")
    if reference:
        runs.append(
            {
                "adaptive_render_winner_agreement_vs_baseline": {
                    setting: round(
                        sum(x == y for x, y in zip(chosen, reference, strict=True))
                        / len(reference),
                        4,
                    )
                    for setting, chosen in adaptive_winners.items()
                    if setting != "baseline"
                }
            }
        )
    return runs


def speaker_beside_whisper(texts: Sequence[str], candidates: Sequence[Sequence[Any]]) -> dict:
    """Speaker embedding of the first window's candidates after Whisper (packed) or beside it in
    a second thread: does running them together save wall time on these cores?"""
    from verifiers import Clip, WerOptions, load_speaker_verifier, load_wer_verifier

    wer = load_wer_verifier(WerOptions(packing=True))
    speaker = load_speaker_verifier()
    clips = [Clip(c.audio, c.sample_rate, t) for t, g in zip(texts, candidates, strict=True)
             for c in g]  # fmt: skip
    wer.score(clips[:8])
    speaker.embed(clips[:8])
    started = time.perf_counter()
    wer.score(clips)
    speaker.embed(clips)
    serial = time.perf_counter() - started
    started = time.perf_counter()
    thread = threading.Thread(target=speaker.embed, args=(clips,))
    thread.start()
    wer.score(clips)
    thread.join()
    beside = time.perf_counter() - started
    return {"clips": len(clips), "serial_seconds": round(serial, 2),
            "beside_seconds": round(beside, 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generator", default="espeak")
    parser.add_argument("--first", type=int, default=600, help="first Harvard line (0-based)")
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--window", type=int, default=16, help="utterances per score call")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument(
        "--subset-settings",
        nargs="*",
        default=["packed-float32", "baseline-1-thread", "packed-1-thread"],
        help="settings timed on the first window only (speed, not selection)",
    )
    parser.add_argument("--judge", default="bundled:base")
    parser.add_argument("--skip-judge", action="store_true")
    parser.add_argument("--render-sentences", type=int, default=32)
    parser.add_argument("--skip-render", action="store_true")
    parser.add_argument("--skip-rounds", action="store_true", help="no N=8 adaptive in rounds")
    parser.add_argument(
        "--alone-settings",
        nargs="*",
        default=["packed-greedy"],
        help="settings whose scores are also taken one utterance per call (a rerender's case)",
    )
    parser.add_argument(
        "--render-settings",
        nargs="+",
        choices=sorted(SETTINGS),
        default=["baseline", "packed", "packed-greedy"],
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/verify_speed.json")
    args = parser.parse_args()

    texts = sentences(args.first, args.sentences)
    started = time.perf_counter()
    candidates = generate(args.generator, texts, args.n)
    generate_seconds = time.perf_counter() - started
    base = base_metrics(texts, candidates, args.window)
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": os.getloadavg(),
        },  # fmt: skip
        "generator": args.generator,
        "harvard_lines": [args.first, args.first + args.sentences],
        "n": args.n,
        "window": args.window,
        "candidates": args.sentences * args.n,
        "generate_seconds": round(generate_seconds, 2),
        "signal_and_speaker_seconds": round(base["seconds"], 2),
        "speaker_seconds": round(base["speaker_seconds"], 2),
        "settings": [],
    }
    picks: dict[str, dict[str, list[int]]] = {}
    baseline_metrics: list[list[dict[str, float]]] = []
    baseline_scores: list[list[dict[str, float]]] = []
    subset = set(args.subset_settings)

    def save() -> None:  # after every step, so a failure late in the run keeps the figures
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")

    for name in args.settings:
        full = name not in subset
        count = len(texts) if full else args.window
        try:
            key = {"generator": args.generator, "first": args.first, "n": args.n,
                   "window": args.window}  # fmt: skip
            scored = cached_score_setting(
                key, name, SETTINGS[name], texts[:count], candidates[:count], args.window
            )
        except UserError as error:  # e.g. int16 on a CPU without int16 kernels
            results["settings"].append({"setting": name, "options": SETTINGS[name],
                                        "error": str(error)})  # fmt: skip
            print(f"{name}: {error}", flush=True)
            continue
        scored["sentences"] = count
        if full:
            merged = [
                [{**b, **w} for b, w in zip(brow, wrow, strict=True)]
                for brow, wrow in zip(base["metrics"], scored["_scores"], strict=True)
            ]
            packed = bool(SETTINGS[name].get("packing"))
            picks[name] = winners(merged, args.n, packed)
            if name == "baseline":
                baseline_metrics = merged
            else:
                scored["score_noise_vs_baseline"] = score_noise(baseline_metrics, merged, packed)
            if not args.skip_rounds:
                rounds = adaptive_rounds(
                    name, texts, candidates, base["metrics"], scored["_scores"], args.window, args.n
                )
                # the arm scored round by round as a render does; the others are replays
                chosen = picks[name][f"n{args.n}_adaptive_rounds"] = rounds.pop("winners")
                replayed = picks[name][f"n{args.n}_adaptive"]
                rounds["winner_agreement_with_replay"] = round(
                    sum(a == b for a, b in zip(chosen, replayed, strict=True)) / len(texts), 4
                )
                scored["adaptive_rounds"] = rounds
            if name in args.alone_settings:
                scored["scored_alone"] = scored_alone(
                    name, texts, candidates, base["metrics"], scored["_scores"]
                )
            scored["mean_candidates_adaptive"] = round(
                statistics.fmean(picks[name]["_adaptive_candidates"]), 3
            )
        if name == "baseline":
            baseline_scores = scored["_scores"]
        elif full and SETTINGS[name].get("packing") and baseline_scores:
            scored["packed_min_logprob_bound"] = matched_min_logprob_bound(
                baseline_scores, scored["_scores"]
            )
        scored.pop("_scores")
        scored.pop("_transcripts")
        results["settings"].append(scored)
        print(json.dumps(scored), flush=True)
        save()
    baseline = next((s for s in results["settings"] if s["setting"] == "baseline"), None)
    if baseline:
        for scored in results["settings"]:
            if "error" in scored:
                continue
            scored["speedup_vs_baseline"] = round(
                scored["clips_per_second"] / baseline["clips_per_second"], 3
            )
            scored["cpu_speedup_vs_baseline"] = round(
                scored["clips_per_cpu_second"] / baseline["clips_per_cpu_second"], 3
            )
    if "baseline" in picks:
        results["winner_agreement_vs_baseline"] = {
            name: {
                arm: round(
                    sum(a == b for a, b in zip(ws, picks["baseline"][arm], strict=True)) / len(ws),
                    4,
                )
                for arm, ws in arms.items()
                if not arm.startswith("_")
            }
            for name, arms in picks.items()
            if name != "baseline"
        }
        print(json.dumps(results["winner_agreement_vs_baseline"]), flush=True)
        if "baseline-float32" in picks:
            results["winner_agreement_where_baseline_repeats"] = repeatable_agreement(picks)
            print(json.dumps(results["winner_agreement_where_baseline_repeats"]), flush=True)
        results["winner_regret_by_baseline_scores"] = winner_regret(baseline_metrics, picks)
        print(json.dumps(results["winner_regret_by_baseline_scores"]), flush=True)
        save()
    if not args.skip_judge:
        results["judge"] = judge_gains(texts, candidates, picks, args.judge)
        print(json.dumps(results["judge"]), flush=True)
        save()
    results["speaker_beside_whisper"] = speaker_beside_whisper(
        texts[: args.window], candidates[: args.window]
    )
    save()
    if not args.skip_render:
        with tempfile.TemporaryDirectory() as work:
            results["renders"] = render_runs(
                args.generator, texts[: args.render_sentences], Path(work), args.render_settings
            )
        results["render_sentences"] = args.render_sentences
    results["wall_seconds"] = round(time.perf_counter() - started, 1)
    results["load_average_at_end"] = os.getloadavg()
    save()
    print(json.dumps({k: v for k, v in results.items() if k != "settings"}, indent=2))


if __name__ == "__main__":
    main()
