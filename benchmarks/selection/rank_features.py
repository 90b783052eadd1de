"""Every take of every line with what the verifiers said of it and what the judge heard.

Input: a work folder of ``benchmarks/selection/judged_prose.py`` run with ``--pool N`` (the
render as a user runs it, and every line's first N takes scored in a fixed-N render; every take
of both judged by Whisper base, the judge that selection never uses). :func:`load_lines` reads
them back as :class:`Line` records: the render's own metrics and detail of each take (packed
tiny.en scoring: reference log-probabilities token by token, greedy transcript, WER; pace; speaker
similarity) beside the judge's WER and transcript. :func:`add_clip_scores` scores every take once
more with tiny.en alone in its own window (``packing = false``: beam-5 transcript, or greedy with
``beam=1``, and forced decoding of the reference with nothing before it), kept in a cache file
(``clip_scores.json`` in the work folder for beam 5), so a ranking can be tried on the per-clip
signals as well; the judge is never among the features a ranking reads.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks.common.judged_render import take_key

__all__ = ["Line", "Take", "add_clip_scores", "load_lines"]

CLIP_METRICS = ("wer", "asr_logprob", "asr_min_logprob", "asr_insertions", "asr_deletions")


@dataclass(frozen=True)
class Take:
    """One take: the render's metrics and detail, the judge's verdict, per-clip scores if made."""

    key: str
    audio: str  # relative to its render folder
    metrics: Mapping[str, float]
    detail: Mapping[str, Any]
    judge_wer: float
    judge_heard: str
    clip: Mapping[str, Any] = field(default_factory=dict)  # per-clip tiny.en metrics and detail


@dataclass(frozen=True)
class Line:
    """One line and its takes in seed order (take 0 is what an N=1 render keeps)."""

    key: str
    text: str
    spoken: str
    folder: str  # the render folder its audio paths are relative to
    takes: tuple[Take, ...]


def load_lines(work: Path, folders: str = "pool8-*", at_least: int = 8) -> list[Line]:
    """The lines of ``work``'s renders named ``folders`` (a glob: ``pool8-*`` the fixed-N pools,
    ``render*`` the renders as a user runs them) with at least ``at_least`` takes, every one of them
    heard by the judge."""
    from verified_tts.output.manifest import read_manifest

    cache = json.loads((work / "judged.json").read_text(encoding="utf-8"))["clips"]
    lines = []
    for folder in sorted(f for f in work.glob(folders) if (f / "manifest.json").is_file()):
        for u in read_manifest(folder).utterances:
            keys = [take_key(u, i) for i in range(len(u.candidates))]
            if len(keys) < at_least or any(k not in cache for k in keys):
                continue
            takes = tuple(
                Take(
                    key=k,
                    audio=c.audio or "",
                    metrics=dict(c.scores),
                    detail=dict(c.detail),
                    judge_wer=float(cache[k][0]),
                    judge_heard=str(cache[k][1]),
                )
                for k, c in zip(keys, u.candidates, strict=True)
            )
            lines.append(Line(u.key, u.text, u.spoken or u.text, str(folder), takes))
    return lines


def add_clip_scores(
    lines: Sequence[Line],
    cache: Path,
    batch: int = 32,
    *,
    beam: int = 5,
    only: Collection[str] | None = None,
) -> list[Line]:
    """``lines`` with every take's per-clip tiny.en scores at ``beam`` (scoring what ``cache``
    lacks); with ``only``, just the takes of those keys (the others' ``clip`` stays empty)."""
    from verified_tts.audio import read_audio
    from verified_tts.options.verifiers import WerOptions
    from verified_tts.storage.atomic import write_json_atomic
    from verifiers import Clip
    from verifiers.wer import load_wer_verifier

    known: dict[str, Any] = json.loads(cache.read_text(encoding="utf-8")) if cache.is_file() else {}
    missing = [
        (line, take)
        for line in lines
        for take in line.takes
        if take.key not in known and (only is None or take.key in only)
    ]
    if missing:
        verifier = load_wer_verifier(WerOptions(packing=False, beam_size=beam))
        for start in range(0, len(missing), batch):
            part = missing[start : start + batch]
            clips = []
            for line, take in part:
                audio, rate = read_audio(Path(line.folder) / take.audio, "take")
                clips.append(
                    Clip(audio=audio, sample_rate=rate, text=line.text, spoken=line.spoken)
                )
            for (_, take), score in zip(part, verifier.score(clips), strict=True):
                known[take.key] = {
                    "metrics": {k: float(v) for k, v in score.metrics.items()},
                    "detail": {
                        k: score.detail.get(k) for k in ("transcript", "tokens", "token_logprobs")
                    },
                }
            write_json_atomic(cache, known)
    return [
        replace(line, takes=tuple(replace(t, clip=known.get(t.key, {})) for t in line.takes))
        for line in lines
    ]
