"""Heard alone: the takes of a line that pass are heard once more, each in a window of its own.

Packed scoring (the default) hears a take beside up to seven other sentences, and an adaptive
round's takes beside other sentences than the first round's, so the packed scores of one line's
takes were measured under different conditions, and the differences between them are mostly
where each take was heard (docs/packed-verification.md: a later round's take moves by more than a
line's takes spread). Ranking the takes that pass by that score found almost none of the gain the
judge hears among them (docs/selection.md, "Ranking the takes"). With ``[selection] rank =
"heard_alone"``, once a line's rounds are done and two or more of its takes passed every gate,
:func:`hear_alone` has the WER verifier hear each of those takes alone (its per-clip path, beam
search) and records the word error rate as the metric ``wer_alone``; the policy's
:func:`~verified_tts.selection.policy.choose` then keeps the take with the fewest errors, the lower
index on a tie (so take 0 stays unless another take is heard better). The lines of a round are
heard in one call, and the scores are stored under their own context, so a resumed render does
not hear them again. Under per-clip scoring a take's own ``wer`` was heard alone already and is
used as it is; without a Whisper verifier nothing is heard and the score ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from verified_tts.selection.policy import HEARD_ALONE, Judgement
from verified_tts.storage.keys import score_context, stable_hash
from verified_tts.storage.results import CandidateResult, Utterance

if TYPE_CHECKING:
    from verified_tts.selection.strategy import RenderContext

__all__ = ["contenders", "hear_alone"]

Line = tuple[Utterance, Sequence[CandidateResult], Sequence[Judgement]]


def contenders(judgements: Sequence[Judgement]) -> list[int]:
    """The takes to hear alone: those that passed every gate, where two or more did."""
    passing = [i for i, j in enumerate(judgements) if j.passed]
    return passing if len(passing) > 1 else []


def hear_alone(context: RenderContext, lines: Sequence[Line]) -> list[list[CandidateResult]]:
    """Each line's takes, its contenders with ``wer_alone`` among their metrics (see the module
    doc); the other takes as they were."""
    from verifiers import Clip
    from verifiers.wer import WerVerifier

    out = [list(candidates) for _, candidates, _ in lines]
    wer = context.verifiers.get("wer")
    wanted = [(n, i) for n, (_, _, judgements) in enumerate(lines) for i in contenders(judgements)]
    if not isinstance(wer, WerVerifier) or not wanted:
        return out
    values: dict[tuple[int, int], Any] = {}
    if not wer.options.packing:
        values = {(n, i): out[n][i].metrics.get("wer") for n, i in wanted}
    else:
        alone = wer.with_options(packing=False)
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
    for (n, i), value in values.items():
        if value is not None:
            candidate = out[n][i]
            out[n][i] = replace(candidate, metrics={**candidate.metrics, HEARD_ALONE: float(value)})
    return out
