"""The one way verified-tts writes a file: to a unique temporary name beside it, then a rename.

A rename within one folder is atomic, so a reader (or a run resumed after a crash) sees either the
old file or the whole new one, never half of it; the temporary name is unique per writer
(``mkstemp``), so two writers of the same file cannot collide on it, and it starts with a dot so
folder listings and globs skip it. A failed write removes its temporary file. The finished file
gets the permissions an ordinary ``open`` would give it (``mkstemp`` makes it owner-only), and a
write that fails because the disk is full is reported as one :class:`UserError` line rather than
the bare "System error" that libsndfile raises.
"""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError

__all__ = [
    "atomic_path",
    "interrupted_writes",
    "remove_interrupted_writes",
    "write_audio_atomic",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]


_FULL = (errno.ENOSPC, errno.EDQUOT)
_ALMOST_FULL_BYTES = 256 * 1024  # libsndfile hides errno: below this much room, blame the disk


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()
# mkstemp's names below: "." + the target's stem + "." + 8 random characters + the suffix
_TEMPORARY_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}(\.[A-Za-z0-9]+)?$")


def _disk_full(error: BaseException, folder: Path) -> bool:
    if isinstance(error, OSError) and error.errno in _FULL:
        return True
    if isinstance(error, (OSError, RuntimeError)):  # soundfile's LibsndfileError is a RuntimeError
        try:
            stats = os.statvfs(folder)
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < _ALMOST_FULL_BYTES
    return False


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path``; on success it replaces ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent
        )
    except OSError as error:
        if _disk_full(error, target.parent):
            raise _full_error(target) from error
        raise
    os.close(handle)
    try:
        yield Path(temporary)
        os.chmod(temporary, _FILE_MODE)
        os.replace(temporary, target)
    except BaseException as error:
        full = _disk_full(error, target.parent)  # judged before the temporary file frees room
        Path(temporary).unlink(missing_ok=True)
        if full:
            raise _full_error(target) from error
        raise


def interrupted_writes(folder: str | os.PathLike[str]) -> list[Path]:
    """Temporary files of this writer in ``folder``: only a killed writer leaves them behind."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if _TEMPORARY_NAME.match(p.name) and p.is_file())


def remove_interrupted_writes(
    folders: Iterable[str | os.PathLike[str]], *, older_than: float
) -> int:
    """Remove temporary files last modified before ``older_than`` (a ``time.time()``).

    Called when a run has finished its outputs: a temporary file older than the run's start
    belongs to a run that was killed mid-write (a write takes seconds, not the whole run), and a
    killed write of a whole-book WAV would otherwise keep a gigabyte of hidden garbage.
    """
    removed = 0
    for folder in folders:
        for path in interrupted_writes(folder):
            try:
                if path.stat().st_mtime < older_than:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
    return removed


def _full_error(target: Path) -> UserError:
    return UserError(
        f"no space left on the device to write {target}: free some space (or choose another "
        "--out) and run the same command again; finished candidates in the store are kept"
    )


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """JSON with two-space indent, UTF-8 as is, and a final newline.

    Streamed into the file: ``json.dumps`` with an indent joins a list of every token, which
    for a 1,000-utterance manifest (24 MB of JSON) held 133 MiB at once."""
    with atomic_path(path) as temporary, open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def write_audio_atomic(
    path: str | os.PathLike[str], audio: np.ndarray, sample_rate: int, **kwargs: Any
) -> None:
    """Audio through soundfile; the format follows the suffix (``subtype`` etc. in ``kwargs``)."""
    import soundfile as sf

    with atomic_path(path) as temporary:
        sf.write(temporary, audio, sample_rate, **kwargs)
