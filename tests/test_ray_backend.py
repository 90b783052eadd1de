"""The Ray backend: proxies give the local results, a killed actor comes back, Ray stays optional.

The tests marked ``ray`` share one real local cluster per test session (started by
:class:`SharedCluster`, also used by ``test_jobs.py``): 3 CPUs, a 200 MB object store, the
dashboard for the Jobs API, everything on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from verified_tts.cluster.ray_actors import split_chunks as _split
from verified_tts.cluster.ray_backend import import_ray, resolve_address
from verified_tts.config import RayOptions, build_config
from verified_tts.errors import MissingExtra, UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.storage.keys import candidate_seed


class SharedCluster:
    """One local head for the whole session, whichever Ray test file asks first."""

    state_dir: Path | None = None
    users = 0

    @classmethod
    def acquire(cls, tmp_path_factory: pytest.TempPathFactory) -> Path:
        import ray  # noqa: F401  (the ray extra is part of the test install: missing, this fails)

        from verified_tts.cluster import head as cluster

        if cls.state_dir is None:
            cls.state_dir = tmp_path_factory.mktemp("ray-cluster")
            cluster.up(directory=cls.state_dir, num_cpus=3, object_store_mb=200, max_jobs=1)
        cls.users += 1
        return cls.state_dir

    @classmethod
    def release(cls) -> None:
        cls.users -= 1
        if cls.users == 0:
            cls.end()

    @classmethod
    def end(cls) -> None:
        """Stop the cluster now (tests/conftest.py: after the last test that uses it)."""
        if cls.state_dir is not None:
            from verified_tts.cluster import head as cluster
            from verified_tts.cluster.ray_backend import disconnect

            disconnect()
            cluster.down(cls.state_dir)
            cls.state_dir = None

    @classmethod
    def state(cls):  # -> ClusterState (re-read: a test may restart the cluster)
        from verified_tts.cluster.head import read_state

        state = read_state(cls.state_dir)
        assert state is not None and state.alive()
        return state


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    state_dir = SharedCluster.acquire(tmp_path_factory)
    yield state_dir
    SharedCluster.release()


def actor_pids(dashboard: str, name: str) -> list[int]:
    """Pids of the live actors whose repr or Ray name is ``name`` (e.g. 'VerifierActor(wer)', or
    a warm verifier's 'wer-KEY-0-0')."""
    from ray.util.state import list_actors

    actors = list_actors(
        address=dashboard,
        filters=[("state", "=", "ALIVE")],
        detail=True,
        raise_on_missing_output=False,
    )
    return [a.pid for a in actors if (a.repr_name or "") == name or (a.name or "") == name]


# ------------------------------------------------------------------------------------------------
# without a cluster


def test_split_keeps_order_and_bounds_chunks():
    assert _split(list(range(7)), 2, 0) == [[0, 1, 2, 3], [4, 5, 6]]
    assert _split(list(range(5)), 3, 2) == [[0, 1], [2, 3], [4]]
    assert _split([], 4, 0) == []


def test_nothing_imports_ray_without_the_option():
    code = (
        "import sys, verified_tts.cli.commands, verified_tts.workflows.render, "
        "verified_tts.pipeline, jobs; "
        "from verified_tts.cli import app; "
        "assert 'ray' not in sys.modules, 'ray was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(MissingExtra, match=r"verified-tts\[ray\]"):
        import_ray()


def test_an_address_where_nothing_listens_is_one_line(tmp_path):
    book = tmp_path / "book.md"
    book.write_text("# A\n\nOne sentence here.\n", encoding="utf-8")
    command = [sys.executable, "-m", "verified_tts", "render", str(book), "--ray", "127.0.0.1:1"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "no Ray cluster is listening at 127.0.0.1:1" in result.stderr
    assert "Traceback" not in result.stderr


def test_token_auth_makes_the_token_ray_start_needs_on_a_new_machine(monkeypatch, tmp_path):
    """`ray start` (2.60) with token authentication on refuses to start without a token and never
    makes one; on a machine where Ray had not run, `cluster up` failed. The token is made once,
    private, and kept by later calls."""
    from verified_tts.cluster import state

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    state.use_token_auth()
    token = tmp_path / ".ray" / "auth_token"
    first = token.read_text()
    assert len(first) == 64 and int(first, 16) >= 0
    assert token.stat().st_mode & 0o777 == 0o600
    assert os.environ["RAY_AUTH_MODE"] == "token"
    assert [p.name for p in token.parent.iterdir()] == ["auth_token"]
    monkeypatch.delenv("RAY_AUTH_MODE")
    state.use_token_auth()
    assert token.read_text() == first


def test_ray_table_is_checked():
    config = build_config({"ray": {"replicas": 2, "generator_num_gpus": 1, "pools": {"wer": 3}}})
    assert config.ray == RayOptions(replicas=2, generator_num_gpus=1, pools={"wer": 3})
    with pytest.raises(UserError, match="unknown key"):
        build_config({"ray": {"replica": 2}})
    with pytest.raises(UserError, match="replicas must be at least 1"):
        build_config({"ray": {"replicas": 0}})


def test_auto_address_prefers_the_jobs_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("VERIFIED_TTS_CLUSTER_DIR", str(tmp_path))
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:7777")
    assert resolve_address("auto") == "127.0.0.1:7777"
    assert resolve_address("10.0.0.5:6379") == "10.0.0.5:6379"
    monkeypatch.delenv("RAY_ADDRESS")
    assert resolve_address("auto") == "auto"  # no local cluster: Ray's own discovery


# ------------------------------------------------------------------------------------------------
# on a real local cluster

ray_test = pytest.mark.ray


@ray_test
def test_cluster_listens_on_loopback_only(ray_cluster):
    import psutil  # a dependency of ray[default]

    state = SharedCluster.state()
    head = psutil.Process(state.pid)
    pids = {head.pid} | {child.pid for child in head.children(recursive=True)}
    listening = [
        c
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.pid in pids
    ]
    assert listening, "found no listening socket of the head"
    assert {c.laddr.ip for c in listening} <= {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


@ray_test
def test_generator_replica_matches_local_and_comes_back_after_a_kill(ray_cluster):
    from verified_tts.cluster import ray_backend

    state = SharedCluster.state()
    ray_backend.connect(state.gcs_address)
    requests = [
        SynthesisRequest(f"u{i}", k, candidate_seed(f"u{i}", k), f"Sentence number {i} is here.")
        for i in range(3)
        for k in range(2)
    ]
    local = load_generator(GeneratorConfig(name="espeak")).sample(requests)
    remote = ray_backend.RayGenerator.start(GeneratorConfig(name="espeak"), RayOptions(replicas=1))
    try:
        assert remote.identity() == load_generator(GeneratorConfig(name="espeak")).identity()
        first = remote.sample(requests)
        assert [c.seed for c in first] == [r.seed for r in requests]
        assert all(np.array_equal(a.audio, b.audio) for a, b in zip(local, first, strict=True))

        (pid,) = actor_pids(state.dashboard_url, "GeneratorActor(espeak)")
        os.kill(pid, signal.SIGKILL)
        again = remote.sample(requests)  # Ray restarts the actor; the call runs there
        assert all(np.array_equal(a.audio, b.audio) for a, b in zip(local, again, strict=True))
        assert remote.restarts == 1
    finally:
        remote.close()


@ray_test
def test_verifier_pool_scores_like_the_local_verifier(ray_cluster):
    from verified_tts.cluster import ray_backend
    from verified_tts.verification import load_verifiers
    from verifiers import Clip

    state = SharedCluster.state()
    ray_backend.connect(state.gcs_address)
    generator = load_generator(GeneratorConfig(name="espeak"))
    texts = ["A short one.", "Here is a second, somewhat longer sentence.", "Third."]
    candidates = generator.sample(
        [SynthesisRequest(f"u{i}", 0, 1000 + i, t) for i, t in enumerate(texts)]
    )
    clips = [
        Clip(audio=c.audio, sample_rate=c.sample_rate, text=t, spoken=t)
        for c, t in zip(candidates, texts, strict=True)
    ]
    tables = {"signal": {}, "emotion": {}}
    local = load_verifiers(tables, order=("signal", "emotion"))
    # two actors, one clip per call: order must survive the fan-out
    options = RayOptions(pool_size=2, chunk=1, verifier_num_cpus=0.1)
    remote = ray_backend.load_ray_verifiers(tables, options, order=("signal", "emotion"))
    try:
        assert remote.status == local.status  # emotion without a model: unavailable, both ways
        assert remote.identity() == local.identity()
        (proxy,) = remote.active
        expected = local.get("signal").score(clips)
        got = proxy.score(clips)
        assert [s.metrics for s in got] == [s.metrics for s in expected]
    finally:
        for verifier in remote.active:
            verifier.close()


def test_warm_key_follows_settings_files_and_their_changes(tmp_path, monkeypatch):
    """Two loads share warm actors only when nothing that makes them differ differs: the
    options, the actors' Ray options, and the files the options name (a model replaced in place,
    or a relative path that means another run's file)."""
    from verified_tts.cluster.warm import settings_key
    from verified_tts.options.verifiers import SignalOptions

    actor = {"num_cpus": 0.25, "max_restarts": 3}
    base = settings_key("signal", SignalOptions(), actor)
    assert settings_key("signal", SignalOptions(), dict(actor)) == base
    assert settings_key("signal", SignalOptions(frame_ms=30.0), actor) != base
    assert settings_key("signal", SignalOptions(), {**actor, "max_restarts": 1}) != base
    assert settings_key("wer", SignalOptions(), actor) != base
    model = tmp_path / "model" / "model.bin"
    model.parent.mkdir()
    model.write_bytes(b"one")
    named = settings_key("wer", {"model": str(model)}, actor)
    os.utime(model, ns=(1, 1))
    assert settings_key("wer", {"model": str(model)}, actor) != named
    monkeypatch.chdir(tmp_path)  # the same relative path in another run's folder: another file
    here = settings_key("wer", {"model": "model/model.bin"}, actor)
    other = tmp_path / "other" / "model"
    other.mkdir(parents=True)
    (other / "model.bin").write_bytes(b"two")
    monkeypatch.chdir(tmp_path / "other")
    assert settings_key("wer", {"model": "model/model.bin"}, actor) != here


@ray_test
def test_a_second_run_finds_its_verifiers_loaded_and_a_held_set_is_left_to_its_run(
    ray_cluster, monkeypatch
):
    """Warm verifiers: loading with the same settings again gets the same actor (no second
    load); a set that another live run leases is left to it (the next slot), a set leased by a
    run that ended is taken over, and a run with other settings ends the idle sets of these."""
    from verified_tts.cluster import ray_backend, warm

    state = SharedCluster.state()
    ray = ray_backend.connect(state.gcs_address)
    me = ray.get_runtime_context().get_job_id()
    assert me in warm.alive_runs(ray) and "ffffffff" not in warm.alive_runs(ray)
    tables = {"signal": {"frame_ms": 23.0}}  # settings no other test uses: a set of its own
    options = RayOptions(verifier_num_cpus=0.1)

    def load() -> tuple[int, object]:
        loaded = ray_backend.load_ray_verifiers(tables, options, order=("signal",))
        (proxy,) = loaded.active
        return proxy._pool.places[0][0], proxy._pool.actors[0]

    first, actor = load()
    again, _ = load()
    assert again == first  # the same process: loaded once
    # another run holds slot 0 and is alive: this one takes slot 1, a new actor
    assert ray.get(actor.lease.remote("another", me))
    monkeypatch.setattr(warm, "alive_runs", lambda ray: frozenset({"another"}))
    beside, _ = load()
    assert beside != first
    # that run ended: slot 0 is taken over, loaded as it was
    monkeypatch.setattr(warm, "alive_runs", lambda ray: frozenset())
    assert ray.get(actor.holder.remote())[0] == "another"
    back, _ = load()
    assert back == first and ray.get(actor.holder.remote())[0] == me
    # other settings retire the sets kept for these once no live run holds them and they settled
    monkeypatch.setattr(warm, "_SETTLED_S", 0.0)
    tables = {"signal": {"frame_ms": 24.0}}
    _, other = load()
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actor.holder.remote())
    assert ray.get(other.holder.remote())[0] == me


@ray_test
def test_an_idle_warm_verifier_ends_only_once_no_live_run_holds_it(ray_cluster):
    """A warm actor ends itself after ``warm_idle_s`` without a call, but not while the run that
    leases it still runs: a long generation between two verifications keeps its verifiers."""
    import time

    from verified_tts.cluster import ray_backend, warm

    state = SharedCluster.state()
    ray = ray_backend.connect(state.gcs_address)
    me = ray.get_runtime_context().get_job_id()
    tables = {"signal": {"frame_ms": 25.0}}
    actor = {"num_cpus": 0.1, "max_restarts": 0, "max_task_retries": 0}
    (handle,), _ = warm.claim(ray, "signal", tables, 1, actor, me, 0.4)
    time.sleep(2.0)  # five times its idle limit, held by this live run
    assert ray.get(handle.holder.remote())[0] == me
    ray.get(handle.release.remote(me))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            ray.get(handle.holder.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("a released warm actor idle past its limit did not end")


@ray_test
def test_emotion_labels_are_checked_on_ray_before_any_work(ray_cluster, tmp_path):
    """A target emotion the model has no label for is one line before anything is sampled, on
    Ray as locally: the proxy offers the label check, so the pipeline does not skip it."""
    from tests.emotion_model import build_emotion_model
    from verified_tts.cluster import ray_backend
    from verified_tts.pipeline import Synthesizer
    from verified_tts.storage.store import Store
    from verified_tts.text.book import Segment
    from verifiers import HasOptions, LabelChecker

    state = SharedCluster.state()
    ray_backend.connect(state.gcs_address)
    labels = {0: "neutral", 1: "Happy", 2: "sad", 3: "ang"}
    model = build_emotion_model(tmp_path / "emotion", labels)
    tables = {"signal": {}, "emotion": {"model": str(model), "batch_size": 2}}
    options = RayOptions(verifier_num_cpus=0.1)
    remote = ray_backend.load_ray_verifiers(tables, options, order=("signal", "emotion"))
    try:
        emotion = remote.get("emotion")
        assert isinstance(emotion, LabelChecker) and emotion.resolve_label("Anger") == [3]
        assert isinstance(emotion, HasOptions) and emotion.options.batch_size == 2
        with pytest.raises(UserError, match="'whimsical' is not a label") as error:
            emotion.resolve_label("whimsical")
        assert "\n" not in str(error.value)

        config = build_config({"verifiers": tables}, generator="espeak", candidates=2)
        local = load_generator(config.generator)
        sampled: list[int] = []

        class Counting:
            name, model, sample_rate = local.name, local.model, local.sample_rate
            identity = local.identity

            def sample(self, requests):
                sampled.append(len(requests))
                return local.sample(requests)

        synth = Synthesizer(Counting(), remote, config)
        text = "The rain fell all day."
        segment = Segment(0, 1, 0, text, text, "paragraph", 3, "end", emotion="whimsical")
        with pytest.raises(UserError, match="'whimsical' is not a label"):
            synth.run(synth.plan([segment]), Store(tmp_path / "store"))
        assert sampled == []  # refused before the first candidate, not when scoring it
    finally:
        for verifier in remote.active:
            verifier.close()


@ray_test
def test_short_clips_get_the_same_speaker_verdict_on_ray(ray_cluster, tmp_path):
    """Short lines rendered through the Ray proxies get the speaker score and detail they get
    in-process: the proxy is a ShortClipJudge, so the pipeline keeps the short takes' reference
    and the actor compares a short clip with it, not with the book's voice."""
    from verified_tts.cluster import ray_backend
    from verified_tts.pipeline import Synthesizer
    from verified_tts.storage.store import Store
    from verified_tts.text.book import Segment
    from verified_tts.verification import load_verifiers
    from verifiers import Clip, ShortClipJudge

    state = SharedCluster.state()
    ray_backend.connect(state.gcs_address)
    tables = {"signal": {}, "speaker": {}}
    order = ("signal", "speaker")
    config = build_config({"verifiers": tables}, generator="espeak", candidates=2)
    generator = load_generator(config.generator)
    lines = ["Yes!", "Is it?", "Scales!", "How much?", "No.",
             "The birch canoe slid on the smooth planks of the old pier."]  # fmt: skip
    segments = [Segment(i, 1, i, t, t, "paragraph", len(t.split()), "end")
                for i, t in enumerate(lines)]  # fmt: skip
    local = load_verifiers(tables, order=order)
    remote = ray_backend.load_ray_verifiers(tables, RayOptions(verifier_num_cpus=0.1), order=order)
    try:
        speaker = remote.get("speaker")
        assert isinstance(speaker, ShortClipJudge)
        clips = [Clip(c.audio, c.sample_rate, t) for c, t in zip(generator.sample(
            [SynthesisRequest(f"u{i}", 0, 50 + i, t) for i, t in enumerate(lines)]), lines,
            strict=True)]  # fmt: skip
        got, speech = speaker.embed_with_speech(clips)
        want, want_speech = local.get("speaker").embed_with_speech(clips)
        np.testing.assert_allclose(got, want, atol=1e-5)
        assert speech == pytest.approx(want_speech)
        assert [speaker.is_short(s) for s in speech] == [
            local.get("speaker").is_short(s) for s in speech
        ]

        def winners(verifiers, folder):
            synth = Synthesizer(generator, verifiers, config)
            results = synth.run(synth.plan(segments), Store(tmp_path / folder))
            return [r.candidates[r.winner] for r in results]

        on_ray, in_process = winners(remote, "ray"), winners(local, "local")
        against = [c.detail.get("speaker_against") for c in in_process]
        assert against.count("short takes") >= 3  # the short lines were judged as short
        assert against[-1] is None and "speaker" in in_process[-1].metrics
        for ray_winner, local_winner in zip(on_ray, in_process, strict=True):
            assert ray_winner.detail == local_winner.detail
            assert set(ray_winner.metrics) == set(local_winner.metrics)
            assert ray_winner.metrics["speaker"] == pytest.approx(
                local_winner.metrics["speaker"], abs=1e-5
            )
    finally:
        for verifier in remote.active:
            verifier.close()
