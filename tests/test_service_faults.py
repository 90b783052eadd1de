"""``verified-tts serve`` under faults: one real Ray Serve app per module, called over HTTP.

The server is the command itself (local Ray, loopback, port 0, espeak, ``--max-queue 2``,
``--num-cpus 4``), started once for the module. The checks: a full queue answers 429 with
``Retry-After``; a client that goes away leaves its queued request dropped before synthesis
(``verified_tts_cancelled_total``); a job submitted over HTTP is the record ``verified-tts jobs
list`` shows, and ``DELETE`` stops it; a file URL that climbs out of a job's output folder
(plain, percent-encoded, through a symlink) is 404 and serves nothing; the synthesis replica
killed mid-request is retried once and the client gets its audio, answered once; and, last
because it stops the module's server, restarts lose no accepted job: stopped with jobs queued
(they are resumed), then killed with them running (the next start takes the head over and they
go on), every job finishes once and a cancelled one stays cancelled.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.serve_process import running_server, stop

pytestmark = pytest.mark.ray

SLOW = json.dumps(
    {
        "input": " ".join(
            f"Sentence {i} of this request walks slowly over the quiet field at dawn."
            for i in range(6)
        ),
        "n": 8,
        "adaptive": False,
        "response_format": "pcm",
    }
).encode()


SERVER_OPTIONS = ("--generator", "espeak", "--max-queue", "2", "--num-cpus", "4")


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    home: Path
    process: subprocess.Popen[str]


def _request(server: Server, method: str, path: str, body: bytes | None = None,
             timeout: float = 180):  # fmt: skip
    import httpx

    headers = {"Authorization": f"Bearer {server.token}"}
    return httpx.request(method, server.url + path, content=body, headers=headers, timeout=timeout)


def _metric(server: Server, name: str) -> float:
    import httpx

    root = server.url.removesuffix("/v1")
    text = httpx.get(root + "/metrics", headers={"Authorization": f"Bearer {server.token}"},
                     timeout=60).text  # fmt: skip
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("sf")  # short: Ray's socket paths must fit in 107 bytes
    with running_server(home, *SERVER_OPTIONS) as started:
        yield Server(started.url, started.token, home, started.process)


def _in_background(server: Server, results: list, body: bytes = SLOW) -> threading.Thread:
    def call() -> None:
        results.append(_request(server, "POST", "/audio/speech", body))

    thread = threading.Thread(target=call)
    thread.start()
    return thread


def _wait_depth(server: Server, depth: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while _metric(server, "verified_tts_queue_depth") < depth:
        assert time.monotonic() < deadline, f"the queue never held {depth} requests"
        time.sleep(0.1)


def test_start_prints_a_fresh_token(server: Server) -> None:
    assert len(server.token) >= 24  # made at this start: no --token-file was given
    assert _request(server, "GET", "/models").status_code == 200


def test_full_queue_is_429_with_retry_after(server: Server) -> None:
    results: list = []
    threads = [_in_background(server, results) for _ in range(2)]
    _wait_depth(server, 2)
    refused = _request(server, "POST", "/audio/speech", SLOW)
    assert refused.status_code == 429, refused.text
    assert int(refused.headers["retry-after"]) >= 1
    assert "limit" in refused.json()["error"]["message"]
    for thread in threads:
        thread.join(300)
    assert [r.status_code for r in results] == [200, 200]  # the accepted ones are answered
    assert results[0].content and results[0].content == results[1].content  # one store key


def test_client_that_leaves_has_its_queued_work_dropped(server: Server) -> None:
    import httpx

    cancelled = _metric(server, "verified_tts_cancelled_total")
    answers = _metric(server, "verified_tts_answers_total")
    waited: list = []
    slow = SLOW.replace(b"Sentence", b"Line")  # not in the store: synthesised
    thread = _in_background(server, waited, slow)
    _wait_depth(server, 1)
    time.sleep(1.0)  # its batch is running: the next request waits for the next window
    gone = json.dumps({"input": "Nobody waits for this line at all.", "n": 4}).encode()
    with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
        _request(server, "POST", "/audio/speech", gone, timeout=2)
    thread.join(300)
    assert waited[0].status_code == 200
    deadline = time.monotonic() + 30
    while _metric(server, "verified_tts_cancelled_total") < cancelled + 1:
        assert time.monotonic() < deadline, "the abandoned request was not dropped"
        time.sleep(0.5)
    assert _metric(server, "verified_tts_answers_total") == answers + 1  # only the one waited for


BOOK = "# Tiny\n\n## One\n\nThe lamp was lit at dusk.\n"


def test_http_job_is_the_queue_job_and_file_urls_stay_inside(server: Server) -> None:
    body = {"command": "render", "input": {"name": "tiny.md", "content": BOOK},
            "options": ["--generator", "espeak", "-n", "2"]}  # fmt: skip
    made = _request(server, "POST", "/jobs", json.dumps(body).encode())
    assert made.status_code == 201, made.text
    job = made.json()
    assert job["id"].startswith("vtts-render-") and job["state"] in ("PENDING", "RUNNING")
    again = _request(server, "POST", "/jobs", json.dumps(body).encode())
    assert again.status_code == 409 and job["id"] in again.text  # the same job, not a second
    bad = _request(server, "POST", "/jobs", json.dumps({"command": "sing"}).encode())
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "command"
    nowhere = {"command": "render", "path": str(server.home / "no-such-book.md")}
    missing = _request(server, "POST", "/jobs", json.dumps(nowhere).encode())
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "path"
    shared = server.home / "shared" / "other.md"  # a book on the server's own storage
    shared.parent.mkdir(exist_ok=True)
    shared.write_text(BOOK.replace("lamp", "stove"), encoding="utf-8")
    by_path_body = {"command": "render", "path": str(shared), "options": ["--generator", "espeak"]}
    by_path = _request(server, "POST", "/jobs", json.dumps(by_path_body).encode())
    assert by_path.status_code == 201, by_path.text
    assert by_path.json()["input"] == "other.md"
    assert _request(server, "DELETE", f"/jobs/{by_path.json()['id']}").status_code == 200
    assert job["id"] in _jobs_listed(server)
    assert job["id"] in {j["id"] for j in _request(server, "GET", "/jobs").json()["data"]}

    # file URLs: a real file of the output folder is served; nothing outside it is
    output = Path(job["output"])
    output.mkdir(parents=True, exist_ok=True)
    (output / "notes.txt").write_text("inside\n", encoding="utf-8")
    (output / "escape").symlink_to("/etc/passwd")
    inside = _request(server, "GET", f"/jobs/{job['id']}/files/notes.txt")
    assert inside.status_code == 200 and inside.text == "inside\n"
    curl = shutil.which("curl")
    climbs = ["../../../../../../etc/passwd", "..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
              "%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
              "%252e%252e%252f%252e%252e%252fetc%252fpasswd", "escape", "/etc/passwd"]  # fmt: skip
    for climb in climbs:
        url = f"{server.url}/jobs/{job['id']}/files/{climb}"
        if curl is not None:  # --path-as-is: the dots reach the server as sent
            done = subprocess.run(
                [curl, "-sS", "--path-as-is", "-w", "\n%{http_code}", "-H",
                 f"Authorization: Bearer {server.token}", url],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            text, code = done.stdout.rsplit("\n", 1)
        else:
            answer = _request(server, "GET", f"/jobs/{job['id']}/files/{climb}")
            text, code = answer.text, str(answer.status_code)
        assert code == "404", (climb, code)
        assert "root:" not in text and json.loads(text)["error"]["message"], climb

    stopped = _request(server, "DELETE", f"/jobs/{job['id']}")
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["state"] in ("STOPPED", "FAILED", "SUCCEEDED")
    assert _request(server, "DELETE", f"/jobs/{job['id']}").status_code == 409
    assert _request(server, "GET", "/jobs/vtts-render-nosuchjob").status_code == 404


def _speaker_pids(server: Server) -> list[int]:
    """Process ids of the live synthesis replicas, from the Ray state API of the server's head."""
    from verified_tts.cluster.state import import_ray, read_state

    import_ray()  # token authentication, as the server's own clients speak it
    from ray.util.state import list_actors

    state = read_state(server.home / "jobs")
    assert state is not None, "the server's Ray head wrote no state"
    actors = list_actors(
        address=state.dashboard_url,
        filters=[("class_name", "=", "ServeReplica:verified-tts:Speaker"), ("state", "=", "ALIVE")],
        raise_on_missing_output=False,
    )
    return sorted(actor.pid for actor in actors)


def test_replica_killed_mid_request_is_retried_once(server: Server) -> None:
    retries = _metric(server, "verified_tts_replica_retries_total")
    [replica] = _speaker_pids(server)
    body = SLOW.replace(b"Sentence", b"Phrase")  # not in the store: synthesised
    answered: list = []
    thread = _in_background(server, answered, body)
    deadline = time.monotonic() + 60
    while _metric(server, "verified_tts_batch_waiting") < 1:  # in the replica's batch
        assert time.monotonic() < deadline, "the request never reached the replica"
        time.sleep(0.1)
    time.sleep(1.0)  # its batch is under way: 48 candidates to speak and score
    os.kill(replica, signal.SIGKILL)
    thread.join(300)
    [response] = answered  # one answer, and it is the audio
    assert response.status_code == 200, response.text
    assert response.content and len(response.content) % 2 == 0
    assert _metric(server, "verified_tts_replica_retries_total") == retries + 1
    assert _speaker_pids(server) not in ([], [replica])  # a new replica spoke it
    assert _metric(server, "verified_tts_answers_total") == 1  # once, by the new replica
    record = _request(server, "GET", f"/audio/speech/{response.headers['x-verified-id']}")
    assert record.status_code == 200 and len(record.json()["utterances"]) == 6
    again = _request(server, "POST", "/audio/speech", body)  # what was kept is what was sent
    assert again.headers["x-verified-synthesized"] == "false"
    assert again.content == response.content


def _jobs_listed(server: Server) -> dict[str, dict]:
    """``verified-tts jobs list`` on the server's queue folder, as an operator runs it."""
    listed = subprocess.run(
        [sys.executable, "-m", "verified_tts", "jobs", "list",
         "--state-dir", str(server.home / "jobs"), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    return {job["id"]: job for job in json.loads(listed.stdout)}


def _events(server: Server, job_id: str) -> list[tuple[str, dict]]:
    """The job's server-sent events until its ``end`` event."""
    import httpx

    events, name = [], None
    headers = {"Authorization": f"Bearer {server.token}"}
    url = f"{server.url}/jobs/{job_id}/events"
    with httpx.stream("GET", url, headers=headers, timeout=300) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        for line in stream.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))
    return events


def test_restarts_lose_no_accepted_job(server: Server) -> None:
    """Stopped (SIGTERM) with jobs queued, then killed (SIGKILL) with them running: every job
    finishes once, a cancelled one stays cancelled, and `verified-tts jobs` sees the same jobs.
    Last in the module: it stops the module's server and starts its own twice."""
    ids = []
    for number, line in enumerate(("Rain fell on the old road.", "A cold wind came down.", "No.")):
        body = {"command": "render", "input": {"name": f"book{number}.md",
                                               "content": f"# Book\n\n## One\n\n{line}\n"},
                "options": ["--generator", "espeak", "-n", "2"]}  # fmt: skip
        made = _request(server, "POST", "/jobs", json.dumps(body).encode())
        assert made.status_code == 201, made.text
        ids.append(made.json()["id"])
    *kept, cancelled = ids
    assert _request(server, "DELETE", f"/jobs/{cancelled}").json()["state"] == "STOPPED"

    stop(server.process)  # with both jobs queued: one running or starting, one waiting
    listed = _jobs_listed(server)
    assert [listed[i]["state"] for i in ids] == ["FAILED", "FAILED", "STOPPED"]
    assert all(listed[i]["message"].startswith("lost") for i in kept)

    with running_server(server.home, *SERVER_OPTIONS) as second:
        said = [line for line in second.out if line.strip()]
        resumed = [f"resumed job {i}: the service stopped before it finished" for i in kept]
        assert sorted(said[:-1]) == sorted(resumed)  # a line a job, then the address
        second.process.kill()  # nothing of the server runs its shutdown: its head goes on
        second.process.wait()

        with running_server(server.home, *SERVER_OPTIONS) as third:
            said = [line for line in third.out if line.strip()]
            assert len(said) == 2 and said[0].startswith("took over the Ray head"), said
            again = Server(third.url, third.token, server.home, third.process)
            for job_id in kept:
                events = _events(again, job_id)
                assert events[-1][0] == "end" and events[-1][1]["state"] == "SUCCEEDED"
                assert {name for name, _ in events} <= {"progress", "end"}
                job = _request(again, "GET", f"/jobs/{job_id}").json()
                assert job["attempts"] == 2  # the kill neither lost it nor ran it again
                assert job["progress"] == 1.0 and job["done"] == job["utterances"] > 0
                assert "manifest.json" in job["files"]
                finished = [h for h in job["history"] if h["state"] == "SUCCEEDED"]
                assert len(finished) == 1  # finished once
            listed = _jobs_listed(again)
            assert set(ids) <= set(listed)
            assert [listed[i]["state"] for i in ids] == ["SUCCEEDED", "SUCCEEDED", "STOPPED"]
            assert listed[cancelled]["attempts"] == 1  # a cancelled job is not brought back
