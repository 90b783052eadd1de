"""What a producer can do in a review: choose, approve, more takes, edit, add a lexicon entry, give
a quote to another speaker, undo, deliver. Each is recorded in the decision log before anything
else happens.

Choosing a kept take, approving and undoing are decisions only (nothing is generated; the
chapter files change at the next delivery). More takes, an edit of a line's spoken text and a
lexicon entry are requests: recorded at once, then run on the work queue through the same
pipeline the render used (the render's generator, verifiers and policy, rebuilt from the
manifest by :func:`~verified_tts.workflows.rerender.original_config`; models are loaded once, on
the first request): more takes is :func:`~verified_tts.workflows.rerender.more_candidates` at
N + k with the seeds continuing after the last; an edit renders only that line; a lexicon entry
renders only the lines whose spoken text it changes; a speaker chosen for a quote renders that
quote's lines in the speaker's voice from the render's cast file
(:mod:`verified_tts.review.speakers`). Each request's ``result`` row holds the
line's record before and after, so a restart shows it without running it again, and a request
the app was killed before answering runs again when the review reopens. Delivery is
:func:`~verified_tts.review.deliver.deliver_review` (for a dub, the dub workflow again, which
reuses every stored decision and lays the chosen takes).
"""

from __future__ import annotations

import getpass
import json
from dataclasses import replace
from typing import Any

from verified_tts.errors import UserError
from verified_tts.output.manifest import RerenderMark, UtteranceRecord
from verified_tts.output.run_manifest import one_take_voices
from verified_tts.review.decisions import DECISIONS, Entry
from verified_tts.review.hook import edited_segment, live_changes, review_summary
from verified_tts.review.jobs import Job, Worker
from verified_tts.review.models import Models
from verified_tts.review.session import ReviewSession, describe
from verified_tts.review.state import where

__all__ = ["Reviewer"]

MAX_MORE = 32  # takes one "more takes" may ask for


class Reviewer:
    """The actions on one :class:`ReviewSession`, recorded as decisions by ``by``."""

    def __init__(
        self, session: ReviewSession, *, by: str | None = None, synthesizer: Any = None
    ) -> None:
        self.session = session
        self.by = by or getpass.getuser()
        self.worker = Worker()
        self.models = Models(session, synthesizer)  # loaded on the first request if not given
        self._tried: dict[int, list[str | None]] = {}  # a tried lexicon entry's takes, by job

    def resume(self) -> int:
        """Queue again the requests a killed review recorded but did not finish."""
        pending = list(self.session.review.pending)
        for entry in pending:
            self._queue(entry)
        return len(pending)

    def close(self) -> None:
        self.worker.stop()
        self.session.close()

    # decisions --------------------------------------------------------------------------------
    def choose(self, position: int, candidate: int) -> Entry:
        with self.session.lock:
            return self._choose(position, candidate)

    def _choose(self, position: int, candidate: int) -> Entry:
        state = self.session.state(position)
        record = state.record
        if not 0 <= candidate < len(record.candidates):
            raise UserError(f"this line has takes 1-{len(record.candidates)}, not {candidate + 1}")
        if not record.candidates[candidate].audio:
            raise UserError(f"take {candidate + 1} was not kept (--keep winners): choose another")
        data = {"key": record.key, "candidate": candidate, "selected": record.winner,
                "text": record.text, "where": where(record)}  # fmt: skip
        return self.session.record("choose", by=self.by, line=state.line, data=data)

    def approve(self, position: int) -> Entry:
        with self.session.lock:
            return self._approve(position)

    def _approve(self, position: int) -> Entry:
        state = self.session.state(position)
        record = state.record
        data = {"key": record.key, "candidate": state.winner, "text": record.text,
                "where": where(record)}  # fmt: skip
        return self.session.record("approve", by=self.by, line=state.line, data=data)

    def undo(self, seq: int | None = None) -> Entry:
        with self.session.lock:  # two quick undos take back two decisions, not one twice
            return self._undo(seq)

    def _undo(self, seq: int | None) -> Entry:
        review = self.session.review
        target = (
            review.undoable()
            if seq is None
            else next((e for e in review.entries if e.seq == seq), None)
        )
        undone = {e.of for e in review.entries if e.kind == "undo"}
        if target is None or target.kind not in DECISIONS:
            raise UserError("there is nothing to undo")
        if target.seq in undone:
            raise UserError(f"decision {target.seq} was already undone")
        return self.session.record("undo", by=self.by, line=target.line, of=target.seq,
                                   data={"what": describe(target)})  # fmt: skip

    # requests ---------------------------------------------------------------------------------
    def more(self, position: int, k: int = 4) -> Entry:
        if not 1 <= k <= MAX_MORE:
            raise UserError(f"ask for 1 to {MAX_MORE} more takes at a time (not {k})")
        self._can_render()
        with self.session.lock:
            state = self.session.state(position)
            record = state.record
            if record.spoken_by in one_take_voices(self.session.manifest.voices):
                raise UserError(
                    f"{record.spoken_by}'s takes differ only in signal noise, so more takes would "
                    "be copies of this one: edit the line's words or add a lexicon entry instead"
                )
            data = {"key": record.key, "k": k, "n": len(record.candidates) + k,
                    "text": record.text, "where": where(record)}  # fmt: skip
            entry = self.session.record("more", by=self.by, line=state.line, data=data)
        return self._queue(entry)

    def edit(self, position: int, typed: str) -> Entry:
        typed = " ".join(str(typed).split())
        if not any(ch.isalnum() for ch in typed):
            raise UserError("the new spoken text has nothing to say: type the words to read")
        if len(typed) > 2000:
            raise UserError("the new spoken text is longer than 2000 characters: split the line")
        self._can_render()
        spoken, phonemes, used = typed, (), ()
        lexicon = self.models.lexicon()
        if lexicon is not None:
            spoken, phonemes, used = lexicon.apply(typed)
        with self.session.lock:
            state = self.session.state(position)
            record = state.record
            if spoken == record.spoken:
                raise UserError("the line already says that: change the text, or approve it")
            data = {"key": record.key, "typed": typed, "spoken": spoken,
                    "phonemes": [list(p) for p in phonemes], "lexicon": list(used),
                    "text": record.text, "where": where(record)}  # fmt: skip
            entry = self.session.record("edit", by=self.by, line=state.line, data=data)
        return self._queue(entry)

    def speakers(self, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """The book's quotes with who says them, no speaker first, and whom they can be given to."""
        from verified_tts.review.speakers import speaker_choices

        found = self.session.quotes(offset=offset, limit=limit)
        cast = self.models.cast() if found["total"] else None
        return {**found, "choices": speaker_choices(cast) if cast else [],
                "threshold": cast.threshold if cast else None}  # fmt: skip

    def speaker(self, position: int, choice: str) -> Entry:
        """Give the quote at ``position`` to ``choice`` (a character of the cast, the narrator
        or the dialogue voice): recorded, then its lines rendered again in that voice."""
        from verified_tts.review.speakers import voice_for

        choice = str(choice).strip()
        voice = voice_for(self.models.cast(), choice)
        self._can_render()
        with self.session.lock:
            lines = self.session.quote_lines(position)
            record = self.session.state(position).record
            data = {"lines": lines, "speaker": choice, "voice": voice, "key": record.key,
                    "text": record.text, "where": where(record)}  # fmt: skip
            entry = self.session.record("speaker", by=self.by, line=lines[0], data=data)
        return self._queue(entry)

    def lexicon_lines(self, word: str, say: str | None, phonemes: str | None) -> dict[str, Any]:
        """The entry for ``word`` and the lines it would render again (without recording it)."""
        from verified_tts.text.lexicon import Lexicon, make_entry

        value = {k: v for k, v in {"say": say or None, "phonemes": phonemes or None}.items() if v}
        entry = make_entry(" ".join(str(word).split()), value, where="the new lexicon entry")
        lexicon = Lexicon((entry,))
        lines = []
        for line, text, said in self.session.lines_saying():
            spoken, _, used = lexicon.apply(said or text)
            if used and (spoken != said or entry.phonemes):
                lines.append((line, text))
        return {"entry": entry.as_dict(), "lines": [line for line, _ in lines],
                "texts": [text for _, text in lines[:20]]}  # fmt: skip

    def lexicon(self, word: str, say: str | None = None, phonemes: str | None = None) -> Entry:
        found = self.lexicon_lines(word, say, phonemes)
        if not found["lines"]:
            raise UserError(
                f"no line says \u201c{word}\u201d as it is spoken (numbers and abbreviations are "
                "spelled out first): check the word, or edit the line instead"
            )
        self._can_render()
        data = {"entry": found["entry"], "lines": found["lines"]}
        return self._queue(self.session.record("lexicon", by=self.by, data=data))

    def try_lexicon(
        self, position: int, word: str, say: str | None, phonemes: str | None
    ) -> dict[str, Any]:
        """Render line ``position`` as a new lexicon entry would say it, to be heard before the
        entry applies to the book: nothing is recorded, the takes are stored (so adding the
        entry then reuses them), and the job's result names them for :meth:`tried_audio`."""
        from verified_tts.text.lexicon import Lexicon, make_entry, replaced_phonemes

        value = {k: v for k, v in {"say": say or None, "phonemes": phonemes or None}.items() if v}
        entry = make_entry(" ".join(str(word).split()), value, where="the new lexicon entry")
        self._can_render()
        with self.session.lock:
            state = self.session.state(position)
            line = state.line
            changes = live_changes(self.session.entries)
            base = self.session.base_record(line)

        def run(job: Job) -> dict[str, Any]:
            job.say("loading the models" if not self.models.loaded else "rendering")
            segment = edited_segment(self.models.segment(base), line, changes)
            spoken, said, used = Lexicon((entry,)).apply(segment.spoken)
            if not used:
                raise UserError(f"this line does not say \u201c{entry.pattern}\u201d as it is "
                                "spoken: pick a word of the line")  # fmt: skip
            segment = replace(segment, spoken=spoken,
                              phonemes=replaced_phonemes(segment.phonemes, said),
                              lexicon=segment.lexicon + used)  # fmt: skip
            (utterance,) = [self.models.utterance(position, state.record, segment)]
            job.say("rendering the line")
            (result,) = self.models.render([utterance])
            record = _record(result, state.record)
            self._tried[job.id] = [c.audio for c in record.candidates]
            return {"pos": position, "spoken": record.spoken, "winner": record.winner,
                    "takes": [{"index": c.index, "passed": c.passed,
                               "heard": c.detail.get("transcript"),
                               "audio": f"audio/tried/{job.id}/{c.index}" if c.audio else None}
                              for c in record.candidates]}  # fmt: skip

        job = self.worker.submit("try", f"trying \u201c{entry.pattern}\u201d on one line", run)
        return {"job": job.id}

    def tried_audio(self, job: int, index: int) -> str | None:
        """The file of take ``index`` of a lexicon entry tried on one line (relative)."""
        takes = self._tried.get(job) or []
        return takes[index] if 0 <= index < len(takes) else None

    def deliver(self) -> Job:
        return self.worker.submit("deliver", "deliver", self._run_deliver)

    def _can_render(self) -> None:
        if self.session.head.keep == "winners":
            raise UserError(
                "this render kept only its winners (--keep winners): more takes and edits need "
                "the store of a render with --keep all"
            )

    # the work ---------------------------------------------------------------------------------
    def _queue(self, entry: Entry) -> Entry:
        runs = {"more": self._run_more, "edit": self._run_edit, "lexicon": self._run_lexicon,
                "speaker": self._run_speaker}  # fmt: skip
        title = describe(entry)
        self.worker.submit(entry.kind, title, lambda job: runs[entry.kind](entry, job),
                           cancelled=lambda: self._undone(entry))  # fmt: skip
        return entry

    def _undone(self, entry: Entry) -> bool:
        return any(e.kind == "undo" and e.of == entry.seq for e in self.session.entries)

    def _answer(self, entry: Entry, records: list[dict[str, Any]]) -> dict[str, Any]:
        self.session.record("result", by=self.by, line=entry.line, of=entry.seq,
                            data={"records": records})  # fmt: skip
        return {"lines": len(records)}

    def _failed(self, entry: Entry, error: UserError) -> None:
        self.session.record("failed", by=self.by, line=entry.line, of=entry.seq,
                            data={"error": str(error)})  # fmt: skip

    def _guarded(self, entry: Entry, work: Any) -> Any:
        try:
            return work()
        except UserError as error:
            self._failed(entry, error)
            raise

    def _run_more(self, entry: Entry, job: Job) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            found = self.session.line(str(entry.line))
            if found is None:
                raise UserError("this line is not in the render any more")
            position, state = found
            record = state.record
            n = len(record.candidates) + int(entry.data["k"])
            job.say("loading the models" if not self.models.loaded else f"rendering {n} takes")
            utterance = self.models.utterance(position, record)
            job.say(f"rendering takes {len(record.candidates) + 1}-{n}")
            result = self.models.more(utterance, n, record.key)
            after = replace(_record(result, record),
                            rerendered=RerenderMark(n, record.winner, record.flagged))  # fmt: skip
            return self._answer(entry, [_item(entry.line, record, after)])

        return self._guarded(entry, work)

    def _run_edit(self, entry: Entry, job: Job) -> dict[str, Any]:
        return self._guarded(entry, lambda: self._render_lines(entry, [str(entry.line)], job))

    def _run_lexicon(self, entry: Entry, job: Job) -> dict[str, Any]:
        return self._guarded(entry, lambda: self._render_lines(entry, entry.data["lines"], job))

    def _run_speaker(self, entry: Entry, job: Job) -> dict[str, Any]:
        return self._guarded(entry, lambda: self._render_lines(entry, entry.data["lines"], job))

    def _render_lines(self, entry: Entry, lines: list[str], job: Job) -> dict[str, Any]:
        """Render ``lines`` as the review's changes up to ``entry`` say them."""
        changes = [e for e in live_changes(self.session.entries) if e.seq <= entry.seq]
        wanted = []
        for line in lines:
            found = self.session.line(line)
            if found is None:
                continue
            segment = edited_segment(self.models.segment(self.session.base_record(line)), line,
                                     changes)  # fmt: skip
            wanted.append((line, found, segment))
        if not wanted:
            raise UserError("none of these lines is in the render any more")
        job.say("loading the models" if not self.models.loaded else "rendering")
        utterances = [self.models.utterance(position, state.record, segment)
                      for _, (position, state), segment in wanted]  # fmt: skip
        job.say(f"rendering {len(wanted)} line{'s' if len(wanted) != 1 else ''}")
        results = self.models.render(utterances)
        return self._answer(entry, [
            _item(line, state.record, _record(result, state.record))
            for (line, (_, state), _), result in zip(wanted, results, strict=True)
        ])  # fmt: skip

    def _run_deliver(self, job: Job) -> dict[str, Any]:
        session = self.session
        review = session.review
        summary = review_summary(review, session.entries)
        if session.manifest.dub:
            job.say("loading the models to lay the track")
            manifest, done = self.models.deliver_dub(job.say)
        else:
            manifest, done = self.models.deliver_book(review.records(), summary, job.say)
        session.load_manifest(manifest)
        session.record("deliver", by=self.by, data=done)
        return done


def _record(result: Any, like: UtteranceRecord) -> UtteranceRecord:
    """The record of a result, placed where ``like`` is in the book."""
    record = UtteranceRecord.from_result(result)
    return replace(record, chapter=like.chapter, paragraph=like.paragraph, line=like.line,
                   kind=like.kind)  # fmt: skip


def _item(line: Any, before: UtteranceRecord, after: UtteranceRecord) -> dict[str, Any]:
    # JSON round trip: the log keeps plain JSON, exactly as the manifest would
    return json.loads(json.dumps({"line": line, "before": before.to_json(),
                                  "after": after.to_json()}))  # fmt: skip
