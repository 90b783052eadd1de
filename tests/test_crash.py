"""A hard kill (SIGKILL) of a local render inside a store write, inside assembly and inside report
writing, resumed each time: nothing finished is recomputed, the outputs are byte-identical to an
uninterrupted render's, and the store passes the doctor's integrity check. The 20-kill version with
kills at random moments is benchmarks/distributed/reliability.py."""

from __future__ import annotations

import signal

import crashkit
import pytest

from verified_tts.workflows.doctor import check_store

ARGS = ["render", "{book}", "--out", "{out}", "--generator", "espeak", "-n", "3"]


def _args(book, out) -> list[str]:
    return [a.format(book=book, out=out) for a in ARGS]


# What a kill may leave that nothing trusts: a writer's temporary file, a FLAC whose row was not
# committed yet (the resumed run writes the same file again), the manifest not yet written.
IN_FLIGHT = ("temporary file", "has no row in the index", "manifest.json is missing")


def integrity_problems(out, allowed: tuple[str, ...] = ("temporary file",)) -> list[str]:
    """The doctor's findings, less the kinds in ``allowed``."""
    return [p for p in check_store(out).problems if not any(a in p for a in allowed)]


@pytest.mark.slow
def test_sigkill_in_store_write_assembly_and_report_then_resume_is_identical(small_book, tmp_path):
    reference_log = tmp_path / "reference.log"
    reference = crashkit.run(_args(small_book, tmp_path / "reference"), reference_log)
    assert reference.returncode == 0, reference.stderr
    expected = crashkit.fingerprint(tmp_path / "reference")
    candidates = len(crashkit.committed(reference_log))
    after_candidates = (
        crashkit.writes(reference_log) - candidates
    )  # chapters, book, manifest, report
    assert after_candidates >= 4

    out, log = tmp_path / "out", tmp_path / "killed.log"

    def remaining() -> int:
        return candidates - len(set(crashkit.committed(log)))

    kills = [
        lambda: "row:2",  # FLAC in the store, its row not committed
        lambda: f"write:{remaining() + 1}",  # the first chapter file of assembly
        lambda: f"write:{remaining() + after_candidates}",  # report.html, the last write
    ]
    for kill in kills:
        at = kill()
        run = crashkit.run(_args(small_book, out), log, at)
        assert run.returncode == -signal.SIGKILL, (at, run.stderr[-2000:])
        assert integrity_problems(out, IN_FLIGHT) == [], at
    final = crashkit.run(_args(small_book, out), log)
    assert final.returncode == 0, final.stderr
    keys = crashkit.committed(log)
    assert len(keys) == len(set(keys)), "a committed candidate was generated again"
    assert len(keys) == candidates
    assert crashkit.fingerprint(out) == expected
    # the killed writes' temporary files too are gone once a run finishes
    assert integrity_problems(out, allowed=()) == []


@pytest.mark.slow
def test_packed_scoring_resumes_to_the_same_winners(small_book, tmp_path):
    # With packing a clip's Whisper scores depend on the clips that share its window, so a
    # resumed run that scored the unfinished utterances' candidates again (in other windows)
    # picked other winners (3 of 27 in a Piper render). The store keeps every round's scores.
    config = tmp_path / "packed.toml"
    config.write_text("[verifiers.wer]\npacking = true\n", encoding="utf-8")

    def args(out):
        return [*_args(small_book, out), "--config", str(config)]

    reference = crashkit.run(args(tmp_path / "reference"), tmp_path / "reference.log")
    assert reference.returncode == 0, reference.stderr
    out, log = tmp_path / "out", tmp_path / "killed.log"
    for at in ("decision:2", "row:3"):  # mid-window: rounds scored, decisions still to come
        run = crashkit.run(args(out), log, at)
        assert run.returncode == -signal.SIGKILL, (at, run.stderr[-2000:])
    final = crashkit.run(args(out), log)
    assert final.returncode == 0, final.stderr
    assert crashkit.fingerprint(out) == crashkit.fingerprint(tmp_path / "reference")
    assert integrity_problems(out, allowed=()) == []
