"""``verified-tts review``: a producer hears the worst first, swaps takes, fixes lines, delivers.

:mod:`~verified_tts.review.decisions` is the durable log of every decision,
:mod:`~verified_tts.review.state` folds it over the manifest (the render hook in
:mod:`~verified_tts.review.hook` uses the same fold), :mod:`~verified_tts.review.order` ranks lines
worst first, :mod:`~verified_tts.review.actions` records and runs what the producer does,
:mod:`~verified_tts.review.deliver` rebuilds only the chapters that changed, and
:mod:`~verified_tts.review.app` / :mod:`~verified_tts.review.server` serve the page on
127.0.0.1. Nothing here imports the web framework until a review is served.
"""

from __future__ import annotations

__all__ = ["ReviewOptions", "serve"]


def __getattr__(name: str):  # the server (and Starlette) load only when asked for
    if name in __all__:
        from verified_tts.review import server

        return getattr(server, name)
    raise AttributeError(name)
