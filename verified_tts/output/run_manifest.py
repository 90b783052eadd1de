"""The manifest of a finished run: :func:`build_manifest` turns a synthesizer's results and the
assembled files into a :class:`~verified_tts.output.manifest.Manifest`.

It gathers what the records themselves do not know: the run's quality figures
(:func:`summarise`), what was read and asked to be delivered (:func:`production_record`), which
voice spoke each line, each voice's gates (:func:`gate_bounds`) and the whole effective
configuration. Render, dub and rerender all call it; reading and writing the file is
:mod:`verified_tts.output.manifest`'s.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verified_tts.options import SelectionPolicy, to_table
from verified_tts.output.manifest import BookRecord, ChapterRecord, Manifest, UtteranceRecord
from verified_tts.output.source import book_source
from verified_tts.selection.policy import round_targets

if TYPE_CHECKING:
    from verified_tts.options import RenderConfig
    from verified_tts.output.assembly import AssembledFile
    from verified_tts.pipeline import Synthesizer
    from verified_tts.storage.results import UtteranceResult
    from verified_tts.text.production import LoadedBook

__all__ = [
    "build_manifest",
    "gate_bounds",
    "judged_comparison_hint",
    "one_take_voices",
    "production_record",
    "selection_changes",
    "selection_lines",
    "summarise",
]


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def summarise(
    results: Sequence[UtteranceResult],
    policy_of: Callable[[UtteranceResult], SelectionPolicy] | None = None,
    n: int | None = None,
) -> dict[str, Any]:
    """Quality figures of a run: flagged count, gate pass share, the verifier's own WER of the
    winners and of candidate 0 (data, not evidence: the same verifier chose the winners), and what
    the selection changed (:func:`selection_changes`, given the policy of each line and N)."""
    flagged = sum(r.flagged for r in results)
    winners = [
        r.winner_candidate.metrics["wer"] for r in results if "wer" in r.winner_candidate.metrics
    ]
    firsts = [r.candidates[0].metrics["wer"] for r in results if "wer" in r.candidates[0].metrics]
    figures = {
        "utterances": len(results),
        "flagged": flagged,
        "passed_share": round(1 - flagged / len(results), 4) if results else 0.0,
        "mean_wer_winners": _mean(winners),
        "mean_wer_candidate0": _mean(firsts),
        "mean_candidates_per_utterance": _mean([len(r.candidates) for r in results]),
    }
    if policy_of is not None and n is not None:
        figures.update(selection_changes(results, policy_of, n))
    return figures


ONE_TAKE = "one a line (one of each reading): its takes differ only in signal noise"


def one_take_voices(voices: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
    """The voices of a manifest's voice records that were given one take a line (``ONE_TAKE``:
    their takes differ only in noise, so more would be copies)."""
    return tuple(name for name, record in voices.items() if "takes" in record)


MORE_TAKES_NONE_PASSED = "no take of the first round passed the gates"
MORE_TAKES_EXPECTED_BETTER = "a take passed, but another round was likely to find a better one"


def selection_changes(
    results: Sequence[UtteranceResult],
    policy_of: Callable[[UtteranceResult], SelectionPolicy],
    n: int,
) -> dict[str, Any]:
    """What best-of-N changed, in a producer's terms: the lines whose kept take is not the first
    (candidate 0, what N=1 would have kept), and the lines that were given more takes than the
    first round, with why (the first round's takes judged among themselves, as the render
    judged them when it decided to go on)."""
    from verified_tts.selection.consensus import judge_all

    why: dict[str, int] = {}
    more = 0
    for result in results:
        policy = policy_of(result)
        first = round_targets(n, policy)[0]
        if len(result.candidates) <= first:
            continue
        more += 1
        taken = [(c.metrics, c.detail) for c in result.candidates[:first]]
        passed = any(j.passed for j in judge_all(taken, policy))
        reason = MORE_TAKES_EXPECTED_BETTER if passed else MORE_TAKES_NONE_PASSED
        why[reason] = why.get(reason, 0) + 1
    return {
        "lines_take_changed": sum(1 for r in results if r.winner != 0),
        "lines_more_takes": more,
        "more_takes_because": why,
    }


def selection_lines(stats: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows that say what the selection changed, for a run's summary and report;
    the verifier's own WER is not among them (it chose the winners, so it cannot judge them)."""
    lines = int(stats.get("utterances") or 0)
    if "lines_take_changed" not in stats or not lines:
        return []
    because = stats.get("more_takes_because") or {}
    why = "; ".join(f"{count}: {reason}" for reason, count in because.items())
    return [
        ("lines whose kept take is not the first", f"{stats['lines_take_changed']} of {lines}"),
        (
            "lines given more takes than the first round",
            f"{stats['lines_more_takes']} of {lines}" + (f" ({why})" if why else ""),
        ),
    ]


def judged_comparison_hint(book: str) -> str:
    """Where a producer finds out whether N pays: the verifiers chose the takes, so only a
    second ASR model can say."""
    return (
        "Whether more takes are heard as better is for a second ASR model to judge, not the "
        f"verifiers that chose them: verified-tts ab {book} --n 1 --n 8 --judge-asr bundled:base"
    )


def production_record(config: RenderConfig, loaded: LoadedBook | None) -> dict[str, Any]:
    """What was read (chapter selection, skipped parts, lexicon) and asked to be delivered."""
    options = config.production
    record: dict[str, Any] = {
        "formats": list(options.formats),
        "chapters": options.chapters,
        "keep_extras": options.keep_extras,
        "credits": options.credits,
        "narrator": options.narrator,
        "author": options.author,
        "split_hours": options.split_hours,
        "lexicon": options.lexicon,
        "toc_depth": options.toc_depth,
        "language_override": options.language_override,
        "read_along": options.read_along,
        "epub_audio": options.epub_audio,
    }
    if loaded is not None:
        record["book_author"] = loaded.book.author
        record["language"] = loaded.book.language
        record["skipped"] = list(loaded.skipped)
        # the EPUB TOC depth chapters were cut at (chosen when toc_depth is None), of its depths
        record["toc_depth_cut"], record["toc_depths"] = loaded.toc_depth, list(loaded.toc_depths)
        record["warnings"] = list(loaded.warnings)
        if loaded.lexicon is not None:  # the book's own entries carry their PLS file as source
            record["lexicon_entries"] = [e.as_dict() for e in loaded.lexicon.entries]
    return record


def build_manifest(
    *,
    synthesizer: Synthesizer,
    source: str,
    book_title: str | None,
    results: Sequence[UtteranceResult],
    files: Sequence[AssembledFile],
    n: int,
    wall_seconds: float,
    loaded: LoadedBook | None = None,
    delivery: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
) -> Manifest:
    """The manifest of a run that produced ``results`` and assembled ``files`` (into ``out``:
    given, the book's ``source`` is recorded, see :mod:`verified_tts.output.source`)."""
    config = synthesizer.config
    stats = synthesizer.stats.as_dict()
    spoken, voices = _voices(synthesizer, results)
    # each line's reasons say what its own voice's gates expected
    bounds = {
        voice: gate_bounds(synthesizer.policy_of(voice).gates)
        for voice in dict.fromkeys(r.utterance.voice for r in results)
    }
    return Manifest(
        input=source,
        source=book_source(source, out) if out is not None and Path(source).is_file() else None,
        title=book_title,
        generator=synthesizer.generator.name,
        model=synthesizer.generator.model,
        sample_rate=synthesizer.generator.sample_rate,
        n=n,
        adaptive=config.selection.adaptive,
        seed=config.seed,
        voice=config.generator.voice,
        voice_ref=config.generator.voice_ref,
        keep=config.keep,
        verifiers=synthesizer.verifiers.status,
        selection={
            "gates": [
                {k: v for k, v in vars(g).items() if v is not None} for g in config.selection.gates
            ],
            "weights": dict(config.selection.weights),
            "rounds": list(round_targets(n, config.selection)),
            **(
                {
                    "stop": config.selection.stop,
                    **{
                        name: getattr(config.selection, name)
                        for name in ("stop_gain", "prior_spread", "prior_weight")
                    },
                }
                if config.selection.adaptive
                else {}
            ),
        },
        stats={
            **stats,
            **summarise(results, lambda r: synthesizer.policy_of(r.utterance.voice), n),
            "wall_seconds": round(wall_seconds, 3),
        },
        production=production_record(config, loaded),
        delivery=dict(delivery or {}),
        chapters=tuple(
            ChapterRecord(f.index, f.title, f.wav, f.flac, f.duration_s)
            for f in files
            if f.index is not None
        ),
        book=next(BookRecord(f.wav, f.flac, f.duration_s) for f in files if f.index is None),
        voices=voices,
        utterances=tuple(
            replace(
                UtteranceRecord.from_result(r, bounds[r.utterance.voice]),
                spoken_by=spoken[r.utterance.voice],
            )
            for r in results
        ),
        config=to_table(config),
    )


def _voices(
    synthesizer: Synthesizer, results: Sequence[UtteranceResult]
) -> tuple[dict[str | None, str], dict[str, dict[str, Any]]]:
    """Each line's voice setting -> the catalogue name of the voice that spoke it, and per voice
    its generator, sample rate, lines, flagged lines and the reference its speaker scores used."""
    from verified_tts.generators.voice_set import speaking_generator, voice_name

    config, generator = synthesizer.config, synthesizer.generator
    spoken: dict[str | None, str] = {}
    voices: dict[str, dict[str, Any]] = {}
    for result in results:
        setting = result.utterance.voice
        if setting not in spoken:
            speaking = speaking_generator(generator, setting)
            name = voice_name(generator, setting, config.voices_dir)
            spoken[setting] = name
            user_reference = config.generator.voice_ref and setting == config.generator.voice
            voices.setdefault(
                name,
                {
                    "generator": speaking.name,
                    "sample_rate": speaking.sample_rate,
                    "lines": 0,
                    "flagged": 0,
                    "reference": (
                        config.generator.voice_ref if user_reference else "its own winners"
                    ),
                    **(
                        {"selection": _policy_record(config.voice_selection[name])}
                        if name in config.voice_selection
                        else {}
                    ),
                    **({} if getattr(speaking, "takes_differ", True) else {"takes": ONE_TAKE}),
                },
            )
        voices[spoken[setting]]["lines"] += 1
        voices[spoken[setting]]["flagged"] += int(result.flagged)
    return spoken, voices


def _policy_record(policy: SelectionPolicy) -> dict[str, Any]:
    """A voice's own gates and weights, as the manifest's ``selection`` writes the book's."""
    return {
        "gates": [{k: v for k, v in vars(g).items() if v is not None} for g in policy.gates],
        "weights": dict(policy.weights),
    }


def gate_bounds(gates: Iterable[Any]) -> dict[str, dict[str, float]]:
    """Metric -> the gate's min and/or max, for reasons that say what was expected."""
    return {
        g.metric: {k: v for k, v in (("min", g.min), ("max", g.max)) if v is not None}
        for g in gates
    }
