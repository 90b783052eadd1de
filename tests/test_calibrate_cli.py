"""``verified-tts calibrate`` end to end on the embedded espeak generator, and its bad inputs."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace

import pytest

from tests.conftest import CLI, ROOT
from tests.test_cli_errors import assert_clean_error
from verified_tts.calibration.analysis import FIXED_SIDES
from verified_tts.config import build_config, read_config_file
from verified_tts.selection.policy import SelectionPolicy, judge
from verified_tts.workflows.calibrate import CalibrateOptions, reanalyse


def run_cli(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def test_bad_inputs_get_one_line(tmp_path):
    assert_clean_error(run_cli("calibrate", "--faults", "skip,wobble"), "wobble", "choose from")
    assert_clean_error(run_cli("calibrate", "--false-alarm", "0"), "--false-alarm", "between 0")
    assert_clean_error(run_cli("calibrate", "--false-alarm", "1.5"), "--false-alarm")
    empty = tmp_path / "empty.md"
    empty.write_text("")
    assert_clean_error(run_cli("calibrate", str(empty)), "empty")
    code = tmp_path / "code.md"
    code.write_text("```\nprint('hi')\n```\n")
    assert_clean_error(run_cli("calibrate", str(code)), "code.md", "nothing to read")
    headings = tmp_path / "headings.md"
    headings.write_text("# Title\n\n## One\n\nHi.\n")
    assert_clean_error(run_cli("calibrate", str(headings)), "headings.md", "fewer than 2")
    assert_clean_error(run_cli("calibrate", str(tmp_path / "missing.md")), "does not exist")


@pytest.mark.slow
def test_calibrate_small_run_writes_json_html_and_usable_gates(tmp_path):
    out = tmp_path / "cal"
    result = run_cli(
        "calibrate", "--generator", "espeak", "--sentences", "3", "-n", "4",
        "--faults", "skip,repeat,truncate,silence,voice", "--out", str(out), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads((out / "calibrate.json").read_text())
    assert data["generator"]["name"] == "espeak" and data["utterances"] == 3
    assert data["false_alarm_target"] == 0.05
    assert data["clean"]["cases"] == 12
    kinds = [f["kind"] for f in data["faults"]]
    assert kinds == ["skip", "repeat", "truncate", "silence", "voice"]
    # Every share is the share of the kept cases that its policy rejects: recomputed here from
    # the cases' metrics, under the default gates and under the recommended ones (gates.toml).
    recommended_policy = build_config(read_config_file(out / "gates.toml")).selection
    default_policy = build_config({}).selection  # the packed profile's, as calibrate scored

    def rejected(kind: str, policy: SelectionPolicy) -> float:
        group = [c for c in data["cases"] if c["kind"] == kind]
        return sum(not judge(c["metrics"], policy).passed for c in group) / len(group)

    assert data["clean"]["false_alarm"] == rejected("clean", default_policy)
    # the recommendation spends at most the target (5% of 12 clean cases is none of them) beyond
    # what the gates it keeps as configured reject on their own (a mushy espeak take can fail
    # the word error gate)
    assert data["clean"]["false_alarm_recommended"] == rejected("clean", recommended_policy)
    kept = {side.metric for side in FIXED_SIDES}
    kept_only = replace(default_policy, gates=tuple(
        g for g in default_policy.gates if g.metric in kept))  # fmt: skip
    assert data["clean"]["false_alarm_recommended"] <= max(
        data["false_alarm_target"], rejected("clean", kept_only)
    )
    for fault in data["faults"]:
        assert fault["cases"] == 3
        assert {"recall", "recall_at_target", "auc", "best_metric"} <= set(fault)
        assert fault["recall"] == rejected(fault["kind"], default_policy)
        assert fault["recall_at_target"] == rejected(fault["kind"], recommended_policy)
    # faults the signal check sees by construction: a cut ending and 1.5 s+ of silence
    by_kind = {f["kind"]: f for f in data["faults"]}
    assert by_kind["silence"]["recall"] == 1.0  # current gate: max_internal_silence_s <= 1.5
    # ... and so do the recommended gates, which keep that physical limit as it is
    assert by_kind["silence"]["recall_at_target"] == 1.0
    assert by_kind["truncate"]["auc"] > 0.9
    points = {(s["p"], s["n"], s["gates"]) for s in data["selection"]}
    assert {(p, n, g) for p in (0.1, 0.3, 0.5) for n in (1, 2, 4)
            for g in ("current", "recommended")} == points  # fmt: skip
    for s in data["selection"]:
        if s["n"] == 1:  # one candidate is the winner whatever the gates say
            assert s["faulted_winners"] == pytest.approx(s["p"], abs=0.1)
    # the new metrics are measured
    names = {m["metric"] for m in data["metrics"]}
    assert {"asr_insertions", "speech_ratio", "speaker", "max_internal_silence_s"} <= names
    html = (out / "calibrate.html").read_text()
    assert "<svg" in html and "ROC: skip" in html and "<audio" in html
    for example in data["examples"]:
        assert (out / example["audio"]).is_file() and (out / example["clean_audio"]).is_file()
    # the scored cases are kept: the same analysis comes back from them alone
    kinds = tuple(f["kind"] for f in data["faults"])
    again = reanalyse(data, default_policy, CalibrateOptions(kinds=kinds, candidates=4))
    for before, after in zip(data["faults"], again["faults"], strict=True):
        assert before["recall"] == after["recall"]
        assert before["recall_at_target"] == after["recall_at_target"]
    assert again["selection"] == data["selection"]
    # gates.toml is a config that render accepts, and it carries the recommended gates
    config = build_config(read_config_file(out / "gates.toml"))
    recommended = {g["metric"]: g for g in data["gates"]["recommended"]}
    assert {g.metric for g in config.selection.gates} == set(recommended)
    for gate in config.selection.gates:
        assert gate.min == recommended[gate.metric]["min"]
        assert gate.max == recommended[gate.metric]["max"]


@pytest.mark.slow
def test_calibrate_on_subtitles_fits_dub_gates_and_says_what_short_lines_cannot_carry(tmp_path):
    subtitles = tmp_path / "cues.srt"
    subtitles.write_text(
        "1\n00:00:01,000 --> 00:00:02,000\nScales!\n\n"
        "2\n00:00:03,000 --> 00:00:04,200\nHow much?\n\n"
        "3\n00:00:05,000 --> 00:00:07,500\nYou are closer than you know.\n\n"
        "4\n00:00:08,000 --> 00:00:10,000\nGet him, Scales! Come on!\n",
        encoding="utf-8",
    )
    out = tmp_path / "cal"
    result = run_cli(
        "calibrate", str(subtitles), "--generator", "espeak", "-n", "3",
        "--faults", "skip,repeat,truncate,voice", "--out", str(out), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "not injected: skip on 1 line(s)" in result.stderr  # the CLI reports on stderr
    data = json.loads((out / "calibrate.json").read_text())
    assert data["input_kind"] == "subtitles" and data["utterances"] == 4
    short = data["short_lines"]
    assert short["utterances"] == 3 and short["max_words"] == 5
    assert short["cannot_carry"]["skip"]["lines"] == 1  # "Scales!": no word to leave out
    assert short["cannot_carry"]["repeat"]["lines"] == 2  # one- and two-word lines
    assert short["recall"]["truncate"]["cases"] == 3 and short["recall"]["voice"]["cases"] == 3
    # every clip was scored against its cue's slot, under the dub's stretch gate
    assert all("stretch" in c["metrics"] for c in data["cases"])
    assert any(g["metric"] == "stretch" for g in data["gates"]["current"])
    # espeak gives no length of its own: the text's duration model is fitted and written out
    model = data["duration_model"]["options"]
    assert model["reading_rate_chars_per_s"] > 0 and "expected_exclamation_s" in model
    config = build_config(read_config_file(out / "gates.toml"))
    assert config.verifiers.signal.expected_intercept_s == model["expected_intercept_s"]
    assert any(g.metric == "stretch" for g in config.selection.gates)


PLAIN = """CHAPTER I.

The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.

CHAPTER II.

"It's easy to tell the depth of a well," she said: "these days a chicken leg is a rare dish."

Rice is often served in round bowls. The juice of lemons makes fine punch.
"""


def test_calibrate_takes_a_plain_text_book_and_its_chapters(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text(PLAIN, encoding="utf-8")
    assert_clean_error(run_cli("calibrate", str(book), "--chapters", "3"), "chapters 1-2")
    out = tmp_path / "cal"
    result = run_cli(
        "calibrate", str(book), "--chapters", "2", "--generator", "espeak", "--sentences", "2",
        "-n", "2", "--faults", "skip,silence", "--out", str(out), timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads((out / "calibrate.json").read_text())
    assert data["input"] == str(book) and data["utterances"] == 2
    assert data["options"]["chapters"] == "2"
    # every case carries the takes-compared worst token, and a lone clean take's is its own
    assert all("asr_min_take_logprob" in case["metrics"] for case in data["cases"])
