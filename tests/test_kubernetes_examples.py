"""The KubeRay examples in docs/kubernetes/ against what the job queue really submits.

A RayJob must hand the Jobs API exactly what ``verified-tts jobs submit`` would (entrypoint,
submission id, runtime env, metadata, the job-slot resource), its cluster must hold the actors the
example render config asks for, and every pod must see the same shared volume where the job's
working dir and output folder live. These tests parse the committed YAML and compare it field by
field with :func:`jobs.queue.submission` and :func:`jobs.kubernetes.rayjob_fields` for a job
staged by ``verified-tts jobs stage`` itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from typer.testing import CliRunner

from jobs.kubernetes import rayjob_fields
from jobs.queue import SLOTS_ENV, submission
from jobs.spec import SPEC_FILE, JobSpec
from verified_tts.cluster.ray_backend import actor_requests, check_fits
from verified_tts.cluster.state import JOB_RESOURCE
from verified_tts.config import build_config, read_config_file
from verified_tts.errors import UserError

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "kubernetes"
SHARED = "/data"
EXAMPLE_ID = "vtts-render-0123456789ab"


def load(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))


def pods(cluster: dict) -> list[dict]:
    """Every pod template of a RayCluster spec: the head's and each worker group's."""
    return [cluster["headGroupSpec"]["template"]] + [
        group["template"] for group in cluster["workerGroupSpecs"]
    ]


def start_resources(params: dict) -> dict[str, float]:
    """``rayStartParams.resources`` as KubeRay passes it to ``ray start``: quoted JSON."""
    text = params.get("resources", "{}").strip()
    if text.startswith('"') and text.endswith('"'):
        text = text[1:-1].replace('\\"', '"')
    return json.loads(text)


@pytest.fixture
def staged(tmp_path: Path) -> tuple[JobSpec, Path, dict]:
    """A render job staged the way the RayJob's comment says, into a folder of the test's."""
    from verified_tts.cli import app

    book = tmp_path / "book.md"
    book.write_text("# A\n\nOne sentence for the cluster.\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        [
            "jobs",
            "stage",
            "render",
            str(book),
            "--dir",
            str(tmp_path / "jobs"),
            "--out",
            f"{SHARED}/out/book",
            "--config",
            str(EXAMPLES / "render.toml"),
            "--json",
        ],  # fmt: skip
    )
    assert result.exit_code == 0, result.stdout
    printed = json.loads(result.stdout.strip().splitlines()[-1])
    working_dir = Path(printed["working_dir"])
    spec = JobSpec.read(working_dir / SPEC_FILE)
    assert (working_dir / "input" / "book.md").is_file()
    return spec, working_dir, printed["rayjob"]


def test_the_rayjob_submits_what_the_queue_submits(staged):
    spec, working_dir, printed = staged
    assert printed == rayjob_fields(spec, str(working_dir))
    job = load("rayjob.yaml")["spec"]
    assert re.fullmatch(r"vtts-render-[0-9a-f]{12}", spec.job_id)
    assert job["jobId"] == EXAMPLE_ID and re.fullmatch(r"vtts-render-[0-9a-f]{12}", job["jobId"])

    # the example's fields are the staged job's with its id and its folder on the shared volume
    shared_dir = f"{SHARED}/jobs/{spec.job_id}/wd"
    expected = rayjob_fields(spec, shared_dir)
    example = json.loads(json.dumps({k: job[k] for k in expected}).replace(EXAMPLE_ID, spec.job_id))
    example["runtimeEnvYAML"] = yaml.safe_load(example["runtimeEnvYAML"])
    expected["runtimeEnvYAML"] = yaml.safe_load(expected["runtimeEnvYAML"])
    assert example == expected

    # and those are the Jobs API call the queue makes, but for the interpreter's path
    queued = submission(spec, spec.job_id, shared_dir, slots=True)
    assert job["entrypoint"].split()[1:] == queued["entrypoint"].split()[1:]
    assert expected["runtimeEnvYAML"] == queued["runtime_env"]
    assert json.loads(job["entrypointResources"]) == queued["entrypoint_resources"]
    assert job["metadata"].keys() == queued["metadata"].keys()
    assert spec.out.startswith(f"{SHARED}/")  # the store lives on the shared volume


def test_every_pod_runs_the_same_image_and_mounts_the_shared_volume():
    cluster = load("raycluster.yaml")["spec"]
    job = load("rayjob.yaml")["spec"]
    assert job["rayClusterSpec"] == cluster  # one cluster shape, for jobs and for RayJobs
    templates = [*pods(cluster), job["submitterPodTemplate"]]
    images, claims = set(), set()
    for template in templates:
        spec = template["spec"]
        (container,) = spec["containers"]
        images.add(container["image"])
        (mount,) = container["volumeMounts"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert mount["mountPath"] == SHARED
        claims.add(volume["persistentVolumeClaim"]["claimName"])
    assert len(images) == 1 and len(claims) == 1


def test_the_head_has_job_slots_and_says_so():
    cluster = load("raycluster.yaml")["spec"]
    head = cluster["headGroupSpec"]
    assert start_resources(head["rayStartParams"])[JOB_RESOURCE] >= 1
    (container,) = head["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env[SLOTS_ENV] == "1"  # the queue then reserves a slot per job
    for group in cluster["workerGroupSpecs"]:
        assert JOB_RESOURCE not in start_resources(group["rayStartParams"])


def cluster_nodes(cluster: dict) -> list[dict]:
    """The nodes the RayCluster starts, as ``ray.nodes()`` would list them."""

    def node(params: dict) -> dict:
        resources = {"CPU": float(params.get("num-cpus", 0))}
        if "num-gpus" in params:
            resources["GPU"] = float(params["num-gpus"])
        resources.update(start_resources(params))
        return {"Alive": True, "Resources": resources}

    nodes = [node(cluster["headGroupSpec"]["rayStartParams"])]
    for group in cluster["workerGroupSpecs"]:
        (container,) = group["template"]["spec"]["containers"]
        limits = container["resources"]["limits"]
        params = group["rayStartParams"]
        assert float(params["num-gpus"]) == float(limits["nvidia.com/gpu"])
        assert float(params["num-cpus"]) == float(limits["cpu"])
        nodes += [node(params)] * int(group["replicas"])
    return nodes


def test_the_example_cluster_holds_the_actors_the_example_config_asks_for():
    cluster = load("raycluster.yaml")["spec"]
    fake_ray = SimpleNamespace(nodes=lambda: cluster_nodes(cluster))
    config = build_config(read_config_file(EXAMPLES / "render.toml"))
    requests = actor_requests(config)
    assert any(role == "generator" and request.get("GPU") for role, request, _ in requests)
    check_fits(fake_ray, requests, config.ray)  # raises when the cluster cannot hold them
    # and the check would catch a config the cluster cannot hold
    table = read_config_file(EXAMPLES / "render.toml")
    table["ray"]["replicas"] = 3
    with pytest.raises(UserError, match="holds only 2"):
        bigger = build_config(table)
        check_fits(fake_ray, actor_requests(bigger), bigger.ray)
