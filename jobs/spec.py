"""Job specs: what a queued render or dub runs, as plain data that travels with the job.

A :class:`JobSpec` names the command (``render`` or ``dub``), the input file, the command's
options and the output folder. Every file the job reads is copied into the job's working
directory, which Ray uploads with the job, so the job never depends on the submitter's paths:
the input, the files options name (``--config``, ``--voice-ref``, ``--mix``, ``--lexicon``, and
``--model`` or ``--codec`` when they name a file, with a Piper voice's ``VOICE.onnx.json``
beside it), and the files the config names (every option marked as a path in
:mod:`verified_tts.options`); the carried config's paths are rewritten to the copies. The spec
refers to the files by their names there and records their SHA-256. The spec's hash (command,
file contents, options, output folder) is the job's id, so submitting the same spec twice is
recognised and a changed file is another job. The interpreter and package version of
the submitter travel too: the entrypoint runs that interpreter and refuses another version.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.storage.keys import stable_hash

__all__ = [
    "COMMANDS",
    "FILE_OPTIONS",
    "INPUT_DIR",
    "MAYBE_FILES",
    "SPEC_FILE",
    "JobSpec",
    "build_spec",
    "file_sha256",
    "stage",
]

COMMANDS = ("render", "dub")
# option values that are files to carry; a model or codec may be a folder or hub id instead
FILE_OPTIONS = (
    "--config", "--voice-ref", "--mix", "--video", "--background", "--lexicon", "--model",
    "--codec",
)  # fmt: skip
MAYBE_FILES = ("--model", "--codec")  # carried when they name a file, passed on as given else
RESERVED_OPTIONS = ("--ray", "--out", "-o")  # set by the queue, not by the job's options
SPEC_FILE = "spec.json"
INPUT_DIR = "input"  # inside the working dir, so no input can shadow a Python package


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class JobSpec:
    """One render or dub job, independent of where it was submitted from."""

    command: str  # "render" | "dub"
    input_name: str  # file name under input/ in the working dir
    args: tuple[str, ...]  # the command's options, file values rewritten to input/<name>
    files: tuple[tuple[str, str], ...]  # (name under input/, sha256) of every carried file
    out: str  # absolute output folder where the job runs (the store lives there)
    python: str  # the submitter's interpreter: the job runs the same one
    version: str  # the submitter's verified-tts version

    def spec_hash(self) -> str:
        # the interpreter and version say how, not what: the same work from another venv is
        # the same job
        return stable_hash(
            {
                "command": self.command,
                "input": self.input_name,
                "args": list(self.args),
                "files": [list(f) for f in self.files],
                "out": self.out,
            },
            length=24,
        )

    @property
    def job_id(self) -> str:
        return f"vtts-{self.command}-{self.spec_hash()[:12]}"

    def argv(self) -> list[str]:
        """The verified-tts command line the job runs inside its working dir."""
        return [
            self.command,
            f"{INPUT_DIR}/{self.input_name}",
            "--out",
            self.out,
            *self.args,
            "--ray",
            "auto",
        ]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobSpec:
        return cls(
            command=data["command"],
            input_name=data["input_name"],
            args=tuple(data["args"]),
            files=tuple((str(n), str(h)) for n, h in data["files"]),
            out=data["out"],
            python=data["python"],
            version=data["version"],
        )

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> JobSpec:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def _readable_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise UserError(f"{what} {path} does not exist: check the path")
    if not path.is_file():
        raise UserError(f"{what} {path} is not a file")
    return path.resolve()


Staged = Path | bytes  # a file to copy, or the content of a rewritten config


def _carried(args: Sequence[str]) -> tuple[list[str], dict[str, Staged]]:
    """Rewrite file-valued options to their names under input/; returns the files to stage."""
    out: list[str] = []
    files: dict[str, Staged] = {}
    items = list(args)
    i = 0
    while i < len(items):
        item = items[i]
        option, eq, inline = item.partition("=")
        if option in RESERVED_OPTIONS:
            raise UserError(f"{option} is set by the job queue; pass --out to `jobs submit` itself")
        if option in FILE_OPTIONS and option.startswith("--"):
            if eq:
                value = inline
            elif i + 1 < len(items):
                value = items[i + 1]
                i += 1
            else:
                raise UserError(f"{option} needs a file")
            if option in MAYBE_FILES and not Path(value).expanduser().is_file():
                out += [option, value]  # a folder or a hub id: the cluster finds it itself
                i += 1
                continue
            source = _readable_file(Path(value).expanduser(), option)
            name = _carry(files, option.lstrip("-"), source, _SIDECARS.get(option, ()))
            if option == "--config":
                files.update(_config_files(source, name))
            out += [option, f"{INPUT_DIR}/{name}"]
        else:
            out.append(item)
        i += 1
    return out, files


# files that travel beside the one an option names: a Piper voice's VOICE.onnx.json
_SIDECARS = {"--model": (".json",)}


def _carry(files: dict[str, Staged], prefix: str, source: Path, sidecars: Sequence[str]) -> str:
    """Stage ``source`` as ``PREFIX-NAME`` (and each sidecar found beside it); returns the name."""
    name = f"{prefix}-{source.name}"
    files[name] = source
    for suffix in sidecars:
        beside = source.with_name(source.name + suffix)
        if beside.is_file():
            files[name + suffix] = beside.resolve()
    return name


def _config_files(config: Path, name: str) -> dict[str, Staged]:
    """The files a config names (its path options), and the config rewritten to point at their
    copies under input/ (staged as ``name``; as it is when it names none). Checking it here makes
    a bad config fail at submission rather than on the cluster."""
    import tomli_w

    from verified_tts.config import read_config_file
    from verified_tts.options import RenderConfig, table_paths

    table = read_config_file(config)
    files: dict[str, Staged] = {}
    for keys, value, sidecars in table_paths(RenderConfig, table):
        source = Path(value).expanduser()
        if not source.is_file():
            continue  # a folder or a hub id (models, codecs): the cluster finds it itself
        carried = _carry(files, ".".join(keys), source.resolve(), sidecars)
        parent = table
        for key in keys[:-1]:
            parent = parent[key]
        parent[keys[-1]] = f"{INPUT_DIR}/{carried}"
    if files:
        files[name] = tomli_w.dumps(table).encode("utf-8")
    return files


def _sha256(staged: Staged) -> str:
    if isinstance(staged, bytes):
        return hashlib.sha256(staged).hexdigest()
    return file_sha256(staged)


def build_spec(
    command: str, input_file: str | os.PathLike[str], args: Sequence[str], out: str | None
) -> tuple[JobSpec, dict[str, Staged]]:
    """The spec of a job plus the local files to stage into its working dir."""
    from verified_tts import __version__

    if command not in COMMANDS:
        raise UserError(f"unknown job command '{command}': choose one of {', '.join(COMMANDS)}")
    source = _readable_file(Path(input_file).expanduser(), "input")
    rewritten, extra = _carried(args)
    files = {source.name: source, **extra}
    # the output folder is where the job runs; relative paths mean the submitter's cwd
    out_dir = Path(out).expanduser() if out else Path("out") / source.stem
    spec = JobSpec(
        command=command,
        input_name=source.name,
        args=tuple(rewritten),
        files=tuple(sorted((name, _sha256(staged)) for name, staged in files.items())),
        out=str(out_dir.resolve()),
        python=sys.executable,
        version=__version__,
    )
    return spec, files


def stage(spec: JobSpec, files: Mapping[str, Staged], working_dir: Path) -> Path:
    """Write the job's working dir: spec.json and input/<files>; Ray uploads it with the job."""
    inputs = working_dir / INPUT_DIR
    inputs.mkdir(parents=True, exist_ok=True)
    for name, staged in files.items():
        if isinstance(staged, bytes):
            (inputs / name).write_bytes(staged)
        else:
            shutil.copyfile(staged, inputs / name)
    (working_dir / SPEC_FILE).write_text(json.dumps(spec.to_dict(), indent=2), encoding="utf-8")
    return working_dir
