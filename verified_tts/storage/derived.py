"""Files derived from a model once and kept in the cache: a rewritten graph, a converted network.

Some models are rewritten before they run (Piper's voice graph gets seeded noise inputs and its
duration predictor cut out; Resemblyzer's checkpoint becomes an onnxruntime graph), and the
rewrite costs each process seconds that the result, written once, does not. :func:`derived_folder`
gives the folder ``<cache>/derived/<kind>/<key>`` (the cache of :func:`~verified_tts.models
.cache_root`), made by ``make(folder)`` the first time: into a temporary folder renamed into place,
so a process that dies half-way leaves nothing another would read, and two that make the same
folder at once both end with one whole copy. The key must name everything the files depend on:
the source files' digest and :func:`recipe_digest` of the code that derives them, so a new
version of that code makes new files rather than reading old ones; of the folders of a kind made
more than a day ago, only those among the eight made last are kept. A cache that cannot be
written (a read-only home) costs the rewrite each time, never an error.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["derived_folder", "recipe_digest"]

_DONE = ".complete"  # written last into a made folder: the folder is whole
_KEPT = 8  # folders of one kind kept, the most recently made: older code's and voices' go
_IN_USE_S = 86_400.0  # a folder made within this time is never removed: a process may be reading it


def recipe_digest(*modules: object) -> str:
    """A digest of the source files of ``modules`` (the code that derives the files)."""
    digest = hashlib.sha256()
    for module in modules:
        path = getattr(module, "__file__", None)
        digest.update(Path(path).read_bytes() if path else repr(module).encode())
    return digest.hexdigest()[:16]


def derived_folder(kind: str, key: str, make: Callable[[Path], None]) -> Path:
    """The folder of ``kind`` files for ``key``, made by ``make(folder)`` unless it is cached."""
    from verified_tts.models import cache_root

    final = cache_root() / "derived" / kind / key
    if (final / _DONE).is_file():
        return final
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key[:12]}.", dir=final.parent))
    except OSError:  # no cache to write to: made in a temporary folder for this process
        staging = Path(tempfile.mkdtemp(prefix=f"vtts-{kind}-"))
        atexit.register(shutil.rmtree, staging, True)
        make(staging)
        return staging
    try:
        make(staging)
        (staging / _DONE).write_bytes(b"")
        if final.exists():  # an incomplete copy a killed process left, or one made meanwhile
            if (final / _DONE).is_file():
                shutil.rmtree(staging, ignore_errors=True)
                return final
            shutil.rmtree(final, ignore_errors=True)
        os.replace(staging, final)
        _prune(final.parent, keep=final)
    except OSError:
        if (final / _DONE).is_file():  # another process renamed its copy in first
            shutil.rmtree(staging, ignore_errors=True)
            return final
        atexit.register(shutil.rmtree, staging, True)
        return staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _prune(kind_folder: Path, keep: Path) -> None:
    """Remove the folders of a kind made more than a day ago, beyond the ``_KEPT`` made last
    (files of an older version of the code, or of models no longer used, would otherwise pile
    up); a folder made today may be in use by another process, and stays."""
    made = []
    for folder in kind_folder.iterdir():
        marker = folder / _DONE
        if folder != keep and marker.is_file():
            made.append((marker.stat().st_mtime, folder))
    day_ago = time.time() - _IN_USE_S
    for made_at, folder in sorted(made, reverse=True)[_KEPT - 1 :]:
        if made_at < day_ago:
            shutil.rmtree(folder, ignore_errors=True)
