"""A line whose winning take already says the book's decided readings keeps it.

While its words were in doubt, a line's takes read them each way in turn, and take k of it is
candidate k div R of the line read in reading k mod R (:mod:`verified_tts.storage.keys`). Once the
book has decided, the line is planned as the decided lexicon says it: its key is the key of one of
those readings. Where the line's winner was a take of that very reading, the verifiers have
already chosen among the takes of the decided reading; :func:`keep_decided_winners` stores that
choice as the line's decision under its new key (the takes of the reading, renumbered 0, 1, ...
as the line read one way numbers them, judged again among themselves, and kept only if the same
take wins and passes), so the last pass takes it from the store instead of scoring the same takes
again against a new window's speaker reference. Every other line is decided by the last pass as
usual. The decision is a pure function of the first pass's stored decision, so a resumed render
makes the same one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verified_tts.pipeline import Synthesizer, Utterance, UtteranceResult
    from verified_tts.storage.store import Store

__all__ = ["keep_decided_winners"]


def keep_decided_winners(
    first: Sequence[UtteranceResult],
    planned: Sequence[Utterance],
    synthesizer: Synthesizer,
    store: Store,
) -> int:
    """Store the decision of each line of ``planned`` (the last pass's plan) whose result in
    ``first`` (the pass with the words in doubt, in the same order) won with a take of the
    reading the line is now planned as; returns how many lines kept their winner."""
    from verified_tts.selection.consensus import judge_all, with_take_metrics
    from verified_tts.selection.policy import choose
    from verified_tts.storage.results import UtteranceResult as Result

    kept = 0
    n = synthesizer.config.candidates
    for result, utterance in zip(first, planned, strict=True):
        line = result.utterance
        if not line.readings or utterance.readings or synthesizer.config.keep != "all":
            continue
        reading = line.take(result.winner)[0]
        if reading is None or reading.key != utterance.key:
            continue
        if store.get_decision(utterance.key, synthesizer.policy_id(n, utterance.voice)):
            continue
        takes = [c for c in result.candidates if line.take(c.index)[1] == utterance.key]
        numbers = [line.take(c.index)[2] for c in takes]
        if numbers != list(range(len(takes))) or any(c.audio is None for c in takes):
            continue
        policy = synthesizer.policy_of(utterance.voice)
        judgements = judge_all([(c.metrics, c.detail) for c in takes], policy)
        winner, flagged = choose(judgements)
        if flagged or takes[winner].index != result.winner:
            continue
        compared = with_take_metrics([c.metrics for c in takes], [c.detail for c in takes])
        renumbered = tuple(
            replace(c, index=j, metrics=m, passed=g.passed, failed=g.failed, score=g.score,
                    info={k: v for k, v in c.info.items() if k != "reading"})
            for j, (c, m, g) in enumerate(zip(takes, compared, judgements, strict=True))
        )  # fmt: skip
        decided = Result(utterance, renumbered, winner, False, reused=False,
                         embedding=result.embedding)  # fmt: skip
        store.put_decision(decided.decision(synthesizer.policy_id(n, utterance.voice)))
        kept += 1
    return kept
