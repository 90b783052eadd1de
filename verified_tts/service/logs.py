"""Structured logs of the service: one JSON object a line, in ``DIR/service/log.jsonl``.

The front door writes a line per request (``event: request``: method, route, status, seconds),
one per retry after a replica died (``event: replica_died``) and one per unexpected error with
its traceback (``event: error``; the client gets one line, the log gets the rest); the synthesis
replica writes one per batch (``event: batch``: requests, answered, candidates, seconds). Every
line has ``time`` (UTC, ISO 8601), ``level`` and ``process`` (the replica's pid), so lines of
several replicas appending to the same file can be told apart. Each line is written whole with
one ``write`` to a file opened for appending, so lines from several processes do not interleave.
:func:`attach` points the ``verified_tts.service`` logger at that file, once per process;
:func:`event` writes a line.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import traceback
from pathlib import Path
from typing import Any

__all__ = ["LOG_FILE", "attach", "event"]

LOG_FILE = "log.jsonl"
_LOGGER = logging.getLogger("verified_tts.service")


class _JsonLines(logging.Handler):
    def __init__(self, path: Path) -> None:
        super().__init__(logging.INFO)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def emit(self, record: logging.LogRecord) -> None:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(),
            "level": record.levelname.lower(),
            "process": record.process,
            **getattr(record, "fields", {"event": "message", "message": record.getMessage()}),
        }
        if record.exc_info:
            line["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        try:
            os.write(self._descriptor, (json.dumps(line, default=str) + "\n").encode("utf-8"))
        except OSError:
            self.handleError(record)


def attach(home: Path) -> Path:
    """Send the service's log lines to ``home/log.jsonl`` (once per process); returns the path."""
    path = Path(home) / LOG_FILE
    for handler in _LOGGER.handlers:
        if isinstance(handler, _JsonLines) and handler.path == path:
            return path
    _LOGGER.addHandler(_JsonLines(path))
    _LOGGER.setLevel(logging.INFO)
    _LOGGER.propagate = False  # Ray's own log of the replica keeps its format; ours is JSON
    return path


def event(name: str, level: int = logging.INFO, exc_info: bool = False, **fields: Any) -> None:
    """One log line: ``{"event": name, **fields}`` beside the time, level and process."""
    _LOGGER.log(level, name, exc_info=exc_info, extra={"fields": {"event": name, **fields}})
