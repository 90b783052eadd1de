"""Jobs over HTTP, on the existing queue (:class:`jobs.queue.JobQueue`), not a second one.

``POST /v1/jobs`` takes ``{"command": "render"|"dub", "input": {"name", "content"}}`` (a book or
subtitle file uploaded as text) or ``{"command", "path"}`` (a file on shared storage), with
``"options"``: the render or dub command line's options
(checked when the job runs, not yet at submission). A job submitted here is one that
``verified-tts jobs list`` shows, and survives what the queue survives. :func:`job_view` is a
job's state, progress and flags so far (from the progress file a queued job keeps, then its
manifest); :func:`events` streams its changes as server-sent
events; :func:`output_file` serves a file of its output folder and answers 404 for any path that
leaves it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.service.errors import ApiError

__all__ = ["events", "job_view", "list_files", "output_file", "submit_job"]

_FINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def submit_job(queue: Any, body: Mapping[str, Any], home: Path) -> dict[str, Any]:
    """Queue the job ``body`` describes; its record as ``GET /v1/jobs/{id}`` shows it."""
    command = body.get("command")
    if command not in ("render", "dub"):
        raise ApiError(400, "command: must be 'render' or 'dub'", "command")
    options = body.get("options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ApiError(400, "options: must be a list of command-line strings", "options")
    unknown = sorted(set(body) - {"command", "input", "path", "options"})
    if unknown:
        raise ApiError(
            400, f"{unknown[0]}: unknown field; use command, input or path, options", unknown[0]
        )
    if ("input" in body) == ("path" in body):
        raise ApiError(400, "input: give either input {name, content} or path, not both", "input")
    if "path" in body:
        source = Path(str(body["path"]))
        if not source.is_file():
            raise ApiError(400, f"path: {source} is not a file on this server's storage", "path")
    else:
        upload = body["input"]
        if not isinstance(upload, Mapping) or not isinstance(upload.get("content"), str):
            raise ApiError(400, 'input: must be {"name": FILE, "content": TEXT}', "input")
        name = Path(str(upload.get("name") or "input.md")).name
        if not name or name.startswith("."):
            raise ApiError(400, "input.name: give a file name such as book.md", "input.name")
        digest = hashlib.sha256(upload["content"].encode("utf-8")).hexdigest()[:16]
        source = home / "uploads" / digest / name
        source.parent.mkdir(parents=True, exist_ok=True)
        if not source.is_file():
            source.write_text(upload["content"], encoding="utf-8")
    label = hashlib.sha256(json.dumps([command, str(source), options]).encode()).hexdigest()[:12]
    out = home / "outputs" / f"{source.stem}-{label}"
    try:
        record = queue.submit(command, source, options, str(out))
    except UserError as error:
        raise ApiError(409 if "already submitted" in str(error) else 400, str(error)) from None
    return job_view(queue.status(record.id))


def _progress(output: Path) -> dict[str, Any]:
    """Utterances done of all, and flagged so far: from the job's progress file while it runs
    (:mod:`jobs.progress`), from its manifest once that is written, whichever is newer."""
    from jobs.progress import PROGRESS_FILE, read_progress

    manifest = output / "manifest.json"
    running = read_progress(output)
    if running is not None and _mtime(output / PROGRESS_FILE) > _mtime(manifest):
        share = running.done / running.total if running.total else 0.0
        return {"progress": round(share, 4), "utterances": running.total,
                "done": running.done, "flagged": running.flagged}  # fmt: skip
    try:
        utterances = json.loads(manifest.read_text(encoding="utf-8")).get("utterances", [])
    except (OSError, json.JSONDecodeError, AttributeError):
        return {"progress": None, "utterances": None, "done": None, "flagged": None}
    return {
        "progress": 1.0,
        "utterances": len(utterances),
        "done": len(utterances),
        "flagged": sum(1 for u in utterances if u.get("flagged")),
    }


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def job_view(record: Any) -> dict[str, Any]:
    """A job as the API shows it: the queue's record plus progress and flags so far."""
    view = {k: v for k, v in record.as_dict().items() if k != "spec"}
    return {**view, **_progress(Path(record.output))}


def events(queue: Any, job_id: str, poll_s: float = 1.0) -> Iterator[str]:
    """Server-sent events: one ``progress`` event per change of the job, ``end`` when it ends."""
    last = None
    while True:
        view = job_view(queue.status(job_id))
        view.pop("history", None)
        now = json.dumps(view, sort_keys=True)
        if now != last:
            yield f"event: progress\ndata: {now}\n\n"
            last = now
        if view["state"] in _FINAL:
            yield f"event: end\ndata: {now}\n\n"
            return
        time.sleep(poll_s)


def list_files(record: Any) -> list[str]:
    root = Path(record.output)
    if not root.is_dir():
        return []
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != "store" and not p.name.startswith(".")
    )


def output_file(record: Any, relative: str) -> Path:
    """The file ``relative`` of the job's output folder; 404 for anything outside it."""
    root = Path(record.output).resolve()
    try:
        path = (root / relative).resolve()
        path.relative_to(root)
    except (ValueError, OSError):
        raise ApiError(404, f"no file {relative!r} in job {record.id}'s output", "path") from None
    if not path.is_file():
        raise ApiError(404, f"no file {relative!r} in job {record.id}'s output", "path")
    return path
