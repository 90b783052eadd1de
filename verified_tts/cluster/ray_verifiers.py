"""The Ray backend's verifier proxies: the :class:`~verifiers.Verifier` protocol over a pool of
actors per verifier (:class:`~verified_tts.cluster.ray_actors.VerifierActor`), and
:func:`load_ray_verifiers`, which starts those pools. A proxy implements the optional capabilities
its verifier declares (:mod:`verifiers.base`: embedding clips and reference files, judging short
clips against the voice's short takes, checking target labels, its options), so the pipeline finds
the same capabilities on Ray as locally; one batch of clips goes to every pool at once
(:class:`_ScoringBroker`), so verifiers run in parallel. Nothing here imports Ray at import time.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from verified_tts.cluster.ray_actors import (
    Batch,
    Pool,
    PoolProxy,
    VerifierActor,
    actor_options,
    get_or_raise,
    split_chunks,
)
from verified_tts.cluster.warm import claim, warm_enabled
from verified_tts.options import RayOptions, VerifiersConfig
from verified_tts.verification import LoadedVerifiers, verifier_settings
from verifiers import DEFAULT_VERIFIERS, Clip, Score

__all__ = [
    "RayLabelVerifier",
    "RayReconfigurable",
    "RayShortClipJudge",
    "RaySpeakerVerifier",
    "RayVerifier",
    "load_ray_verifiers",
]

log = logging.getLogger("verified_tts.ray")


class _ScoringBroker:
    """Sends one batch of clips to every verifier pool at once.

    The pipeline calls ``score(clips)`` on each verifier in turn with the same list; the first
    call uploads every clip once and starts all pools, so verifiers run in parallel and each later
    call only collects its own results. Verifiers never read each other's scores, so this changes
    timing, not results.
    """

    def __init__(self, ray: ModuleType) -> None:
        self.ray = ray
        self.pools: dict[str, Pool] = {}
        self._clips: Sequence[Clip] | None = None  # kept alive so the identity key stays valid
        self._key: tuple[int, ...] | None = None
        self._pending: dict[str, Batch] = {}

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
    def _chunks(pool: Pool, refs: list[Any]) -> list[list[Any]]:
        return split_chunks(refs, len(pool.actors), pool.options.chunk)


class RayVerifier(PoolProxy):
    """The :class:`~verifiers.Verifier` protocol over a pool of actors of one verifier, with the
    options the actors' verifier was built with (:class:`~verifiers.HasOptions`). Only verifiers
    that have something to run get a pool, so a proxy is never unavailable."""

    unavailable_reason: str | None = None

    def __init__(
        self,
        name: str,
        pool: Pool,
        broker: _ScoringBroker,
        identity: Mapping[str, Any],
        options: Any = None,
    ) -> None:
        self.name = name
        self._pool = pool
        self._broker = broker
        self._identity = dict(identity)
        self.options = options

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        return self._broker.score(self.name, clips) if clips else []


class RayReconfigurable(RayVerifier):
    """A verifier that scores under other options with the model its actors hold
    (:class:`~verifiers.Reconfigurable`: the WER verifier hearing a packed render's takes alone),
    so a Ray render ranks a line's takes as a local one does. The variant uses the same pool; each
    actor keeps one verifier per set of changed options."""

    _changes: Mapping[str, Any] = {}

    def with_options(self, **changes: Any) -> RayReconfigurable:
        changes = {**self._changes, **changes}
        (identity,) = self._pool.run("identity_as", [(changes,)])
        variant = RayReconfigurable(self.name, self._pool, self._broker, identity,
                                    replace(self.options, **changes))  # fmt: skip
        variant._changes = changes
        return variant

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        if not self._changes:
            return super().score(clips)
        if not clips:
            return []
        refs = self._broker.refs(clips)
        chunks = split_chunks(refs, len(self._pool.actors), self._pool.options.chunk)
        parts = self._pool.run("score_as", [(self._changes, c) for c in chunks])
        return [score for part in parts for score in part]


class RaySpeakerVerifier(RayVerifier):
    """A speaker verifier also embeds clips (the bootstrap reference) and reference files
    (:class:`~verifiers.SpeakerEmbedder`)."""

    def embed(self, clips: Sequence[Clip]) -> np.ndarray:
        if not clips:
            return np.zeros((0, 0), dtype=np.float32)
        refs = self._broker.refs(clips)
        parts = self._pool.run(
            "embed",
            [(c,) for c in split_chunks(refs, len(self._pool.actors), self._pool.options.chunk)],
        )
        return np.concatenate([np.asarray(p) for p in parts], axis=0)

    def embed_file(self, path: str | os.PathLike[str]) -> np.ndarray:
        # the file is on the driver's disk, which an actor on another node cannot read
        local = Path(path)
        payload: str | bytes = local.read_bytes() if local.is_file() else os.fspath(path)
        (embedding,) = self._pool.run("embed_file", [(payload, local.suffix or ".wav")])
        return np.asarray(embedding)


class RayLabelVerifier(RayVerifier):
    """A verifier whose targets are its model's labels (the emotion verifier) checks them on an
    actor (:class:`~verifiers.LabelChecker`): an unknown label is the same one-line error as
    locally, before any work."""

    def resolve_label(self, label: str) -> list[int]:
        (found,) = self._pool.run("resolve_label", [(label,)])
        return list(found)


class RayShortClipJudge(RaySpeakerVerifier):
    """A speaker verifier that judges short clips against the voice's short takes
    (:class:`~verifiers.ShortClipJudge`): the embeddings and the seconds of speech come from an
    actor, and a clip is short under the options the actors' verifier was built with, so the
    pipeline keeps the same short-take reference on Ray as locally."""

    def embed_with_speech(self, clips: Sequence[Clip]) -> tuple[np.ndarray, list[float]]:
        if not clips:
            return np.zeros((0, 0), dtype=np.float32), []
        refs = self._broker.refs(clips)
        parts = self._pool.run(
            "embed_with_speech",
            [(c,) for c in split_chunks(refs, len(self._pool.actors), self._pool.options.chunk)],
        )
        embeddings = np.concatenate([np.asarray(e) for e, _ in parts], axis=0)
        return embeddings, [float(s) for _, speech in parts for s in speech]

    def is_short(self, speech_s: float) -> bool:
        from verifiers.speaker import speech_is_short

        return speech_is_short(speech_s, self.options)


class _RaySpeakerLabelVerifier(RaySpeakerVerifier, RayLabelVerifier):
    """Both capabilities."""


class _RayShortClipLabelVerifier(RayShortClipJudge, RayLabelVerifier):
    """All three capabilities."""


def _proxy_class(described: Mapping[str, Any]) -> type[RayVerifier]:
    """The proxy that implements what the actors' verifier declares."""
    embeds, labels = bool(described["embeds"]), bool(described["checks_labels"])
    if described.get("reconfigurable") and not (embeds or labels):  # the WER verifier
        return RayReconfigurable
    if embeds and described.get("judges_short"):
        return _RayShortClipLabelVerifier if labels else RayShortClipJudge
    return {
        (False, False): RayVerifier,
        (True, False): RaySpeakerVerifier,
        (False, True): RayLabelVerifier,
        (True, True): _RaySpeakerLabelVerifier,
    }[(embeds, labels)]


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
    """Start a pool per verifier (or take warm ones, :mod:`verified_tts.cluster.warm`); the
    result has the same ``status`` a local load would have."""
    import ray

    settings = verifier_settings(tables)
    plans = [
        _Planned(name, settings.get(name), int(options.pools.get(name, options.pool_size)))
        for name in order
    ]
    owner = ray.get_runtime_context().get_job_id() if warm_enabled(options) else None
    if owner is not None:
        members, labels = _warm_members(ray, plans, options, owner)
    else:
        members, labels = _own_members(ray, plans, options), {}
    broker = _ScoringBroker(ray)
    active: list[RayVerifier] = []
    status: dict[str, Mapping[str, Any]] = {}
    for plan in plans:
        actors, described = members[plan.name]
        info = described[0]
        status[plan.name] = info["status"]
        pool = Pool(ray, f"verifier {plan.name}", actors, options)
        pool.owner = owner
        if not info["active"]:
            pool.kill()  # a warm one is only released: the next run learns at once it is off
            continue
        places = [d["where"] for d in described]
        for index, place in enumerate(places):
            pool.note_place(index, place)
        broker.pools[plan.name] = pool
        proxy = _proxy_class(info)
        active.append(proxy(plan.name, pool, broker, info["identity"], info["options"]))
        log.info(
            "verifier %s: pool of %d, %s CPU / %s %s each, on node(s) %s%s",
            plan.name,
            len(actors),
            options.verifier_num_cpus,
            options.verifier_num_gpus,
            options.accelerator,
            ", ".join(sorted({place[1][:12] for place in places})),
            f" ({labels[plan.name]})" if plan.name in labels else "",
        )
    return LoadedVerifiers(tuple(active), status)


_Members = dict[str, tuple[list[Any], list[dict[str, Any]]]]  # name -> (actors, described)


def _own_members(ray: ModuleType, plans: Sequence[_Planned], options: RayOptions) -> _Members:
    """This run's own actors: one probe per verifier first (all load in parallel), so a verifier
    that is off or has no model holds no pool, then the rest of each active pool."""
    remote = ray.remote(VerifierActor).options(
        **actor_options(options.verifier_num_cpus, options.verifier_num_gpus, options)
    )
    probes = [remote.remote(plan.name, {plan.name: plan.options}) for plan in plans]
    described = get_or_raise(ray, [p.describe.remote() for p in probes])
    extra = {
        plan.name: [
            remote.remote(plan.name, {plan.name: plan.options}) for _ in range(plan.size - 1)
        ]
        for plan, info in zip(plans, described, strict=True)
        if info["active"]
    }
    more = {
        n: get_or_raise(ray, [a.describe.remote() for a in actors]) for n, actors in extra.items()
    }
    return {
        plan.name: ([probe, *extra.get(plan.name, [])], [info, *more.get(plan.name, [])])
        for plan, probe, info in zip(plans, probes, described, strict=True)
    }


def _warm_members(
    ray: ModuleType, plans: Sequence[_Planned], options: RayOptions, owner: str
) -> tuple[_Members, dict[str, str]]:
    """Warm actors of every verifier, leased to run ``owner``, and which warm set each pool is."""
    actor = actor_options(options.verifier_num_cpus, options.verifier_num_gpus, options)
    claimed = {
        plan.name: claim(
            ray,
            plan.name,
            {plan.name: plan.options},
            plan.size,
            actor,
            owner,
            options.warm_idle_s,
        )
        for plan in plans
    }
    every = [a for actors, _ in claimed.values() for a in actors]
    try:
        described = get_or_raise(ray, [a.describe.remote() for a in every])
    except BaseException:  # a load that failed must not stay warm: the next run tries again
        for handle in every:
            ray.kill(handle, no_restart=True)
        raise
    members: _Members = {}
    for name, (actors, _) in claimed.items():
        members[name] = (actors, described[: len(actors)])
        described = described[len(actors) :]
    return members, {name: label for name, (_, label) in claimed.items()}
