"""Jobs on Kubernetes (KubeRay): a job staged on shared storage, and its RayJob fields.

On a KubeRay cluster the job queue works as on any Ray cluster (``verified-tts jobs submit
--address http://HEAD-SVC:8265``). A one-off ``RayJob`` instead has KubeRay submit the job itself,
so its working dir must already be on storage every pod mounts: :func:`stage_job` writes it there
(``spec.json`` and ``input/``, as ``jobs submit`` stages it) and :func:`rayjob_fields` gives the
RayJob ``spec`` fields that submit exactly what the queue would (:func:`jobs.queue.submission`):
the entrypoint, ``jobId``, ``runtimeEnvYAML``, ``metadata`` and ``entrypointResources``. The
documented example (docs/kubernetes.md) is checked against these by the tests.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jobs.queue import submission
from jobs.spec import JobSpec, build_spec, stage
from verified_tts.errors import MissingExtra

__all__ = ["rayjob_fields", "stage_job"]


def stage_job(
    command: str,
    input_file: str | os.PathLike[str],
    args: Sequence[str],
    out: str | None,
    directory: str | os.PathLike[str],
) -> tuple[JobSpec, Path]:
    """Write the job's working dir under ``directory`` (on the shared volume); nothing is
    submitted. Returns the spec and the working dir."""
    spec, files = build_spec(command, input_file, args, out)
    working_dir = Path(directory).expanduser().resolve() / spec.job_id / "wd"
    stage(spec, files, working_dir)
    return spec, working_dir


def rayjob_fields(
    spec: JobSpec, working_dir: str, *, python: str = "python", slots: bool = True
) -> dict[str, Any]:
    """The RayJob ``spec`` fields for ``spec`` staged at ``working_dir``; ``python`` is the job
    image's interpreter (the queue submits its own interpreter's path)."""
    try:
        import yaml
    except ImportError as error:
        raise MissingExtra("a RayJob manifest", "kubernetes", "pyyaml") from error
    submitted = submission(spec, spec.job_id, working_dir, slots)
    _, _, rest = submitted["entrypoint"].partition(" ")
    fields: dict[str, Any] = {
        "entrypoint": f"{python} {rest}",
        "jobId": submitted["submission_id"],
        "runtimeEnvYAML": yaml.safe_dump(submitted["runtime_env"], sort_keys=True),
        "metadata": dict(submitted["metadata"]),
    }
    resources: Mapping[str, float] | None = submitted["entrypoint_resources"]
    if resources:
        fields["entrypointResources"] = json.dumps(dict(resources))
    return fields
