"""One writer per output folder: the lock that ``render``, ``rerender``, ``dub``, ``review`` take.

Every command that rewrites an output folder's manifest, chapters or deliverables holds an
exclusive ``flock`` on ``OUT/verified-tts.lock`` while it works, and writes into the file who
holds it (the command, its process id and when it started), so a second command on the same
folder is refused with one line that names the holder (or, where it asked to wait, waits for it)
instead of racing it. The kernel drops the lock when its process dies, ``kill -9`` included, so
a crash never leaves the folder locked. Within one process the lock is re-entrant: the review
app holds it for its lifetime and may run the dub workflow, which takes it too.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from verified_tts.errors import UserError

__all__ = ["LOCK_FILE", "holder", "output_lock"]

LOCK_FILE = "verified-tts.lock"  # not hidden: a finished run leaves no hidden file

_held: dict[Path, int] = {}  # folders this process holds, with how many times it entered
_guard = threading.Lock()


def holder(out_dir: str | os.PathLike) -> str:
    """Who holds (or last held) the folder's lock, in words."""
    try:
        data = json.loads((Path(out_dir) / LOCK_FILE).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        data = {}
    if not data:
        return "another verified-tts command"
    started = time.strftime("%H:%M:%S", time.localtime(data.get("started", 0)))
    return f"`verified-tts {data.get('command', '?')}` (process {data.get('pid')}, since {started})"


@contextmanager
def output_lock(
    out_dir: str | os.PathLike,
    command: str,
    *,
    wait: bool = False,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold ``out_dir``'s lock for the block; refuse (or, with ``wait``, wait) while another
    process holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not a POSIX system: no advisory locks to take
        yield
        return
    folder = Path(out_dir).resolve()
    with _guard:
        if folder in _held:
            _held[folder] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _guard:
                _held[folder] -= 1
        return
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = holder(folder)
            if not wait:
                raise UserError(
                    f"{out_dir} is in use by {who}: wait for it to finish (close a review with "
                    "Ctrl-C), then run this again"
                ) from None
            if on_wait:
                on_wait(who)
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        record = {"command": command, "pid": os.getpid(), "started": time.time()}
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, json.dumps(record).encode(), 0)
        with _guard:
            _held[folder] = 1
        try:
            yield
        finally:
            with _guard:
                del _held[folder]
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)
