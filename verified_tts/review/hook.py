"""The review's hook into ``render`` and ``dub``: a later run keeps what the producer decided.

A run over an output folder that has a review log (``review/decisions.sqlite``) plans every line as
the book says, then gives each line the producer edited its recorded spoken text and applies the
lexicon entries added in review (so those lines are read as the review heard them, and their stored
decisions are found instead of being rendered again). After best-of-N, the records that review
results made (more takes) replace the run's, and each chosen take becomes its line's winner, before
anything is assembled; the manifest then carries each line's ``review`` block. A decision whose line
is gone (its text changed in the book) is not applied, and the line now at its place says so. A
quote the producer gave to another speaker is planned in that speaker's voice. A
folder without a log is left exactly as the run made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verified_tts.output.manifest import CandidateRecord, Manifest, UtteranceRecord
from verified_tts.review.decisions import (  # lexicon_entry, live_changes: importable here too
    LOG_FILE,
    DecisionLog,
    Entry,
    lexicon_entry,
    live_changes,
)
from verified_tts.review.state import Review, fold
from verified_tts.storage.keys import candidate_key
from verified_tts.storage.store import STORE_DIR

if TYPE_CHECKING:
    from verified_tts.pipeline import CandidateResult, Synthesizer, Utterance, UtteranceResult
    from verified_tts.text.book import Segment
    from verified_tts.text.lexicon import LexiconEntry
    from verified_tts.text.readings import LineReading

__all__ = [
    "ReviewHook",
    "edited_segment",
    "lexicon_entry",
    "live_changes",
    "result_from_record",
    "review_summary",
]


def edited_segment(segment: Segment, line: str, changes: Sequence[Entry]) -> Segment:
    """``segment`` (the line ``line``) as the review's edits and lexicon entries say it, in the
    voice of the speaker the review gave it."""
    # the text front-end loads only when needed
    from verified_tts.text.lexicon import Lexicon, replaced_phonemes

    for entry in changes:
        if entry.kind == "edit" and entry.line == line:
            segment = replace(
                segment,
                spoken=str(entry.data["spoken"]),
                phonemes=tuple((w, p) for w, p in entry.data.get("phonemes", ())),
                lexicon=tuple(entry.data.get("lexicon", ())),
            )
        elif entry.kind == "speaker" and line in entry.data.get("lines", ()):
            segment = replace(
                segment,
                voice=entry.data.get("voice"),
                speaker=str(entry.data["speaker"]),
                speaker_reason=f"chosen in review by {entry.by}",
                speaker_confidence=1.0,
                speaker_guess=None,
            )
        elif entry.kind == "lexicon":
            spoken, phonemes, used = Lexicon((lexicon_entry(entry.data["entry"]),)).apply(
                segment.spoken
            )
            if used:
                segment = replace(segment, spoken=spoken,
                                  phonemes=replaced_phonemes(segment.phonemes, phonemes),
                                  lexicon=segment.lexicon + used)  # fmt: skip
    return segment


def _candidate_result(record: CandidateRecord, utterance_key: str) -> CandidateResult:
    from verified_tts.pipeline import CandidateResult

    audio = record.audio[len(STORE_DIR) + 1 :] if record.audio else None
    key = Path(audio).stem if audio else candidate_key(utterance_key, record.index)
    return CandidateResult(
        index=record.index,
        seed=int(record.seed or 0),
        key=key,
        duration_s=float(record.duration_s or 0.0),
        metrics=dict(record.scores),
        detail=dict(record.detail),
        passed=record.passed,
        failed=tuple(record.failed_gates),
        score=record.score,
        audio=audio,
        info=dict(record.info),
    )


def result_from_record(record: UtteranceRecord, result: UtteranceResult) -> UtteranceResult:
    """``result`` with the candidates and winner of ``record`` (a review's record of the line)."""
    return replace(
        result,
        candidates=tuple(_candidate_result(c, record.key) for c in record.candidates),
        winner=record.winner,
        flagged=record.flagged,
    )


def review_summary(review: Review, entries: Sequence[Entry]) -> dict[str, Any]:
    """The manifest's top-level ``review``: where the log is, how far the review got, and each
    line's live decisions in words (what report.html lists), takes that failed the gates but
    were chosen counted apart."""
    from verified_tts.review.session import describe

    lines = review.lines
    touched = getattr(lines, "touched", None)
    states = list((touched or {s.line: s for s in lines}).values())
    decided = []
    failed_chosen = 0
    for state in states:
        block = state.review_block() or {}
        failed_chosen += "take_failed" in block
        for entry in state.history:
            item = {"line": state.line, "text": state.record.text, "kind": entry.kind,
                    "what": describe(entry), "by": entry.by, "at": entry.at}  # fmt: skip
            if entry is state.choice and "take_failed" in block:
                item["take_failed"] = block["take_failed"]
            decided.append(item)
    decided.sort(key=lambda d: d["at"])
    return {
        "log": LOG_FILE,
        "decided": decided,
        "decisions": sum(
            e.kind in ("choose", "approve", "more", "edit", "lexicon", "speaker") for e in entries
        ),  # fmt: skip
        "last": entries[-1].seq if entries else 0,
        **review.progress(),
        "failed_takes_chosen": failed_chosen,
        "not_applied": len(review.orphans),
        "lexicon": [dict(e.data["entry"]) for e in review.lexicon],
    }


class ReviewHook:
    """The hook for one run over ``out_dir``; a no-op where the folder has no review log."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        self.entries = list(entries)
        self._lines: list[str] | None = None
        self._review: Review | None = None

    @classmethod
    def load(cls, out_dir: str | Path) -> ReviewHook:
        with DecisionLog(out_dir, create=False) as log:
            return cls(log.entries())

    def plan(
        self,
        synthesizer: Synthesizer,
        segments: Sequence[Segment],
        target_durations: Sequence[float | None] | None = None,
        readings: Sequence[tuple[LineReading, ...]] | None = None,
    ) -> list[Utterance]:
        """The run's plan, with the review's edits and lexicon entries applied (a line they
        change is read one way: as the review says it)."""
        planned = synthesizer.plan(segments, target_durations, readings)
        self._lines = [u.key for u in planned]
        changes = live_changes(self.entries)
        if not changes:
            return planned
        targets = list(target_durations) if target_durations is not None else [None] * len(planned)
        out = []
        for utterance, target in zip(planned, targets, strict=True):
            segment = edited_segment(utterance.segment, utterance.key, changes)
            if segment != utterance.segment:
                (utterance,) = synthesizer.plan([segment], [target])
            out.append(utterance)
        return out

    def lexicon_entries(self) -> list[LexiconEntry]:
        """The lexicon entries added in review and not undone, in the order they were made."""
        return [lexicon_entry(e.data["entry"]) for e in live_changes(self.entries)
                if e.kind == "lexicon"]  # fmt: skip

    def results(self, results: Sequence[UtteranceResult]) -> list[UtteranceResult]:
        """The run's results with review records and chosen takes in place."""
        if not self.entries:
            return list(results)
        records = [UtteranceRecord.from_result(r) for r in results]
        lines = self._lines or [r.key for r in records]
        self._review = review = fold(records, self.entries, line_ids=lines, from_log=False)
        out = []
        for result, record, state in zip(results, records, review.lines, strict=True):
            effective = state.effective()
            if state.changes or effective.winner != record.winner:
                result = result_from_record(replace(effective, review=None), result)
            out.append(result)
        return out

    def manifest(self, manifest: Manifest) -> Manifest:
        """The run's manifest with every line's ``review`` block and the review's summary."""
        review = self._review
        if review is None:
            return manifest
        utterances = [
            replace(u, review=state.review_block())
            for u, state in zip(manifest.utterances, review.lines, strict=True)
        ]
        return replace(manifest, utterances=tuple(utterances),
                       review=review_summary(review, self.entries))  # fmt: skip
