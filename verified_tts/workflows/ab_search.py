"""A/B of search strategies at equal budget: ``verified-tts ab --arm best-of-n:8 --arm beam:2x4``.

Unlike the N arms of :mod:`verified_tts.workflows.ab` (every smaller N is read out of one N=max
run), a beam search is not a prefix of best-of-N, so each arm renders the book on its own, into
``OUT/arms/<arm>/``, with the models loaded once and shared. Every arm runs under the same
``--budget`` (seconds of audio generated per utterance; default: what best-of-N's largest N may
use), so the comparison is at equal cost ceiling; the tokens each arm actually generated and its
wall time are reported beside its quality. Quality: the verifier's own WER and speaker similarity
of the winners, and, with ``--judge-asr``, the independent judge's WER of every arm's winners,
with a paired bootstrap interval of the per-utterance difference against the first arm. Writes
``OUT/ab.json``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options import RenderConfig
from verified_tts.output.manifest import read_manifest
from verified_tts.pipeline import Synthesizer
from verified_tts.selection.search import parse_arm
from verified_tts.storage.atomic import write_json_atomic
from verified_tts.storage.results import UtteranceResult
from verified_tts.workflows.ab_arms import judge_winners, mean, prepare_judge, versus_first
from verified_tts.workflows.judge import Judge
from verified_tts.workflows.render import render

__all__ = ["SearchABResult", "SearchArm", "ab_search", "arm_config"]


@dataclass(frozen=True)
class SearchArm:
    """One arm's cost and quality over the book."""

    arm: str
    utterances: int
    flagged: int
    tokens_generated: int
    audio_s_generated: float
    wall_seconds: float
    wer: float | None  # the WER verifier's, winners' mean
    speaker: float | None
    judge_wer: float | None
    judge_wer_vs_first: tuple[float, float, float] | None  # mean difference, 95 % interval


@dataclass(frozen=True)
class SearchABResult:
    out_dir: Path
    ab_json: Path
    arms: tuple[SearchArm, ...]
    judge: str | None


def arm_config(config: RenderConfig, arm: str, budget_s: float | None) -> RenderConfig:
    """The render settings of one arm: fixed N for best-of-N, W x E for beam; one budget."""
    strategy, size, expansions = parse_arm(arm)
    if strategy == "best-of-n":
        search = replace(config.search, strategy="best-of-n", budget_s=budget_s)
        return replace(config.variant(candidates=size, adaptive=False, keep="all"), search=search)
    search = replace(
        config.search, strategy="beam", width=size, expansions=expansions, budget_s=budget_s
    )
    return replace(config.variant(keep="all"), search=search)


def ab_search(
    book: str | os.PathLike,
    out_dir: str | os.PathLike,
    config: RenderConfig,
    arms: Sequence[str],
    judge_asr: str | Judge | None = None,
    synthesizer: Synthesizer | None = None,
    *,
    on_loading: Callable[[], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[UtteranceResult], None] | None = None,
    on_judge_start: Callable[[int], None] | None = None,
    on_judged: Callable[[int], None] | None = None,
) -> SearchABResult:
    """Render ``book`` once per arm at one budget, then compare them; see the module doc."""
    if len(arms) < 2:
        raise UserError("--arm needs at least two arms, e.g. --arm best-of-n:8 --arm beam:2x4")
    parsed = [parse_arm(a) for a in arms]
    budget = config.search.budget_s
    judge_model = prepare_judge(judge_asr, config.verifiers)
    if synthesizer is None:
        if on_loading:
            on_loading()
        synthesizer = Synthesizer.load(config)
    from verified_tts.generators.codec_lm_search import prefix_backend

    if prefix_backend(synthesizer.generator) is None:
        raise UserError(
            "--arm compares search strategies at one budget of codec tokens, which only a "
            f"codec-LM generator (orpheus, llasa or spark) has; '{synthesizer.generator.name}' "
            "has none: compare N instead, with --n 1 --n 8"
        )
    backend = synthesizer.prefix_backend()  # every arm shares one budget of codec tokens
    if budget is None:  # best-of-N's largest N at its worst case: every candidate at its cap
        largest = max((n for s, n, _ in parsed if s == "best-of-n"), default=None)
        if largest is not None:
            tokens = largest * backend.generator.options.max_tokens_max
            # rounded up to the millisecond, so the seconds never fall short of the tokens
            budget = math.ceil(tokens * backend.seconds_per_token * 1000) / 1000
    out = Path(out_dir)
    rows: list[dict[str, Any]] = []
    started_once: list[bool] = []

    def start(count: int) -> None:  # one progress total over every arm's utterances
        if on_start and not started_once:
            started_once.append(True)
            on_start(count * len(arms))

    for arm in arms:
        settings = arm_config(config, arm, budget)
        started = time.perf_counter()
        render(
            book,
            out / "arms" / arm.replace(":", "-"),
            settings,
            synthesizer=synthesizer.variant(settings),
            on_start=start,
            on_result=on_result,
        )
        rows.append({"arm": arm, "wall": time.perf_counter() - started})
    manifests = [read_manifest(out / "arms" / r["arm"].replace(":", "-")) for r in rows]
    judged: dict[tuple[int, int], tuple[float, str]] = {}
    judge_info = None
    if judge_model is not None:
        wanted = {
            (m_index, u_index): (
                str(Path("arms") / rows[m_index]["arm"].replace(":", "-") / u.audio),
                u.text,
            )
            for m_index, manifest in enumerate(manifests)
            for u_index, u in enumerate(manifest.utterances)
            if u.audio
        }
        judged, judge_info = judge_winners(
            judge_model, wanted, out, on_start=on_judge_start, on_judged=on_judged
        )
    judge_wers = [
        [judged[(m, i)][0] for i in range(len(manifest.utterances)) if (m, i) in judged]
        for m, manifest in enumerate(manifests)
    ]
    intervals = versus_first(judge_wers)
    tps = backend.layout.tokens_per_second
    results = []
    for row, manifest, wers, interval in zip(rows, manifests, judge_wers, intervals, strict=True):
        winners = [u.winner_candidate for u in manifest.utterances]
        tokens = int(manifest.stats.get("tokens_generated", 0))
        results.append(
            SearchArm(
                arm=row["arm"],
                utterances=len(winners),
                flagged=sum(u.flagged for u in manifest.utterances),
                tokens_generated=tokens,
                audio_s_generated=round(tokens / tps, 3),
                wall_seconds=round(row["wall"], 3),
                wer=mean([w.scores["wer"] for w in winners if "wer" in w.scores]),
                speaker=mean([w.scores["speaker"] for w in winners if "speaker" in w.scores]),
                judge_wer=mean(wers),
                judge_wer_vs_first=interval,
            )
        )
    path = out / "ab.json"
    write_json_atomic(
        path,
        {
            "kind": "search",
            "book": str(book),
            "budget_s_per_utterance": budget,
            "search": asdict(replace(config.search, budget_s=budget)),
            "judge": judge_info,
            "arms": [asdict(a) for a in results],
            "notes": [
                "each arm renders the book on its own under the same budget (a hard cap: a step "
                "or a candidate runs only if its worst case still fits)",
                "judge_wer_vs_first: mean per-utterance judge WER of this arm minus the first "
                "arm's, with a 95 % paired bootstrap interval (negative = this arm better)",
            ],
        },
    )
    label = judge_info["model"] if judge_info else None
    return SearchABResult(out, path, tuple(results), label)
