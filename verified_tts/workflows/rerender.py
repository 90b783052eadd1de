"""Re-render one utterance of a finished render with more candidates, and put it back in the book.

:func:`rerender` re-plans the book the manifest names (so the utterance key is checked against the
same generator, voice and seed), asks the synthesizer for N candidates of that one utterance with
fixed N (the user asked for N, so adaptive stopping must not settle earlier): candidates 0..N_old-1
come from the store and only indices N_old..N-1 are generated, with the seeds that candidate k
always has. Decisions are keyed by (utterance, policy id incl. N), so this is a new decision beside
the old one, not an overwrite; every other utterance keeps its original decision, read from the
store under the original policy. The speaker reference of the re-rendered utterance is the
``--voice-ref`` when one was given, else the centroid of the book's other winners (the render's
running centroid is built from earlier winners; the whole book's is the better estimate of the
book's voice). Chapter files, the book file, ``manifest.json`` and ``report.html`` are then
rewritten, and the manifest marks the utterance as ``rerendered``. A later plain ``render`` with
the original N reads the original decision again: rerun ``rerender`` (all candidates are stored,
so it costs only verification) to bring the re-rendered winner back. With packed Whisper scoring
(``packing = true``, the default) the re-rendered utterance's candidates, old and new, are scored
per clip under the per-clip gates, so that where a candidate was heard does not decide between
them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.config import build_config
from verified_tts.errors import UserError
from verified_tts.options import RenderConfig
from verified_tts.output.lock import output_lock
from verified_tts.output.manifest import (
    Manifest,
    RerenderMark,
    UtteranceRecord,
    as_manifest,
    output_folders,
    read_manifest,
    write_manifest,
)
from verified_tts.output.report import write_render_report
from verified_tts.output.run_manifest import build_manifest
from verified_tts.output.source import book_source, find_book
from verified_tts.pipeline import Synthesizer
from verified_tts.review.hook import ReviewHook
from verified_tts.review.index import write_index
from verified_tts.selection.policy import per_clip_policy
from verified_tts.selection.scoring import unit_centroid
from verified_tts.storage.atomic import remove_interrupted_writes
from verified_tts.storage.results import Utterance, UtteranceResult
from verified_tts.storage.store import STORE_DIR, Store
from verified_tts.text.production import LoadedBook, load_input
from verified_tts.workflows.render import finish_output, place_winners, read_along_input
from verifiers import WerVerifier

__all__ = [
    "RerenderResult",
    "book_reference",
    "check_same_render",
    "config_from_manifest",
    "find_utterance",
    "more_candidates",
    "original_config",
    "rerender",
    "scored_per_clip",
]


@dataclass(frozen=True)
class RerenderResult:
    """What changed for the re-rendered utterance."""

    out_dir: Path
    key: str
    text: str
    n: int
    previous_winner: int
    winner: int
    flagged_before: bool
    flagged: bool
    candidates_generated: int
    candidates_reused: int


def find_utterance(manifest: Manifest | Mapping[str, Any], key: str) -> str:
    """The full key for ``key`` (a full key or a unique prefix of one, as reports show it)."""
    keys = list(dict.fromkeys(u.key for u in as_manifest(manifest).utterances))
    matches = [k for k in keys if k == key] or [k for k in keys if k.startswith(key)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UserError(
            f"no utterance with key '{key}' in this render: copy a key from report.html or "
            "manifest.json"
        )
    raise UserError(f"key prefix '{key}' matches {len(matches)} utterances: give more characters")


_PRODUCTION_KEYS = {
    "formats", "chapters", "keep_extras", "credits", "narrator", "author", "split_hours", "lexicon",
    "toc_depth", "language_override", "read_along", "epub_audio",
}  # fmt: skip


def config_from_manifest(
    manifest: Manifest | Mapping[str, Any],
    table: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> RenderConfig:
    """The render's own configuration, from the table its manifest records; ``table`` (a
    ``--config`` file) replaces the recorded one, and ``overrides`` (:func:`build_config`'s
    keywords, None = not given) go on top. A manifest written before the whole configuration
    was recorded gives its generator, voice, seed and production settings instead."""
    manifest = as_manifest(manifest)
    if table is None and manifest.config is not None:
        return build_config(manifest.config, **overrides)
    recorded = {
        "generator": manifest.generator,
        "voice": manifest.voice,
        "voice_ref": manifest.voice_ref,
        "seed": manifest.seed,
        # what was read and delivered (format, chapter selection, credits, lexicon)
        "production": {
            key: value
            for key, value in (manifest.production or {}).items()
            if key in _PRODUCTION_KEYS
        },
    }
    given = {k: v for k, v in overrides.items() if v is not None}
    return build_config(table or {}, **{**recorded, **given})


def rerender(
    out_dir: str | os.PathLike,
    utterance_key: str,
    n: int = 16,
    *,
    config: RenderConfig | None = None,
    synthesizer: Synthesizer | None = None,
) -> RerenderResult:
    """Re-render ``utterance_key`` of the render in ``out_dir`` at N=``n``; see the module doc.
    The folder is locked while it runs; a review's decisions on the other lines are kept."""
    with output_lock(out_dir, "rerender"):
        return _rerender(out_dir, utterance_key, n, config=config, synthesizer=synthesizer)


def _rerender(
    out_dir: str | os.PathLike,
    utterance_key: str,
    n: int,
    *,
    config: RenderConfig | None,
    synthesizer: Synthesizer | None,
) -> RerenderResult:
    started = time.perf_counter()
    run_began = time.time()  # earlier temporary files are a killed run's
    out = Path(out_dir)
    manifest = read_manifest(out)
    key = find_utterance(manifest, utterance_key)
    old = manifest.utterance(key)
    original = original_config(manifest, config, synthesizer)
    # before anything loads
    _check_generator(
        manifest, synthesizer.generator.name if synthesizer else original.generator.name
    )
    if n <= len(old.candidates):
        raise UserError(
            f"utterance {key} already has {len(old.candidates)} candidates: ask for more "
            f"(-n {2 * len(old.candidates)})"
        )
    if synthesizer is None:
        synthesizer = Synthesizer.load(original)
    base = synthesizer.variant(original)
    check_same_render(manifest, base)
    review = ReviewHook.load(out)
    book_path = find_book(manifest.input, manifest.source, out, to="rerender (it re-plans it)")
    loaded, utterances = _replan(book_path, base, key, review, manifest)
    book = loaded.book
    earlier = {u.key: u.rerendered for u in manifest.utterances if u.rerendered}
    # utterances re-rendered earlier keep their larger N; this one gets n
    wanted = {k: mark.n for k, mark in earlier.items() if k != key}
    wanted[key] = n
    with Store(out / STORE_DIR) as store:
        results = base.run(utterances, store)
        replaced, runs = _rerun_targets(synthesizer, original, utterances, results, wanted, store)
        results = [
            replace(replaced[r.utterance.key], utterance=r.utterance)
            if r.utterance.key in replaced
            else r
            for r in results
        ]
        # the review's choices stand, except on the line asked for now: it gets its new winner
        results = [
            r if r.utterance.key == key else reviewed
            for r, reviewed in zip(results, review.results(results), strict=True)
        ]
        placed = place_winners(results, book, store)
    read_along = read_along_input(book, book_path, original, base.verifiers)
    files, delivery = finish_output(
        out, placed, book, original, base.generator.sample_rate, read_along
    )
    for run in runs:
        base.stats.merge(run.stats)
    updated = build_manifest(
        synthesizer=base,
        source=manifest.input,
        book_title=book.title,
        results=results,
        files=files,
        n=int(manifest.n),
        wall_seconds=time.perf_counter() - started,
        loaded=loaded,
        delivery=delivery,
    )
    updated = replace(updated, source=book_source(book_path, out), extra=manifest.extra)
    updated = _mark_rerendered(updated, key, RerenderMark(n, old.winner, old.flagged), earlier)
    updated = review.manifest(updated)
    write_manifest(out, updated)
    write_index(out, updated)  # the review opens a long book from it
    write_render_report(out, updated)
    remove_interrupted_writes(output_folders(out), older_than=run_began)
    return _summary(out, key, n, old, replaced[key], runs[-1])


def original_config(
    manifest: Manifest, config: RenderConfig | None = None, synthesizer: Synthesizer | None = None
) -> RenderConfig:
    """The render's own policy (its N and adaptivity), which the stored decisions of the other
    utterances are keyed by, on top of the given (or recorded) settings."""
    if config is None:
        config = synthesizer.config if synthesizer is not None else config_from_manifest(manifest)
    adaptive = bool(config.selection.adaptive if manifest.adaptive is None else manifest.adaptive)
    return config.variant(candidates=int(manifest.n), adaptive=adaptive)


def _replan(
    source: Path, base: Synthesizer, key: str, review: ReviewHook, manifest: Manifest
) -> tuple[LoadedBook, list[Utterance]]:
    """Read the render's book again (found by :func:`~verified_tts.output.source.find_book`) and
    plan it as the render's last pass did (its decided readings and spoken forms, with a
    review's edits); the utterance ``key`` must still be in it."""
    loaded = load_input(
        source,
        base.config.production,
        max_chars=base.config.utterance_chars(),
        voices_dir=base.config.voices_dir,
    )
    if base.config.pronunciation.enabled:
        from verified_tts.pronounce.book import decided_book, form_readings

        book = decided_book(loaded.book, manifest.extra.get("pronunciations"))
        readings = form_readings(book.segments, base.config.pronunciation)
        utterances = review.plan(base, book.segments, readings=readings)
    else:
        utterances = review.plan(base, loaded.book.segments)
    if not any(u.key == key for u in utterances):
        raise UserError(
            f"utterance {key} is not in {source} under these settings: the book was edited since "
            "the render, or the generator/voice/seed differ (pass the render's --config)"
        )
    return loaded, utterances


def _rerun_targets(
    synthesizer: Synthesizer,
    original: RenderConfig,
    utterances: list[Utterance],
    results: list[UtteranceResult],
    wanted: Mapping[str, int],
    store: Store,
) -> tuple[dict[str, UtteranceResult], list[Synthesizer]]:
    """Each wanted utterance at its fixed N, against the voice reference of the book's other
    winners when no ``--voice-ref`` was given; returns the new results and the runs that made
    them (for their stats)."""
    planned = {u.key: u for u in utterances}
    replaced: dict[str, UtteranceResult] = {}
    runs: list[Synthesizer] = []
    for target_key, target_n in wanted.items():
        if target_key not in planned:
            continue  # the book no longer has it: nothing to keep
        voice = planned[target_key].voice  # its own voice's other winners
        reference = book_reference(
            synthesizer,
            [
                r.embedding
                for r in results
                if r.utterance.key != target_key and r.utterance.voice == voice
            ],
            voice,
        )
        replaced[target_key], one = more_candidates(
            synthesizer, original, planned[target_key], target_n, store, reference=reference
        )
        runs.append(one)
    return replaced, runs


def book_reference(
    synthesizer: Synthesizer,
    embeddings: list[tuple[float, ...] | None],
    voice: str | None = None,
) -> np.ndarray | None:
    """The speaker reference for lines of ``voice`` re-rendered alone: the ``--voice-ref`` for
    the render's own voice when one was given, else the centroid of ``embeddings`` (the other
    winners of that voice)."""
    own = voice == synthesizer.config.generator.voice or synthesizer.reference_for_every_voice
    if synthesizer.voice_reference is not None and own:
        return synthesizer.voice_reference
    return unit_centroid([np.asarray(e, dtype=np.float32) for e in embeddings if e is not None])


def more_candidates(
    synthesizer: Synthesizer,
    original: RenderConfig,
    utterance: Utterance,
    n: int,
    store: Store,
    *,
    reference: np.ndarray | None,
) -> tuple[UtteranceResult, Synthesizer]:
    """``utterance`` at fixed N=``n`` under the render's policy, scored per clip against
    ``reference``: stored candidates are reused and only the missing indices generated, with the
    seeds candidate k always has. Returns the result and the run that made it (its stats)."""
    fixed = original.variant(candidates=n, adaptive=False)
    one = scored_per_clip(
        synthesizer.variant(fixed, voice_reference=reference, reference_for_every_voice=True)
    )
    (result,) = one.run([utterance], store, n=n)
    return result, one


def scored_per_clip(synthesizer: Synthesizer) -> Synthesizer:
    """With packed Whisper scoring, the variant that scores every clip alone, under the per-clip
    profile's gates and stop settings. A packed score depends on the sentences that share the
    window: the render scored the old candidates beside up to 7 other sentences, which primes
    the decoder (benchmarks/speed/verify_speed.py measures how much: "scored_alone"), and a rerender
    has one sentence to score, so new candidates would lose to old ones for where they were
    heard. Per clip, old and new are scored alike (the old ones are scored again; the render's
    packed scores stay in the store)."""
    wer = synthesizer.verifiers.get("wer")
    if not isinstance(wer, WerVerifier) or not wer.options.packing:
        return synthesizer
    profile = synthesizer.config.verifiers.wer.profile_name
    policy = per_clip_policy(synthesizer.config.selection, source=profile)
    config = replace(synthesizer.config, selection=policy)
    verifiers = synthesizer.verifiers.with_verifier(wer.with_options(packing=False))
    return synthesizer.variant(config, verifiers=verifiers)


def _mark_rerendered(
    manifest: Manifest, key: str, mark: RerenderMark, earlier: Mapping[str, RerenderMark]
) -> Manifest:
    """This utterance gets ``mark``; those re-rendered before keep theirs."""
    return manifest.with_utterances(
        replace(u, rerendered=mark if u.key == key else earlier.get(u.key))
        for u in manifest.utterances
    )


def _summary(
    out: Path, key: str, n: int, old: UtteranceRecord, new: UtteranceResult, one: Synthesizer
) -> RerenderResult:
    return RerenderResult(
        out_dir=out,
        key=key,
        text=old.text,
        n=n,
        previous_winner=int(old.winner),
        winner=new.winner,
        flagged_before=bool(old.flagged),
        flagged=new.flagged,
        candidates_generated=one.stats.candidates_generated,
        candidates_reused=one.stats.candidates_reused,
    )


def check_same_render(manifest: Manifest, synthesizer: Synthesizer) -> None:
    """Refuse to mix verifiers or a policy that differ from the render's: the other utterances'
    decisions would not be found and the whole book would be rendered again."""
    status = {
        name: dict(s.get("identity", {}))
        for name, s in synthesizer.verifiers.status.items()
        if s.get("available")
    }
    recorded = {
        name: dict(s.get("identity", {}))
        for name, s in manifest.verifiers.items()
        if s.get("available")
    }
    if json.dumps(status, sort_keys=True, default=str) != json.dumps(
        recorded, sort_keys=True, default=str
    ):
        raise UserError(
            "the verifiers configured now differ from the ones this render used: pass the "
            "render's --config to rerender"
        )
    _check_generator(manifest, synthesizer.generator.name)


def _check_generator(manifest: Manifest, generator: str) -> None:
    if manifest.generator != generator:
        raise UserError(
            f"this render used the {manifest.generator} generator, not {generator}: pass the "
            "render's --generator/--config"
        )
