"""Several Ray nodes on one machine: placement over nodes, accelerator slots, a node lost mid-job.

One cluster for the module, started as a user would (``verified-tts cluster up --nodes 3``): the
head and two worker nodes of one CPU each, every worker declaring two ``gpu_slot`` units that
stand in for accelerators, everything on 127.0.0.1. The tests check that actors spread over the
nodes and that ``[ray] accelerator`` places and packs them on the slot nodes, that a request no
node can hold is one line instead of a job pending forever, and that a render job whose
generator's node is killed mid-run finishes with the winners and the audio of an uninterrupted
local render, saying in its log what happened.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verified_tts.config import RayOptions, build_config
from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig

pytestmark = [pytest.mark.ray, pytest.mark.timeout(1800)]

SLOTS = {"gpu_slot": 2}
BOOK = "# Nodes\n\n" + " ".join(
    f"Sentence number {i} crosses the quiet field before the rain." for i in range(12)
)
runner = CliRunner()


def cli(state_dir: Path, *args: str, ok: bool = True) -> dict | list:
    from verified_tts.cli import app

    result = runner.invoke(app, [*args, "--json", "--state-dir", str(state_dir)])
    assert (result.exit_code == 0) == ok, result.stdout
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """A head and two worker nodes, as `cluster up --nodes 3` starts them."""
    from verified_tts.cluster import ray_backend

    ray_backend.disconnect()  # another test file's cluster, if this process was connected
    state_dir = tmp_path_factory.mktemp("multinode")
    state = cli(
        state_dir, "cluster", "up", "--nodes", "3", "--num-cpus", "3",
        "--worker-resources", json.dumps(SLOTS), "--object-store-mb", "150",
    )  # fmt: skip
    try:
        yield state_dir, state
    finally:
        ray_backend.disconnect()
        cli(state_dir, "cluster", "down")


def worker_node_ids(state_dir: Path) -> dict[str, int]:
    """Ray node id -> pid of the worker-node process (each node's log names its id)."""
    state = json.loads((state_dir / "cluster.json").read_text(encoding="utf-8"))
    found = {}
    for index, pid in enumerate(state["workers"], start=1):
        text = (state_dir / f"node-{index}.log").read_text(encoding="utf-8")
        (node_id,) = re.findall(r"worker node ([0-9a-f]+) joined", text)[-1:]
        found[node_id] = pid
    return found


def test_cluster_up_starts_worker_nodes_on_loopback(nodes):
    import psutil
    state_dir, state = nodes
    assert state["nodes"] == 3 and len(state["workers"]) == 2
    status = cli(state_dir, "cluster", "status")
    assert status["nodes"] == 3 and status["worker_nodes_started"] == 2
    workers = [n for n in status["node_list"] if not n["head"]]
    assert len(workers) == 2
    assert all(n["resources"]["gpu_slot"] == 2 and n["resources"]["CPU"] == 1 for n in workers)
    head = next(n for n in status["node_list"] if n["head"])
    assert "gpu_slot" not in head["resources"]
    pids = set()
    for root in (state["pid"], *state["workers"]):
        process = psutil.Process(root)
        pids |= {process.pid} | {child.pid for child in process.children(recursive=True)}
    listening = [
        c
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.pid in pids
    ]
    assert listening
    assert {c.laddr.ip for c in listening} <= {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def test_slots_place_and_pack_actors_and_a_request_no_node_holds_is_refused(nodes):
    from verified_tts.cluster import ray_backend

    state_dir, state = nodes
    ray_backend.connect(state["gcs_address"])
    slot_nodes = set(worker_node_ids(state_dir))
    options = RayOptions(
        accelerator="gpu_slot",
        replicas=2,
        generator_num_cpus=0.1,
        generator_num_gpus=1,
        verifier_num_cpus=0.05,
        verifier_num_gpus=0.25,
        pool_size=4,
    )
    generator = ray_backend.RayGenerator.start(GeneratorConfig(name="espeak"), options)
    verifiers = ray_backend.load_ray_verifiers({"signal": {}}, options, order=("signal",))
    try:
        placed = ray_backend.placement(generator, verifiers)["ray"]["pools"]
        generator_nodes = [a["node"] for a in placed["generator"]["actors"]]
        assert set(generator_nodes) <= slot_nodes  # an accelerator actor never on the head
        assert len(set(generator_nodes)) == 2  # spread: one replica on each slot node
        verifier_nodes = [a["node"] for a in placed["verifier signal"]["actors"]]
        assert len(verifier_nodes) == 4 and set(verifier_nodes) <= slot_nodes
        # 2 replicas x 1 slot + 4 verifiers x 0.25 slot = 3 of the 4 slots, fractions packed
        import ray

        free = ray.available_resources().get("gpu_slot", 0.0)
        assert free == pytest.approx(1.0)
    finally:
        generator.close()
        for verifier in verifiers.active:
            verifier.close()

    too_big = build_config(
        {
            "generator": {"name": "espeak"},
            "ray": {"accelerator": "gpu_slot", "generator_num_gpus": 3},
        }
    )
    with pytest.raises(UserError, match=r"asks for 1 CPU, 3 gpu_slot, but no node"):
        ray_backend.load_ray_synthesizer(too_big, state["gcs_address"])
    too_many = build_config(
        {
            "generator": {"name": "espeak"},
            "ray": {
                "accelerator": "gpu_slot",
                "generator_num_gpus": 1,
                "generator_num_cpus": 0.1,
                "replicas": 5,
            },
        }
    )
    with pytest.raises(UserError, match=r"5 generator actors .* holds only 4"):
        ray_backend.load_ray_synthesizer(too_many, state["gcs_address"])
    ray_backend.disconnect()


def test_an_impossible_request_is_one_line_on_the_command_line(nodes, tmp_path):
    _, state = nodes
    book = tmp_path / "book.md"
    book.write_text("# A\n\nOne sentence here.\n", encoding="utf-8")
    config = tmp_path / "ray.toml"
    config.write_text('[ray]\naccelerator = "gpu_slot"\ngenerator_num_gpus = 8\n', encoding="utf-8")
    command = [
        sys.executable, "-m", "verified_tts", "render", str(book), "--generator", "espeak",
        "--config", str(config), "--ray", state["gcs_address"], "--out", str(tmp_path / "out"),
    ]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 2, result.stderr
    assert "no node of the cluster has that much" in result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 300  # refused, not left pending


def test_a_render_job_survives_losing_its_generators_node(nodes, tmp_path, synthesizer_factory):
    from verified_tts.workflows.render import render

    state_dir, _ = nodes
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    # the reference: the same book, seeds and settings in one process, no Ray, nothing lost
    synthesizer = synthesizer_factory()
    render(book, tmp_path / "local", synthesizer.config, synthesizer=synthesizer)

    config = tmp_path / "ray.toml"
    config.write_text(
        "[ray]\n"
        'accelerator = "gpu_slot"\n'  # the generator needs a slot: it runs on a worker node
        "generator_num_gpus = 1\n"
        "generator_num_cpus = 0.25\n"
        "verifier_num_cpus = 0.1\n",
        encoding="utf-8",
    )
    out = tmp_path / "ray"
    job = cli(state_dir, "jobs", "submit", "render", str(book), "--generator", "espeak",
              "-n", "2", "--config", str(config), "--out", str(out))  # fmt: skip

    def log() -> str:
        return cli(state_dir, "jobs", "logs", job["id"])["logs"]

    placed = None
    while placed is None:  # the job log names the node the generator started on
        found = re.search(r"generator espeak: .* on node\(s\) ([0-9a-f]+)", log())
        placed = found.group(1) if found else None
        time.sleep(0.5)
    while not list((out / "store").rglob("*.flac")):
        state = cli(state_dir, "jobs", "status", job["id"])["state"]
        assert state in ("PENDING", "RUNNING"), log()[-3000:]
        time.sleep(0.3)
    victims = [pid for node, pid in worker_node_ids(state_dir).items() if node.startswith(placed)]
    assert len(victims) == 1, (placed, worker_node_ids(state_dir))
    os.killpg(victims[0], signal.SIGKILL)  # the machine is gone: no chance to drain anything

    while (status := cli(state_dir, "jobs", "status", job["id"]))["state"] not in (
        "SUCCEEDED",
        "FAILED",
        "STOPPED",
    ):
        time.sleep(0.5)
    text = log()
    assert status["state"] == "SUCCEEDED", text[-3000:]
    assert re.search(r"generator actor 0 moved from node \w+ to node \w+", text), text[-3000:]

    local = json.loads((tmp_path / "local" / "manifest.json").read_text(encoding="utf-8"))
    remote = json.loads((out / "manifest.json").read_text(encoding="utf-8"))

    def winners(manifest: dict) -> list[tuple[str, int, list[int]]]:
        return [
            (u["key"], u["winner"], [c["seed"] for c in u["candidates"]])
            for u in manifest["utterances"]
        ]

    assert winners(remote) == winners(local)
    for name in sorted(p.name for p in (tmp_path / "local" / "chapters").iterdir()):
        assert (out / "chapters" / name).read_bytes() == (
            tmp_path / "local" / "chapters" / name
        ).read_bytes(), name
    # every candidate generated once: what was lost in flight was never committed
    total = sum(len(u["candidates"]) for u in remote["utterances"])
    assert remote["stats"]["candidates_generated"] == total
    assert remote["stats"]["candidates_reused"] == 0
    ray_stats = remote["stats"]["backend"]["ray"]
    assert len(ray_stats["nodes"]) >= 2  # the work ran on more than one node
    generator = ray_stats["pools"]["generator"]
    assert generator["moves"] >= 1
    assert len(generator["actors"][0]["nodes"]) == 2  # it ran on the lost node, then another
    assert not generator["actors"][0]["nodes"][-1].startswith(placed)
