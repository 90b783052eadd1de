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
so it costs only verification) to bring the re-rendered winner back.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.config import RenderConfig
from verified_tts.errors import UserError
from verified_tts.pipeline import Synthesizer, UtteranceResult
from verified_tts.render import (
    STORE_DIR,
    build_manifest,
    finish_output,
    place_winners,
    write_json_atomic,
)
from verified_tts.report import write_render_report
from verified_tts.store import Store
from verified_tts.text.production import load_input

__all__ = ["RerenderResult", "config_from_manifest", "find_utterance", "rerender"]


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


def _read_manifest(out: Path) -> dict[str, Any]:
    path = out / "manifest.json"
    if not path.is_file():
        raise UserError(
            f"{out} has no manifest.json: give the --out folder of a finished `verified-tts render`"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def find_utterance(manifest: dict[str, Any], key: str) -> str:
    """The full key for ``key`` (a full key or a unique prefix of one, as reports show it)."""
    keys = list(dict.fromkeys(u["key"] for u in manifest["utterances"]))
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
    "formats", "chapters", "keep_extras", "credits", "narrator", "author", "split_hours", "lexicon"
}  # fmt: skip


def config_from_manifest(manifest: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """CLI-style overrides that reproduce the render's generator settings, for ``build_config``;
    explicit ``overrides`` (not None) win."""
    recorded = {
        "generator": manifest.get("generator"),
        "voice": manifest.get("voice"),
        "voice_ref": manifest.get("voice_ref"),
        "seed": manifest.get("seed"),
        # what was read and delivered (format, chapter selection, credits, lexicon)
        "production": {
            key: value
            for key, value in manifest.get("production", {}).items()
            if key in _PRODUCTION_KEYS
        },
    }
    return {**recorded, **{k: v for k, v in overrides.items() if v is not None}}


def _unit_mean(vectors: list[np.ndarray]) -> np.ndarray | None:
    if not vectors:
        return None
    mean = np.mean(vectors, axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean


def rerender(
    out_dir: str | os.PathLike,
    utterance_key: str,
    n: int = 16,
    *,
    config: RenderConfig | None = None,
    synthesizer: Synthesizer | None = None,
) -> RerenderResult:
    """Re-render ``utterance_key`` of the render in ``out_dir`` at N=``n``; see the module doc."""
    started = time.perf_counter()
    out = Path(out_dir)
    manifest = _read_manifest(out)
    key = find_utterance(manifest, utterance_key)
    old = next(u for u in manifest["utterances"] if u["key"] == key)
    if n <= len(old["candidates"]):
        raise UserError(
            f"utterance {key} already has {len(old['candidates'])} candidates: ask for more "
            f"(-n {2 * len(old['candidates'])})"
        )
    if config is None:
        if synthesizer is None:
            from verified_tts.config import build_config

            config = build_config({}, **config_from_manifest(manifest))
        else:
            config = synthesizer.config
    # The other utterances are read back under the render's own policy (its N and adaptivity),
    # which is what their stored decisions are keyed by.
    adaptive = bool(manifest.get("adaptive", config.selection.adaptive))
    original = replace(
        config,
        candidates=int(manifest["n"]),
        adaptive=adaptive,
        selection=replace(config.selection, adaptive=adaptive),
    )
    if synthesizer is None:
        synthesizer = Synthesizer.load(original)
    base = Synthesizer(
        synthesizer.generator,
        synthesizer.verifiers,
        original,
        voice_reference=synthesizer.voice_reference,
    )
    _check_same_render(manifest, base)
    source = manifest["input"]
    if not Path(source).is_file():
        raise UserError(
            f"the book {source} that this render read is gone: rerender re-plans the book, put "
            "it back at that path"
        )
    loaded = load_input(source, original.production, max_chars=original.max_chars)
    book = loaded.book
    utterances = base.plan(book.segments)
    targets = [u for u in utterances if u.key == key]
    if not targets:
        raise UserError(
            f"utterance {key} is not in {source} under these settings: the book was edited since "
            "the render, or the generator/voice/seed differ (pass the render's --config)"
        )
    # utterances re-rendered earlier keep their larger N; this one gets n
    earlier = {u["key"]: u["rerendered"] for u in manifest["utterances"] if u.get("rerendered")}
    wanted = {k: int(mark["n"]) for k, mark in earlier.items() if k != key}
    wanted[key] = n
    planned = {u.key: u for u in utterances}
    with Store(out / STORE_DIR) as store:
        results = base.run(utterances, store)
        replaced: dict[str, UtteranceResult] = {}
        runs: list[Synthesizer] = []
        for target_key, target_n in wanted.items():
            if target_key not in planned:
                continue  # the book no longer has it: nothing to keep
            reference = synthesizer.voice_reference
            if reference is None:
                reference = _unit_mean(
                    [
                        np.asarray(r.embedding, dtype=np.float32)
                        for r in results
                        if r.utterance.key != target_key and r.embedding is not None
                    ]
                )
            fixed = replace(
                original,
                candidates=target_n,
                adaptive=False,
                selection=replace(original.selection, adaptive=False),
            )
            one = Synthesizer(
                synthesizer.generator, synthesizer.verifiers, fixed, voice_reference=reference
            )
            (replaced[target_key],) = one.run([planned[target_key]], store, n=target_n)
            runs.append(one)
        results = [
            replace(replaced[r.utterance.key], utterance=r.utterance)
            if r.utterance.key in replaced
            else r
            for r in results
        ]
        placed = place_winners(results, book, store)
    files, delivery = finish_output(out, placed, book, original, base.generator.sample_rate)
    for run in runs:
        _merge_stats(base, run)
    updated = build_manifest(
        synthesizer=base,
        source=source,
        book_title=book.title,
        results=results,
        files=files,
        n=int(manifest["n"]),
        wall_seconds=time.perf_counter() - started,
        loaded=loaded,
        delivery=delivery,
    )
    mark = {"n": n, "previous_winner": old["winner"], "previous_flagged": old["flagged"]}
    for record in updated["utterances"]:
        if record["key"] == key:
            record["rerendered"] = mark
        elif record["key"] in earlier:
            record["rerendered"] = earlier[record["key"]]
    write_json_atomic(out / "manifest.json", updated)
    write_render_report(out, updated)
    return _summary(out, key, n, old, replaced[key], runs[-1])


def _summary(
    out: Path, key: str, n: int, old: dict[str, Any], new: UtteranceResult, one: Synthesizer
) -> RerenderResult:
    return RerenderResult(
        out_dir=out,
        key=key,
        text=old["text"],
        n=n,
        previous_winner=int(old["winner"]),
        winner=new.winner,
        flagged_before=bool(old["flagged"]),
        flagged=new.flagged,
        candidates_generated=one.stats.candidates_generated,
        candidates_reused=one.stats.candidates_reused,
    )


def _merge_stats(into: Synthesizer, other: Synthesizer) -> None:
    """The manifest's run stats cover both passes of this command."""
    stats, extra = into.stats, other.stats
    stats.candidates_generated += extra.candidates_generated
    stats.candidates_reused += extra.candidates_reused
    stats.utterances_reused += extra.utterances_reused
    stats.audio_seconds_generated += extra.audio_seconds_generated
    stats.audio_seconds_verified += extra.audio_seconds_verified
    for stage, seconds in extra.seconds.items():
        stats.seconds[stage] += seconds


def _check_same_render(manifest: dict[str, Any], synthesizer: Synthesizer) -> None:
    """Refuse to mix verifiers or a policy that differ from the render's: the other utterances'
    decisions would not be found and the whole book would be rendered again."""
    status = {
        name: dict(s.get("identity", {}))
        for name, s in synthesizer.verifiers.status.items()
        if s.get("available")
    }
    recorded = {
        name: dict(s.get("identity", {}))
        for name, s in manifest.get("verifiers", {}).items()
        if s.get("available")
    }
    if json.dumps(status, sort_keys=True, default=str) != json.dumps(
        recorded, sort_keys=True, default=str
    ):
        raise UserError(
            "the verifiers configured now differ from the ones this render used: pass the "
            "render's --config to rerender"
        )
    if manifest.get("generator") != synthesizer.generator.name:
        raise UserError(
            f"this render used the {manifest.get('generator')} generator, not "
            f"{synthesizer.generator.name}: pass the render's --generator/--config"
        )
