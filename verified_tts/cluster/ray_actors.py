"""The Ray backend's actors and pools: what runs in the cluster, and how calls reach it.

:class:`GeneratorActor` holds one generator replica and :class:`VerifierActor` one member of a
verifier's pool (each loads its model once, in the actor). A :class:`Pool` is the actors of one
role; :meth:`Pool.start` sends one call per chunk with at most ``[ray] max_in_flight`` calls queued
per actor (backpressure: the driver waits for results before sending more), notes a restarted actor
by its new process id (and a moved one by its new node: its node was lost), and retries a call
whose actor died, up to ``max_task_retries`` times. The proxies the pipeline talks to are in
:mod:`verified_tts.cluster.ray_backend` (the generator) and
:mod:`verified_tts.cluster.ray_verifiers` (the verifiers). Nothing here imports Ray at import time.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators import Candidate, GeneratorConfig, SynthesisRequest
from verified_tts.options import RayOptions
from verifiers import (
    Clip,
    HasOptions,
    LabelChecker,
    Reconfigurable,
    Score,
    ShortClipJudge,
    SpeakerEmbedder,
)

__all__ = [
    "Batch",
    "GeneratorActor",
    "Pool",
    "PoolProxy",
    "RayBackendError",
    "VerifierActor",
    "actor_options",
    "get_or_raise",
    "split_chunks",
    "whereabouts",
    "writable_clip",
]

log = logging.getLogger("verified_tts.ray")


class RayBackendError(RuntimeError):
    """Work that the backend could not finish even after Ray's restarts and our retries."""


# ------------------------------------------------------------------------------------------------
# actors (plain classes: ray.remote() wraps them when the backend loads, so importing this module
# never needs Ray)


class GeneratorActor:
    """One generator replica: loads the engine once, samples batches of requests."""

    def __init__(self, config: GeneratorConfig) -> None:
        from verified_tts.generators import load_generator

        self.name = config.name  # first: __repr__ must work even if loading fails
        self.error: UserError | None = None
        try:
            self.generator = load_generator(config)
        except UserError as error:
            # raised from __init__ it would reach the driver as a bare message; from describe()
            # it stays a UserError (a model that is not there: one line, no traceback)
            self.error = error

    def __repr__(self) -> str:  # Ray shows it in log prefixes and the state API
        return f"GeneratorActor({self.name})"

    def describe(self) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        g = self.generator
        return {
            "name": g.name,
            "model": g.model,
            "sample_rate": g.sample_rate,
            "identity": dict(g.identity()),
            "takes_differ": bool(getattr(g, "takes_differ", True)),
            "where": whereabouts(),
        }

    def sample(
        self, requests: Sequence[SynthesisRequest]
    ) -> tuple[tuple[int, str], list[Candidate]]:
        # pid and node travel with every result, so the driver sees a restart or a move
        return whereabouts(), self.generator.sample(requests)


def whereabouts() -> tuple[int, str]:
    """(pid, node id) of the calling actor: both travel with every result."""
    import ray

    return os.getpid(), ray.get_runtime_context().get_node_id()


def writable_clip(clip: Clip) -> Clip:
    # audio read from the object store is a read-only view; verifiers may normalise in place
    return clip if clip.audio.flags.writeable else replace(clip, audio=np.array(clip.audio))


class VerifierActor:
    """One member of a verifier's pool: loads that verifier once, scores batches of clips.

    A warm one (``idle_s`` > 0, :mod:`verified_tts.cluster.warm`) outlives the run that started
    it: the run that uses it holds its lease, and it ends itself after ``idle_s`` seconds without
    a call once no live run holds it."""

    def __init__(
        self, name: str, tables: Mapping[str, Mapping[str, Any]], idle_s: float = 0.0
    ) -> None:
        from verified_tts.verification import load_verifiers

        self.name = name  # first: __repr__ must work even if loading fails
        self.warm = idle_s > 0
        self.owner: str | None = None
        self.last_call = time.monotonic()
        if self.warm:
            threading.Thread(target=self._end_when_idle, args=(idle_s,), daemon=True).start()
        self.error: UserError | None = None
        try:
            loaded = load_verifiers(tables, order=(name,))
        except UserError as error:  # surfaces from describe(), as in GeneratorActor
            self.error, self.verifier, self.status = error, None, {}
            return
        self.verifier = loaded.get(name)
        self.status = dict(loaded.status.get(name, {"available": False, "reason": "unknown"}))
        self._variants: dict[tuple[tuple[str, Any], ...], Any] = {}  # by options changed

    def describe(self) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        v = self.verifier
        return {
            "status": self.status,
            "active": v is not None,
            "identity": dict(v.identity()) if v is not None else None,
            "embeds": isinstance(v, SpeakerEmbedder),
            "judges_short": isinstance(v, ShortClipJudge),
            "checks_labels": isinstance(v, LabelChecker),
            "reconfigurable": isinstance(v, Reconfigurable),
            "options": v.options if isinstance(v, HasOptions) else None,
            "where": whereabouts(),
        }

    def __repr__(self) -> str:
        return f"VerifierActor({self.name}{', warm' if self.warm else ''})"

    def holder(self) -> tuple[str | None, float]:
        """The run (Ray job id) holding this warm actor's lease, if any, and the seconds since
        its last call."""
        return self.owner, time.monotonic() - self.last_call

    def lease(self, owner: str, expected: str | None) -> bool:
        """Hold this actor for run ``owner`` if its holder is still ``expected`` (the one the
        caller found gone) or ``owner`` itself: another run may have taken it in between."""
        if self.owner in (expected, owner):
            self.owner, self.last_call = owner, time.monotonic()
            return True
        return False

    def release(self, owner: str) -> None:
        if self.owner == owner:
            self.owner = None

    def _end_when_idle(self, idle_s: float) -> None:
        """End this actor after ``idle_s`` seconds without a call, unless the run holding its
        lease still runs (a long generation between two verifications must not lose it)."""
        import ray

        from verified_tts.cluster.runs import alive_runs

        while True:
            time.sleep(min(60.0, idle_s / 4))
            if time.monotonic() - self.last_call <= idle_s:
                continue
            if self.owner is not None:
                alive = alive_runs(ray)
                if alive is None or self.owner in alive:
                    continue
            ray.kill(ray.get_runtime_context().current_actor, no_restart=True)
            return

    def _clips(self, refs: Sequence[Any]) -> list[Clip]:
        import ray

        self.last_call = time.monotonic()
        return [writable_clip(clip) for clip in ray.get(list(refs))]

    def score(self, refs: Sequence[Any]) -> tuple[tuple[int, str], list[Score]]:
        return whereabouts(), self.verifier.score(self._clips(refs))

    def _variant(self, changes: Mapping[str, Any]) -> Any:
        key = tuple(sorted(changes.items()))
        if key not in self._variants:
            self._variants[key] = self.verifier.with_options(**changes)
        return self._variants[key]

    def score_as(
        self, changes: Mapping[str, Any], refs: Sequence[Any]
    ) -> tuple[tuple[int, str], list[Score]]:
        """Score under other options (:class:`~verifiers.Reconfigurable`)."""
        return whereabouts(), self._variant(changes).score(self._clips(refs))

    def identity_as(self, changes: Mapping[str, Any]) -> tuple[tuple[int, str], dict[str, Any]]:
        return whereabouts(), dict(self._variant(changes).identity())

    def embed(self, refs: Sequence[Any]) -> tuple[tuple[int, str], np.ndarray]:
        return whereabouts(), np.asarray(self.verifier.embed(self._clips(refs)))

    def embed_with_speech(
        self, refs: Sequence[Any]
    ) -> tuple[tuple[int, str], tuple[np.ndarray, list[float]]]:
        embeddings, speech = self.verifier.embed_with_speech(self._clips(refs))
        return whereabouts(), (np.asarray(embeddings), list(speech))

    def resolve_label(self, label: str) -> tuple[tuple[int, str], list[int]]:
        return whereabouts(), self.verifier.resolve_label(label)

    def embed_file(
        self, path_or_bytes: str | bytes, suffix: str
    ) -> tuple[tuple[int, str], np.ndarray]:
        if isinstance(path_or_bytes, str):  # not a file on the driver: let the verifier explain
            return whereabouts(), self.verifier.embed_file(path_or_bytes)
        with tempfile.NamedTemporaryFile(suffix=suffix) as handle:
            handle.write(path_or_bytes)
            handle.flush()
            return whereabouts(), self.verifier.embed_file(handle.name)


# ------------------------------------------------------------------------------------------------
# pools: bounded dispatch, restart detection, retries


def split_chunks(items: Sequence[Any], parts: int, chunk: int) -> list[list[Any]]:
    """Contiguous chunks: ``chunk`` items each, or (chunk 0) ``parts`` nearly equal ones."""
    if not items:
        return []
    size = chunk if chunk > 0 else -(-len(items) // parts)
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


class Pool:
    """Actors of one role; runs chunked calls on them with bounded in-flight calls."""

    def __init__(self, ray: ModuleType, role: str, actors: list[Any], options: RayOptions):
        self.ray, self.role, self.actors, self.options = ray, role, actors, options
        self.places: list[tuple[int, str] | None] = [None] * len(actors)  # (pid, node id)
        self.nodes_seen: list[list[str]] = [[] for _ in actors]  # every node each actor ran on
        self.owner: str | None = None  # the run holding a warm pool's lease
        self.restarts = 0
        self.moves = 0  # restarts on another node (its node was lost)
        self.retries = 0

    @property
    def capacity(self) -> int:
        return len(self.actors) * self.options.max_in_flight

    def note_place(self, actor: int, place: Sequence[Any]) -> None:
        pid, node = int(place[0]), str(place[1])
        previous = self.places[actor]
        if previous is not None and previous[0] != pid:
            self.restarts += 1
            if previous[1] != node:
                self.moves += 1
                log.warning(
                    "%s actor %d moved from node %s to node %s (pid %d -> %d): its node was "
                    "lost; calls it lost ran again on the new node",
                    self.role, actor, previous[1][:12], node[:12], previous[0], pid,
                )  # fmt: skip
            else:
                log.warning(
                    "%s actor %d was restarted (pid %d -> %d); calls it lost ran again there",
                    self.role, actor, previous[0], pid,
                )  # fmt: skip
        self.places[actor] = (pid, node)
        if not self.nodes_seen[actor] or self.nodes_seen[actor][-1] != node:
            self.nodes_seen[actor].append(node)

    def placement(self) -> dict[str, Any]:
        """Where each actor runs now and every node it ran on, for the manifest."""
        return {
            "actors": [
                {"node": place[1] if place else None, "nodes": list(seen)}
                for place, seen in zip(self.places, self.nodes_seen, strict=True)
            ],
            "restarts": self.restarts,
            "moves": self.moves,
            "retries": self.retries,
        }

    def start(self, method: str, chunks: Sequence[tuple[Any, ...]]) -> Batch:
        return Batch(self, method, chunks)

    def run(self, method: str, chunks: Sequence[tuple[Any, ...]]) -> list[Any]:
        return self.start(method, chunks).result()

    def kill(self) -> None:
        """End the pool's actors; a warm pool's stay loaded for the next run and are released."""
        if self.owner is not None:
            self.ray.get([actor.release.remote(self.owner) for actor in self.actors])
            return
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)


class PoolProxy:
    """What every proxy over a :class:`Pool` reports the same way: restarts, where its actors
    ran, and closing them."""

    _pool: Pool

    @property
    def restarts(self) -> int:
        return self._pool.restarts

    def placement(self) -> dict[str, Any]:
        return self._pool.placement()

    def close(self) -> None:
        self._pool.kill()


class Batch:
    """One call per chunk, at most ``capacity`` in flight; results come back in chunk order."""

    def __init__(self, pool: Pool, method: str, chunks: Sequence[tuple[Any, ...]]) -> None:
        self.pool, self.method, self.chunks = pool, method, list(chunks)
        self.results: list[Any] = [None] * len(self.chunks)
        # (chunk, attempt, actor to avoid: the one that just lost it, -1 for none)
        self.queue: deque[tuple[int, int, int]] = deque((i, 0, -1) for i in range(len(chunks)))
        self.pending: dict[Any, tuple[int, int, int]] = {}  # ref -> chunk, actor, attempt
        self.load = [0] * len(pool.actors)
        self._fill()

    def _fill(self) -> None:
        while self.queue and len(self.pending) < self.pool.capacity:
            index, attempt, avoid = self.queue.popleft()
            actor = min(range(len(self.load)), key=lambda a: (self.load[a], a == avoid, a))
            handle = self.pool.actors[actor]
            ref = getattr(handle, self.method).remote(*self.chunks[index])
            self.pending[ref] = (index, actor, attempt)
            self.load[actor] += 1

    def result(self) -> list[Any]:
        ray = self.pool.ray
        from ray.exceptions import RayActorError, RayTaskError

        while self.pending:
            ready, _ = ray.wait(list(self.pending), num_returns=1)
            for ref in ready:
                index, actor, attempt = self.pending.pop(ref)
                self.load[actor] -= 1
                try:
                    place, value = ray.get(ref)
                except RayActorError as error:
                    self._retry(index, actor, attempt, error)
                    continue
                except RayTaskError as error:
                    # a UserError raised in an actor (bad reference WAV, ...) stays one line
                    if isinstance(error.cause, UserError):
                        raise error.cause from None
                    raise
                self.pool.note_place(actor, place)
                self.results[index] = value
            self._fill()
        return self.results

    def _retry(self, index: int, actor: int, attempt: int, error: Exception) -> None:
        limit = max(1, self.pool.options.max_task_retries)
        reason = str(error).splitlines()[0]
        if attempt + 1 > limit:
            raise RayBackendError(
                f"{self.pool.role} call {self.method} failed {attempt + 1} times: its actor kept "
                f"dying ({reason}); raise [ray] max_restarts / max_task_retries or check the "
                "actor's log"
            ) from error
        self.pool.retries += 1
        log.warning(
            "%s actor %d lost a %s call (%s); retrying it (attempt %d of %d)",
            self.pool.role,
            actor,
            self.method,
            reason,
            attempt + 2,
            limit + 1,
        )
        time.sleep(min(0.5 * (attempt + 1), 5.0))  # give Ray time to bring the actor back
        self.queue.append((index, attempt + 1, actor))


def actor_options(num_cpus: float, num_gpus: float, options: RayOptions) -> dict[str, Any]:
    """Ray's options for one actor: its CPUs, its accelerator share (GPUs, or the custom resource
    ``[ray] accelerator`` names), spread over the nodes, restarted when killed."""
    extra: dict[str, Any] = {"num_gpus": num_gpus} if options.accelerator == "GPU" else {}
    if options.accelerator != "GPU" and num_gpus:
        extra["resources"] = {options.accelerator: num_gpus}
    if options.spread:
        extra["scheduling_strategy"] = "SPREAD"
    return {
        "num_cpus": num_cpus,
        **extra,
        "max_restarts": options.max_restarts,
        "max_task_retries": options.max_task_retries,
    }


def get_or_raise(ray: ModuleType, refs: list[Any]) -> list[Any]:
    from ray.exceptions import RayTaskError

    try:
        return ray.get(refs)
    except RayTaskError as error:  # a model that is not there, a missing extra: one line
        if isinstance(error.cause, UserError):
            raise error.cause from None
        raise
