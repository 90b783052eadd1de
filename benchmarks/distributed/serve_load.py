"""Load on ``verified-tts serve``: 32 clients for 10 minutes against one render of the same lines.

Starts ``verified-tts serve`` as a user would (a subprocess, ``--port 0``, a fresh folder, the
embedded voice) and times its start to the one line it prints (address and token). Then
``--clients`` threads each ask for one Harvard sentence at a time (``POST /v1/audio/speech``,
WAV) in a loop for ``--duration`` seconds, request k saying sentence k mod 720 with seed
k div 720, so every (input, seed) pair is asked once. Every request's latency, status, answer id
and batch size is kept. The checks: every request answered once with 200; the answer ids all
distinct; each id's record (``GET /v1/audio/speech/{id}``) holds the input and seed sent; the
server's own counters (``/metrics``) and its record files count as many answers as the clients
got, no more. Batching is read from ``/v1/batches`` (the size of every batch the speaker ran) and
each answer's ``X-Verified-Batch``. Then the server is stopped and ``verified-tts render`` speaks
every sentence the load served (or the first ``--render-sentences``; seed 0, as the load's first
pass) as one book with the same voice and N, in one run; its audio seconds per second (load
excluded, and the whole command) are set against the service's (sum of answered audio over the
load's wall time), and the ratio against the issue's goal of 80%. Load average is sampled
through the run: the machine is shared. Writes benchmarks/results/serve_load.json.

Usage: python -m benchmarks.distributed.serve_load [--duration 600] [--clients 32]
[--render-sentences ALL] [-n N] [--adaptive/--no-adaptive]
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common.harvard import harvard_book
from benchmarks.common.harvard import sentences as harvard_sentences
from verified_tts.storage.atomic import write_json_atomic

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "serve_load.json"
PARTIAL = ROOT / "benchmarks" / "work" / "serve_load_partial.json"  # git-ignored
LINE = re.compile(r"(http://127\.0\.0\.1:\d+/v1) token (\S+) \(ready in ([\d.]+) s\)")
GOAL = 0.8  # the goal: the service at least 80% of one render's audio seconds per second


def _synthesis_flags(n: int | None, adaptive: bool | None) -> list[str]:
    flags = [] if n is None else ["-n", str(n)]
    if adaptive is not None:
        flags.append("--adaptive" if adaptive else "--no-adaptive")
    return flags


def start_server(home: Path, flags: list[str]) -> dict[str, Any]:
    """``verified-tts serve`` started; its address, token, start seconds and output so far."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "verified_tts", "serve", "--port", "0", "--dir", str(home), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    out: list[str] = []
    found = None
    for line in process.stdout:
        out.append(line.rstrip("\n"))
        found = LINE.search(out[-1])
        if found:
            break
    start_s = time.perf_counter() - started
    if found is None:
        process.wait()
        raise SystemExit("the server never printed its address:\n" + "\n".join(out))
    # keep reading, so a full pipe never blocks the server
    threading.Thread(target=lambda: out.extend(process.stdout), daemon=True).start()  # type: ignore[arg-type]
    return {
        "process": process,
        "url": found.group(1),
        "token": found.group(2),
        "start_s": start_s,
        "ready_s": float(found.group(3)),
        "out": out,
        "lines_before_address": sum(1 for line in out[:-1] if line.strip()),
    }


def stop_server(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=90)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def run_clients(url: str, token: str, lines: list[str], clients: int, duration: float) -> dict:
    """Each client asks for one line at a time until ``duration`` is up; every request kept."""
    import httpx
    import soundfile as sf

    numbers = itertools.count()
    lock = threading.Lock()
    records: list[dict[str, Any]] = []
    started = time.perf_counter()
    end = started + duration

    def client(which: int) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers, timeout=600) as http:
            while time.perf_counter() < end:
                with lock:
                    k = next(numbers)
                text, seed = lines[k % len(lines)], k // len(lines)
                body = {"model": "tts-1", "voice": "default", "input": text, "seed": seed,
                        "response_format": "wav"}  # fmt: skip
                sent = time.perf_counter()
                try:
                    response = http.post("/audio/speech", json=body)
                    status, got = response.status_code, response.headers
                    audio_s = sf.info(io.BytesIO(response.content)).duration if status == 200 else 0
                except httpx.HTTPError as error:
                    status, got, audio_s = f"error: {type(error).__name__}", {}, 0.0
                done = time.perf_counter()
                with lock:
                    records.append({
                        "k": k, "client": which, "input": text, "seed": seed, "status": status,
                        "sent_s": round(sent - started, 3), "latency_s": round(done - sent, 3),
                        "id": got.get("x-verified-id"),
                        "batch": int(got.get("x-verified-batch", 0)),
                        "synthesized": got.get("x-verified-synthesized"),
                        "flagged": got.get("x-verified-flagged"), "audio_s": round(audio_s, 3),
                        "candidates": int(got.get("x-verified-candidates", 0)),
                        "done_s": round(done - started, 3),
                    })  # fmt: skip

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = max(r["done_s"] for r in records)
    return {"records": sorted(records, key=lambda r: r["k"]), "wall_s": wall}


def check_answers(url: str, token: str, home: Path, records: list[dict[str, Any]]) -> dict:
    """Lost, doubled or mismatched answers, from the client's side and the server's."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    ok = [r for r in records if r["status"] == 200]
    ids = Counter(r["id"] for r in ok)
    numbers = [r["k"] for r in records]
    mismatched = []
    with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
        for r in ok:
            record = http.get(f"/audio/speech/{r['id']}").json()
            if record.get("input") != r["input"] or record.get("seed") != r["seed"]:
                mismatched.append(r["k"])
        metrics = http.get(url.removesuffix("/v1") + "/metrics").text
        batches = http.get("/batches").json()["sizes"]
    answers = re.search(r"^verified_tts_answers_total (\S+)$", metrics, re.M)
    return {
        "requests": len(records),
        "answered_200": len(ok),
        "statuses": dict(Counter(str(r["status"]) for r in records)),
        "request_numbers_contiguous": sorted(numbers) == list(range(len(numbers))),
        "distinct_answer_ids": len(ids),
        "ids_answered_twice": sum(1 for count in ids.values() if count > 1),
        "records_mismatched": len(mismatched),
        "server_answers_total": float(answers.group(1)) if answers else None,
        "server_record_files": len(list((home / "service" / "records").glob("*.json"))),
        "all_synthesized": all(r["synthesized"] == "true" for r in ok),
        "batch_sizes_run": batches,
        "no_request_lost_or_answered_twice": (
            len(ok) == len(records)
            and len(ids) == len(ok)
            and not mismatched
            and answers is not None
            and float(answers.group(1)) == len(ok)
        ),
    }


def percentile(values: list[float], share: float) -> float:
    import numpy as np

    return round(float(np.percentile(values, share * 100)), 3) if values else float("nan")


def render_same(work: Path, lines: list[str], flags: list[str]) -> dict[str, Any]:
    """``verified-tts render`` of the same lines as one book, one run; its audio per second."""
    book = harvard_book(work / "book.md", len(lines))
    out = work / "render"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "verified_tts", "render", str(book), "-o", str(out),
         "--format", "wav", *flags],
        check=True, stdout=subprocess.DEVNULL, env={**os.environ, "RAY_ADDRESS": ""},
    )  # fmt: skip
    command_s = time.perf_counter() - started
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    utterances = manifest["utterances"]
    audio_s = sum(u["candidates"][u["winner"]]["duration_s"] for u in utterances)
    stats = manifest["stats"]
    rendering_s = stats["wall_seconds"] - stats["seconds"]["load"]
    return {
        "sentences": len(lines),
        "utterances": len(utterances),
        "n": manifest["n"],
        "adaptive": manifest["adaptive"],
        "voice": manifest["model"],
        "candidates_generated": stats["candidates_generated"],
        "mean_candidates_per_utterance": stats["mean_candidates_per_utterance"],
        "audio_seconds": round(audio_s, 2),
        "command_seconds": round(command_s, 2),
        "load_seconds": stats["seconds"]["load"],
        "rendering_seconds": round(rendering_s, 2),
        "stage_seconds": stats["seconds"],
        "audio_s_per_s_rendering": round(audio_s / rendering_s, 3),
        "audio_s_per_s_command": round(audio_s / command_s, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument(
        "--render-sentences", type=int, default=None, help="default: every sentence served"
    )
    parser.add_argument("-n", type=int, default=None, help="candidates (default: the product's)")
    parser.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--result", type=Path, default=RESULT)
    args = parser.parse_args()
    flags = _synthesis_flags(args.n, args.adaptive)
    lines = harvard_sentences()
    loads: list[list[float]] = []
    sampling = threading.Event()

    def sample_load() -> None:
        while not sampling.wait(10):
            loads.append([round(x, 2) for x in os.getloadavg()])

    threading.Thread(target=sample_load, daemon=True).start()
    result: dict[str, Any] = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "options": {
            "clients": args.clients,
            "duration_s": args.duration,
            "flags": flags,
            "response_format": "wav",
            "voice": "default (the embedded voice)",
        },
        "notes": (
            "Measured on the shared 2-core development machine while other engineers ran their "
            "own tests and benchmarks: load_average_samples shows how busy it was. The render "
            "ran after the server stopped, on the first sentences the service spoke (same text, "
            "seed 0 as the service's first pass, same voice and N)."
        ),
    }
    with tempfile.TemporaryDirectory(prefix="serve-load-") as tmp:  # short: Ray's socket paths
        work = Path(tmp)
        server = start_server(work / "serve", flags)
        print(f"serve: ready line after {server['start_s']:.1f} s", flush=True)
        try:
            load = run_clients(server["url"], server["token"], lines, args.clients, args.duration)
            checks = check_answers(server["url"], server["token"], work / "serve", load["records"])
        finally:
            stop_server(server["process"])
        records = load["records"]
        # kept before the render, so a failure after ten minutes of load loses nothing measured
        write_json_atomic(PARTIAL, {"load": load, "checks": checks, "startup_s": server["start_s"]})
        ok = [r for r in records if r["status"] == 200]
        audio_s = sum(r["audio_s"] for r in ok)
        served = {
            "wall_seconds": load["wall_s"],
            "answered": len(ok),
            "audio_seconds": round(audio_s, 2),
            "audio_s_per_s": round(audio_s / load["wall_s"], 3),
            "requests_per_s": round(len(ok) / load["wall_s"], 3),
            "mean_candidates_per_answer": round(
                sum(r["candidates"] for r in ok) / max(1, len(ok)), 3
            ),
            "latency_p50_s": percentile([r["latency_s"] for r in ok], 0.5),
            "latency_p95_s": percentile([r["latency_s"] for r in ok], 0.95),
            "latency_max_s": max((r["latency_s"] for r in ok), default=None),
            "first_request_latency_s": records[0]["latency_s"] if records else None,
        }
        sizes = checks["batch_sizes_run"]
        batching = {
            "batches_run": len(sizes),
            "mean_batch": round(sum(sizes) / len(sizes), 2) if sizes else None,
            "batch_size_counts": dict(sorted(Counter(sizes).items())),
            "share_of_answers_in_batches_over_1": round(
                sum(1 for r in ok if r["batch"] > 1) / max(1, len(ok)), 3
            ),
            "batched": bool(sizes) and max(sizes) > 1,
        }
        print(json.dumps(served), json.dumps(batching), flush=True)
        spoken = len({r["input"] for r in ok})
        spoken = min(spoken, args.render_sentences or spoken)
        render = render_same(work, lines[:spoken], flags)
    sampling.set()
    ratio = served["audio_s_per_s"] / render["audio_s_per_s_rendering"]
    result.update(
        startup={
            "seconds_to_address_line": round(server["start_s"], 2),
            "server_reported_ready_s": server["ready_s"],
            "lines_before_address": server["lines_before_address"],
            "goal_s": 30,
            "under_goal": server["start_s"] < 30,
        },
        service=served,
        checks={k: v for k, v in checks.items() if k != "batch_sizes_run"},
        batching=batching,
        render=render,
        ratio={
            "service_over_render_rendering": round(ratio, 3),
            "service_over_render_command": round(
                served["audio_s_per_s"] / render["audio_s_per_s_command"], 3
            ),
            "goal": GOAL,
            "goal_met": ratio >= GOAL,
        },
        load_average_samples=loads,
        requests=[{k: v for k, v in r.items() if k != "input"} for r in records],
    )
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    write_json_atomic(args.result, result)
    print(json.dumps(result["ratio"]), f"startup {server['start_s']:.1f} s")
    print(f"wrote {args.result}")


if __name__ == "__main__":
    main()
