"""``manifest.json`` as typed records: one place that knows its keys, for writers and readers alike.

A render, a dub and a rerender all write the same manifest (format ``verified-tts manifest 1``):
the run's settings and stats, the chapter and book files, and per utterance every candidate with
its scores and verdicts. :class:`Manifest`, :class:`UtteranceRecord` and :class:`CandidateRecord`
are that file as frozen dataclasses; ``to_json()`` gives exactly the JSON the file has always
held (same keys, same order) and ``from_json()`` reads it back, so no module indexes the JSON by
hand. Keys a record does not know are kept in its ``extra`` and written back after the known ones,
so reading and rewriting a manifest from a newer version loses nothing. The manifest's candidate
keys (``scores``, ``failed_gates``) differ from the store's decision records (``metrics``,
``failed``, see :mod:`verified_tts.storage.results`): the manifest is the published format, the
store an internal one, and both stay as they are. The record of a finished run is made by
:mod:`verified_tts.output.run_manifest`. What a producer decided in ``verified-tts review`` is added
as ``review`` (per utterance, and a summary at the top); a manifest without a review has neither
key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verified_tts.errors import UserError
from verified_tts.storage.atomic import write_json_atomic
from verified_tts.storage.store import STORE_DIR

if TYPE_CHECKING:
    from verified_tts.storage.results import CandidateResult, UtteranceResult

__all__ = [
    "MANIFEST_FILE",
    "MANIFEST_FORMAT",
    "BookRecord",
    "CandidateRecord",
    "ChapterRecord",
    "Manifest",
    "RerenderMark",
    "UtteranceRecord",
    "as_candidate",
    "as_manifest",
    "read_manifest",
    "output_folders",
    "write_manifest",
]

MANIFEST_FORMAT = "verified-tts manifest 1"
MANIFEST_FILE = "manifest.json"


def _extra(data: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    names = set(known)
    return {k: v for k, v in data.items() if k not in names}


def _store_path(relative: str | None) -> str | None:
    """A store-relative audio path as the manifest names it: relative to the output folder."""
    return f"{STORE_DIR}/{relative}" if relative else None


@dataclass(frozen=True)
class CandidateRecord:
    """One candidate of an utterance: its seed, scores, verdict and (when kept) audio path."""

    index: int
    scores: Mapping[str, float]
    passed: bool
    score: float
    seed: int | None = None
    duration_s: float | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    failed_gates: tuple[str, ...] = ()
    info: Mapping[str, Any] = field(default_factory=dict)
    audio: str | None = None  # relative to the output folder; absent from JSON when not kept
    extra: Mapping[str, Any] = field(default_factory=dict)

    _KEYS = ("index", "seed", "duration_s", "scores", "detail", "passed", "failed_gates",
             "score", "info", "audio")  # fmt: skip

    @classmethod
    def from_result(cls, candidate: CandidateResult) -> CandidateRecord:
        return cls(
            index=candidate.index,
            seed=candidate.seed,
            duration_s=candidate.duration_s,
            scores=dict(candidate.metrics),
            detail=dict(candidate.detail),
            passed=candidate.passed,
            failed_gates=tuple(candidate.failed),
            score=round(candidate.score, 5),
            info=dict(candidate.info),
            audio=_store_path(candidate.audio),
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CandidateRecord:
        return cls(
            index=data["index"],
            seed=data.get("seed"),
            duration_s=data.get("duration_s"),
            scores=dict(data["scores"]),
            detail=dict(data.get("detail", {})),
            passed=data["passed"],
            failed_gates=tuple(data.get("failed_gates", ())),
            score=data["score"],
            info=dict(data.get("info", {})),
            audio=data.get("audio"),
            extra=_extra(data, cls._KEYS),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "seed": self.seed,
            "duration_s": self.duration_s,
            "scores": dict(self.scores),
            "detail": dict(self.detail),
            "passed": self.passed,
            "failed_gates": list(self.failed_gates),
            "score": self.score,
            "info": dict(self.info),
            **({"audio": self.audio} if self.audio else {}),
            **self.extra,
        }

    def metric(self, name: str) -> float | None:
        """A score as a float, or None when it was not scored (absent or NaN)."""
        value = self.scores.get(name)
        return None if value is None or value != value else float(value)


@dataclass(frozen=True)
class RerenderMark:
    """Set on an utterance that ``rerender`` gave more candidates: what it had before."""

    n: int
    previous_winner: int
    previous_flagged: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RerenderMark:
        return cls(int(data["n"]), data["previous_winner"], data["previous_flagged"])

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "previous_winner": self.previous_winner,
            "previous_flagged": self.previous_flagged,
        }


def _speaker_block(segment: Any) -> dict[str, Any] | None:
    """A dialogue segment's attribution as the record keeps it (None for other segments)."""
    if segment.kind != "dialogue" or segment.speaker_reason is None:
        return None
    block = {"name": segment.speaker, "why": segment.speaker_reason}
    if segment.speaker_confidence is not None:
        block["confidence"] = round(float(segment.speaker_confidence), 2)
    if segment.speaker_guess:
        block["guess"] = segment.speaker_guess
    return block


@dataclass(frozen=True)
class UtteranceRecord:
    """One utterance of the input: where it came from, its winner and every candidate."""

    key: str
    chapter: int
    text: str
    winner: int
    flagged: bool
    candidates: tuple[CandidateRecord, ...]
    paragraph: int | None = None
    line: int | None = None
    kind: str | None = None
    spoken: str | None = None
    voice: str | None = None
    spoken_by: str | None = None  # the catalogue name of the voice that spoke it (hibari:heart)
    emotion: str | None = None
    lexicon: tuple[str, ...] = ()  # lexicon entries applied to this sentence (absent when none)
    phonemes: tuple[tuple[str, str], ...] = ()  # (word, IPA) given to the generator (likewise)
    audio: str | None = None  # the winner's audio, relative to the output folder
    reused: bool = False
    rerendered: RerenderMark | None = None  # absent from JSON unless re-rendered
    # what a producer decided in `verified-tts review` (absent when nothing was)
    review: Mapping[str, Any] | None = None
    # what a listener would notice (verified_tts.selection.reasons: kind, text, word); absent when
    # none
    reasons: tuple[Mapping[str, Any], ...] = ()
    # who says a quote as the attribution found it (name or None, guess, confidence, why); absent
    # from narration and from books read without dialogue
    speaker: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _KEYS = ("key", "chapter", "paragraph", "line", "kind", "text", "spoken", "voice", "spoken_by",
             "emotion", "lexicon", "phonemes", "audio", "winner", "flagged", "reused", "candidates",
             "rerendered", "review", "reasons", "speaker")  # fmt: skip

    @property
    def winner_candidate(self) -> CandidateRecord:
        return self.candidates[self.winner]

    @classmethod
    def from_result(
        cls, result: UtteranceResult, bounds: Mapping[str, Mapping[str, float]] | None = None
    ) -> UtteranceRecord:
        """The record of a result; ``bounds`` (metric -> gate min/max) phrase its reasons."""
        from verified_tts.selection.reasons import utterance_reasons

        segment = result.utterance.segment
        reasons = utterance_reasons(
            [(c.metrics, c.detail, c.failed) for c in result.candidates],
            result.winner,
            result.flagged,
            text=segment.text,
            bounds=bounds,
        )
        return cls(
            key=result.utterance.key,
            chapter=segment.chapter,
            paragraph=segment.paragraph,
            line=segment.line,
            kind=segment.kind,
            text=segment.text,
            spoken=segment.spoken,
            voice=result.utterance.voice,
            emotion=segment.emotion,
            lexicon=tuple(segment.lexicon),
            phonemes=tuple((word, ipa) for word, ipa in segment.phonemes),
            audio=_store_path(result.winner_candidate.audio),
            winner=result.winner,
            flagged=result.flagged,
            reused=result.reused,
            candidates=tuple(CandidateRecord.from_result(c) for c in result.candidates),
            reasons=tuple(r.as_dict() for r in reasons),
            speaker=_speaker_block(segment),
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UtteranceRecord:
        mark = data.get("rerendered")
        return cls(
            key=data["key"],
            chapter=data["chapter"],
            paragraph=data.get("paragraph"),
            line=data.get("line"),
            kind=data.get("kind"),
            text=data["text"],
            spoken=data.get("spoken"),
            voice=data.get("voice"),
            spoken_by=data.get("spoken_by"),
            emotion=data.get("emotion"),
            lexicon=tuple(data.get("lexicon", ())),
            phonemes=tuple((word, ipa) for word, ipa in data.get("phonemes", ())),
            audio=data.get("audio"),
            winner=data["winner"],
            flagged=data["flagged"],
            reused=data.get("reused", False),
            candidates=tuple(CandidateRecord.from_json(c) for c in data["candidates"]),
            rerendered=RerenderMark.from_json(mark) if mark else None,
            review=data.get("review"),
            reasons=tuple(dict(r) for r in data.get("reasons", ())),
            speaker=data.get("speaker"),
            extra=_extra(data, cls._KEYS),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "chapter": self.chapter,
            "paragraph": self.paragraph,
            "line": self.line,
            "kind": self.kind,
            "text": self.text,
            "spoken": self.spoken,
            "voice": self.voice,
            **({"spoken_by": self.spoken_by} if self.spoken_by else {}),
            "emotion": self.emotion,
            **({"lexicon": list(self.lexicon)} if self.lexicon else {}),
            **({"phonemes": [list(p) for p in self.phonemes]} if self.phonemes else {}),
            "audio": self.audio,
            "winner": self.winner,
            "flagged": self.flagged,
            "reused": self.reused,
            "candidates": [c.to_json() for c in self.candidates],
            **({"rerendered": self.rerendered.to_json()} if self.rerendered else {}),
            **({"review": dict(self.review)} if self.review else {}),
            **({"reasons": [dict(r) for r in self.reasons]} if self.reasons else {}),
            **({"speaker": dict(self.speaker)} if self.speaker else {}),
            **self.extra,
        }


@dataclass(frozen=True)
class ChapterRecord:
    """One chapter's assembled files (paths relative to the output folder)."""

    index: int
    title: str | None
    wav: str
    flac: str
    duration_s: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChapterRecord:
        return cls(data["index"], data.get("title"), data["wav"], data["flac"], data["duration_s"])

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "title": self.title,
            "wav": self.wav,
            "flac": self.flac,
            "duration_s": self.duration_s,
        }


@dataclass(frozen=True)
class BookRecord:
    """The whole book's (or a dub's whole track's) files."""

    wav: str | None = None
    flac: str | None = None
    duration_s: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BookRecord:
        return cls(data.get("wav"), data.get("flac"), data.get("duration_s"))

    def to_json(self) -> dict[str, Any]:
        return {"wav": self.wav, "flac": self.flac, "duration_s": self.duration_s}


@dataclass(frozen=True)
class Manifest:
    """``manifest.json``: the run's settings, its stats, the files it wrote and its utterances.

    ``verifiers`` (each verifier's availability and identity), ``selection`` (gates, weights,
    round targets and stop rule), ``stats`` (run counters, seconds per stage and the quality
    summary) and ``config`` (the whole configuration's table, which ``rerender`` reads back) are
    documents owned by the modules that make them and are carried as plain mappings.
    """

    utterances: tuple[UtteranceRecord, ...]
    format: str = MANIFEST_FORMAT
    input: str | None = None
    # the book's absolute path, its path from the output folder and its SHA-256
    # (verified_tts.output.source); absent from manifests written before it was recorded
    source: Mapping[str, Any] | None = None
    title: str | None = None
    generator: str | None = None
    model: str | None = None
    sample_rate: int | None = None
    n: int | None = None
    adaptive: bool | None = None
    seed: int | None = None
    voice: str | None = None
    voice_ref: str | None = None
    # each voice that spoke a line: its generator, rate, lines, flagged lines and reference
    voices: Mapping[str, Mapping[str, Any]] | None = None
    keep: str | None = None
    verifiers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    selection: Mapping[str, Any] = field(default_factory=dict)
    stats: Mapping[str, Any] = field(default_factory=dict)
    production: Mapping[str, Any] | None = None  # what was read and delivered (absent for a dub)
    delivery: Mapping[str, Any] | None = None  # the M4B/MP3 files and their ACX check
    chapters: tuple[ChapterRecord, ...] = ()
    book: BookRecord = field(default_factory=BookRecord)
    dub: str | None = None  # a dub's report file (``dub.json``); absent from JSON for a render
    review: Mapping[str, Any] | None = None  # the review's log and progress (absent: none)
    # the whole effective configuration as its TOML table (verified_tts.options.to_table, paths
    # as given); absent from manifests written before it was recorded
    config: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    _KEYS = ("format", "input", "source", "title", "generator", "model", "sample_rate", "n",
             "adaptive", "seed", "voice", "voice_ref", "voices", "keep", "verifiers", "selection",
             "stats", "production", "delivery", "chapters", "book", "utterances", "dub", "review",
             "config")  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        return cls(
            format=data.get("format", MANIFEST_FORMAT),
            input=data.get("input"),
            source=data.get("source"),
            title=data.get("title"),
            generator=data.get("generator"),
            model=data.get("model"),
            sample_rate=data.get("sample_rate"),
            n=data.get("n"),
            adaptive=data.get("adaptive"),
            seed=data.get("seed"),
            voice=data.get("voice"),
            voice_ref=data.get("voice_ref"),
            voices=data.get("voices"),
            keep=data.get("keep"),
            verifiers=dict(data.get("verifiers", {})),
            selection=dict(data.get("selection", {})),
            stats=dict(data.get("stats", {})),
            production=data.get("production"),
            delivery=data.get("delivery"),
            chapters=tuple(ChapterRecord.from_json(c) for c in data.get("chapters", ())),
            book=BookRecord.from_json(data.get("book") or {}),
            utterances=tuple(UtteranceRecord.from_json(u) for u in data["utterances"]),
            dub=data.get("dub"),
            review=data.get("review"),
            config=data.get("config"),
            extra=_extra(data, cls._KEYS),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "input": self.input,
            **({"source": dict(self.source)} if self.source else {}),
            "title": self.title,
            "generator": self.generator,
            "model": self.model,
            "sample_rate": self.sample_rate,
            "n": self.n,
            "adaptive": self.adaptive,
            "seed": self.seed,
            "voice": self.voice,
            "voice_ref": self.voice_ref,
            **({"voices": dict(self.voices)} if self.voices else {}),
            "keep": self.keep,
            "verifiers": dict(self.verifiers),
            "selection": dict(self.selection),
            "stats": dict(self.stats),
            **({"production": dict(self.production)} if self.production is not None else {}),
            **({"delivery": dict(self.delivery)} if self.delivery is not None else {}),
            "chapters": [c.to_json() for c in self.chapters],
            "book": self.book.to_json(),
            "utterances": [u.to_json() for u in self.utterances],
            **({"dub": self.dub} if self.dub is not None else {}),
            **({"review": dict(self.review)} if self.review else {}),
            **({"config": dict(self.config)} if self.config is not None else {}),
            **self.extra,
        }

    def utterance(self, key: str) -> UtteranceRecord:
        """The first utterance with this full key (a repeated sentence shares its key)."""
        return next(u for u in self.utterances if u.key == key)

    def with_utterances(self, utterances: Iterable[UtteranceRecord]) -> Manifest:
        return replace(self, utterances=tuple(utterances))


def as_manifest(manifest: Manifest | Mapping[str, Any]) -> Manifest:
    """A :class:`Manifest` from itself or from its JSON (public functions accept either)."""
    return manifest if isinstance(manifest, Manifest) else Manifest.from_json(manifest)


def as_candidate(candidate: CandidateRecord | Mapping[str, Any]) -> CandidateRecord:
    """A :class:`CandidateRecord` from itself or from its JSON."""
    if isinstance(candidate, CandidateRecord):
        return candidate
    return CandidateRecord.from_json(candidate)


def read_manifest(out_dir: str | Path) -> Manifest:
    """The manifest of a finished run in ``out_dir``, or one line saying it is not there."""
    path = Path(out_dir) / MANIFEST_FILE
    if not path.is_file():
        raise UserError(
            f"{out_dir} has no manifest.json: give the --out folder of a finished "
            "`verified-tts render`"
        )
    return Manifest.from_json(json.loads(path.read_text(encoding="utf-8")))


def output_folders(out_dir: str | Path) -> tuple[Path, ...]:
    """The folders a run writes files into: the output, its chapters, its read-along files
    and the store's audio."""
    out = Path(out_dir)
    return (
        out,
        out / "chapters",
        out / "readalong",
        out / "readalong" / "audio",
        out / "captions",
        out / STORE_DIR / "audio",
    )


def write_manifest(out_dir: str | Path, manifest: Manifest) -> Path:
    """Write ``manifest.json`` into ``out_dir`` atomically."""
    path = Path(out_dir) / MANIFEST_FILE
    write_json_atomic(path, manifest.to_json())
    return path


# ------------------------------------------------------------------------------------------------
# building the manifest of a finished run
