"""The Ray execution backend: the same :class:`~verified_tts.pipeline.Synthesizer`, with its
generator and verifiers running in Ray actors.

Ray is a backend, not a second program: :func:`load_ray_synthesizer` returns an ordinary
``Synthesizer`` whose generator is a :class:`RayGenerator` (one actor per replica, each holding the
engine that ``verified_tts.generators.load_generator`` builds inside it) and whose verifiers are
:class:`RayVerifier` proxies (a pool of actors per verifier, each built with
``verified_tts.verification.load_verifiers``). The driver keeps the store, the rounds, the
selection and the speaker-centroid schedule, so the same seeds give the same winners locally and
on Ray, and an interrupted run resumes from the store like a local one. A batch is split over the
actors of its pool with at most ``[ray] max_in_flight`` calls queued per actor (backpressure: the
driver waits for results before sending more); the pipeline's ``window`` bounds the utterances in
flight. Actors are created with ``max_restarts``/``max_task_retries``, so a killed actor comes back
and Ray re-runs the calls it lost; the proxies notice the new process, retry calls that still
failed, and log both. Nothing here imports Ray until :func:`connect` is called.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from verified_tts.cluster.state import import_ray, prefer_loopback, resolve_address
from verified_tts.errors import UserError
from verified_tts.generators import Candidate, SynthesisRequest
from verified_tts.options import GeneratorConfig, RayOptions, RenderConfig, VerifiersConfig
from verified_tts.pipeline import Synthesizer
from verified_tts.verification import LoadedVerifiers, verifier_settings
from verifiers import DEFAULT_VERIFIERS, Clip, Score

__all__ = [
    "NAMESPACE",
    "RayBackendError",
    "RayGenerator",
    "RayVerifier",
    "connect",
    "disconnect",
    "load_ray_synthesizer",
    "load_ray_verifiers",
    "resolve_address",
]

NAMESPACE = "verified-tts"

log = logging.getLogger("verified_tts.ray")


class RayBackendError(RuntimeError):
    """Work that the backend could not finish even after Ray's restarts and our retries."""


# ------------------------------------------------------------------------------------------------
# connecting


def _setup_logging() -> None:
    # The CLI configures no logging; a job's log must still say what the backend did.
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s ray-backend: %(message)s", "%H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def _listening(address: str, timeout_s: float = 5.0) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def connect(address: str | None = "auto") -> ModuleType:
    """Connect this process to a Ray cluster (once) and return the ``ray`` module."""
    resolved = resolve_address(address)
    prefer_loopback(resolved)
    ray = import_ray()
    _setup_logging()
    if ray.is_initialized():
        return ray
    # ray.init retries a dead HOST:PORT for minutes; say at once that nothing is there
    if "://" not in resolved and resolved != "auto" and not _listening(resolved):
        raise UserError(
            f"no Ray cluster is listening at {resolved}: start one with `verified-tts cluster up` "
            "or pass --ray HOST:PORT of a running cluster's head (or --ray auto)"
        )
    try:
        ray.init(
            address=resolved,
            namespace=NAMESPACE,
            log_to_driver=True,
            logging_level=logging.WARNING,
        )
    except (ConnectionError, ValueError, RuntimeError) as error:
        what = "found no running Ray cluster" if resolved == "auto" else f"cannot reach {resolved}"
        raise UserError(
            f"{what} ({str(error).splitlines()[0]}): start one with `verified-tts cluster up` "
            "or pass --ray HOST:PORT of a running cluster's head"
        ) from error
    log.info("connected to Ray at %s", resolved)
    return ray


def disconnect() -> None:
    """Drop the connection; the actors this driver created die with it."""
    if "ray" in sys.modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()


# ------------------------------------------------------------------------------------------------
# actors (plain classes: ray.remote() wraps them when the backend loads, so importing this module
# never needs Ray)


class _GeneratorActor:
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
            "pid": os.getpid(),
        }

    def sample(self, requests: Sequence[SynthesisRequest]) -> tuple[int, list[Candidate]]:
        # the pid travels with every result, so the driver sees when a replica was restarted
        return os.getpid(), self.generator.sample(requests)


def _writable(clip: Clip) -> Clip:
    # audio read from the object store is a read-only view; verifiers may normalise in place
    return clip if clip.audio.flags.writeable else replace(clip, audio=np.array(clip.audio))


class _VerifierActor:
    """One member of a verifier's pool: loads that verifier once, scores batches of clips."""

    def __init__(self, name: str, tables: Mapping[str, Any]) -> None:
        from verified_tts.verification import load_verifiers

        self.name = name  # first: __repr__ must work even if loading fails
        self.error: UserError | None = None
        try:
            loaded = load_verifiers(tables, order=(name,))
        except UserError as error:  # surfaces from describe(), as in _GeneratorActor
            self.error, self.verifier, self.status = error, None, {}
            return
        self.verifier = loaded.get(name)
        self.status = dict(loaded.status.get(name, {"available": False, "reason": "unknown"}))

    def describe(self) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        v = self.verifier
        return {
            "status": self.status,
            "active": v is not None,
            "identity": dict(v.identity()) if v is not None else None,
            "methods": [m for m in ("embed", "embed_file") if hasattr(v, m)],
            "pid": os.getpid(),
        }

    def __repr__(self) -> str:
        return f"VerifierActor({self.name})"

    def _clips(self, refs: Sequence[Any]) -> list[Clip]:
        import ray

        return [_writable(clip) for clip in ray.get(list(refs))]

    def score(self, refs: Sequence[Any]) -> tuple[int, list[Score]]:
        return os.getpid(), self.verifier.score(self._clips(refs))

    def embed(self, refs: Sequence[Any]) -> tuple[int, np.ndarray]:
        return os.getpid(), np.asarray(self.verifier.embed(self._clips(refs)))

    def embed_file(self, path_or_bytes: str | bytes, suffix: str) -> tuple[int, np.ndarray]:
        if isinstance(path_or_bytes, str):  # not a file on the driver: let the verifier explain
            return os.getpid(), self.verifier.embed_file(path_or_bytes)
        with tempfile.NamedTemporaryFile(suffix=suffix) as handle:
            handle.write(path_or_bytes)
            handle.flush()
            return os.getpid(), self.verifier.embed_file(handle.name)


# ------------------------------------------------------------------------------------------------
# pools: bounded dispatch, restart detection, retries


def _split(items: Sequence[Any], parts: int, chunk: int) -> list[list[Any]]:
    """Contiguous chunks: ``chunk`` items each, or (chunk 0) ``parts`` nearly equal ones."""
    if not items:
        return []
    size = chunk if chunk > 0 else -(-len(items) // parts)
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


class _Pool:
    """Actors of one role; runs chunked calls on them with bounded in-flight calls."""

    def __init__(self, ray: ModuleType, role: str, actors: list[Any], options: RayOptions):
        self.ray, self.role, self.actors, self.options = ray, role, actors, options
        self.pids: list[int | None] = [None] * len(actors)
        self.restarts = 0
        self.retries = 0

    @property
    def capacity(self) -> int:
        return len(self.actors) * self.options.max_in_flight

    def note_pid(self, actor: int, pid: int) -> None:
        previous = self.pids[actor]
        if previous is not None and previous != pid:
            self.restarts += 1
            log.warning(
                "%s actor %d was restarted (pid %d -> %d); calls it lost ran again there",
                self.role,
                actor,
                previous,
                pid,
            )
        self.pids[actor] = pid

    def start(self, method: str, chunks: Sequence[tuple[Any, ...]]) -> _Batch:
        return _Batch(self, method, chunks)

    def run(self, method: str, chunks: Sequence[tuple[Any, ...]]) -> list[Any]:
        return self.start(method, chunks).result()

    def kill(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)


class _Batch:
    """One call per chunk, at most ``capacity`` in flight; results come back in chunk order."""

    def __init__(self, pool: _Pool, method: str, chunks: Sequence[tuple[Any, ...]]) -> None:
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
                    pid, value = ray.get(ref)
                except RayActorError as error:
                    self._retry(index, actor, attempt, error)
                    continue
                except RayTaskError as error:
                    # a UserError raised in an actor (bad reference WAV, ...) stays one line
                    if isinstance(error.cause, UserError):
                        raise error.cause from None
                    raise
                self.pool.note_pid(actor, pid)
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


def _actor_options(num_cpus: float, num_gpus: float, options: RayOptions) -> dict[str, Any]:
    return {
        "num_cpus": num_cpus,
        "num_gpus": num_gpus,
        "max_restarts": options.max_restarts,
        "max_task_retries": options.max_task_retries,
    }


def _get(ray: ModuleType, refs: list[Any]) -> list[Any]:
    from ray.exceptions import RayTaskError

    try:
        return ray.get(refs)
    except RayTaskError as error:  # a model that is not there, a missing extra: one line
        if isinstance(error.cause, UserError):
            raise error.cause from None
        raise


# ------------------------------------------------------------------------------------------------
# proxies


class RayGenerator:
    """The :class:`~verified_tts.generators.Generator` protocol over generator replicas."""

    def __init__(self, pool: _Pool, described: Mapping[str, Any]) -> None:
        self._pool = pool
        self.name: str = described["name"]
        self.model: str = described["model"]
        self.sample_rate: int = int(described["sample_rate"])
        self._identity: dict[str, Any] = dict(described["identity"])

    @classmethod
    def start(cls, config: GeneratorConfig, options: RayOptions) -> RayGenerator:
        import ray

        remote = ray.remote(_GeneratorActor).options(
            **_actor_options(options.generator_num_cpus, options.generator_num_gpus, options)
        )
        actors = [remote.remote(config) for _ in range(options.replicas)]
        described = _get(ray, [a.describe.remote() for a in actors])
        identities = {repr(sorted(d["identity"].items())) for d in described}
        if len(identities) > 1:  # replicas must be interchangeable or seeds would not be data
            raise RayBackendError(f"generator replicas disagree on their identity: {identities}")
        pool = _Pool(ray, "generator", actors, options)
        for index, d in enumerate(described):
            pool.note_pid(index, d["pid"])
        log.info(
            "generator %s: %d replica(s), %s CPU / %s GPU each",
            described[0]["name"],
            len(actors),
            options.generator_num_cpus,
            options.generator_num_gpus,
        )
        return cls(pool, described[0])

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        chunks = _split(requests, len(self._pool.actors), self._pool.options.chunk)
        out: list[Candidate] = []
        for candidates in self._pool.run("sample", [(c,) for c in chunks]):
            out.extend(candidates)
        return out

    @property
    def restarts(self) -> int:
        return self._pool.restarts

    def close(self) -> None:
        self._pool.kill()


class _ScoringBroker:
    """Sends one batch of clips to every verifier pool at once.

    The pipeline calls ``score(clips)`` on each verifier in turn with the same list; the first
    call uploads every clip once and starts all pools, so verifiers run in parallel and each later
    call only collects its own results. Verifiers never read each other's scores, so this changes
    timing, not results.
    """

    def __init__(self, ray: ModuleType) -> None:
        self.ray = ray
        self.pools: dict[str, _Pool] = {}
        self._clips: Sequence[Clip] | None = None  # kept alive so the identity key stays valid
        self._key: tuple[int, ...] | None = None
        self._pending: dict[str, _Batch] = {}

    def refs(self, clips: Sequence[Clip]) -> list[Any]:
        return [self.ray.put(clip) for clip in clips]

    def score(self, name: str, clips: Sequence[Clip]) -> list[Score]:
        key = tuple(id(clip) for clip in clips)
        if key != self._key or name not in self._pending:
            refs = self.refs(clips)
            self._clips, self._key = clips, key
            self._pending = {
                n: pool.start("score", [(c,) for c in self._chunks(pool, refs)])
                for n, pool in self.pools.items()
            }
        scores: list[Score] = []
        for part in self._pending.pop(name).result():
            scores.extend(part)
        if not self._pending:
            self._clips, self._key = None, None
        return scores

    @staticmethod
    def _chunks(pool: _Pool, refs: list[Any]) -> list[list[Any]]:
        return _split(refs, len(pool.actors), pool.options.chunk)


class RayVerifier:
    """The :class:`~verifiers.Verifier` protocol over a pool of actors of one verifier."""

    def __init__(
        self, name: str, pool: _Pool, broker: _ScoringBroker, identity: Mapping[str, Any]
    ) -> None:
        self.name = name
        self._pool = pool
        self._broker = broker
        self._identity = dict(identity)

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        return self._broker.score(self.name, clips) if clips else []

    @property
    def restarts(self) -> int:
        return self._pool.restarts

    def close(self) -> None:
        self._pool.kill()


class RaySpeakerVerifier(RayVerifier):
    """A speaker verifier also embeds clips (the bootstrap reference) and reference files."""

    def embed(self, clips: Sequence[Clip]) -> np.ndarray:
        if not clips:
            return np.zeros((0, 0), dtype=np.float32)
        refs = self._broker.refs(clips)
        parts = self._pool.run(
            "embed", [(c,) for c in _split(refs, len(self._pool.actors), self._pool.options.chunk)]
        )
        return np.concatenate([np.asarray(p) for p in parts], axis=0)

    def embed_file(self, path: str | os.PathLike[str]) -> np.ndarray:
        # the file is on the driver's disk, which an actor on another node cannot read
        local = Path(path)
        payload: str | bytes = local.read_bytes() if local.is_file() else os.fspath(path)
        (embedding,) = self._pool.run("embed_file", [(payload, local.suffix or ".wav")])
        return np.asarray(embedding)


@dataclass(frozen=True)
class _Planned:
    name: str
    options: Any  # the verifier's options object
    size: int


def load_ray_verifiers(
    tables: VerifiersConfig | Mapping[str, Any],
    options: RayOptions,
    order: Sequence[str] = DEFAULT_VERIFIERS,
) -> LoadedVerifiers:
    """Start a pool per verifier; the result has the same ``status`` a local load would have."""
    import ray

    remote = ray.remote(_VerifierActor).options(
        **_actor_options(options.verifier_num_cpus, options.verifier_num_gpus, options)
    )
    settings = verifier_settings(tables)
    plans = [
        _Planned(name, settings.get(name), int(options.pools.get(name, options.pool_size)))
        for name in order
    ]
    # one probe actor per verifier first (all load in parallel): a verifier that is off or has
    # no model must not hold a pool
    probes = [remote.remote(plan.name, {plan.name: plan.options}) for plan in plans]
    described = _get(ray, [p.describe.remote() for p in probes])
    broker = _ScoringBroker(ray)
    active: list[RayVerifier] = []
    status: dict[str, Mapping[str, Any]] = {}
    extra: dict[str, list[Any]] = {}
    for plan, probe, info in zip(plans, probes, described, strict=True):
        status[plan.name] = info["status"]
        if not info["active"]:
            ray.kill(probe, no_restart=True)
            continue
        extra[plan.name] = [
            remote.remote(plan.name, {plan.name: plan.options}) for _ in range(plan.size - 1)
        ]
    more = {n: _get(ray, [a.describe.remote() for a in actors]) for n, actors in extra.items()}
    for plan, probe, info in zip(plans, probes, described, strict=True):
        if not info["active"]:
            continue
        actors = [probe, *extra[plan.name]]
        pool = _Pool(ray, f"verifier {plan.name}", actors, options)
        for index, d in enumerate([info, *more[plan.name]]):
            pool.note_pid(index, d["pid"])
        broker.pools[plan.name] = pool
        cls = RaySpeakerVerifier if "embed" in info["methods"] else RayVerifier
        active.append(cls(plan.name, pool, broker, info["identity"]))
        log.info(
            "verifier %s: pool of %d, %s CPU / %s GPU each",
            plan.name,
            len(actors),
            options.verifier_num_cpus,
            options.verifier_num_gpus,
        )
    return LoadedVerifiers(tuple(active), status)


def load_ray_synthesizer(config: RenderConfig, address: str | None = "auto") -> Synthesizer:
    """Connect, start the generator replicas and verifier pools, return a ``Synthesizer``."""
    started = time.perf_counter()
    connect(address)
    generator = RayGenerator.start(config.generator, config.ray)
    verifiers = load_ray_verifiers(config.verifiers, config.ray)
    reference = None
    if config.generator.voice_ref:
        reference = verifiers.embed_reference(config.generator.voice_ref)
    synthesizer = Synthesizer(generator, verifiers, config, voice_reference=reference)
    synthesizer.stats.seconds["load"] += time.perf_counter() - started
    return synthesizer
