"""Helpers of the review tests: a small rendered book, and checks that a chapter file holds a
chosen take where assembly puts it (sample-exact) and that the M4B carries it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

from verified_tts.config import AssemblyOptions
from verified_tts.output.assembly import Placed, level_clip, trim_silence, write_chapter
from verified_tts.output.manifest import read_manifest

BOOK = """## One

The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.

## Two

It's easy to tell the depth of a well. The Tortoise never stopped.

## Three

The Tortoise won the race.
"""


def manifest_json(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def chapter_lines(out: Path, chapter: int) -> list[int]:
    return [i for i, u in enumerate(manifest_json(out)["utterances"]) if u["chapter"] == chapter]


def segments_of(out: Path):
    from verified_tts.review.deliver import book_segments
    from verified_tts.workflows.rerender import original_config

    manifest = read_manifest(out)
    book, segments = book_segments(manifest, original_config(manifest))
    return manifest, book, segments


def expected_chapter(out: Path, chapter: int, takes: dict[int, str], tmp: Path) -> np.ndarray:
    """The chapter as assembly makes it from each line's take: ``takes`` maps a line's position
    to the audio (relative to ``out``) it must hold; other lines keep the manifest's winner."""
    manifest, book, segments = segments_of(out)
    title = next(c.title for c in book.chapters if c.index == chapter)
    items = [
        Placed(
            audio=sf.read(out / takes.get(i, manifest.utterances[i].audio), dtype="float32")[0],
            chapter=chapter,
            chapter_title=title,
            pause_after=segments[i].pause_after,
            pause_before=segments[i].pause_before,
        )
        for i in chapter_lines(out, chapter)
    ]
    written = write_chapter(items, chapter, title, int(manifest.sample_rate), tmp,
                            AssemblyOptions(), formats=("flac",))  # fmt: skip
    return sf.read(tmp / written.flac, dtype="int16")[0]


def take_offset(out: Path, chapter: int, position: int, takes: dict[int, str]) -> tuple[int, int]:
    """(first sample, length) of line ``position``'s levelled take in its chapter, counted the
    way assembly lays a chapter out: lead-in, then each take and the pause after it."""
    manifest, _, segments = segments_of(out)
    rate = int(manifest.sample_rate)
    options = AssemblyOptions()
    pauses = {"sentence": options.sentence_pause, "paragraph": options.paragraph_pause}
    at = round(options.lead_in * rate)
    previous_pause = 0
    lines = chapter_lines(out, chapter)
    for number, i in enumerate(lines):
        if number and segments[i].pause_before is not None:
            at += round(segments[i].pause_before * rate) - previous_pause
        audio = sf.read(out / takes.get(i, manifest.utterances[i].audio), dtype="float32")[0]
        length = len(level_clip(trim_silence(audio, rate), rate, options))
        if i == position:
            return at, length
        previous_pause = round(pauses.get(segments[i].pause_after, 0.0) * rate)
        at += length + previous_pause
    raise AssertionError(f"line {position} is not in chapter {chapter}")


def levelled(out: Path, audio: str, rate: int) -> np.ndarray:
    clip = sf.read(out / audio, dtype="float32")[0]
    return level_clip(trim_silence(clip, rate), rate, AssemblyOptions())


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    n = min(len(a), len(b))
    a, b = a[:n].astype(np.float64), b[:n].astype(np.float64)
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


def m4b_audio(path: Path) -> np.ndarray:
    import av

    with av.open(str(path)) as container:
        frames = [f.to_ndarray().reshape(-1) for f in container.decode(audio=0)]
    return np.concatenate(frames).astype(np.float32)


def upsampled(audio: np.ndarray, start: int, length: int) -> np.ndarray:
    """``audio[start:start + length]`` (22.05 kHz) at the M4B's 44.1 kHz."""
    from scipy.signal import resample_poly

    return resample_poly(audio[start : start + length].astype(np.float64), 2, 1)


def m4b_region(m4b: np.ndarray, book_flac: np.ndarray, start: int, length: int) -> np.ndarray:
    """The M4B's samples (44.1 kHz) that hold ``book_flac[start:start + length]`` (22.05 kHz),
    found past the AAC encoder's priming by cross-correlation."""
    from scipy.signal import correlate

    window = upsampled(book_flac, start, length)
    offset = max(0, 2 * start - 4096)
    search = m4b[offset : 2 * (start + length) + 4096].astype(np.float64)
    lag = int(np.argmax(correlate(search, window, mode="valid")))
    return search[lag : lag + len(window)]


def copy_render(review_render, into: Path) -> tuple[Path, Path]:
    """A copy of the session's rendered review book (its manifest still names the book)."""
    import shutil

    book, out, _ = review_render
    shutil.copytree(out, into)
    return book, into


class App:
    """``verified-tts review OUT`` run as a user runs it, in its own process; the address is
    read from what it prints."""

    def __init__(
        self, out: Path, *args: str, wait_for: str = "open http", cwd: Path | None = None
    ) -> None:
        import os
        import queue
        import subprocess
        import sys
        import threading

        self.out = out
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "verified_tts", "review", str(out), "--no-browser",
             "--port", "0", "--reviewer", "ann", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self.base = self.token = ""
        if wait_for:
            self.wait_for(wait_for)

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")  # the process ended

    def wait_for(self, text: str, timeout: float = 180) -> str:
        import queue
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if line == "" and self.process.poll() is not None:
                raise AssertionError("the review ended: " + "\n".join(self.seen))
            if text in line:
                if "open http" in line:
                    self.url = line.split("open ", 1)[1].strip()
                    self.base = self.url.split("/?token=")[0]
                    self.token = self.url.split("token=")[1]
                return line
        raise AssertionError(f"no line with {text!r} in: " + "\n".join(self.seen))

    def output(self) -> str:
        """Everything it printed (once it has ended)."""
        import queue

        lines = list(self.seen)
        while True:
            try:
                line = self.lines.get(timeout=5)
            except queue.Empty:
                break
            if line == "" and self.process.poll() is not None:
                break
            lines.append(line)
        return "\n".join(lines)

    def request(self, path: str, body: dict | None = None, *, token: bool = True,
                headers: dict | None = None) -> tuple[int, bytes, dict]:  # fmt: skip
        import urllib.error
        import urllib.request

        sent = dict(headers or {})
        if token:
            sent["X-Review-Token"] = self.token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        request = urllib.request.Request(self.base + path, data=data, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as error:
            return error.code, error.read(), dict(error.headers)

    def api(self, path: str, body: dict | None = None) -> dict:
        status, content, _ = self.request(path, body)
        assert status == 200, content
        return json.loads(content)

    def wait_jobs(self, kind: str | None = None, timeout: float = 600) -> list[dict]:
        """Wait until the work queue is idle (and, with ``kind``, has run such a job)."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = self.api("/api/jobs")["jobs"]
            seen = kind is None or any(j["kind"] == kind for j in jobs)
            if seen and all(j["state"] not in ("queued", "running") for j in jobs):
                return jobs
            time.sleep(0.2)
        raise AssertionError("the review's work did not finish")

    def stop(self) -> int:
        import signal

        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=60)

    def kill(self) -> None:
        import signal

        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)
