"""Where the Ray backend's actors go: what each asks of a node, whether the cluster holds them,
and where they ran.

Every generator replica asks for ``[ray] generator_num_cpus`` and ``generator_num_gpus`` of the
``[ray] accelerator`` resource (``GPU``, or a custom resource such as ``gpu_slot`` that CPU-only
nodes declare to stand in for one), every verifier actor likewise. :func:`check_fits` refuses, in
one line and before any actor exists, a request no node can hold or more actors than the cluster
holds at once (Ray would keep them pending forever); :func:`placement` says, for the manifest,
which nodes every pool's actors ran on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options import RayOptions, RenderConfig
from verifiers import DEFAULT_VERIFIERS

__all__ = ["actor_requests", "check_fits", "placement", "request"]


def request(num_cpus: float, num_gpus: float, options: RayOptions) -> dict[str, float]:
    """What one actor asks of a node: CPUs, and its accelerator share as GPUs or as the custom
    resource that stands in for them."""
    wanted = {"CPU": float(num_cpus)} if num_cpus else {}
    if num_gpus:
        wanted[options.accelerator] = float(num_gpus)
    return wanted


def _show(resources: Mapping[str, float]) -> str:
    shown = {k: v for k, v in resources.items() if "memory" not in k and not k.startswith("node:")}
    return ", ".join(f"{v:g} {k}" for k, v in sorted(shown.items())) or "nothing"


def check_fits(
    ray: ModuleType, roles: Sequence[tuple[str, Mapping[str, float], int]], options: RayOptions
) -> None:
    """Refuse, in one line, actors that no node of the cluster can hold, or more of them than
    the cluster holds at once: Ray would keep them pending forever. ``roles`` holds (role, one
    actor's request, how many). Skipped with ``[ray] check_resources = false`` (an autoscaling
    cluster adds nodes for pending actors)."""
    if not options.check_resources:
        return
    nodes = [dict(n.get("Resources", {})) for n in ray.nodes() if n.get("Alive")]
    left = [dict(node) for node in nodes]
    for role, request, count in roles:
        setting = "generator" if role == "generator" else "verifier"
        if not any(all(n.get(k, 0.0) + 1e-9 >= v for k, v in request.items()) for n in nodes):
            raise UserError(
                f"[ray] each {role} actor asks for {_show(request)}, but no node of the cluster "
                f"has that much (its nodes have: {'; '.join(_show(n) for n in nodes)}): lower "
                f"[ray] {setting}_num_cpus / {setting}_num_gpus, or add a node that has it"
                + (
                    ""
                    if options.accelerator == "GPU"
                    else f" ({options.accelerator} stands in for GPUs: [ray] accelerator)"
                )
            )
        placed = 0
        for node in sorted(left, key=lambda n: -sum(n.values())):
            while placed < count and all(node.get(k, 0.0) + 1e-9 >= v for k, v in request.items()):
                for k, v in request.items():
                    node[k] = node.get(k, 0.0) - v
                placed += 1
        if placed < count:
            raise UserError(
                f"[ray] {count} {role} actors ask for {_show(request)} each, but the cluster "
                f"holds only {placed} of them beside the other actors: lower [ray] replicas / "
                "pool_size / pools or the per-actor resources, or add nodes"
            )


def actor_requests(config: RenderConfig) -> list[tuple[str, dict[str, float], int]]:
    """Every actor the backend will ask for: (role, one actor's request, how many)."""
    options = config.ray
    verifier = request(options.verifier_num_cpus, options.verifier_num_gpus, options)
    roles = [
        (
            "generator",
            request(options.generator_num_cpus, options.generator_num_gpus, options),
            options.replicas,
        )
    ]
    for name in DEFAULT_VERIFIERS:
        if config.verifiers.get(name).enabled:
            roles.append((f"verifier {name}", verifier, options.pools.get(name, options.pool_size)))
    return roles


def placement(pools: Mapping[str, Any]) -> dict[str, Any]:
    """Where every actor ran, from each pool's ``placement()``: the nodes, and per pool each
    actor's node(s), restarts and moves."""
    placed = {role: pool.placement() for role, pool in pools.items()}
    nodes = {
        node for pool in placed.values() for actor in pool["actors"] for node in actor["nodes"]
    }
    return {"ray": {"nodes": sorted(nodes), "pools": placed}}
