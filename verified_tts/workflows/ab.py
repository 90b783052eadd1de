"""A/B of N from one run: render once at N=max (fixed N), then read every smaller arm out of it.

Candidate k's seed depends only on (utterance key, k), and the selection policy is pure, so the
winner of an N=k render is ``choose(judgements[:k])`` over the first k candidates of the N=max
run: :func:`ab` renders once through :func:`verified_tts.workflows.render.render` (adaptive
stopping off, all candidates' audio kept, the usual ``manifest.json`` in the output folder),
replays the policy on every prefix (:func:`arm_winners`), and writes ``ab.json`` (per-arm quality
and cost, per-utterance winners and scores) and ``ab.html``. Because the verifier that ranks the
candidates also grades the winners, a gain it reports can be its own noise being selected;
``judge_asr`` names a second ASR model that the verifiers never used (see
:mod:`verified_tts.workflows.judge`), which re-transcribes every arm's winners once, in batches,
so each arm gets an independent WER beside the verifier's, and every arm after the first the paired
bootstrap interval of its judge WER minus the first arm's, per utterance
(:func:`~verified_tts.workflows.ab_arms.versus_first`). Two approximations are documented in
the output: an arm's speaker similarity is measured against the N=max run's voice centroid
(identical when ``--voice-ref`` is given), and its wall time is attributed from the measured
seconds per audio-second of generation and of verification.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options import RenderConfig, SelectionPolicy
from verified_tts.output.manifest import (
    CandidateRecord,
    Manifest,
    UtteranceRecord,
    as_candidate,
    as_manifest,
    read_manifest,
)
from verified_tts.output.run_manifest import one_take_voices
from verified_tts.pipeline import Synthesizer
from verified_tts.selection.consensus import judge_all
from verified_tts.selection.policy import choose
from verified_tts.storage.atomic import write_json_atomic
from verified_tts.storage.results import UtteranceResult
from verified_tts.workflows.ab_arms import judge_winners, mean, prepare_judge, versus_first
from verified_tts.workflows.judge import Judge, JudgeOptions
from verified_tts.workflows.render import render

__all__ = [
    "ABResult",
    "Arm",
    "ab",
    "arm_winners",
    "build_arms",
]

AB_FORMAT = "verified-tts ab 1"

COST_ATTRIBUTION = (
    "wall_seconds of arm N=k = generate_seconds_per_audio_second * audio_seconds_generated(k) + "
    "verify_seconds_per_audio_second * audio_seconds_verified(k), with both rates measured on "
    "this run (all verifiers together) and the audio seconds summed over each utterance's first "
    "k candidates; model loading and assembly are the same for every arm and reported apart as "
    "overhead_seconds"
)


@dataclass(frozen=True)
class Arm:
    """One N of the comparison: its winners' quality and what it would have cost."""

    n: int
    utterances: int
    wer: float | None  # mean verifier WER of the winners
    wer_median: float | None
    share_wer_zero: float | None
    asr_logprob: float | None
    speaker_similarity: float | None
    emotion: float | None  # None when the emotion verifier was not active
    flagged: int
    changed_from_n1: int  # utterances whose winner is not candidate 0
    candidates: int
    audio_seconds_generated: float
    audio_seconds_verified: float
    wall_seconds: float | None
    judge_wer: float | None = None
    judge_wer_median: float | None = None
    judge_share_wer_zero: float | None = None
    # judge WER minus the first arm's, per utterance: (mean, 95 % paired interval low, high)
    judge_wer_vs_first: tuple[float, float, float] | None = None
    # the judge WER of the take the judge itself hears best among each utterance's first k: the
    # ceiling of this arm's candidates, whatever the verifiers pick (with every take judged)
    judge_wer_oracle: float | None = None


@dataclass(frozen=True)
class ABResult:
    """What :func:`ab` wrote, plus the arms for printing."""

    out_dir: Path
    ab_json: Path
    ab_html: Path
    arms: tuple[Arm, ...]
    judge: str | None


def arm_winners(
    candidates: Sequence[CandidateRecord | Mapping[str, Any]], policy: SelectionPolicy, k: int
) -> tuple[int, bool]:
    """(winner, flagged) of an N=k render: the policy applied to the first k candidates."""
    if k < 1 or k > len(candidates):
        raise ValueError(f"arm N={k} needs {k} candidates, the run holds {len(candidates)}")
    first = [as_candidate(c) for c in candidates[:k]]
    # the first k takes compared with each other, as an N=k render compares them
    return choose(judge_all([(c.scores, c.detail) for c in first], policy))


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def _share_zero(values: Sequence[float]) -> float | None:
    return round(sum(v == 0 for v in values) / len(values), 4) if values else None


def _metric_mean(winners: Sequence[CandidateRecord], name: str) -> float | None:
    return mean([v for c in winners if (v := c.metric(name)) is not None])


def _cost_rates(stats: Mapping[str, Any]) -> dict[str, float] | None:
    """Seconds of compute per audio-second generated and verified, as measured by this run."""
    seconds = stats.get("seconds", {})
    generated = float(stats.get("audio_seconds_generated") or 0.0)
    verified = float(stats.get("audio_seconds_verified") or 0.0)
    if generated <= 0 or verified <= 0:
        return None  # nothing ran here (a finished store was reused): no fresh measurement
    verify = sum(v for stage, v in seconds.items() if stage.startswith("verify:"))
    return {
        "generate_seconds_per_audio_second": round(
            float(seconds.get("generate", 0.0)) / generated, 6
        ),  # fmt: skip
        "verify_seconds_per_audio_second": round(verify / verified, 6),
    }


# one arm's pick for one utterance: the utterance, its winner's index, flagged
_Pick = tuple[UtteranceRecord, int, bool]
_Judged = Mapping[tuple[str, int], tuple[float, str]]


def build_arms(
    manifest: Manifest | Mapping[str, Any],
    ns: Sequence[int],
    policy: SelectionPolicy,
    *,
    rates: Mapping[str, float] | None = None,
    judged: _Judged | None = None,
) -> tuple[list[Arm], list[dict[str, Any]]]:
    """Arms and per-utterance rows from an N=max manifest; ``judged`` maps (utterance key,
    candidate index) to the judge's (WER, transcript)."""
    manifest = as_manifest(manifest)
    emotion_active = bool(manifest.verifiers.get("emotion", {}).get("available"))
    rows: list[dict[str, Any]] = []
    per_arm: dict[int, list[_Pick]] = {k: [] for k in ns}
    # a voice whose takes differ only in noise was given one take a line (one of each reading):
    # every arm keeps what it has
    one_take = set(one_take_voices(manifest.voices))
    for utterance in manifest.utterances:
        has = len(utterance.candidates) if utterance.spoken_by in one_take else None
        picks = {
            k: (utterance, *arm_winners(utterance.candidates, policy, min(k, has or k))) for k in ns
        }
        for k in ns:
            per_arm[k].append(picks[k])
        rows.append(_utterance_row(utterance, picks, judged))
    arms = [_arm(k, per_arm[k], emotion_active, rates, judged) for k in ns]
    if judged is not None:
        judge_wers = [_judge_wers(per_arm[k], judged) for k in ns]
        arms = [
            replace(
                arm,
                judge_wer_vs_first=interval,
                judge_wer_oracle=_oracle(per_arm[arm.n], arm.n, judged),
            )
            for arm, interval in zip(arms, versus_first(judge_wers), strict=True)
        ]
    return arms, rows


def _oracle(picks: Sequence[_Pick], k: int, judged: _Judged) -> float | None:
    """Mean over utterances of the lowest judge WER among the first ``k`` takes; None unless
    every one of them was judged."""
    best = []
    for utterance, _, _ in picks:
        wers = [judged.get((utterance.key, i)) for i in range(min(k, len(utterance.candidates)))]
        if any(w is None for w in wers):
            return None
        best.append(min(w[0] for w in wers if w is not None))
    return mean(best)


def _judge_wers(picks: Sequence[_Pick], judged: _Judged) -> list[float]:
    """The judge's WER of each utterance's winner in this arm, in utterance order."""
    return [judged[(u.key, w)][0] for u, w, _ in picks if (u.key, w) in judged]


def _utterance_row(
    utterance: UtteranceRecord, picks: Mapping[int, _Pick], judged: _Judged | None
) -> dict[str, Any]:
    """Each arm's winner of one utterance, its scores and the gain of the largest arm."""
    row: dict[str, Any] = {
        "key": utterance.key,
        "chapter": utterance.chapter,
        "text": utterance.text,
        "arms": {},
    }
    for k, (_, winner, flagged) in picks.items():
        chosen = utterance.candidates[winner]
        entry: dict[str, Any] = {
            "winner": winner,
            "flagged": flagged,
            "score": chosen.score,
            "scores": dict(chosen.scores),
            "audio": chosen.audio,
        }
        if judged is not None and (utterance.key, winner) in judged:
            entry["judge_wer"], entry["judge_transcript"] = judged[(utterance.key, winner)]
        row["arms"][str(k)] = entry
    takes = [(judged or {}).get((utterance.key, i)) for i in range(len(utterance.candidates))]
    if judged is not None and all(t is not None for t in takes):
        row["judge_wer_of_takes"] = [t[0] for t in takes if t is not None]
    low, high = row["arms"][str(min(picks))], row["arms"][str(max(picks))]
    # gain = how much lower the largest arm's WER is than the smallest arm's (positive = better)
    row["gain_wer"] = _difference(low["scores"].get("wer"), high["scores"].get("wer"))
    row["gain_judge_wer"] = _difference(low.get("judge_wer"), high.get("judge_wer"))
    return row


def _arm(
    k: int,
    picks: Sequence[_Pick],
    emotion_active: bool,
    rates: Mapping[str, float] | None,
    judged: _Judged | None,
) -> Arm:
    """One arm's quality over its winners and the cost of its first k candidates."""
    winners = [u.candidates[w] for u, w, _ in picks]
    wers = [v for c in winners if (v := c.metric("wer")) is not None]
    audio = round(sum(c.duration_s for u, _, _ in picks for c in u.candidates[:k]), 3)
    judge_wers = _judge_wers(picks, judged) if judged is not None else []
    wall = None
    if rates is not None:
        wall = round(
            audio * rates["generate_seconds_per_audio_second"]
            + audio * rates["verify_seconds_per_audio_second"],
            3,
        )
    return Arm(
        n=k,
        utterances=len(picks),
        wer=mean(wers),
        wer_median=_median(wers),
        share_wer_zero=_share_zero(wers),
        asr_logprob=_metric_mean(winners, "asr_logprob"),
        speaker_similarity=_metric_mean(winners, "speaker"),
        emotion=_metric_mean(winners, "emotion") if emotion_active else None,
        flagged=sum(flagged for _, _, flagged in picks),
        changed_from_n1=sum(w != 0 for _, w, _ in picks),
        candidates=sum(min(k, len(u.candidates)) for u, _, _ in picks),
        audio_seconds_generated=audio,
        audio_seconds_verified=audio,  # a fixed-N run verifies every candidate it makes
        wall_seconds=wall,
        judge_wer=mean(judge_wers) if judged is not None else None,
        judge_wer_median=_median(judge_wers) if judged is not None else None,
        judge_share_wer_zero=_share_zero(judge_wers) if judged is not None else None,
    )


def _difference(before: float | None, after: float | None) -> float | None:
    if before is None or after is None:
        return None
    return round(float(before) - float(after), 4)


def _winners_to_judge(
    manifest: Manifest, ns: Sequence[int], policy: SelectionPolicy, every: bool = False
) -> dict[tuple[str, int], tuple[str, str]]:
    """Every distinct winner of every arm once (an unchanged winner is not judged twice), and
    with ``every`` every take, for the oracle: (utterance key, candidate index) -> (audio path,
    text)."""
    wanted: dict[tuple[str, int], tuple[str, str]] = {}
    for utterance in manifest.utterances:
        picks = [arm_winners(utterance.candidates, policy, k)[0] for k in ns]
        if every:
            picks += list(range(len(utterance.candidates)))
        for winner in picks:
            audio = utterance.candidates[winner].audio
            if audio is None:
                raise UserError(
                    f"candidate {winner} of utterance {utterance.key} has no audio in the "
                    "store: the A/B run keeps every candidate's audio (do not set keep = winners)"
                )
            wanted.setdefault((utterance.key, winner), (audio, utterance.text))
    return wanted


# ------------------------------------------------------------------------------------------------


def ab(
    book: str | os.PathLike,
    out_dir: str | os.PathLike,
    config: RenderConfig,
    ns: Sequence[int] = (1, 8),
    judge_asr: str | JudgeOptions | Judge | None = None,
    synthesizer: Synthesizer | None = None,
    *,
    oracle: bool = True,
    on_loading: Callable[[], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[UtteranceResult], None] | None = None,
    on_judge_start: Callable[[int], None] | None = None,
    on_judged: Callable[[int], None] | None = None,
) -> ABResult:
    """Render ``book`` once at N=max(ns) with fixed N, then score every arm; see the module doc.
    With a judge and ``oracle``, every take is judged, so each arm also has its oracle; a clip
    an earlier run into ``out_dir`` judged is not judged again."""
    ns = sorted({int(n) for n in ns})
    if not ns or ns[0] < 1:
        raise UserError("--n values must be at least 1, e.g. --n 1 --n 8")
    n_max = ns[-1]
    # the verifiers that will score: the given synthesizer's, else the config's
    verifier_tables = synthesizer.config.verifiers if synthesizer is not None else config.verifiers
    config = _fixed_n_config(config, n_max)
    if synthesizer is not None:
        synthesizer = synthesizer.variant(config)
    # loaded before the long render, so a bad model name fails in seconds, not after an hour
    judge_model = prepare_judge(judge_asr, verifier_tables)
    render(
        book,
        out_dir,
        config,
        synthesizer=synthesizer,
        on_loading=on_loading,
        on_start=on_start,
        on_result=on_result,
    )
    out = Path(out_dir)
    manifest = read_manifest(out)
    rates, rates_source = _measured_rates(manifest, out)
    judged = None
    judge_info = None
    if judge_model is not None:
        wanted = _winners_to_judge(manifest, ns, config.selection, every=oracle)
        judged, judge_info = judge_winners(
            judge_model, wanted, out, on_start=on_judge_start, on_judged=on_judged
        )
    arms, rows = build_arms(manifest, ns, config.selection, rates=rates, judged=judged)
    data = _ab_document(
        book, manifest, ns, arms, rows, judge_info, rates, rates_source if rates else None
    )
    write_json_atomic(out / "ab.json", data)
    from verified_tts.output.ab_report import write_ab_report  # HTML stays out of the numeric path

    html = write_ab_report(out, data)
    judge_label = judge_info["model"] if judge_info else None
    return ABResult(out, out / "ab.json", html, tuple(arms), judge_label)


def _fixed_n_config(config: RenderConfig, n_max: int) -> RenderConfig:
    """Fixed N: adaptive stopping would leave some utterances with fewer than N candidates, and
    the larger arms would silently be smaller ones. Every candidate's audio is kept for the
    judge and the players."""
    return config.variant(candidates=n_max, adaptive=False, keep="all")


def _measured_rates(manifest: Manifest, out: Path) -> tuple[dict[str, float] | None, str]:
    """This run's cost rates, else (a rerun over a finished store measured nothing) those an
    earlier A/B run into this folder recorded; with where they came from."""
    rates = _cost_rates(manifest.stats)
    previous = out / "ab.json"
    if rates is None and previous.is_file():
        rates = json.loads(previous.read_text(encoding="utf-8")).get("cost", {}).get("rates")
        return rates, "an earlier run into this folder (this one reused the store)"
    return rates, "this run"


def _ab_document(
    book: str | os.PathLike,
    manifest: Manifest,
    ns: Sequence[int],
    arms: Sequence[Arm],
    rows: list[dict[str, Any]],
    judge_info: Mapping[str, Any] | None,
    rates: Mapping[str, float] | None,
    rates_source: str | None,
) -> dict[str, Any]:
    """``ab.json``: the arms, the per-utterance rows, the judge, the cost and its caveats."""
    n_max = max(ns)
    seconds = manifest.stats.get("seconds", {})
    return {
        "format": AB_FORMAT,
        "input": str(book),
        "manifest": "manifest.json",
        "report": "report.html",
        "ns": list(ns),
        "n_max": n_max,
        "generator": manifest.generator,
        "model": manifest.model,
        "verifiers": manifest.verifiers,
        "judge": judge_info,
        "cost": {
            "attribution": COST_ATTRIBUTION,
            "rates": rates,
            "rates_source": rates_source,
            "overhead_seconds": round(
                sum(v for s, v in seconds.items() if s in ("load", "assemble", "store")), 3
            ),
            "run_wall_seconds": manifest.stats.get("wall_seconds"),
        },
        "notes": [
            "arm N=k's winner is the selection policy applied to the first k candidates of the "
            f"N={n_max} run (fixed N, the same seeds an N=k render uses)",
            "speaker similarity of every arm is measured against the voice reference of the "
            f"N={n_max} run (identical to an N=k render when a --voice-ref is given)",
            "judge_wer_vs_first: mean per-utterance judge WER of this arm minus the first "
            "arm's, with a 95 % paired bootstrap interval (negative = this arm better)",
            "judge_wer_oracle: mean per-utterance judge WER of the take the judge hears best "
            "among the first k: what this arm's candidates hold, whoever picks",
        ],
        "arms": [asdict(arm) for arm in arms],
        "utterances": rows,
    }
