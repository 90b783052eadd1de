"""End-to-end renders of a small book with espeak (the fastest generator), default verifiers."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import CLI, ROOT
from verified_tts.selection.policy import round_targets
from verified_tts.storage.keys import candidate_seed
from verified_tts.workflows.render import render


def read_manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_render_writes_chapters_book_and_manifest(small_book, tmp_path, synthesizer_factory):
    out = tmp_path / "out"
    synthesizer = synthesizer_factory(candidates=2, adaptive=False)
    summary = render(small_book, out, synthesizer.config, synthesizer=synthesizer)
    manifest = read_manifest(out)

    assert manifest["generator"] == "espeak" and manifest["model"] == "espeak-ng:en-us"
    assert manifest["n"] == 2
    utterances = manifest["utterances"]
    # title + chapter heading + 2 sentences + chapter heading + 1 sentence
    assert [u["text"] for u in utterances][2:4] == [
        "The birch canoe slid on the smooth planks.",
        "Glue the sheet to the dark blue background.",
    ]
    assert manifest["stats"]["candidates_generated"] == 2 * len(utterances)
    assert manifest["stats"]["candidates_reused"] == 0
    assert manifest["selection"]["rounds"] == [2] and "stop" not in manifest["selection"]
    for utterance in utterances:
        assert len(utterance["candidates"]) == 2  # --no-adaptive: always N
        assert (out / utterance["audio"]).is_file()
        assert utterance["flagged"] == (not any(c["passed"] for c in utterance["candidates"]))
        first = utterance["candidates"][0]
        assert first["seed"] == candidate_seed(utterance["key"], 0)
        for candidate in utterance["candidates"]:
            assert {"wer", "asr_logprob", "duration_ratio"} <= set(candidate["scores"])
            assert (out / candidate["audio"]).is_file()
    assert manifest["verifiers"]["emotion"]["available"] is False
    assert "no model configured" in manifest["verifiers"]["emotion"]["reason"]

    chapters = manifest["chapters"]
    assert len(chapters) == 3  # the H1 title opens chapter 0, then "One" and "Two"
    book, rate = sf.read(out / manifest["book"]["wav"])
    flac, flac_rate = sf.read(out / manifest["book"]["flac"])
    assert rate == flac_rate == 22050 and len(book) == len(flac)
    chapter_seconds = sum(sf.info(str(out / c["wav"])).duration for c in chapters)
    assert abs(len(book) / rate - manifest["book"]["duration_s"]) < 0.01
    assert len(book) / rate > 0.8 * chapter_seconds
    assert summary.utterances == len(utterances)
    # the summary counts the manifest's flags, and a winner that passed is never flagged
    assert summary.flagged == sum(u["flagged"] for u in utterances)
    assert all(u["candidates"][u["winner"]]["passed"] for u in utterances if not u["flagged"])
    assert summary.passed_share == pytest.approx(1 - summary.flagged / len(utterances), abs=1e-4)


def test_rerun_reuses_everything_and_an_edit_rerenders_only_itself(
    small_book, tmp_path, synthesizer_factory
):
    out = tmp_path / "out"
    first = synthesizer_factory(candidates=2)
    render(small_book, out, first.config, synthesizer=first)
    before = read_manifest(out)

    again = synthesizer_factory(candidates=2)
    render(small_book, out, again.config, synthesizer=again)
    after = read_manifest(out)
    assert after["stats"]["candidates_generated"] == 0
    assert after["stats"]["utterances_reused"] == len(after["utterances"])
    assert [u["winner"] for u in after["utterances"]] == [u["winner"] for u in before["utterances"]]

    small_book.write_text(
        small_book.read_text().replace("dark blue background", "dark red background")
    )
    edited = synthesizer_factory(candidates=2)
    render(small_book, out, edited.config, synthesizer=edited)
    manifest = read_manifest(out)
    changed = [u for u in manifest["utterances"] if not u["reused"]]
    assert [u["text"] for u in changed] == ["Glue the sheet to the dark red background."]
    assert manifest["stats"]["candidates_generated"] == len(changed[0]["candidates"])


def test_a_reused_synthesizer_reports_each_render_on_its_own(
    small_book, tmp_path, synthesizer_factory
):
    synthesizer = synthesizer_factory(candidates=2, adaptive=False)
    render(small_book, tmp_path / "one", synthesizer.config, synthesizer=synthesizer)
    second = render(small_book, tmp_path / "two", synthesizer.config, synthesizer=synthesizer)
    manifest = read_manifest(tmp_path / "two")
    # the second folder starts empty: its own takes, counted once, not the first render's too
    assert manifest["stats"]["candidates_generated"] == 2 * len(manifest["utterances"])
    assert second.candidates_generated == manifest["stats"]["candidates_generated"]


def test_adaptive_samples_no_more_than_n_and_winners_only_drops_audio(
    small_book, tmp_path, synthesizer_factory
):
    out = tmp_path / "out"
    synthesizer = synthesizer_factory(candidates=4, keep="winners")
    render(small_book, out, synthesizer.config, synthesizer=synthesizer)
    manifest = read_manifest(out)
    counts = [len(u["candidates"]) for u in manifest["utterances"]]
    targets = round_targets(4, synthesizer.config.selection)
    assert all(c in targets for c in counts)
    policy = synthesizer.config.selection
    assert manifest["selection"]["rounds"] == list(targets)  # what the render stopped by
    assert manifest["selection"]["stop"] == policy.stop
    assert manifest["selection"]["stop_gain"] == policy.stop_gain
    assert manifest["stats"]["candidates_generated"] == sum(counts)
    for utterance in manifest["utterances"]:
        kept = [c for c in utterance["candidates"] if "audio" in c]
        assert [c["index"] for c in kept] == [utterance["winner"]]
        assert (out / utterance["audio"]).is_file()
    assert len(list((out / "store" / "audio").glob("*.flac"))) == len(manifest["utterances"])


def test_cli_render_killed_midway_resumes_without_regenerating(small_book, tmp_path):
    out = tmp_path / "out"
    config = tmp_path / "small-window.toml"
    config.write_text("window = 1\n")  # decisions land one by one, so there is a middle to hit
    command = [
        *CLI,
        "render",
        str(small_book),
        "--out",
        str(out),
        "-n",
        "2",
        "--no-adaptive",
        "--config",
        str(config),
    ]
    # Ctrl-C as a terminal delivers it: a suite started in the background (`make test &`) hands
    # its children SIGINT ignored, and a process that starts with it ignored never sees it
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    index = out / "store" / "index.sqlite"
    deadline = time.monotonic() + 120
    decided = 0
    while time.monotonic() < deadline and process.poll() is None:
        if index.exists():
            try:
                with sqlite3.connect(index) as db:
                    decided = db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
            except sqlite3.OperationalError:
                decided = 0
            if decided >= 2:
                break
        time.sleep(0.2)
    assert process.poll() is None, "the render finished before it could be interrupted"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr.decode()
    assert b"run the same command again to resume" in stderr
    assert b"Traceback" not in stderr

    resumed = subprocess.run(command, cwd=ROOT, capture_output=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()
    manifest = read_manifest(out)
    assert manifest["stats"]["utterances_reused"] >= 2
    total = sum(len(u["candidates"]) for u in manifest["utterances"])
    assert manifest["stats"]["candidates_generated"] <= total - 4
    assert (
        manifest["stats"]["candidates_generated"] + manifest["stats"]["candidates_reused"] == total
    )
    audio, _ = sf.read(out / "book.wav")
    assert np.max(np.abs(audio)) > 0.05


def test_emotion_directive_is_scored_and_unknown_label_fails_first(tmp_path):
    from tests.emotion_model import build_emotion_model
    from verified_tts.config import build_config
    from verified_tts.errors import UserError

    model = build_emotion_model(tmp_path / "emotion", {0: "neutral", 1: "happy", 2: "sad"})
    book = tmp_path / "feelings.md"
    book.write_text(
        "# Feelings\n\n<!-- tts: emotion=sad -->\nThe rain fell all day.\n\n"
        "<!-- tts: emotion=none -->\nThen the sun came out.\n"
    )
    table = {"verifiers": {"emotion": {"model": str(model)}}}
    config = build_config(table, candidates=2, adaptive=False)
    render(book, tmp_path / "out", config)
    manifest = read_manifest(tmp_path / "out")
    assert manifest["verifiers"]["emotion"]["available"] is True
    by_text = {u["text"]: u for u in manifest["utterances"]}
    sad = by_text["The rain fell all day."]
    assert sad["emotion"] == "sad"
    assert all(0.0 <= c["scores"]["emotion"] <= 1.0 for c in sad["candidates"])
    assert all(
        "emotion" not in c["scores"] for c in by_text["Then the sun came out."]["candidates"]
    )

    book.write_text("# Feelings\n\n<!-- tts: emotion=whimsical -->\nThe rain fell all day.\n")
    with pytest.raises(UserError, match="whimsical"):
        render(book, tmp_path / "out2", config)
    assert not (tmp_path / "out2" / "store" / "audio").exists() or not any(
        (tmp_path / "out2" / "store" / "audio").iterdir()
    )
