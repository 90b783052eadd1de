"""A batching window: concurrent requests collected into one call of a batch function.

:class:`WindowBatcher` is what lets 32 clients asking for one line each cost about one render of
32 lines: :meth:`WindowBatcher.submit` queues an item and awaits its answer; one worker takes
what has queued, waits up to ``wait_s`` for more (at most ``max_size``), drops the items whose
callers have gone (a client that disconnected: nobody waits for that work) and runs the batch
function on the rest in a thread, one batch at a time. While a batch runs, the next one fills.
Sizes of the batches run and the items dropped are counted for ``/metrics``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["WindowBatcher"]


class WindowBatcher:
    """Calls ``run(items) -> answers`` (same order, same length) on windows of queued items."""

    def __init__(
        self,
        run: Callable[[Sequence[Any]], Sequence[Any]],
        *,
        max_size: int,
        wait_s: float,
        on_drop: Callable[[int], None] | None = None,
    ) -> None:
        self._run = run
        self._on_drop = on_drop  # told how many items were dropped, when they are
        self.max_size = max_size
        self.wait_s = wait_s
        self._queue: asyncio.Queue[tuple[Any, asyncio.Future[Any]]] | None = None
        self._worker: asyncio.Task[None] | None = None
        self.batches: list[int] = []  # the size of every batch run, in order (recent ones)
        self.dropped = 0  # items whose callers had gone before their batch ran
        self.waiting = 0

    async def submit(self, item: Any) -> Any:
        if self._queue is None:
            self._queue = asyncio.Queue()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._work())
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting += 1
        await self._queue.put((item, future))
        try:
            return await future
        finally:
            self.waiting -= 1

    async def _work(self) -> None:
        assert self._queue is not None
        while True:
            window = [await self._queue.get()]
            deadline = asyncio.get_running_loop().time() + self.wait_s
            while len(window) < self.max_size:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0 and self._queue.empty():
                    break
                try:
                    window.append(await asyncio.wait_for(self._queue.get(), max(left, 0.001)))
                except TimeoutError:
                    break
            live = [(item, future) for item, future in window if not future.done()]
            if len(window) > len(live):
                self.dropped += len(window) - len(live)
                if self._on_drop is not None:
                    self._on_drop(len(window) - len(live))
            if not live:
                continue
            self.batches = [*self.batches[-999:], len(live)]
            try:
                answers = await asyncio.to_thread(self._run, [item for item, _ in live])
            except Exception as error:  # every caller of the batch gets the error, none hangs
                for _, future in live:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), answer in zip(live, answers, strict=True):
                if not future.done():
                    future.set_result(answer)
