"""The one way verified-tts writes a file: to a unique temporary name beside it, then a rename.

A rename within one folder is atomic, so a reader (or a run resumed after a crash) sees either the
old file or the whole new one, never half of it; the temporary name is unique per writer
(``mkstemp``), so two writers of the same file cannot collide on it, and it starts with a dot so
folder listings and globs skip it. A failed write removes its temporary file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "atomic_path",
    "write_audio_atomic",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path``; on success it replaces ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent
    )
    os.close(handle)
    try:
        yield Path(temporary)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """JSON with two-space indent, UTF-8 as is, and a final newline."""
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_audio_atomic(
    path: str | os.PathLike[str], audio: np.ndarray, sample_rate: int, **kwargs: Any
) -> None:
    """Audio through soundfile; the format follows the suffix (``subtype`` etc. in ``kwargs``)."""
    import soundfile as sf

    with atomic_path(path) as temporary:
        sf.write(temporary, audio, sample_rate, **kwargs)
