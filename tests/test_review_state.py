"""The review's decision log and its fold: durable appends (a real SIGKILL mid-append loses
nothing that was acknowledged), an append-only table, and what each decision means for a line."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from verified_tts.output.manifest import CandidateRecord, UtteranceRecord
from verified_tts.review.decisions import DecisionLog
from verified_tts.review.explain import derived_reasons, mark
from verified_tts.review.order import Ranking, doubt
from verified_tts.review.state import fold

GATES = [{"metric": "asr_min_logprob", "min": -7.0, "margin": 3.0},
         {"metric": "duration_ratio", "min": 0.75, "max": 1.24, "margin": 0.12}]  # fmt: skip


def take(index, *, passed=True, logprob=-0.3, worst=-2.0, ratio=1.0, heard="a line", token=None):
    scores = {"asr_logprob": logprob, "asr_min_logprob": worst, "duration_ratio": ratio}
    failed = tuple(
        name for name, bad in (("asr_min_logprob", worst < -7.0),
                               ("duration_ratio", not 0.75 <= ratio <= 1.24)) if bad
    )  # fmt: skip
    return CandidateRecord(
        index=index, scores=scores, passed=passed and not failed, score=logprob, seed=index,
        detail={"transcript": heard, **({"worst_token": token} if token else {})},
        failed_gates=failed, audio=f"store/audio/k{index}.flac",
    )  # fmt: skip


def line(key, text="a line", *, flagged=False, winner=0, takes=None, chapter=0, where=1):
    takes = takes or (take(0), take(1), take(2))
    return UtteranceRecord(key=key, chapter=chapter, text=text, spoken=text, winner=winner,
                           flagged=flagged, candidates=tuple(takes), paragraph=where,
                           line=where)  # fmt: skip


@pytest.fixture
def log(tmp_path):
    with DecisionLog(tmp_path) as opened:
        yield opened


def test_choice_approval_and_undo(log):
    records = [line("a"), line("b", "b line", where=2)]
    log.append("choose", by="ann", line="a", data={"key": "a", "candidate": 2})
    approve = log.append("approve", by="ann", line="b", data={"key": "b", "candidate": 0})
    review = fold(records, log.entries())
    a, b = review.lines
    assert (a.winner, a.reviewed, a.selected) == (2, True, 0)
    assert a.effective().winner == 2 and a.effective().audio == "store/audio/k2.flac"
    assert a.effective().review["decision"] == "choose" and a.effective().review["by"] == "ann"
    assert b.reviewed and b.winner == 0
    assert review.progress() == {"lines": 2, "reviewed": 2, "left": 0, "flagged_left": 0,
                                 "pending": 0}  # fmt: skip
    assert review.undoable().seq == approve.seq
    log.append("undo", by="ann", line="b", of=approve.seq)
    review = fold(records, log.entries())
    assert not review.lines[1].reviewed and review.lines[1].effective().review is None
    assert review.lines[0].winner == 2  # only the last decision was taken back


def test_a_result_replaces_the_record_and_supersedes_earlier_choices(log):
    before = line("a")
    more = line("a", takes=(take(0), take(1), take(2), take(3)), winner=3)
    log.append("choose", by="ann", line="a", data={"key": "a", "candidate": 1})
    request = log.append("more", by="ann", line="a", data={"key": "a", "k": 1})
    assert fold([before], log.entries()).pending[0].seq == request.seq  # asked, not answered
    log.append("result", by="ann", line="a", of=request.seq,
               data={"records": [{"line": "a", "before": before.to_json(),
                                  "after": more.to_json()}]})  # fmt: skip
    state = fold([before], log.entries()).lines[0]
    assert (len(state.record.candidates), state.winner, state.choice) == (4, 3, None)
    log.append("undo", by="ann", line="a", of=request.seq)
    state = fold([before], log.entries()).lines[0]
    assert (len(state.record.candidates), state.winner) == (3, 1)  # the choice is back


def test_a_delivered_manifest_folds_back_to_the_render(log):
    # after a delivery the manifest holds the chosen winner and an edited line's new key; the
    # fold starts each line from the record the log kept, so an undo still means the render's
    original = line("a")
    edited = line("e", takes=(take(0), take(1)))
    request = log.append("edit", by="ann", line="a", data={"key": "a", "spoken": "new"})
    log.append("result", by="ann", line="a", of=request.seq,
               data={"records": [{"line": "a", "before": original.to_json(),
                                  "after": edited.to_json()}]})  # fmt: skip
    written = fold([original], log.entries()).records()
    assert written[0].key == "e" and written[0].review["line"] == "a"
    assert fold(written, log.entries()).lines[0].record.key == "e"
    log.append("undo", by="ann", line="a", of=request.seq)
    state = fold(written, log.entries()).lines[0]
    assert state.record.key == "a" and len(state.record.candidates) == 3


def test_orphans_and_a_changed_text_say_so(log):
    log.append("choose", by="ann", line="gone",
               data={"key": "gone", "candidate": 1, "text": "the old words", "where": [0, 1, 1]})
    review = fold([line("new", "the new words")], log.entries())
    assert len(review.orphans) == 1
    assert "the text changed" in review.lines[0].stale and "the old words" in review.lines[0].stale
    assert review.lines[0].winner == 0  # not applied


def test_a_choice_of_a_take_not_kept_is_ignored(log):
    takes = (take(0), CandidateRecord(index=1, scores={}, passed=True, score=0.0))
    log.append("choose", by="ann", line="a", data={"key": "a", "candidate": 1})
    assert fold([line("a", takes=takes)], log.entries()).lines[0].winner == 0


def test_the_log_is_append_only(log, tmp_path):
    log.append("approve", by="ann", line="a", data={"key": "a"})
    with sqlite3.connect(tmp_path / "review" / "decisions.sqlite") as db:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute("UPDATE entries SET by = 'eve'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute("DELETE FROM entries")
    assert DecisionLog(tmp_path, create=False).entries()[0].by == "ann"


APPENDER = """
import sys
from verified_tts.review.decisions import DecisionLog
log = DecisionLog(sys.argv[1])
n = 0
while True:
    entry = log.append("choose", by="ann", line=f"l{n % 7}", data={"key": f"l{n % 7}",
                       "candidate": n % 3, "pad": "x" * 2000})
    print(entry.seq, flush=True)
    n += 1
"""


def test_a_kill_mid_append_loses_nothing_acknowledged(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", APPENDER, str(tmp_path)],
                             stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    acknowledged = []
    deadline = time.monotonic() + 120
    while len(acknowledged) < 40 and time.monotonic() < deadline:
        acknowledged.append(int(child.stdout.readline()))
    child.send_signal(signal.SIGKILL)  # mid-append: it was writing the next one
    child.wait()
    assert len(acknowledged) == 40
    entries = DecisionLog(tmp_path).entries()
    seqs = [e.seq for e in entries]
    assert set(acknowledged) <= set(seqs)
    assert seqs == list(range(1, len(seqs) + 1))  # whole rows only, in order
    with sqlite3.connect(tmp_path / "review" / "decisions.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_worst_first_and_reasons():
    clean = line("c", takes=(take(0, logprob=-0.05, worst=-1.0), take(1, logprob=-0.05)))
    near = line("n", takes=(take(0, worst=-6.5, token=" Sirrah", heard="Sarah"), take(1)),
                where=2, text="Sirrah, you insulted me.")  # fmt: skip
    failed = line("f", flagged=True, where=3,
                  takes=(take(0, ratio=1.5), take(1, ratio=1.6)))  # fmt: skip
    assert doubt(near, GATES) > doubt(clean, GATES)
    ranking = Ranking(GATES)
    review = fold([clean, near, failed], [])
    order = ranking.order(review.lines)
    assert order == [2, 1, 0]  # flagged, then the most doubtful, then the rest
    total, rows = ranking.rows(review.lines, order, show="flagged")
    assert total == 1 and rows[0]["reason"] == "reads 50% longer than expected"
    total, rows = ranking.rows(review.lines, order, query="sirrah")
    assert total == 1 and rows[0]["marked"] == [0, 6]
    reason = derived_reasons(near.candidates[0], GATES, near.text)[0]
    assert reason == {"kind": "unclear", "word": "Sirrah",
                      "text": "nearly fails: the word \u201cSirrah\u201d is unclear"}  # fmt: skip
    assert mark("He thus addressed him:", ":") == (21, 22)
    assert mark("Three Fables of Aesop", "es") == (6, 12)  # a token widened to its word
    recorded = line("r", takes=(CandidateRecord(index=0, scores={}, passed=False, score=0.0,
                    extra={"reasons": [{"kind": "unclear", "word": "x", "text": "said"}]}),))
    assert ranking.ranked(recorded).reason == "said"  # the verifiers' own words win


def test_every_shipped_gate_is_said_in_words():
    from verified_tts.options.selection import load_profile, profile_names
    from verified_tts.selection.dub_gates import dub_gates

    gates = {g for name in profile_names() for g in load_profile(name).policy.gates}
    gates |= {g for g in dub_gates().values() if g is not None}
    for gate in gates:
        bound = gate.min if gate.min is not None else gate.max
        value = bound - 1.0 if gate.min is not None else bound + 1.0
        failing = CandidateRecord(index=0, scores={gate.metric: value}, passed=False, score=0.0,
                                  detail={"transcript": "a line", "worst_token": " line"},
                                  failed_gates=(gate.metric,))  # fmt: skip
        (reason,) = derived_reasons(failing, [], "a line")
        assert gate.metric not in reason["text"], reason
