"""The job queue: specs and records on their own, then real jobs on a real local Ray cluster.

The ``ray`` tests share the session's cluster (``SharedCluster`` in ``test_ray_backend.py``) and
drive it through the CLI with ``--json``: a render job of a 3-sentence book at N=2 whose winners
equal a local run's, a duplicate refused, the concurrent-job limit and cancel, an actor killed
mid-job, and a cluster restart that keeps the record and lets the job resume from its store.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from test_ray_backend import SharedCluster, actor_pids
from typer.testing import CliRunner

from jobs.records import JobRecords
from jobs.spec import JobSpec, build_spec
from verified_tts.errors import UserError

# The local run these jobs are compared with renders with espeak (tests/conftest.py), and the job
# tests are about the queue, not the voice: render with the fast generator.
ESPEAK = ("--generator", "espeak")

BOOK = """# Three Sentences

## One

The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.

## Two

It's easy to tell the depth of a well.
"""

LONG_BOOK = "# Long\n\n" + " ".join(
    f"Sentence number {i} walks slowly across the quiet field at dawn." for i in range(40)
)


@pytest.fixture
def book(tmp_path: Path) -> Path:
    path = tmp_path / "book.md"
    path.write_text(BOOK, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------
# without a cluster


def test_spec_id_is_the_hash_of_the_work_and_files_travel(tmp_path, book):
    config = tmp_path / "settings.toml"
    config.write_text("candidates = 2\n", encoding="utf-8")
    spec, files = build_spec("render", book, ["-n", "2", "--config", str(config)], str(tmp_path))
    again, _ = build_spec("render", book, ["-n", "2", f"--config={config}"], str(tmp_path))
    assert spec.job_id == again.job_id and spec.job_id.startswith("vtts-render-")
    assert spec.args == ("-n", "2", "--config", "input/config-settings.toml")
    assert set(files) == {"book.md", "config-settings.toml"}
    assert spec.argv()[:2] == ["render", "input/book.md"] and spec.argv()[-2:] == ["--ray", "auto"]
    assert JobSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec

    book.write_text(BOOK + "\nOne more line.\n", encoding="utf-8")
    edited, _ = build_spec("render", book, ["-n", "2", "--config", str(config)], str(tmp_path))
    assert edited.job_id != spec.job_id  # another input is another job
    with pytest.raises(UserError, match="--ray is set by the job queue"):
        build_spec("render", book, ["--ray", "auto"], None)
    with pytest.raises(UserError, match="does not exist"):
        build_spec("render", tmp_path / "missing.md", [], None)


def _read_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A tiny Piper voice (with its .onnx.json), a lexicon, and a config naming both by
    relative paths, as a user in ``tmp_path`` writes them."""
    from tests.piper_fixtures import build_tiny_voice

    (tmp_path / "voices").mkdir()
    build_tiny_voice(tmp_path / "voices", speakers={})
    lexicon = tmp_path / "words.toml"
    lexicon.write_text('[words]\nbirch = "burch"\n', encoding="utf-8")
    config = tmp_path / "settings.toml"
    config.write_text(
        '[generator]\nname = "piper"\nmodel = "voices/tiny.onnx"\n'
        '[production]\nlexicon = "words.toml"\n',
        encoding="utf-8",
    )
    return tmp_path / "voices" / "tiny.onnx", lexicon, config


def test_every_file_a_job_reads_travels_and_its_contents_make_the_id(tmp_path, book, monkeypatch):
    import tomllib

    monkeypatch.chdir(tmp_path)
    voice, lexicon, config = _read_files(tmp_path)
    args = ["--model", "voices/tiny.onnx", "--lexicon=words.toml", "--config", "settings.toml"]
    spec, files = build_spec("render", book, args, "out")
    assert spec.args == (
        "--model", "input/model-tiny.onnx", "--lexicon", "input/lexicon-words.toml",
        "--config", "input/config-settings.toml",
    )  # fmt: skip
    assert set(files) == {
        "book.md", "model-tiny.onnx", "model-tiny.onnx.json", "lexicon-words.toml",
        "config-settings.toml", "generator.model-tiny.onnx", "generator.model-tiny.onnx.json",
        "production.lexicon-words.toml",
    }  # fmt: skip
    staged = tomllib.loads(files["config-settings.toml"].decode("utf-8"))
    assert staged["generator"]["model"] == "input/generator.model-tiny.onnx"
    assert staged["production"]["lexicon"] == "input/production.lexicon-words.toml"
    assert {name for name, _ in spec.files} == set(files)
    # a model that is not a file (a hub id, a folder) is passed on as it is
    hub, _ = build_spec("render", book, ["--model", "org/some-model"], "out")
    assert hub.args == ("--model", "org/some-model")

    ids = {spec.job_id}
    sidecar = voice.with_name("tiny.onnx.json")
    louder = {**json.loads(sidecar.read_text(encoding="utf-8")), "inference": {"noise_scale": 0.5}}
    named_by_config = tmp_path / "words.toml"
    for path, text in (
        (lexicon, '[words]\nbirch = "berch"\n'),  # named by --lexicon and by the config
        (sidecar, json.dumps(louder)),  # travels beside the model
        (named_by_config, '[words]\ncanoe = "kanoo"\n'),
    ):
        path.write_text(text, encoding="utf-8")
        again, _ = build_spec("render", book, args, "out")
        assert again.job_id not in ids  # a changed file is another job
        ids.add(again.job_id)


def test_records_keep_history_and_mark_lost_jobs(tmp_path, book):
    spec, _ = build_spec("render", book, ["-n", "2"], str(tmp_path / "out"))
    with JobRecords.open(tmp_path) as records:
        records.create(spec, spec.job_id, "http://127.0.0.1:1")
        records.set_state(spec.job_id, "RUNNING", "running")
    with JobRecords.open(tmp_path) as records:  # a new process, the same records
        assert records.mark_unfinished_lost("the cluster was stopped") == [spec.job_id]
        record = records.get(spec.job_id)
        assert [h.state for h in record.history] == ["PENDING", "RUNNING", "FAILED"]
        assert "jobs resume" in record.message
        resumed = records.new_attempt(spec.job_id, f"{spec.job_id}-2", "http://127.0.0.1:2")
        assert (resumed.state, resumed.attempts) == ("PENDING", 2)
        assert [r.id for r in records.find("vtts-render")] == [spec.job_id]


# ------------------------------------------------------------------------------------------------
# on a real local cluster

runner = CliRunner()


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    state_dir = SharedCluster.acquire(tmp_path_factory)  # shared with test_ray_backend.py
    yield state_dir
    SharedCluster.release()


def cli(state_dir: Path, *args: str, ok: bool = True) -> dict | list:
    from verified_tts.cli import app

    result = runner.invoke(app, [*args, "--json", "--state-dir", str(state_dir)])
    assert (result.exit_code == 0) == ok, result.stdout
    return json.loads(result.stdout.strip().splitlines()[-1])


TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def wait_for(state_dir: Path, job_id: str, states: tuple[str, ...]) -> dict:
    """Poll until the job is in one of ``states``. No deadline of its own: a shared 2-core
    machine may take any time, a job always ends, and pytest-timeout (the ray tests' mark) stops
    a real hang. A job that ends in another state fails at once, with its log."""
    while True:
        status = cli(state_dir, "jobs", "status", job_id)
        if status["state"] in states:
            return status
        if status["state"] in TERMINAL:
            logs = cli(state_dir, "jobs", "logs", job_id)["logs"]
            raise AssertionError(f"{job_id} ended {status['state']}; log:\n{logs[-3000:]}")
        time.sleep(0.5)


def wait_until(predicate) -> None:
    """Poll ``predicate`` without a deadline of its own (see :func:`wait_for`)."""
    while not predicate():
        time.sleep(0.3)


def winners(manifest: Path) -> list[tuple[str, int, list[int]]]:
    data = json.loads(manifest.read_text(encoding="utf-8"))
    return [
        (u["key"], u["winner"], [c["seed"] for c in u["candidates"]]) for u in data["utterances"]
    ]


@pytest.fixture(scope="module")
def local_winners(tmp_path_factory, synthesizer_factory):
    """The same book and seeds rendered in-process, without Ray."""
    from verified_tts.workflows.render import render

    folder = tmp_path_factory.mktemp("local")
    path = folder / "book.md"
    path.write_text(BOOK, encoding="utf-8")
    synthesizer = synthesizer_factory()
    render(path, folder / "out", synthesizer.config, synthesizer=synthesizer)
    return winners(folder / "out" / "manifest.json")


@pytest.mark.ray
@pytest.mark.timeout(1800)
def test_render_job_matches_a_local_run_and_a_duplicate_is_refused(
    ray_cluster, book, tmp_path, local_winners
):
    out = tmp_path / "job-out"
    args = ("jobs", "submit", "render", str(book), *ESPEAK, "-n", "2", "--out", str(out))
    submitted = cli(ray_cluster, *args)
    job_id = submitted["id"]
    assert submitted["state"] == "PENDING" and submitted["output"] == str(out)

    again = cli(ray_cluster, *args, ok=False)
    assert again["id"] == job_id and "already submitted" in again["error"]

    status = wait_for(ray_cluster, job_id, ("SUCCEEDED", "FAILED", "STOPPED"))
    assert status["state"] == "SUCCEEDED", cli(ray_cluster, "jobs", "logs", job_id)["logs"]
    assert [h["state"] for h in status["history"]][-1] == "SUCCEEDED"
    assert winners(out / "manifest.json") == local_winners

    listed = cli(ray_cluster, "jobs", "list")
    assert isinstance(listed, list) and job_id in [j["id"] for j in listed]
    logs = cli(ray_cluster, "jobs", "logs", job_id)
    assert "connected to Ray" in logs["logs"] and "manifest" in logs["logs"]

    # Its output deleted, the same spec runs again (and says so) instead of being refused.
    refused = cli(ray_cluster, "jobs", "resume", job_id, ok=False)
    assert "already SUCCEEDED" in refused["error"] and "delete that folder" in refused["error"]
    shutil.rmtree(out)
    rerun = cli(ray_cluster, *args)
    assert rerun["id"] == job_id and rerun["attempts"] == 2
    assert "was deleted" in rerun["message"]
    status = wait_for(ray_cluster, job_id, ("SUCCEEDED",))
    assert winners(out / "manifest.json") == local_winners


@pytest.mark.ray
@pytest.mark.timeout(1800)
def test_a_job_finds_every_file_its_options_and_config_name(
    ray_cluster, book, tmp_path, monkeypatch
):
    # relative paths from the submitter's folder, and the originals gone once it is queued: the
    # job can only read what it carried
    monkeypatch.chdir(tmp_path)
    voice, lexicon, config = _read_files(tmp_path)
    out = tmp_path / "carried"
    job_id = cli(ray_cluster, "jobs", "submit", "render", str(book), "--config", "settings.toml",
                 "--lexicon", "words.toml", "-n", "2", "--out", str(out))["id"]  # fmt: skip
    shutil.rmtree(tmp_path / "voices")
    lexicon.unlink()
    config.unlink()
    status = wait_for(ray_cluster, job_id, ("SUCCEEDED",))
    assert status["state"] == "SUCCEEDED"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["generator"] == "piper" and manifest["model"] == "generator.model-tiny"
    assert manifest["config"]["generator"]["model"] == "input/generator.model-tiny.onnx"
    assert manifest["production"]["lexicon"] == "input/lexicon-words.toml"
    birch = next(u for u in manifest["utterances"] if "birch" in u["text"])
    assert birch["lexicon"] and "burch" in birch["spoken"]


@pytest.mark.ray
@pytest.mark.timeout(1800)
def test_concurrent_job_limit_keeps_the_rest_pending_and_cancel_stops(ray_cluster, tmp_path):
    long_book = tmp_path / "long.md"
    long_book.write_text(LONG_BOOK, encoding="utf-8")
    first = cli(ray_cluster, "jobs", "submit", "render", str(long_book), *ESPEAK, "-n", "4",
                "--out", str(tmp_path / "a"))["id"]  # fmt: skip
    wait_for(ray_cluster, first, ("RUNNING",))
    second = cli(ray_cluster, "jobs", "submit", "render", str(long_book), *ESPEAK, "-n", "4",
                 "--out", str(tmp_path / "b"))["id"]  # fmt: skip
    # The cluster allows one job at a time. No fixed sleep: every poll while the first runs must
    # see the second waiting, then cancelling the first must let the second start.
    for _ in range(5):
        assert cli(ray_cluster, "jobs", "status", second)["state"] == "PENDING"
        assert cli(ray_cluster, "jobs", "status", first)["state"] == "RUNNING"
    assert cli(ray_cluster, "jobs", "cancel", first)["state"] == "STOPPED"
    wait_for(ray_cluster, second, ("RUNNING",))
    assert cli(ray_cluster, "jobs", "cancel", second)["state"] == "STOPPED"
    refused = cli(ray_cluster, "jobs", "cancel", first, ok=False)
    assert "already STOPPED" in refused["error"]


@pytest.mark.ray
@pytest.mark.timeout(1800)
def test_a_killed_verifier_actor_comes_back_and_the_job_succeeds(
    ray_cluster, book, tmp_path, local_winners
):
    out = tmp_path / "killed"
    job_id = cli(ray_cluster, "jobs", "submit", "render", str(book), *ESPEAK, "-n", "2",
                 "--out", str(out))["id"]  # fmt: skip
    state = SharedCluster.state()

    def loaded() -> bool:  # every actor is up once the last pool is announced
        return "verifier speaker: pool" in cli(ray_cluster, "jobs", "logs", job_id)["logs"]

    wait_until(loaded)
    # the job's WER pool is a warm set (the cluster keeps verifiers loaded between jobs): its
    # log names the set, and the actor's Ray name is the set's
    logs = cli(ray_cluster, "jobs", "logs", job_id)["logs"]
    key, slot = re.search(r"verifier wer: pool of 1, .*\(warm set (\w+) slot (\d+)", logs).groups()
    (pid,) = actor_pids(state.dashboard_url, f"wer-{key}-{slot}-0")
    os.kill(pid, signal.SIGKILL)

    status = wait_for(ray_cluster, job_id, ("SUCCEEDED", "FAILED", "STOPPED"))
    logs = cli(ray_cluster, "jobs", "logs", job_id)["logs"]
    assert status["state"] == "SUCCEEDED", logs
    assert "verifier wer actor 0 was restarted" in logs
    assert winners(out / "manifest.json") == local_winners  # nothing lost, nothing changed


@pytest.mark.ray
@pytest.mark.timeout(1800)
def test_records_survive_a_cluster_restart_and_a_lost_job_resumes(
    ray_cluster, book, tmp_path, local_winners
):
    from verified_tts.cluster import head as cluster
    from verified_tts.cluster import ray_backend

    out = tmp_path / "restarted"
    job_id = cli(ray_cluster, "jobs", "submit", "render", str(book), *ESPEAK, "-n", "2",
                 "--out", str(out))["id"]  # fmt: skip
    # let it store some candidates, then kill the head and everything it started (as a crash of
    # the head machine would), with no chance to mark its jobs: the queue must notice on its own
    wait_until(lambda: any((out / "store").rglob("*.flac")))
    state = SharedCluster.state()
    # a test before this one may have made this process a driver of the cluster (the Ray backend
    # tests connect in-process); Ray ends a driver whose head is gone, and this process is pytest
    ray_backend.disconnect()
    os.killpg(state.pid, signal.SIGKILL)
    wait_until(lambda: not state.alive())
    cluster.up(
        directory=ray_cluster,
        num_cpus=state.num_cpus,
        object_store_mb=state.object_store_mb,
        max_jobs=state.max_jobs,
    )

    listed = {j["id"]: j for j in cli(ray_cluster, "jobs", "list")}
    assert listed[job_id]["state"] == "FAILED" and "lost" in listed[job_id]["message"]
    resumed = cli(ray_cluster, "jobs", "resume", job_id)
    assert resumed["attempts"] == 2 and resumed["submission_id"] == f"{job_id}-2"
    status = wait_for(ray_cluster, job_id, ("SUCCEEDED", "FAILED", "STOPPED"))
    assert status["state"] == "SUCCEEDED", cli(ray_cluster, "jobs", "logs", job_id)["logs"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    reused = manifest["stats"]["candidates_reused"] + manifest["stats"]["utterances_reused"]
    assert reused > 0  # continued from the store, not from scratch
    assert winners(out / "manifest.json") == local_winners
