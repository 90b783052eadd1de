"""One open review: the output folder's manifest, its decision log, and what the page asks of them.

:class:`ReviewSession` opens the folder's review index (:mod:`~verified_tts.review.index`, built
first when the manifest has none or has changed since; and a dub's ``dub.json``), opens the
decision log, and keeps the fold of one over the other in memory with the worst-first order, so
every page request is answered from memory: the list rows (filtered and paged), one line's detail
(its text with the doubtful word marked, the reasons, what the ASR model heard, every kept take
with its own reason, the chapter and position, a dub cue's window and where the take sits), the
review's progress, and the files a player may load, which are looked up from the manifest by
number and must lie inside the output folder: no request names a path. A line's whole record
(its takes and scores) is read from the index when the line is opened or a decision is about it;
the whole manifest is read only for work that needs it (more takes, an edit, a delivery).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.output.manifest import Manifest, UtteranceRecord, read_manifest
from verified_tts.review.decisions import DecisionLog, Entry
from verified_tts.review.explain import candidate_reasons, line_reasons, mark
from verified_tts.review.index import ReviewIndex, open_index, records_of
from verified_tts.review.order import Listed, Ranking, order_of, rows_of
from verified_tts.review.speakers import quote_lines, speaker_rows, uncertain_count
from verified_tts.review.state import LineState, Review, first_records, fold, plain, version_of

__all__ = ["ReviewSession", "describe"]


def describe(entry: Entry, text: str | None = None) -> str:
    """A decision in words, for the history and the undo button."""
    data = entry.data
    what = {
        "choose": lambda: f"chose take {int(data.get('candidate', 0)) + 1}",
        "approve": lambda: "approved",
        "more": lambda: f"asked for {data.get('k')} more takes",
        "edit": lambda: f"edited it to say \u201c{data.get('typed', data.get('spoken'))}\u201d",
        "lexicon": lambda: f"added the lexicon entry {data.get('entry', {}).get('match')!r}",
        "speaker": lambda: f"gave it to {data.get('speaker')}",
        "deliver": lambda: "delivered",
        "undo": lambda: f"undid decision {entry.of}",
    }.get(entry.kind, lambda: entry.kind)()
    on = f" on \u201c{text}\u201d" if text else ""
    return f"{what}{on}"


def _inside(root: Path, relative: str | None) -> Path | None:
    """``root / relative`` when it is a file inside ``root`` (links resolved), else None."""
    if not relative:
        return None
    path = (root / relative).resolve()
    return path if path.is_relative_to(root) and path.is_file() else None


class ReviewSession:
    """The state of one review of ``out_dir`` (see the module docstring)."""

    def __init__(self, out_dir: str | Path, *, on_index: Callable[[], None] | None = None) -> None:
        self.out = Path(out_dir).resolve()
        self._on_index = on_index  # called before the index is built (not when it is there)
        self.log = DecisionLog(self.out)
        self._lock = threading.RLock()
        self._entries: list[Entry] = []
        self._index: ReviewIndex | None = None
        self._manifest: Manifest | None = None
        self.load_manifest(None)

    # state ------------------------------------------------------------------------------------
    @property
    def manifest(self) -> Manifest:
        """The whole manifest (read on first use: the list and the lines come from the index)."""
        with self._lock:
            if self._manifest is None:
                self._manifest = read_manifest(self.out)
            return self._manifest

    def load_manifest(self, manifest: Manifest | None) -> None:
        """Take the folder's manifest as the base: at open (``None``), or ``manifest`` just
        written by a delivery (the index of it is opened, or built when the writer made none)."""
        with self._lock:
            if self._index is not None:
                self._index.close()
            self._manifest = manifest
            self._index = index = open_index(self.out, on_build=self._on_index)
            self.head = index.head
            self.records = records_of(index)
            self.dub_cues = self._read_dub_cues(index)
            self.ranking = Ranking(index.head.selection.get("gates", ()))
            self.titles = {c.index: c.title for c in index.head.chapters}
            self.speakers = index.speakers  # position -> who the attribution found to say it
            places: dict[int, int] = {}
            self.places = []
            for chapter, *_ in index.places:
                places[chapter] = places.get(chapter, 0) + 1
                self.places.append(places[chapter])
            self.chapter_sizes = places
            self.positions: dict[str, list[int]] = {}
            for position, ident in enumerate(index.ids):
                self.positions.setdefault(ident, []).append(position)
            self._untouched: dict[str, LineState] = {}  # states of lines no decision is about
            self.refresh()

    def _read_dub_cues(self, index: ReviewIndex) -> list[Mapping[str, Any] | None]:
        if not index.head.dub:
            return [None] * len(index)
        try:
            cues = json.loads((self.out / index.head.dub).read_text(encoding="utf-8"))["cues"]
        except (OSError, ValueError, KeyError):
            cues = []
        by_key = {cue.get("key"): cue for cue in cues}
        aligned = len(cues) == len(index)
        return [
            cues[i] if aligned and cues[i].get("key") == key else by_key.get(key)
            for i, key in enumerate(index.keys)
        ]

    def refresh(self) -> None:
        """Read what the log gained and fold it again."""
        with self._lock:
            last = self._entries[-1].seq if self._entries else 0
            self._entries.extend(self.log.entries(after=last))
            index = self._index
            assert index is not None
            self.review: Review = fold(self.records, self._entries, line_ids=index.ids,
                                       untouched=self._untouched, places=index.places,
                                       flags=index.flags)  # fmt: skip
            # the index's figures, but a line a decision is about is listed as it is now
            listed: list[Listed] = list(index.listed)
            touched = self.review.lines.touched  # type: ignore[attr-defined]
            for ident, state in touched.items():
                row = self.ranking.listed(state)
                for position in self.positions.get(ident, ()):
                    listed[position] = row
            self.listed = listed
            self.order = order_of(listed)

    def record(self, kind: str, *, by: str, line: str | None = None, of: int | None = None,
               data: Mapping[str, Any] | None = None) -> Entry:  # fmt: skip
        """Append one decision to the log (on disk when this returns) and fold it in."""
        with self._lock:
            entry = self.log.append(kind, by=by, line=line, of=of, data=data)
            self.refresh()
            return entry

    @property
    def lock(self) -> threading.RLock:
        """Held while a decision is checked against the state and recorded."""
        return self._lock

    @property
    def entries(self) -> list[Entry]:
        return list(self._entries)

    def state(self, position: int) -> LineState:
        lines = self.review.lines
        if not 0 <= position < len(lines):
            raise UserError(f"there is no line {position} in this review (it has {len(lines)})")
        return lines[position]

    def line(self, line: str) -> tuple[int, LineState] | None:
        """The first place of ``line`` in the book and its state, or None when it is not here."""
        places = self.positions.get(line)
        return (places[0], self.review.lines[places[0]]) if places else None

    def base_record(self, line: str) -> UtteranceRecord:
        """The line as the render made it (before any review result), for an edit to start from."""
        first = first_records(self._entries).get(line)
        if first is not None:
            return UtteranceRecord.from_json(first)
        found = self.line(line)
        if found is None:
            raise UserError("this line is not in the render any more")
        return plain(self.records[found[0]])

    # what the page shows ----------------------------------------------------------------------
    def rows(self, **query: Any) -> dict[str, Any]:
        with self._lock:
            listed, order = self.listed, self.order
        total, rows = rows_of(listed, order, **query)
        return {"total": total, "rows": rows}

    def detail(self, position: int) -> dict[str, Any]:
        state = self.state(position)
        record = state.effective()
        gates = self.ranking.gates
        reasons = line_reasons(record, gates)
        figures = self.ranking.ranked(record)
        winner = record.winner_candidate
        cue = self.dub_cues[position] if position < len(self.dub_cues) else None
        return {
            "pos": position,
            "line": state.line,
            "key": record.key,
            "chapter": record.chapter,
            "chapter_title": self.titles.get(record.chapter),
            "place": self.places[position],
            "chapter_lines": self.chapter_sizes.get(record.chapter, 0),
            "text": record.text,
            "spoken": record.spoken,
            "marked": list(figures.marked) if figures.marked else None,
            "word": figures.word,
            "reasons": reasons,
            "heard": winner.detail.get("transcript"),
            "flagged": record.flagged,
            "decision": "chosen" if state.choice else "approved" if state.approval else None,
            "stale": state.stale,
            "pending": [e.kind for e in state.pending],
            "winner": record.winner,
            "selected": state.selected,
            "repeats": len(self.positions.get(state.line, ())),
            "candidates": [
                {
                    "index": c.index,
                    "audio": f"audio/{position}/{c.index}" if c.audio else None,
                    "passed": c.passed,
                    "failed_gates": list(c.failed_gates),
                    "reasons": candidate_reasons(c, gates, record.text),
                    "marked": _marked(record.text, candidate_reasons(c, gates, record.text)),
                    "score": c.score,
                    "duration_s": c.duration_s,
                    "heard": c.detail.get("transcript"),
                    "version": version_of(c),
                }
                for c in record.candidates
            ],
            "versions": [dict(v) for v in state.versions],
            "history": [
                {"seq": e.seq, "kind": e.kind, "by": e.by, "at": e.at, "text": describe(e)}
                for e in state.history
            ],
            "dub": _cue_window(cue) if cue else None,
        }

    def summary(self) -> dict[str, Any]:
        manifest, review = self.head, self.review
        undo = review.undoable()
        undo_text = None
        if undo is not None:
            found = self.line(undo.line) if undo.line else None
            text = found[1].record.text if found else None
            undo_text = describe(undo, text)
        delivered = next((e for e in reversed(self._entries) if e.kind == "deliver"), None)
        return {
            "title": manifest.title or Path(str(manifest.input)).stem,
            "input": manifest.input,
            "dub": manifest.dub is not None,
            "generator": manifest.generator,
            **review.progress(),
            "orphans": len(review.orphans),
            "chapters": [{"index": c.index, "title": c.title} for c in manifest.chapters]
            or [{"index": 0, "title": "track"}],
            "undo": {"seq": undo.seq, "text": undo_text} if undo else None,
            "words": len((manifest.extra.get("pronunciations") or {}).get("decisions") or ()),
            "speakers": uncertain_count(self.speakers, self.places_of),
            "delivered": {"at": delivered.at, "by": delivered.by, **dict(delivered.data)}
            if delivered
            else None,
            "since_delivery": sum(
                e.kind in ("choose", "approve", "result", "undo")
                for e in self._entries
                if delivered is None or e.seq > delivered.seq
            ),
        }

    @property
    def places_of(self) -> list[list[Any]]:
        """Each position's place in the book: chapter, paragraph, source line."""
        assert self._index is not None
        return self._index.places

    def quotes(self, *, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """The quotes with who says them, no speaker first (:mod:`verified_tts.review.speakers`)."""
        with self._lock:
            listed, entries = self.listed, list(self._entries)
        texts = [row.text for row in listed]
        ids = [row.line for row in listed]
        return speaker_rows(self.speakers, self.places_of, texts, ids, entries,
                            offset=offset, limit=limit)  # fmt: skip

    def quote_lines(self, position: int) -> list[str]:
        """The lines (ids, in book order) of the quote ``position`` is in."""
        with self._lock:
            positions = quote_lines(self.speakers, self.places_of, position)
            return list(dict.fromkeys(self.listed[p].line for p in positions))

    def words(self) -> dict[str, Any]:
        """The words the render decided once for the book (:mod:`verified_tts.review.words`)."""
        from verified_tts.review.words import word_rows

        with self._lock:
            return {"words": word_rows(self.head.extra, self._entries)}

    # files a player may load ------------------------------------------------------------------
    def word_audio(self, word: int, reading: int) -> Path | None:
        from verified_tts.review.words import reading_audio

        return _inside(self.out, reading_audio(self.head.extra, word, reading))

    def take_audio(self, position: int, index: int) -> Path | None:
        state = self.state(position)
        candidates = state.record.candidates
        if not 0 <= index < len(candidates):
            return None
        return _inside(self.out, candidates[index].audio)

    def inside(self, relative: str | None) -> Path | None:
        """A file of the output folder named by the review itself (never by a request)."""
        return _inside(self.out, relative)

    def chapter_audio(self, index: int) -> Path | None:
        head = self.head
        chapter = next((c for c in head.chapters if c.index == index), None)
        if chapter is None:
            return _inside(self.out, head.book.flac) if head.dub else None
        return _inside(self.out, chapter.flac)

    def lines_saying(self) -> list[tuple[str, str, str | None]]:
        """(line, text, spoken) of every line once, in book order (for a lexicon entry)."""
        with self._lock:
            listed = self.listed
        seen: dict[str, tuple[str, str, str | None]] = {}
        for row in listed:
            seen.setdefault(row.line, (row.line, row.text, row.spoken))
        return list(seen.values())

    def close(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None
        self.log.close()


def _marked(text: str, reasons: list[dict[str, Any]]) -> list[int] | None:
    word = next((r["word"] for r in reasons if r.get("word")), None)
    span = mark(text, word)
    return list(span) if span else None


def _cue_window(cue: Mapping[str, Any]) -> dict[str, Any]:
    """A dub cue's window on the timeline and where its take sits in it (dub.json's figures)."""
    names = ("start", "end", "slot_end", "slot_seconds", "speech_seconds", "stretch",
             "placed_start", "placed_end", "overlap_seconds", "cut_seconds", "flag_reasons",
             "speaker", "voice")  # fmt: skip
    return {name: cue.get(name) for name in names if name in cue}
