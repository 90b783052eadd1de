"""The strategy seam: the pipeline runs any :class:`~verified_tts.selection.strategy.Strategy`
unchanged.

A strategy of the test's own (keep candidate 0) is given to a synthesizer: the pipeline hands it
each window's undecided utterances in book order, lets it sample the next window ahead on the
prefetch thread, takes no bootstrap candidates it did not ask for, and reuses its stored
decisions on a second run. Best-of-N and beam search implement the same protocol.
"""

from __future__ import annotations

import threading

from verified_tts.selection.best_of_n import BestOfN
from verified_tts.selection.strategy import RenderContext, Strategy
from verified_tts.storage.store import Store
from verified_tts.text.book import parse_book

BOOK = (
    "# Five\n\nThe birch canoe slid on the smooth planks. Rice is often served in round "
    "bowls. The juice of lemons makes fine punch. The box was thrown beside the parked truck. "
    "Four hours of steady work faced us.\n"
)


class FirstCandidate:
    """Keeps candidate 0 of every utterance."""

    name = "first-candidate"
    bootstraps_reference = False

    def __init__(self) -> None:
        self.windows: list[list[str]] = []
        self.prefetched: list[tuple[str, list[str]]] = []

    def prefetch(self, window, context: RenderContext) -> None:
        self.prefetched.append((threading.current_thread().name, [u.key for u in window]))
        context.sample([(u, 0) for u in window])

    def render_window(self, pending, context: RenderContext):
        self.windows.append([u.key for u in pending])
        wanted = [(u, 0) for u in pending]
        scored = context.verify(wanted, context.sample(wanted))
        for (utterance, _), (result, embedding) in zip(wanted, scored, strict=True):
            yield context.decide(utterance, [result], [embedding])


def test_a_strategy_of_its_own_runs_through_the_pipeline(tmp_path, synthesizer_factory):
    synth = synthesizer_factory(candidates=4, window=2)
    assert isinstance(synth.strategy, BestOfN) and isinstance(synth.strategy, Strategy)
    mine = FirstCandidate()
    assert isinstance(mine, Strategy)
    synth.strategy = mine
    utterances = synth.plan(parse_book(BOOK).segments)
    keys = [u.key for u in utterances]
    assert len(keys) == 6  # the heading and five sentences: three windows of two
    store = Store(tmp_path / "store")
    results = synth.run(utterances, store)
    assert [r.winner for r in results] == [0] * 6
    assert all(len(r.candidates) == 1 and not r.reused for r in results)
    assert mine.windows == [keys[0:2], keys[2:4], keys[4:6]]
    assert mine.prefetched == [("prefetch_0", keys[2:4]), ("prefetch_0", keys[4:6])]
    # only what the strategy asked for was made: no bootstrap candidates, nothing twice
    assert synth.stats.candidates_generated == 6

    again = synth.variant()
    again.strategy = second = FirstCandidate()
    repeated = again.run(utterances, store)
    assert all(r.reused for r in repeated) and second.windows == [[], [], []]
    assert [r.winner_candidate.key for r in repeated] == [r.winner_candidate.key for r in results]
    assert again.stats.candidates_generated == 0
