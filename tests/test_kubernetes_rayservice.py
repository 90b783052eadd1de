"""The KubeRay RayService example (docs/kubernetes/rayservice.yaml) against the service's code.

Its ``serveConfigV2`` must be a Serve config that Ray Serve's own schema accepts, import the
service's application builder, and hand it exactly the settings the application reads (no
missing key, no key it ignores), with a real SHA-256 for the token; its render settings must be
the ones the job examples use (render.toml, less the [ray] sizing of a render's actors); and its
cluster must be the RayCluster example's, plus the head's Serve port.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from verified_tts.config import build_config, read_config_file

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "kubernetes"
APP = ROOT / "verified_tts" / "service" / "app.py"


def load(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def service() -> dict:
    return load("rayservice.yaml")


def application(service: dict) -> dict:
    config = yaml.safe_load(service["spec"]["serveConfigV2"])
    (app,) = config["applications"]
    return app


def test_the_serve_config_is_valid_and_builds_the_app(service: dict) -> None:
    from ray.serve.schema import (
        DeploymentSchema,
        RayActorOptionsSchema,
        ServeApplicationSchema,
        ServeDeploySchema,
    )

    from verified_tts.service import app as service_app

    config = yaml.safe_load(service["spec"]["serveConfigV2"])
    ServeDeploySchema.model_validate(config)  # types and values; it lets unknown keys through
    app = application(service)
    assert set(config) <= set(ServeDeploySchema.model_fields)
    assert set(app) <= set(ServeApplicationSchema.model_fields)
    for deployment in app["deployments"]:
        assert set(deployment) <= set(DeploymentSchema.model_fields)
        assert set(deployment["ray_actor_options"]) <= set(RayActorOptionsSchema.model_fields)
    module, _, name = app["import_path"].partition(":")
    assert module == service_app.__name__ and getattr(service_app, name) is service_app.build_app
    built = service_app.build_app(app["args"])  # the bound graph; nothing starts
    assert built is not None
    deployments = {d["name"] for d in app["deployments"]}
    assert deployments <= {service_app.Speaker.name, service_app.Api.name}
    assert config["http_options"]["port"] == 8000


def test_the_args_are_exactly_what_the_app_reads(service: dict) -> None:
    read = set(re.findall(r"settings\[\"(\w+)\"\]", APP.read_text(encoding="utf-8")))
    assert {"token_digest", "home", "table"} <= read
    args = application(service)["args"]
    assert set(args) == read
    assert re.fullmatch(r"[0-9a-f]{64}", args["token_digest"])
    assert args["home"].startswith("/data/") and args["state_dir"].startswith("/data/")


def test_the_render_settings_are_the_job_examples(service: dict) -> None:
    table = application(service)["args"]["table"]
    expected = read_config_file(EXAMPLES / "render.toml")
    expected.pop("ray")
    assert table == expected
    build_config(table)  # a table the config accepts


def test_the_cluster_is_the_raycluster_example_with_a_serve_port(service: dict) -> None:
    cluster = copy.deepcopy(service["spec"]["rayClusterConfig"])
    (head,) = cluster["headGroupSpec"]["template"]["spec"]["containers"]
    serve_ports = [p for p in head["ports"] if p["name"] == "serve"]
    assert serve_ports == [{"containerPort": 8000, "name": "serve"}]
    head["ports"].remove(serve_ports[0])
    assert cluster == load("raycluster.yaml")["spec"]
    (speaker,) = application(service)["deployments"]
    gpus_per_worker = float(cluster["workerGroupSpecs"][0]["rayStartParams"]["num-gpus"])
    assert speaker["ray_actor_options"]["num_gpus"] <= gpus_per_worker
    assert application(service)["args"]["replicas"] <= cluster["workerGroupSpecs"][0]["replicas"]
