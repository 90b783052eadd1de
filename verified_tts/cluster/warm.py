"""Warm verifier sets: verifier actors that stay loaded on a Ray cluster between runs.

Loading a verifier's models takes seconds in every run, most of a short job's time, and a
dubbing studio submits many short jobs. With ``[ray] warm_idle_s`` above 0 and CPU-only
verifiers, a run asks for its verifier actors by name instead of starting its own: detached
actors in the ``verified-tts-warm`` namespace, named by the verifier, a key of everything that
makes two loads differ (:func:`settings_key`), a slot and the member's index. The first run to ask
loads them; a later run with the same settings finds them loaded. A run leases the first slot
that no live run holds (Ray's job list says whether its holder still runs), so two runs at once
do not queue on one set of actors; when every slot is held they share the first. Warm actors ask
for no CPU, so a set kept for later never keeps a run's own actors from starting, but each is a
process with its models: a run retires the sets of its verifiers kept for other settings that no
live run holds, each ends itself after ``warm_idle_s`` seconds without a call, and ``cluster
down`` ends them all.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from verified_tts.cluster.runs import alive_runs

__all__ = [
    "NAMESPACE",
    "SLOTS",
    "alive_runs",
    "claim",
    "retire_others",
    "settings_key",
    "warm_enabled",
]

log = logging.getLogger("verified_tts.ray")

NAMESPACE = "verified-tts-warm"
SLOTS = 4  # sets of one verifier's actors kept per settings: runs at once that get their own
_SETTLED_S = 10.0  # a set this long without a call is no run's that is about to use it


def warm_enabled(options: Any) -> bool:
    """Whether a run keeps its verifiers warm: ``[ray] warm_idle_s`` > 0 and no GPU share (a warm
    actor holding a GPU share would keep it from a later run's generators)."""
    return options.warm_idle_s > 0 and not options.verifier_num_gpus


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return value if isinstance(value, int | float | bool | type(None)) else str(value)


def _files(value: Any) -> list[list[Any]]:
    """Every existing file or folder a setting names, as (absolute path, modification time): a
    relative path means another file in another run's folder, and a model replaced in place is
    another model."""
    if isinstance(value, Mapping):
        return [f for v in value.values() for f in _files(v)]
    if isinstance(value, list):
        return [f for v in value for f in _files(v)]
    if isinstance(value, str) and value and len(value) < 4096 and os.sep in value:
        path = Path(value)
        try:
            if path.exists():
                return [[str(path.resolve()), path.stat().st_mtime_ns]]
        except OSError:
            return []
    return []


def settings_key(name: str, options: Any, actor: Mapping[str, Any]) -> str:
    """What makes two loads of verifier ``name`` differ: its options, the actor's Ray options, the
    verified-tts version, and the files its options name (with their modification times)."""
    from verified_tts import __version__

    plain = _plain(options)
    material = [name, plain, _plain(dict(actor)), __version__, _files(plain)]
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return digest[:16]


def claim(
    ray: ModuleType,
    name: str,
    tables: Mapping[str, Any],
    size: int,
    actor: Mapping[str, Any],
    owner: str,
    idle_s: float,
) -> tuple[list[Any], str]:
    """The ``size`` warm actors of verifier ``name`` this run uses, started if none are there yet,
    with the slot's lease held by ``owner``; and a label saying which set they are."""
    from verified_tts.cluster.ray_actors import VerifierActor

    key = settings_key(name, tables.get(name), actor)
    remote = ray.remote(VerifierActor)
    wanted = {**actor, "num_cpus": 0, "lifetime": "detached", "namespace": NAMESPACE}

    def members(slot: int) -> list[Any]:
        return [
            remote.options(**wanted, name=f"{name}-{key}-{slot}-{i}", get_if_exists=True).remote(
                name, tables, idle_s
            )
            for i in range(size)
        ]

    retire_others(ray, name, key)
    for slot in range(SLOTS):
        actors = members(slot)
        holder, _ = ray.get(actors[0].holder.remote())
        if holder not in (None, owner):
            alive = alive_runs(ray)  # listed after the holder was seen: a live holder is in it
            if alive is None or holder in alive:
                continue
        if ray.get(actors[0].lease.remote(owner, holder)):
            return actors, f"warm set {key} slot {slot}"
    log.info("every warm set of verifier %s is in use: sharing slot 0", name)
    return members(0), f"warm set {key} slot 0, shared"


def retire_others(ray: ModuleType, name: str, key: str) -> int:
    """End the warm sets of verifier ``name`` kept for other settings that no live run holds and
    that nobody called for a while: a changed setting replaces the set it was kept for, so idle
    actors (each a process with its models) do not pile up. Returns how many actors ended."""
    kept: dict[str, list[Any]] = {}  # "KEY-SLOT" -> handles
    prefix = f"{name}-"
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["namespace"] != NAMESPACE or not entry["name"].startswith(prefix):
            continue
        rest = entry["name"][len(prefix) :].rsplit("-", 1)[0]  # KEY-SLOT
        if rest.split("-")[0] == key:
            continue
        try:
            kept.setdefault(rest, []).append(ray.get_actor(entry["name"], namespace=NAMESPACE))
        except ValueError:  # ended in between
            continue
    if not kept:
        return 0
    alive = alive_runs(ray)
    if alive is None:
        return 0
    ended = 0
    for handles in kept.values():
        try:
            states = ray.get([h.holder.remote() for h in handles], timeout=10)
        except Exception:  # noqa: BLE001 - an actor ending or restarting: leave the set
            continue
        if all((h is None or h not in alive) and idle > _SETTLED_S for h, idle in states):
            for handle in handles:
                ray.kill(handle, no_restart=True)
            ended += len(handles)
    if ended:
        log.info("ended %d idle warm %s actor(s) kept for other settings", ended, name)
    return ended
