"""``verified-tts serve`` end to end: one real Ray Serve app per module, called over HTTP.

The server is the command itself (a local Ray instance, loopback, port 0, the embedded voice),
started once for the module; the official ``openai`` client and ``curl`` ask it for speech, and
the checks cover the token from ``--token-file``, the verdict headers, the full record, the
listings, the token (none, wrong), the size limit, errors naming their field, a repeat giving the
same bytes, the six response formats, ``/metrics`` and the JSON log lines.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import soundfile as sf

from tests.serve_process import running_server

pytestmark = pytest.mark.ray

TOKEN = "kept-across-restarts-0123456789"


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    ready_s: float
    out: list[str]
    home: Path


def _request(server: Server, method: str, path: str, body: bytes | None = None,
             token: str | None = "same", headers: dict[str, str] | None = None):  # fmt: skip
    import httpx

    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {server.token if token == 'same' else token}"
    return httpx.request(method, server.url + path, content=body, headers=sent, timeout=120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("serve")
    (home / "token.txt").write_text(TOKEN + "\n# the first line is the token\n", encoding="utf-8")
    with running_server(home, "--token-file", str(home / "token.txt")) as started:
        yield Server(started.url, started.token, started.ready_s, started.out, home)


def test_start_is_one_line_with_address_and_the_token_file(server: Server) -> None:
    assert [line for line in server.out if line.strip()] == [server.out[-1]]
    assert server.token == TOKEN  # --token-file's first line, not a fresh one
    assert server.ready_s < 120


def test_openai_client_speaks_and_the_record_matches(server: Server) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=server.url, api_key=server.token, max_retries=0)
    response = client.audio.speech.with_raw_response.create(
        model="tts-1", voice="default", input="The lamp was lit at dusk.", response_format="wav"
    )
    audio, rate = sf.read(io.BytesIO(response.content))
    assert rate > 8000 and len(audio) > rate * 0.3
    assert response.headers["x-verified-flagged"] in ("true", "false")
    scores = json.loads(response.headers["x-verified-scores"])
    assert scores and all(isinstance(v, float) for v in scores.values())
    answer_id = response.headers["x-verified-id"]
    record = _request(server, "GET", f"/audio/speech/{answer_id}")
    assert record.status_code == 200
    body = record.json()
    assert body["id"] == answer_id and body["input"] == "The lamp was lit at dusk."
    assert body["utterances"] and body["utterances"][0]["candidates"]
    assert body["seed"] == int(response.headers["x-verified-seed"])
    missing = _request(server, "GET", "/audio/speech/" + "0" * 16)
    assert missing.status_code == 404 and missing.json()["error"]["param"] == "id"


def test_curl_and_a_repeat_give_the_same_bytes(server: Server, tmp_path: Path) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    body = json.dumps({"input": "Rain fell on the old road.", "voice": "default",
                       "response_format": "flac", "seed": 7})  # fmt: skip
    outputs = []
    for attempt in (1, 2):
        target = tmp_path / f"{attempt}.flac"
        headers = tmp_path / f"{attempt}.headers"
        subprocess.run(
            [curl, "-sS", "--fail-with-body", "-o", str(target), "-D", str(headers),
             "-H", f"Authorization: Bearer {server.token}", "-H", "Content-Type: application/json",
             "-d", body, f"{server.url}/audio/speech"],
            check=True, timeout=120,
        )  # fmt: skip
        outputs.append((target.read_bytes(), headers.read_text().lower()))
    (first, first_headers), (second, second_headers) = outputs
    assert first == second and first[:4] == b"fLaC"
    assert "x-verified-seed: 7" in first_headers
    assert "x-verified-synthesized: false" in second_headers  # served from the store


def test_listings(server: Server) -> None:
    models = _request(server, "GET", "/models").json()
    assert {"verified-tts", "tts-1"} <= {m["id"] for m in models["data"]}
    voices = _request(server, "GET", "/voices").json()["data"]
    assert voices[0]["id"] == "default" and voices[0]["default"] is True


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_no_or_wrong_token_is_401_everywhere(server: Server, token: str | None) -> None:
    for method, path in (("GET", "/models"), ("POST", "/audio/speech"), ("GET", "/jobs")):
        response = _request(server, method, path, b"{}", token=token)
        assert response.status_code == 401, (method, path)
        assert response.headers["www-authenticate"] == "Bearer"
        assert ("no bearer token" if token is None else "wrong token") in response.text


def test_oversized_body_is_413(server: Server) -> None:
    big = json.dumps({"input": "a " * (1 << 20), "voice": "default"}).encode()
    response = _request(server, "POST", "/audio/speech", big)
    assert response.status_code == 413 and response.json()["error"]["param"] == "body"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", None),
        (json.dumps({"input": "Hello there.", "voice": "nobody-at-all"}).encode(), "voice"),
        (json.dumps({"input": "   ", "voice": "default"}).encode(), "input"),
        (json.dumps({"input": "Hello.", "response_format": "ogg"}).encode(), "response_format"),
        (json.dumps({"input": "Hello.", "n": 0}).encode(), "n"),
        (json.dumps({"input": "Hello.", "sped": 1.0}).encode(), "sped"),
        (json.dumps({"input": "Long. " * 1000}).encode(), "input"),  # over 4096 characters
    ],
)
def test_bad_requests_are_4xx_naming_the_field(server: Server, body: bytes, field: str | None):
    response = _request(server, "POST", "/audio/speech", body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == field
    assert "Traceback" not in response.text and error["message"]


def test_metrics_count_requests_and_answers(server: Server) -> None:
    import httpx

    assert _request(server, "GET", "/models").status_code == 200
    speech = json.dumps({"input": "Count me.", "response_format": "pcm"}).encode()
    said = _request(server, "POST", "/audio/speech", speech)
    assert said.status_code == 200 and len(said.content) % 2 == 0 and said.content
    root = server.url.removesuffix("/v1") + "/metrics"
    assert httpx.get(root, timeout=60).status_code == 401
    metrics = httpx.get(root, headers={"Authorization": f"Bearer {server.token}"}, timeout=60)
    assert metrics.status_code == 200
    models = r'verified_tts_requests_total\{route="/v1/models",status="200"\} [1-9]'
    assert re.search(models, metrics.text)
    answers = re.search(r"^verified_tts_answers_total (\S+)$", metrics.text, re.M)
    assert answers is not None and float(answers.group(1)) >= 1
    assert re.search(r"^verified_tts_candidates_total\{[^}]*\} [1-9]", metrics.text, re.M)
    assert "verified_tts_queue_depth" in metrics.text
    assert "verified_tts_batch_waiting" in metrics.text
    latency = r'^verified_tts_request_seconds_count\{route="/v1/audio/speech"\} [1-9]'
    assert re.search(latency, metrics.text, re.M)
    assert re.search(r"^verified_tts_flagged_total \d", metrics.text, re.M)


def test_every_response_format_says_the_same_line(server: Server) -> None:
    import av

    from verified_tts.service.formats import MEDIA_TYPES

    line = {"input": "Six ways to hear one line.", "seed": 11}
    seconds, scores = {}, set()
    for fmt in (None, "wav", "flac", "opus", "aac", "pcm"):  # None: OpenAI's default, mp3
        body = line if fmt is None else {**line, "response_format": fmt}
        response = _request(server, "POST", "/audio/speech", json.dumps(body).encode())
        assert response.status_code == 200, response.text
        fmt = fmt or "mp3"
        assert response.headers["content-type"] == MEDIA_TYPES[fmt]
        scores.add(response.headers["x-verified-scores"])
        if fmt == "pcm":  # OpenAI's pcm: 16-bit mono at 24 kHz, no header
            seconds[fmt] = len(response.content) / 2 / 24000
            continue
        with av.open(io.BytesIO(response.content)) as container:
            frames = list(container.decode(audio=0))
        seconds[fmt] = sum(f.samples for f in frames) / frames[0].sample_rate
    assert len(scores) == 1  # one answer, spoken once, in six encodings
    assert seconds["wav"] > 0.5
    assert all(abs(s - seconds["wav"]) < 0.1 for s in seconds.values()), seconds


def test_log_is_a_json_line_per_request_and_batch(server: Server) -> None:
    assert _request(server, "GET", "/models", token="wrong-token").status_code == 401
    lines = (server.home / "service" / "log.jsonl").read_text(encoding="utf-8").splitlines()
    logged = [json.loads(line) for line in lines]
    requests = [e for e in logged if e["event"] == "request"]
    refused = {"method": "GET", "path": "/v1/models", "status": 401}
    assert any(refused.items() <= e.items() for e in requests)
    spoken = [e for e in requests if e["path"] == "/v1/audio/speech" and e["status"] == 200]
    assert spoken and all(e["seconds"] > 0 and e["level"] == "info" for e in spoken)
    batches = [e for e in logged if e["event"] == "batch"]
    assert batches and all(e["requests"] >= 1 and e["seconds"] > 0 for e in batches)
    assert len({e["process"] for e in requests + batches}) == 2  # the front door, the speaker


def test_lexicon_gates_and_speed_reach_the_synthesis(server: Server) -> None:
    line = {
        "input": "Say xyzzy once.",
        "response_format": "wav",
        "seed": 5,
        "n": 2,
        "adaptive": False,
    }
    own = {**line, "lexicon": {"words": {"xyzzy": "magic word"}},
           "gates": {"duration_ratio": {"max": 0.01}}}  # fmt: skip
    response = _request(server, "POST", "/audio/speech", json.dumps(own).encode())
    assert response.status_code == 200, response.text
    assert response.headers["x-verified-flagged"] == "true"  # no take passes that gate
    record = _request(server, "GET", f"/audio/speech/{response.headers['x-verified-id']}").json()
    [utterance] = record["utterances"]
    assert "magic word" in utterance["spoken"] and "xyzzy" in utterance["text"]
    assert all("duration_ratio" in c["failed_gates"] for c in utterance["candidates"])
    seconds = {}
    for speed in (1.0, 1.5):
        said = _request(
            server, "POST", "/audio/speech", json.dumps({**line, "speed": speed}).encode()
        )
        assert said.status_code == 200, said.text
        audio, rate = sf.read(io.BytesIO(said.content))
        seconds[speed] = len(audio) / rate
    assert seconds[1.5] < 0.85 * seconds[1.0]
