"""The service's parts without Ray: requests field by field, formats, the batching window, the
engine's batch over one store (same bytes for a repeat, served without synthesis), a queued
job's progress as the API reads it, the JSON log lines, and the command's refusals before any
Ray starts (the ``--host`` warning, a bad ``--token-file``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from verified_tts.service.batcher import WindowBatcher
from verified_tts.service.errors import ApiError
from verified_tts.service.formats import encode
from verified_tts.service.request import parse_speech


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", None),
        (b'{"input": "", "voice": "default"}', "input"),
        (b'{"input": "hi", "voice": "default", "speed": 9}', "speed"),
        (b'{"input": "hi", "voice": "default", "response_format": "ogg"}', "response_format"),
        (b'{"input": "hi", "voice": "default", "colour": 1}', "colour"),
        (b'{"input": "hi", "voice": 3}', "voice"),
        (b'{"input": "hi", "model": "whisper-1"}', "model"),
        (b'{"input": "' + b"a" * 50 + b'"}', "input"),
    ],
)
def test_bad_requests_name_the_field(body, field):
    with pytest.raises(ApiError) as caught:
        parse_speech(body, max_input_chars=40)
    assert caught.value.status == 400
    assert caught.value.param == field
    assert "Traceback" not in caught.value.message


def test_formats_repeat_byte_for_byte():
    samples = (np.sin(np.arange(22050) / 9) * 0.3).astype(np.float32)
    magic = {"wav": b"RIFF", "flac": b"fLaC", "opus": b"OggS", "mp3": b"ID3"}
    for fmt in ("wav", "flac", "mp3", "opus", "aac", "pcm"):
        first = encode(samples, 22050, fmt)
        assert first == encode(samples, 22050, fmt)
        assert first.startswith(magic.get(fmt, b""))
    assert len(encode(samples, 22050, "pcm")) == 2 * 24000  # OpenAI's pcm: 24 kHz, 16-bit


def test_window_collects_concurrent_requests_and_drops_gone_callers():
    sizes = []

    def run(items):
        sizes.append(len(items))
        time.sleep(0.05)
        return [i * 2 for i in items]

    async def main():
        batcher = WindowBatcher(run, max_size=32, wait_s=0.05)
        answers = await asyncio.gather(*(batcher.submit(i) for i in range(20)))
        gone = asyncio.ensure_future(batcher.submit(99))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0.2)
        return answers, batcher.dropped

    answers, dropped = asyncio.run(main())
    assert answers == [i * 2 for i in range(20)]
    assert sizes == [20]
    assert dropped == 1


def test_engine_batch_and_repeat_from_store(tmp_path, synthesizer_factory):
    from verified_tts.config import build_config
    from verified_tts.service.engine import SpeechEngine

    config = build_config({}, candidates=2, generator="espeak")
    engine = SpeechEngine(config, tmp_path, synthesizer_factory())  # the session's models
    requests = [
        parse_speech(
            f'{{"input": "A small boat number {i}.", "seed": 3}}'.encode(), max_input_chars=99
        )
        for i in range(3)
    ]
    first = engine.speak(requests)
    assert all(r.batch == 3 and r.synthesized > 0 for r in first)
    again = engine.speak(requests[:1])[0]
    assert again.synthesized == 0 and again.id == first[0].id
    assert np.array_equal(again.audio, first[0].audio)
    record = engine.record(first[0].id)
    assert record["utterances"][0]["candidates"]
    with pytest.raises(ApiError) as caught:
        engine.record("../../etc/passwd")
    assert caught.value.status == 404
    bad = engine.speak([parse_speech(b'{"input": "hi", "voice": "nobody"}', max_input_chars=9)])
    assert isinstance(bad[0], ApiError) and bad[0].param == "voice"


def test_a_queued_job_keeps_its_progress_and_the_api_reads_it(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from jobs.progress import PROGRESS_FILE, ProgressFile, job_progress
    from verified_tts.cli.report import RunProgress
    from verified_tts.service.jobs_routes import _progress

    monkeypatch.delenv("VERIFIED_TTS_JOB_ID", raising=False)
    assert job_progress(tmp_path) is None  # a run outside the queue writes nothing
    monkeypatch.setenv("VERIFIED_TTS_JOB_ID", "vtts-render-0123456789ab")
    assert isinstance(job_progress(tmp_path), ProgressFile)
    assert _progress(tmp_path)["progress"] is None  # nothing written yet
    run = RunProgress("rendering", "espeak", ProgressFile(tmp_path / PROGRESS_FILE, every_s=60))
    run.on_start(4)
    assert _progress(tmp_path) == {"progress": 0.0, "utterances": 4, "done": 0, "flagged": 0}
    for flagged in (True, False, False):
        run.on_result(SimpleNamespace(flagged=flagged))
    run.progress.stop()
    assert _progress(tmp_path)["done"] == 0  # within the minute: not written again
    run.on_result(SimpleNamespace(flagged=True))  # the last one is always written
    assert _progress(tmp_path) == {"progress": 1.0, "utterances": 4, "done": 4, "flagged": 2}
    manifest = {"utterances": [{"flagged": True}, {"flagged": False}, {}, {}]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    os.utime(tmp_path / PROGRESS_FILE, (1, 1))  # the manifest is newer: the run ended
    assert _progress(tmp_path) == {"progress": 1.0, "utterances": 4, "done": 4, "flagged": 1}


def test_log_lines_are_json_with_time_level_and_process(tmp_path):
    import logging

    from verified_tts.service.logs import LOG_FILE, attach, event

    logger = logging.getLogger("verified_tts.service")
    try:
        assert attach(tmp_path) == attach(tmp_path) == tmp_path / LOG_FILE  # one handler
        event("request", method="GET", path="/v1/models", status=200, seconds=0.01)
        try:
            raise ValueError("boom")
        except ValueError:
            event("error", logging.ERROR, exc_info=True, path="/v1/audio/speech")
        lines = [json.loads(line) for line in (tmp_path / LOG_FILE).read_text().splitlines()]
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
            handler.close()
        logger.propagate = True
    assert [line["event"] for line in lines] == ["request", "error"]
    assert lines[0]["status"] == 200 and lines[0]["level"] == "info"
    assert lines[0]["process"] == os.getpid() and lines[0]["time"].endswith("+00:00")
    assert lines[1]["level"] == "error" and "ValueError: boom" in lines[1]["traceback"]


def test_host_warns_and_a_bad_token_file_is_one_line_before_any_ray(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "verified_tts", "serve", "--host", "0.0.0.0", "--dir",
         str(tmp_path / "serve"), "--token-file", str(tmp_path / "missing.txt")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode != 0 and "Traceback" not in done.stdout + done.stderr
    assert len(said) == 2, said
    assert "--host 0.0.0.0" in said[0] and "other machines" in said[0]
    assert said[1].startswith("error: --token-file") and "missing.txt" in said[1]
    assert not (tmp_path / "serve" / "jobs" / "cluster.json").exists()  # no Ray was started


def test_a_replica_dying_twice_under_a_request_is_one_clear_503():
    """The branch the kill test (tests/test_service_faults.py) cannot reach on purpose: the
    replica that took the retried request died too."""
    from ray.exceptions import ActorDiedError

    from verified_tts.service.app import Api
    from verified_tts.service.metrics import ApiMetrics

    calls = []

    class DiesEveryTime:
        async def remote(self, request):
            calls.append(request)
            raise ActorDiedError()

    from types import SimpleNamespace

    front = SimpleNamespace(speaker=SimpleNamespace(speak=DiesEveryTime()))
    metrics = ApiMetrics()
    with pytest.raises(ApiError) as caught:  # the front door's own method, without Serve
        asyncio.run(Api.func_or_class._speak(front, "a request", metrics))
    assert caught.value.status == 503 and caught.value.headers["Retry-After"] == "5"
    assert "died twice" in caught.value.message
    assert calls == ["a request", "a request"]  # sent once more, not again and again
    assert metrics.retries._value.get() == 1
