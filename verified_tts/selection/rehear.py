"""Heard alone: the takes of a line that pass are heard once more, each in a window of its own.

Packed scoring (the default) hears a take beside up to seven other sentences, and an adaptive
round's takes beside other sentences than the first round's, so the packed scores of one line's
takes were measured under different conditions, and the differences between them are mostly
where each take was heard (docs/packed-verification.md: a later round's take moves by more than a
line's takes spread). Ranking the takes that pass by that score found almost none of the gain the
judge hears among them (docs/selection.md, "Ranking the takes"). With ``[selection] rank =
"heard_alone"``, once a line's rounds are done and two or more of its takes passed every gate,
:func:`hear_alone` has the WER verifier hear each of those takes alone (its per-clip path) and
records the word error rate as the metric ``wer_alone``; the policy's
:func:`~verified_tts.selection.policy.choose` then keeps the take with the fewest errors, the lower
index on a tie (so take 0 stays unless another take is heard better). ``alone_beam`` is the beam of
that hearing (1: greedy decoding, cheaper), and ``alone_lines = "differing"`` hears only the lines
whose passing takes the packed scoring heard as different words (:func:`heard_differently`);
where they were heard alike the weighted score ranks, as without hearing alone. The lines of a
round heard with one beam are heard in one call, and the scores are stored under their own
context (the beam is part of it), so a resumed render does not hear them again. Under per-clip
scoring a take's own ``wer`` was heard alone already and is used as it is (``alone_beam`` and
``alone_lines`` then change nothing); without a Whisper verifier nothing is heard and the score
ranks, and a WER verifier that cannot hear a take alone ranks by score too, with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from verified_tts.selection.policy import HEARD_ALONE, Judgement
from verified_tts.storage.keys import score_context, stable_hash
from verified_tts.storage.results import CandidateResult, Utterance

if TYPE_CHECKING:
    from verified_tts.options.selection import SelectionPolicy
    from verified_tts.selection.strategy import RenderContext

__all__ = ["contenders", "hear_alone", "heard_differently"]

# a line decided in a round: its utterance, takes, their judgements, and the policy it follows
Line = tuple[Utterance, Sequence[CandidateResult], Sequence[Judgement], "SelectionPolicy"]

log = logging.getLogger("verified_tts.selection")
_WARNED: set[str] = set()  # kinds of WER verifier already said to hear nothing alone


def contenders(
    judgements: Sequence[Judgement], heard: Sequence[str | None] | None = None
) -> list[int]:
    """The takes to hear alone: those that passed every gate, where two or more did. With
    ``heard`` (each take's transcript from its scoring), only where the passing takes were heard
    as different words (:func:`heard_differently`)."""
    passing = [i for i, j in enumerate(judgements) if j.passed]
    if len(passing) < 2:
        return []
    if heard is not None and not heard_differently([heard[i] for i in passing]):
        return []
    return passing


def heard_differently(transcripts: Sequence[str | None]) -> bool:
    """Whether these transcripts are not all the same words once normalised as the WER
    normalises them; a take with no transcript counts as heard differently."""
    from verifiers.textnorm import normalize

    if any(t is None for t in transcripts):
        return True
    return len({normalize(str(t)) for t in transcripts}) > 1


def hear_alone(context: RenderContext, lines: Sequence[Line]) -> list[list[CandidateResult]]:
    """Each line's takes, its contenders with ``wer_alone`` among their metrics (see the module
    doc); the other takes as they were. Each line is heard as its policy asks (``alone_beam``,
    ``alone_lines``); the lines heard with one beam are heard in one call."""
    from verifiers import Reconfigurable

    out = [list(candidates) for _, candidates, _, _ in lines]
    wer = context.verifiers.get("wer")
    if wer is None or not lines:
        return out  # no Whisper verifier: the score ranks (the module doc)
    # the local WER verifier or its Ray proxy: both hear a take alone with the model they hold
    if not isinstance(wer, Reconfigurable) or not hasattr(wer.options, "packing"):
        # said, not silent: a proxy that did not pass on the capability once made every Ray
        # render rank by score under rank = "heard_alone" for a round before anyone noticed
        kind = type(wer).__name__
        if kind not in _WARNED:
            _WARNED.add(kind)
            log.warning("rank = heard_alone: the WER verifier (%s) cannot hear a take alone, "
                        "so the takes are ranked by their score", kind)  # fmt: skip
        return out
    values: dict[tuple[int, int], Any] = {}
    if not wer.options.packing:
        # per-clip scoring heard every take alone already: its own WER ranks, at no cost
        wanted = [(n, i) for n, (_, _, j, _) in enumerate(lines) for i in contenders(j)]
        values = {(n, i): out[n][i].metrics.get("wer") for n, i in wanted}
    else:
        by_beam: dict[int, list[tuple[int, int]]] = {}
        for n, (_, candidates, judgements, policy) in enumerate(lines):
            heard = None
            if policy.alone_lines == "differing":
                heard = [c.detail.get("transcript") for c in candidates]
            for i in contenders(judgements, heard):
                by_beam.setdefault(policy.alone_beam, []).append((n, i))
        for beam, wanted in sorted(by_beam.items()):
            values |= _heard(context, wer.with_options(packing=False, beam_size=beam), lines, out,
                             wanted)  # fmt: skip
    for (n, i), value in values.items():
        if value is not None:
            candidate = out[n][i]
            out[n][i] = replace(candidate, metrics={**candidate.metrics, HEARD_ALONE: float(value)})
    return out


def _heard(
    context: RenderContext,
    alone: Any,
    lines: Sequence[Line],
    out: list[list[CandidateResult]],
    wanted: Sequence[tuple[int, int]],
) -> dict[tuple[int, int], Any]:
    """The WER of each wanted take heard by ``alone`` (the WER verifier on its per-clip path),
    read from the store where it was heard before, else heard now in one call and stored."""
    from verifiers import Clip

    values: dict[tuple[int, int], Any] = {}
    verifier_id = stable_hash({"wer_alone": dict(alone.identity())})
    contexts = {
        (n, i): score_context(
            verifier_id,
            None,
            text=lines[n][0].segment.text,
            spoken=lines[n][0].segment.spoken,
            emotion=None,
            target_duration_s=None,
        )
        for n, i in wanted
    }
    missing, clips = [], []
    with context.stats.timer("store"):
        for n, i in wanted:
            key = out[n][i].key
            record = context.store.get_scores(key, contexts[n, i])
            if record is not None:
                values[n, i] = record["metrics"].get("wer")
                continue
            stored = context.store.get_candidate(key)
            if stored is None or stored.audio is None:
                continue  # not heard: the line's takes rank by score
            segment = lines[n][0].segment
            clips.append(Clip(audio=context.store.load_audio(stored),
                              sample_rate=stored.sample_rate, text=segment.text,
                              spoken=segment.spoken))  # fmt: skip
            missing.append((n, i))
    if clips:
        with context.stats.timer(f"verify:{HEARD_ALONE}"):
            scores = alone.score(clips)
        context.stats.audio_seconds_verified += sum(clip.duration_s for clip in clips)
        records = []
        for (n, i), score in zip(missing, scores, strict=True):
            values[n, i] = score.metrics.get("wer")
            metrics = {k: float(v) for k, v in score.metrics.items()}
            records.append((out[n][i].key, contexts[n, i], {"metrics": metrics,
                            "detail": {"transcript": score.detail.get("transcript")},
                            "embedding": None}))  # fmt: skip
        with context.stats.timer("store"):
            context.store.put_scores(records)
    return values
