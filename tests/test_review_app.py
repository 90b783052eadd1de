"""``verified-tts review`` as a user runs it (its own process, the printed address): only the
token's holder gets in, changes need the token header, no request reaches a file outside the
output folder, a render never races a review, and a ``kill -9`` in the middle of a delivery loses
no decision and leaves nothing half-written in use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import soundfile as sf
from review_kit import App, copy_render, expected_chapter, manifest_json

from verified_tts.output.lock import output_lock


@pytest.fixture(scope="module")
def folder(tmp_path_factory, review_render):
    return copy_render(review_render, tmp_path_factory.mktemp("app") / "out")


@pytest.fixture(scope="module")
def app(folder):
    running = App(folder[1])
    yield running
    running.stop()


def test_requests_without_the_token_are_refused(app):
    for path in ("/", "/api/summary", "/api/lines", "/audio/0/0", "/static/review.js", "/nope"):
        status, body, _ = app.request(path, token=False)
        assert status == 403 and b"needs its token" in body, path
    status, _, _ = app.request("/api/summary", token=False, headers={"X-Review-Token": "guess"})
    assert status == 403
    # the first visit's ?token= becomes a cookie, and then the page answers to the cookie
    import http.client

    connection = http.client.HTTPConnection(app.base.split("//")[1])
    connection.request("GET", "/?token=" + app.token)
    response = connection.getresponse()
    cookie = response.getheader("Set-Cookie")
    assert response.status == 303 and response.getheader("Location") == "/"
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    jar = {"Cookie": cookie.split(";")[0]}
    status, body, headers = app.request("/", token=False, headers=jar)
    assert status == 200 and b"review-token" in body
    assert "default-src 'none'" in headers["content-security-policy"]
    # a change needs the header: the cookie alone (what another site's form would send) is not
    status, body, _ = app.request("/api/approve", {"pos": 0}, token=False, headers=jar)
    assert status == 403
    assert app.api("/api/summary")["reviewed"] == 0


def test_no_request_reaches_a_file_outside_the_folder(app, folder, tmp_path):
    secret = folder[1].parent / "secret.txt"
    secret.write_text("the secret", encoding="utf-8")
    for path in ("/audio/..%2F..%2Fsecret.txt", "/audio/0/..%2F..%2F..%2Fsecret.txt",
                 "/static/..%2F..%2F..%2Fsecret.txt", "/static/../../secret.txt",
                 "/audio/chapter/..%2Fsecret.txt", "/audio/0/-1", "/audio/0/99", "/audio/99/0",
                 "/%2e%2e/secret.txt", "/static/index.html", "/static/app.py"):  # fmt: skip
        status, body, _ = app.request(path)
        assert status in (400, 404) and b"secret" not in body, path
    status, body, headers = app.request("/audio/0/0")
    assert status == 200 and headers["content-type"] == "audio/flac" and body[:4] == b"fLaC"


def test_a_tampered_manifest_still_serves_nothing_outside(folder, tmp_path):
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(folder[1], copy, ignore=shutil.ignore_patterns("review", "verified-tts.lock"))
    (tmp_path / "secret.flac").write_bytes(b"fLaC the secret")
    manifest = manifest_json(copy)
    manifest["utterances"][0]["candidates"][1]["audio"] = "../secret.flac"
    (copy / "store" / "audio" / "link.flac").symlink_to(tmp_path / "secret.flac")
    manifest["utterances"][0]["candidates"][2]["audio"] = "store/audio/link.flac"
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    app = App(copy)
    try:
        for index in (1, 2):
            status, body, _ = app.request(f"/audio/0/{index}")
            assert status == 404 and b"secret" not in body
    finally:
        app.stop()


def test_a_render_never_races_the_review(app, folder):
    book, out = folder
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, "-m", "verified_tts", "render", str(book), "--out", str(out),
         "--generator", "espeak", "-n", "3", "--no-adaptive"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    said = " ".join((run.stdout + run.stderr).split())
    assert run.returncode == 2 and "Traceback" not in said
    assert "is in use by `verified-tts review`" in said


def test_a_review_waits_for_a_render_or_refuses(folder, tmp_path):
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(folder[1], copy, ignore=shutil.ignore_patterns("verified-tts.lock"))
    with output_lock(copy, "render"):
        refused = App(copy, "--no-wait", wait_for="")
        assert refused.process.wait(timeout=120) == 2
        said = " ".join(refused.output().split())
        assert "is in use by `verified-tts render`" in said and "Traceback" not in said
        waiting = App(copy, wait_for="waiting for `verified-tts render`")
        time.sleep(1)
        assert waiting.process.poll() is None and waiting.lines.empty()
    waiting.wait_for("open http")  # the render finished: the review opens
    assert waiting.api("/api/summary")["lines"] == len(manifest_json(copy)["utterances"])
    waiting.stop()


def test_kill_9_mid_delivery_loses_no_decision(folder, tmp_path):
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(folder[1], copy, ignore=shutil.ignore_patterns("review", "verified-tts.lock"))
    app = App(copy)
    chosen = {}
    for position in (1, 4):
        line = manifest_json(copy)["utterances"][position]
        chosen[position] = next(c for c in line["candidates"] if c["index"] != line["winner"])
        app.api("/api/choose", {"pos": position, "candidate": chosen[position]["index"]})
    app.api("/api/approve", {"pos": 2})
    app.api("/api/deliver", {})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        job = app.api("/api/jobs")["jobs"][-1]
        if job["state"] != "queued" and job["progress"].startswith(
            ("assembling chapter", "writing", "encoding")
        ):
            break
        time.sleep(0.02)
    app.kill()  # SIGKILL while it writes the chapters (or the deliverables after them)
    assert job["state"] == "running", job
    # nothing half-written is in place: every file that is there is whole
    manifest = manifest_json(copy)
    for chapter in manifest["chapters"]:
        for kind in ("flac", "wav"):
            sf.read(copy / chapter[kind])
    again = App(copy)
    try:
        summary = again.api("/api/summary")
        assert (summary["reviewed"], summary["left"]) == (3, summary["lines"] - 3)
        for position, take in chosen.items():
            detail = again.api(f"/api/line/{position}")
            assert (detail["winner"], detail["decision"]) == (take["index"], "chosen")
        leftovers = list(copy.rglob(".*"))
        assert leftovers == []  # a killed writer's temporary files were removed, never read
        again.api("/api/deliver", {})
        jobs = again.wait_jobs()
        assert jobs[-1]["state"] == "done", jobs
    finally:
        again.stop()
    manifest = manifest_json(copy)
    for position, take in chosen.items():
        record = manifest["utterances"][position]
        assert record["winner"] == take["index"] and record["review"]["decision"] == "choose"
        chapter = record["chapter"]
        held = sf.read(copy / manifest["chapters"][chapter]["flac"], dtype="int16")[0]
        assert np.array_equal(held, expected_chapter(copy, chapter, {}, tmp_path / "x"))
    assert manifest["utterances"][2]["review"]["decision"] == "approve"
