"""What the book holds after a review: the render's records with the decision log played over them.

:func:`fold` is a pure function of the manifest's utterance records and the log's entries. Each
line starts from the record the verifiers made (the first ``before`` record a result in the log
holds for it, else the manifest's record with the verifiers' own winner put back), then every
decision that was not undone is applied in the order it was made: a result of more takes replaces
the line's record (and so clears an earlier choice or approval, which were about other takes); a
result of an edit, a lexicon entry or a speaker chosen makes a new version of the line: its new
takes come first, the earlier takes stay beside them (each take says its ``version``), and a line
the producer had chosen or approved keeps that take in the book and that decision (the review's
progress does not fall; choosing a take of the new version puts the new reading in), while a line
nobody had decided gets the new version's winner; a choice sets the winner to a kept take of the
record it was made on; an approval marks the line heard. A decision about a take the line no longer
has is superseded and ignored, one about a line this render does not have is an orphan, and where
an orphan was made on the same place in the book as a line whose text is now different, that line
says so. The same fold serves the review app and the render hook, so both agree on what a decision
means.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from verified_tts.output.manifest import UtteranceRecord
from verified_tts.review.decisions import DECISIONS, REQUESTS, Entry

__all__ = [
    "LineState",
    "Lines",
    "Review",
    "first_records",
    "fold",
    "line_id",
    "plain",
    "version_of",
    "where",
]


def line_id(record: UtteranceRecord) -> str:
    """The line a record is: the key the render gave it, kept through edits."""
    return str((record.review or {}).get("line") or record.key)


def where(record: UtteranceRecord) -> list[Any]:
    """The place in the book a decision was made on (chapter, paragraph, source line)."""
    return [record.chapter, record.paragraph, record.line]


def plain(record: UtteranceRecord) -> UtteranceRecord:
    """The record as the verifiers left it: their own winner, no review block."""
    if record.review is None:
        return record
    selected = record.review.get("selected", record.winner)
    if not isinstance(selected, int) or not 0 <= selected < len(record.candidates):
        selected = record.winner
    return replace(record, winner=selected, audio=record.candidates[selected].audio, review=None)


@dataclass(frozen=True)
class LineState:
    """One line of the book after the review: its record and the decisions behind it."""

    line: str
    record: UtteranceRecord  # the verifiers' winner; see ``effective`` for the take in the book
    choice: Entry | None = None
    approval: Entry | None = None
    changes: tuple[Entry, ...] = ()  # live requests whose results made ``record``
    pending: tuple[Entry, ...] = ()  # requests still to run
    history: tuple[Entry, ...] = ()  # live decisions on this line, oldest first
    stale: str | None = None
    chosen: int | None = None  # the take in the book where it is not the verifiers' pick
    versions: tuple[Mapping[str, Any], ...] = ()  # what each new version changed (oldest first)

    @property
    def selected(self) -> int:
        return self.record.winner

    @property
    def winner(self) -> int:
        return self.chosen if self.chosen is not None else self.record.winner

    @property
    def reviewed(self) -> bool:
        return self.choice is not None or self.approval is not None

    @property
    def decision(self) -> Entry | None:
        return self.history[-1] if self.history else None

    def effective(self) -> UtteranceRecord:
        """The record as the book holds it: the chosen take as winner, with its review block."""
        winner = self.winner
        record = self.record
        if winner != record.winner:
            record = replace(record, winner=winner, audio=record.candidates[winner].audio)
        block = self.review_block()
        return replace(record, review=block) if block else record

    def review_block(self) -> dict[str, Any] | None:
        """The manifest's ``review`` for this line (None when nothing was decided)."""
        if not (self.history or self.pending or self.stale):
            return None
        block: dict[str, Any] = {}
        if self.line != self.record.key:
            block["line"] = self.line
        last = self.decision
        if last is not None:
            block.update(decision=last.kind, by=last.by, at=last.at, seq=last.seq)
        if self.choice is not None or self.chosen is not None:
            block["candidate"] = self.winner
            chosen = self.record.candidates[self.winner]
            if not chosen.passed:  # the producer put a take in the book that failed the gates
                block["take_failed"] = list(chosen.failed_gates)
        block["selected"] = self.selected
        if self.approval is not None:
            block["approved"] = {"by": self.approval.by, "at": self.approval.at}
        if self.changes:
            block["changes"] = [_change(e) for e in self.changes]
        if self.versions:
            block["versions"] = [dict(v) for v in self.versions]
        if self.pending:
            block["pending"] = [e.kind for e in self.pending]
        if self.stale:
            block["stale"] = self.stale
        return block


def _change(entry: Entry) -> dict[str, Any]:
    detail = {
        "more": lambda d: {"n": d.get("n")},
        "edit": lambda d: {"spoken": d.get("spoken")},
        "lexicon": lambda d: {"entry": d.get("entry")},
        "speaker": lambda d: {"speaker": d.get("speaker"), "voice": d.get("voice")},
    }[entry.kind](entry.data)
    return {"decision": entry.kind, "by": entry.by, "at": entry.at, **detail}


@dataclass
class _Line:
    line: str
    record: UtteranceRecord
    choice: Entry | None = None
    approval: Entry | None = None
    changes: list[Entry] = field(default_factory=list)
    pending: list[Entry] = field(default_factory=list)
    history: list[Entry] = field(default_factory=list)
    stale: str | None = None
    chosen: int | None = None
    versions: list[Mapping[str, Any]] = field(default_factory=list)

    def frozen(self) -> LineState:
        return LineState(self.line, self.record, self.choice, self.approval, tuple(self.changes),
                         tuple(self.pending), tuple(self.history), self.stale, self.chosen,
                         tuple(self.versions))  # fmt: skip

    def new_version(self, entry: Entry, after: UtteranceRecord) -> None:
        """An edit's or a lexicon entry's result: ``after``'s takes first, the earlier ones kept
        beside them, and a decided line's take and decision kept (see the module docstring)."""
        before = self.record
        old = max((version_of(c) for c in before.candidates), default=1)
        kept = self.choice is not None or self.approval is not None
        in_book = self.chosen if self.chosen is not None else before.winner
        new = [replace(c, extra={**c.extra, "version": old + 1}) for c in after.candidates]
        earlier = [
            replace(c, index=len(new) + c.index, extra={**c.extra, "version": version_of(c)})
            for c in before.candidates
        ]
        self.record = replace(after, candidates=tuple(new + earlier))
        self.chosen = len(new) + in_book if kept else None
        self.versions.append({
            "version": old + 1, "kind": entry.kind, "by": entry.by, "at": entry.at,
            "spoken_before": before.spoken or before.text, "spoken": after.spoken or after.text,
            "takes": len(new), "entry": entry.data.get("entry"), "kept": kept,
            "speaker": entry.data.get("speaker"),
            "kept_take": len(new) + in_book if kept else None,
        })  # fmt: skip
        self.changes.append(entry)
        self.history.append(entry)


def version_of(candidate: Any) -> int:
    """Which version of its line a take belongs to (1: the render's)."""
    return int((candidate.extra or {}).get("version", 1))


class Lines(Sequence[LineState]):
    """The fold's states in book order. A line no decision is about gets its state (the
    verifiers' record as it is) only when asked for, so a review served from the index reads
    the records of the lines it shows and no others."""

    def __init__(
        self,
        ids: Sequence[str],
        records: Sequence[UtteranceRecord],
        touched: Mapping[str, LineState],
        cache: dict[str, LineState],
    ) -> None:
        self.ids, self._records, self.touched, self._cache = ids, records, touched, cache
        self._first: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, position: Any) -> Any:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        ident = self.ids[position]
        state = self.touched.get(ident) or self._cache.get(ident)
        if state is None:  # a repeated sentence's state is made from its first place's record
            if self._first is None:
                self._first = {}
                for place, each in enumerate(self.ids):
                    self._first.setdefault(each, place)
            record = self._records[self._first[ident]]
            state = self._cache[ident] = LineState(ident, plain(record))
        return state

    def __iter__(self) -> Iterator[LineState]:
        return (self[i] for i in range(len(self)))


@dataclass(frozen=True)
class Review:
    """The fold's result: one state per place in the book (a repeated sentence shares its state).
    ``flags`` (each place's flagged, when known without its record) lets :meth:`progress`
    count without reading the records of lines no decision is about."""

    lines: Sequence[LineState]
    entries: tuple[Entry, ...] = ()
    pending: tuple[Entry, ...] = ()  # requests recorded but not answered, oldest first
    orphans: tuple[Entry, ...] = ()  # decisions about lines this render does not have
    lexicon: tuple[Entry, ...] = ()  # live lexicon entries, in the order they were added
    flags: Sequence[bool] | None = None

    def records(self) -> list[UtteranceRecord]:
        return [state.effective() for state in self.lines]

    def undoable(self) -> Entry | None:
        """The latest decision that an undo would take back."""
        undone = {e.of for e in self.entries if e.kind == "undo"}
        live = [e for e in self.entries if e.kind in DECISIONS and e.seq not in undone]
        return live[-1] if live else None

    def progress(self) -> dict[str, int]:
        lines = self.lines
        if isinstance(lines, Lines) and self.flags is not None:
            first: dict[str, int] = {}
            for position, ident in enumerate(lines.ids):
                first.setdefault(ident, position)
            touched = lines.touched
            reviewed = sum(touched[i].reviewed for i in first if i in touched)
            flagged_left = sum(
                (touched[i].record.flagged and not touched[i].reviewed) if i in touched
                else bool(self.flags[p])
                for i, p in first.items()
            )  # fmt: skip
            count = len(first)
        else:
            states = list({s.line: s for s in lines}.values())
            reviewed = sum(s.reviewed for s in states)
            flagged_left = sum(s.record.flagged and not s.reviewed for s in states)
            count = len(states)
        return {"lines": count, "reviewed": reviewed, "left": count - reviewed,
                "flagged_left": flagged_left, "pending": len(self.pending)}  # fmt: skip


def first_records(entries: Sequence[Entry]) -> dict[str, Mapping[str, Any]]:
    befores: dict[str, Mapping[str, Any]] = {}
    for entry in entries:
        if entry.kind == "result":
            for item in entry.data.get("records", ()):
                befores.setdefault(item["line"], item["before"])
    return befores


def _valid_take(record: UtteranceRecord, index: Any) -> bool:
    return (
        isinstance(index, int)
        and 0 <= index < len(record.candidates)
        and bool(record.candidates[index].audio)
    )


def _touched(entries: Sequence[Entry]) -> set[str]:
    """The lines any entry is about."""
    touched: set[str] = set()
    for entry in entries:
        if entry.line:
            touched.add(entry.line)
        touched.update(entry.data.get("lines") or ())
        touched.update(item["line"] for item in entry.data.get("records", ()))
    return touched


def fold(
    records: Sequence[UtteranceRecord],
    entries: Sequence[Entry],
    *,
    line_ids: Sequence[str] | None = None,
    from_log: bool = True,
    untouched: dict[str, LineState] | None = None,
    places: Sequence[Sequence[Any]] | None = None,
    flags: Sequence[bool] | None = None,
) -> Review:
    """Play ``entries`` over ``records`` (book order); see the module docstring. ``line_ids``
    name each record's line (default: :func:`line_id`); with ``from_log`` a line starts from the
    first record the log kept of it, which undoes what a delivery wrote into the manifest.
    ``untouched`` caches the states of lines no entry is about, across folds of one manifest.
    With ``line_ids``, ``places`` (each record's :func:`where`) and ``flags`` given, only the
    records of lines an entry is about are read from ``records``."""
    ids = list(line_ids) if line_ids is not None else [line_id(r) for r in records]
    if len(ids) != len(records):
        raise ValueError(f"{len(ids)} line ids for {len(records)} records")
    # a line that a result is about starts from the record the log kept of it before the first
    # request, always: its versions are built on that (a later run's record of the line already
    # says it as edited, so it cannot be the earlier version)
    befores = first_records(entries)
    if not from_log:
        answered = {e.of for e in entries if e.kind == "result"}
        lines_with_results = {
            item["line"] for e in entries if e.kind == "result" and e.of in answered
            for item in e.data.get("records", ())
        }  # fmt: skip
        befores = {k: v for k, v in befores.items() if k in lines_with_results}
    touched = _touched(entries)
    lines: dict[str, _Line] = {}
    for position, ident in enumerate(ids):
        if ident in touched and ident not in lines:
            base = befores.get(ident)
            lines[ident] = _Line(
                ident, UtteranceRecord.from_json(base) if base else plain(records[position])
            )
    undone = {e.of for e in entries if e.kind == "undo"}
    answers = {e.of: e for e in entries if e.kind in ("result", "failed")}
    pending: list[Entry] = []
    orphans: list[Entry] = []
    lexicon: list[Entry] = []
    for entry in entries:
        if entry.kind not in DECISIONS or entry.seq in undone:
            continue
        if entry.kind == "lexicon":
            lexicon.append(entry)
        if entry.kind in REQUESTS:
            answer = answers.get(entry.seq)
            if answer is None:
                pending.append(entry)
                for ident in entry.data.get("lines") or [entry.line]:
                    if ident in lines:
                        lines[ident].pending.append(entry)
            elif answer.kind == "result":
                for item in answer.data.get("records", ()):
                    state = lines.get(item["line"])
                    if state is None:
                        orphans.append(entry)
                        continue
                    after = UtteranceRecord.from_json(item["after"])
                    if entry.kind in ("edit", "lexicon", "speaker"):
                        state.new_version(entry, after)
                        continue
                    state.record = after
                    state.choice = state.approval = None
                    state.chosen = None
                    state.changes.append(entry)
                    state.history.append(entry)
            continue
        state = lines.get(str(entry.line))
        if state is None:
            orphans.append(entry)
            continue
        if entry.data.get("key") != state.record.key:
            continue  # made on takes this line no longer has
        if entry.kind == "choose":
            if not _valid_take(state.record, entry.data.get("candidate")):
                continue
            state.choice = entry
            state.chosen = int(entry.data["candidate"])
        else:
            state.approval = entry
        state.history.append(entry)
    if orphans:
        wheres = places if places is not None else [where(r) for r in records]
        _mark_stale(lines, ids, records, wheres, orphans)
    cache = untouched if untouched is not None else {}
    frozen = {ident: state.frozen() for ident, state in lines.items()}
    return Review(
        lines=Lines(ids, records, frozen, cache),
        flags=flags,
        entries=tuple(entries),
        pending=tuple(pending),
        orphans=tuple({e.seq: e for e in orphans}.values()),
        lexicon=tuple(lexicon),
    )


def _mark_stale(
    lines: dict[str, _Line],
    ids: Sequence[str],
    records: Sequence[UtteranceRecord],
    wheres: Sequence[Sequence[Any]],
    orphans: Sequence[Entry],
) -> None:
    """A line at the place an orphan decision was made, with other text now, says so."""
    places: dict[tuple[Any, ...], list[str]] = {}
    for ident, place in zip(ids, wheres, strict=True):
        places.setdefault(tuple(place), []).append(ident)
    for entry in orphans:
        place = entry.data.get("where")
        if not place:
            continue
        for ident in places.get(tuple(place), ()):
            if ident not in lines:
                lines[ident] = _Line(ident, plain(records[ids.index(ident)]))
            state = lines[ident]
            if state.history or state.record.text == entry.data.get("text"):
                continue
            state.stale = (
                f"the text changed since it was reviewed ({entry.kind} by {entry.by} at "
                f"{entry.at}, on \u201c{entry.data.get('text')}\u201d): review it again"
            )
