"""The Ray execution backend: the same :class:`~verified_tts.pipeline.Synthesizer`, with its
generator and verifiers running in Ray actors. Ray is a backend, not a second program:
:func:`load_ray_synthesizer` returns an ordinary ``Synthesizer`` whose generator is a
:class:`RayGenerator` (one actor per replica, each holding the engine that
``verified_tts.generators.load_generator`` builds inside it) and whose verifiers are
:class:`RayVerifier` proxies (a pool of actors per verifier, each built with
``verified_tts.verification.load_verifiers``). The driver keeps the store, the rounds, the
selection and the speaker-centroid schedule, so the same seeds give the same winners locally and on
Ray, and an interrupted run resumes from the store like a local one. A batch is split over the
actors of its pool (:mod:`verified_tts.cluster.ray_actors`) with at most ``[ray] max_in_flight``
calls queued per actor (backpressure: the driver waits for results before sending more); the
pipeline's ``window`` bounds the utterances in flight. Actors are created with
``max_restarts``/``max_task_retries``, so a killed actor comes back and Ray re-runs the calls it
lost; the proxies notice the new process, retry calls that still failed, and log both. A verifier
proxy (:mod:`verified_tts.cluster.ray_verifiers`) implements the optional capabilities its verifier
declares (:mod:`verifiers.base`: embedding clips and reference files, judging short clips against
short takes, checking target labels, its options), so the pipeline finds the same capabilities on
Ray as locally. On a cluster of several nodes each pool is spread over the nodes (``[ray]
spread``), every actor reports the node it runs on, and an actor whose node was lost is recreated
by Ray on another node (logged as a move; ``manifest.json``'s ``stats.backend`` lists where every
actor ran). Before any actor is created, the requests are checked against the nodes
(:mod:`verified_tts.cluster.placement`), so a request no node can hold is one error line, not a job
pending forever. Nothing here imports Ray until :func:`connect` is called.
"""

from __future__ import annotations

import logging
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from verified_tts.cluster.placement import actor_requests, check_fits
from verified_tts.cluster.placement import placement as pool_placement
from verified_tts.cluster.ray_actors import (
    GeneratorActor,
    Pool,
    PoolProxy,
    RayBackendError,
    actor_options,
    get_or_raise,
    split_chunks,
)
from verified_tts.cluster.ray_verifiers import (
    RayLabelVerifier,
    RayShortClipJudge,
    RaySpeakerVerifier,
    RayVerifier,
    load_ray_verifiers,
)
from verified_tts.cluster.state import import_ray, prefer_loopback, resolve_address
from verified_tts.errors import UserError
from verified_tts.generators import Candidate, SynthesisRequest
from verified_tts.options import GeneratorConfig, RayOptions, RenderConfig
from verified_tts.pipeline import Synthesizer
from verified_tts.verification import LoadedVerifiers

__all__ = [
    "NAMESPACE",
    "RayBackendError",
    "RayGenerator",
    "RayLabelVerifier",
    "RayShortClipJudge",
    "RaySpeakerVerifier",
    "RayVerifier",
    "actor_requests",
    "check_fits",
    "connect",
    "disconnect",
    "load_ray_synthesizer",
    "load_ray_verifiers",
    "placement",
    "resolve_address",
]

NAMESPACE = "verified-tts"

log = logging.getLogger("verified_tts.ray")


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
# proxies


class RayGenerator(PoolProxy):
    """The :class:`~verified_tts.generators.Generator` protocol over generator replicas."""

    def __init__(self, pool: Pool, described: Mapping[str, Any]) -> None:
        self._pool = pool
        self.name: str = described["name"]
        self.model: str = described["model"]
        self.sample_rate: int = int(described["sample_rate"])
        self._identity: dict[str, Any] = dict(described["identity"])
        self.takes_differ: bool = bool(described.get("takes_differ", True))

    @classmethod
    def start(cls, config: GeneratorConfig, options: RayOptions) -> RayGenerator:
        import ray

        remote = ray.remote(GeneratorActor).options(
            **actor_options(options.generator_num_cpus, options.generator_num_gpus, options)
        )
        actors = [remote.remote(config) for _ in range(options.replicas)]
        described = get_or_raise(ray, [a.describe.remote() for a in actors])
        identities = {repr(sorted(d["identity"].items())) for d in described}
        if len(identities) > 1:  # replicas must be interchangeable or seeds would not be data
            raise RayBackendError(f"generator replicas disagree on their identity: {identities}")
        pool = Pool(ray, "generator", actors, options)
        for index, d in enumerate(described):
            pool.note_place(index, d["where"])
        log.info(
            "generator %s: %d replica(s), %s CPU / %s %s each, on node(s) %s",
            described[0]["name"],
            len(actors),
            options.generator_num_cpus,
            options.generator_num_gpus,
            options.accelerator,
            ", ".join(sorted({d["where"][1][:12] for d in described})),
        )
        return cls(pool, described[0])

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        chunks = split_chunks(requests, len(self._pool.actors), self._pool.options.chunk)
        out: list[Candidate] = []
        for candidates in self._pool.run("sample", [(c,) for c in chunks]):
            out.extend(candidates)
        return out


def placement(generator: RayGenerator, verifiers: LoadedVerifiers) -> dict[str, Any]:
    """Where every actor of this synthesizer ran (for the manifest's ``stats.backend``)."""
    pools: dict[str, Any] = {"generator": generator}
    pools.update({f"verifier {v.name}": v for v in verifiers.active if isinstance(v, RayVerifier)})
    return pool_placement(pools)


def load_ray_synthesizer(config: RenderConfig, address: str | None = "auto") -> Synthesizer:
    """Connect, check that the cluster can hold every actor, start the generator replicas and
    verifier pools, return a ``Synthesizer`` whose run stats say where each actor ran."""
    started = time.perf_counter()
    ray = connect(address)
    check_fits(ray, actor_requests(config), config.ray)
    generator = RayGenerator.start(config.generator, config.ray)
    verifiers = load_ray_verifiers(config.verifiers, config.ray)
    reference = None
    if config.generator.voice_ref:
        reference = verifiers.embed_reference(config.generator.voice_ref)
    synthesizer = Synthesizer(generator, verifiers, config, voice_reference=reference)
    synthesizer.stats.seconds["load"] += time.perf_counter() - started
    synthesizer.stats.backend = lambda: placement(generator, verifiers)
    nodes = placement(generator, verifiers)["ray"]["nodes"]
    log.info("actors on %d node(s): %s", len(nodes), ", ".join(n[:12] for n in nodes))
    return synthesizer
