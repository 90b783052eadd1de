"""Best-of-N in rounds: the default strategy (``--search best-of-n``).

Every undecided utterance of a window gets the candidates its round needs (the selection policy's
round targets: all N at once, or adaptive rounds that stop where a candidate passed), sampled for
the whole window in one batch and scored in one call per verifier; an utterance the policy lets
stop is decided, the others go on to the next round. With a budget (``--budget``, seconds of audio
generated per utterance) an utterance gets only as many candidates as fit if each ran its whole
token allowance, so the budget is never passed (a budget that holds not one is an error). The first
round of the next window is what :meth:`BestOfN.prefetch` samples ahead. Under ``[selection] rank =
"heard_alone"`` the lines decided in a round first have their passing takes heard alone, in one
call (:mod:`verified_tts.selection.rehear`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from verified_tts.errors import UserError
from verified_tts.selection.consensus import judge_all
from verified_tts.selection.policy import round_targets, should_stop
from verified_tts.selection.rehear import hear_alone
from verified_tts.selection.strategy import RenderContext
from verified_tts.storage.results import CandidateResult, Utterance, UtteranceResult

if TYPE_CHECKING:
    from verified_tts.generators.codec_lm_search import PrefixBackend
    from verified_tts.selection.policy import SelectionPolicy

__all__ = ["BestOfN", "takes_by_round"]


def takes_by_round(n: int, policy: SelectionPolicy, utterance: Utterance) -> tuple[int, ...]:
    """The policy's round targets, except that a line read in several ways has a take of each
    reading (up to N) in its first round: its readings are what the verifiers choose among."""
    targets = round_targets(n, policy)
    first = min(n, len(utterance.readings))
    if first <= targets[0]:
        return targets
    return (first, *(t for t in targets if t > first))


class BestOfN:
    """Best-of-N rounds under the run's selection policy, optionally within a token budget."""

    name = "best-of-n"
    bootstraps_reference = True

    def __init__(self, backend: PrefixBackend | None = None, budget_s: float | None = None) -> None:
        """``backend`` (a codec LM's) tells each utterance's token allowance; it is needed only
        with ``budget_s``."""
        if budget_s is not None and backend is None:
            raise ValueError("a budget needs the generator's prefix backend")
        self.backend = backend
        self.budget = None if budget_s is None or backend is None else backend.tokens_in(budget_s)

    def limits(self, pending: Sequence[Utterance], n: int) -> dict[str, int]:
        """Candidates per utterance: N, or with a budget as many as fit if each ran its whole
        token allowance, so the budget is never passed; a budget that holds not one of them is
        one error line (a beam search can stop a beam at the budget; a candidate cannot)."""
        if self.budget is None or self.backend is None:
            return {u.key: n for u in pending}
        limits = {}
        for u in pending:
            cap = self.backend.max_tokens(u.request(0))
            fits = self.budget // cap
            if fits < 1:
                need = math.ceil(cap * self.backend.seconds_per_token * 100) / 100
                raise UserError(
                    f"--budget {self.budget * self.backend.seconds_per_token:g} s cannot hold one "
                    f"best-of-N candidate of {u.segment.text[:40]!r}, which may run to {need:g} "
                    f"s: raise --budget to at least {need:g}, or use --search beam, which stops "
                    "its beams at the budget"
                )
            limits[u.key] = min(n, fits)
        return limits

    def check(self, utterances: Sequence[Utterance], n: int) -> None:
        """A budget too small for one candidate fails before any work."""
        self.limits(utterances, n)

    def prefetch(self, window: Sequence[Utterance], context: RenderContext) -> None:
        """Sample the first round of the window's undecided utterances and score it ahead
        (:meth:`RenderContext.score_ahead`). Only candidates the window will ask for anyway are
        made, and scored as its first round will be, so the winners do not change."""
        undecided = {
            u.key: u
            for u in window
            if context.store.get_decision(u.key, context.policy_id_of(u)) is None
        }.values()
        first_round = [
            (u, k)
            for u in undecided
            for k in range(
                min(takes_by_round(context.n, context.policy_of(u), u)[0], context.take_limit(u))
            )
        ]
        context.score_ahead(first_round, context.sample(first_round))

    def render_window(
        self, pending: Sequence[Utterance], context: RenderContext
    ) -> Iterator[UtteranceResult]:
        n = context.n
        limits = self.limits(pending, n)
        limit = {u.key: min(limits[u.key], context.take_limit(u)) for u in pending}
        have: dict[str, list[CandidateResult]] = {u.key: [] for u in pending}
        embeddings: dict[str, list[tuple[float, ...] | None]] = {u.key: [] for u in pending}
        # each voice's lines follow its own policy's rounds; all rounds of a window go together
        policies = {u.key: context.policy_of(u) for u in pending}
        schedules = {u.key: takes_by_round(n, policies[u.key], u) for u in pending}
        active = list(pending)
        for position in itertools.count():
            if not active:
                break
            targets = {u.key: schedules[u.key][position] for u in active}
            wanted = [
                (u, k)
                for u in active
                for k in range(len(have[u.key]), min(targets[u.key], limit[u.key]))
            ]
            scored = context.verify(wanted, context.sample(wanted))
            for (utterance, _), (result, embedding) in zip(wanted, scored, strict=True):
                have[utterance.key].append(result)
                embeddings[utterance.key].append(embedding)
            still_active, deciding = [], []
            for utterance in active:
                policy, target = policies[utterance.key], targets[utterance.key]
                judgements = judge_all([(c.metrics, c.detail) for c in have[utterance.key]], policy)
                last = position + 1 == len(schedules[utterance.key])
                if (
                    not last
                    and target < limit[utterance.key]
                    and not should_stop(judgements, limit[utterance.key], policy)
                ):
                    still_active.append(utterance)
                    continue
                deciding.append((utterance, judgements))
            # the lines whose policy ranks by hearing alone are heard together, one call a round
            alone = [
                (u, have[u.key], j, policies[u.key])
                for u, j in deciding
                if policies[u.key].rank == "heard_alone"
            ]
            for (utterance, *_), takes in zip(alone, hear_alone(context, alone), strict=True):
                have[utterance.key] = takes
            for utterance, judgements in deciding:
                if policies[utterance.key].rank == "heard_alone":
                    takes = [(c.metrics, c.detail) for c in have[utterance.key]]
                    judgements = judge_all(takes, policies[utterance.key])
                yield context.decide(
                    utterance, have[utterance.key], embeddings[utterance.key], judgements
                )
            active = still_active
