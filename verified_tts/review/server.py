"""``verified-tts review OUT``: lock the folder, open the review, serve it until Ctrl-C.

:func:`serve` takes the output folder's lock first (waiting, with a line saying so, while a render
or another review holds it), opens the session and queues again any request a killed review left
unanswered, then binds the address (port 0: any free port) before it says it, so the printed
address answers at once. It returns when the server stops; work still queued is recorded in the
log and runs again on the next open.
"""

from __future__ import annotations

import errno
import socket
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from verified_tts.errors import UserError
from verified_tts.output.lock import output_lock
from verified_tts.output.manifest import output_folders
from verified_tts.review.decisions import REVIEW_DIR
from verified_tts.storage.atomic import remove_interrupted_writes

__all__ = ["ReviewOptions", "serve"]


@dataclass(frozen=True)
class ReviewOptions:
    """How ``verified-tts review`` serves: where, whether to open a browser, who decides."""

    host: str = "127.0.0.1"
    port: int = 0
    open_browser: bool = True
    reviewer: str | None = None
    wait: bool = True  # wait for a render on the folder to finish (else refuse)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        if isinstance(error, socket.gaierror) or error.errno == errno.EADDRNOTAVAIL:
            raise UserError(
                f"cannot listen on {host} ({error.strerror}): --host must be an address of this "
                "machine, such as 127.0.0.1"
            ) from None
        raise UserError(
            f"cannot listen on {host}:{port} ({error.strerror}): choose another --port, or "
            "--port 0 for any free one"
        ) from None
    sock.listen(128)
    return sock


def serve(
    out_dir: str | Path,
    options: ReviewOptions = ReviewOptions(),
    *,
    say: Callable[[str], None] = print,
) -> None:
    """Serve the review of ``out_dir`` until interrupted (see the module docstring)."""
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        raise UserError(
            "`verified-tts review` needs Starlette and uvicorn: pip install 'verified-tts[review]'"
        ) from None

    from verified_tts.review.actions import Reviewer
    from verified_tts.review.app import create_app, new_token
    from verified_tts.review.session import ReviewSession

    out = Path(out_dir)
    if not (out / "manifest.json").is_file():
        raise UserError(
            f"{out} has no manifest.json: give the --out folder of a finished render or dub"
        )
    waiting = lambda who: say(f"waiting for {who} to finish with {out} (Ctrl-C to stop) ...")  # noqa: E731
    with output_lock(out, "review", wait=options.wait, on_wait=waiting):
        # the lock is ours: a temporary file here is a killed writer's, never to be read
        remove_interrupted_writes([*output_folders(out), out / REVIEW_DIR], older_than=time.time())
        indexing = lambda: say(f"indexing {out / 'manifest.json'} for the review (once) ...")  # noqa: E731
        reviewer = Reviewer(ReviewSession(out, on_index=indexing), by=options.reviewer)
        resumed = reviewer.resume()
        sock = _bind(options.host, options.port)
        port = sock.getsockname()[1]
        token = new_token()
        app = create_app(reviewer, token, cookie=f"vtts_review_{port}")
        shown = f"[{options.host}]" if ":" in options.host else options.host
        url = f"http://{shown}:{port}/?token={token}"
        progress = reviewer.session.review.progress()
        say(f"reviewing {out}: {progress['lines']} lines, {progress['flagged_left']} flagged "
            f"left, {progress['reviewed']} reviewed" + (f"; resuming {resumed} requests"
                                                        if resumed else ""))  # fmt: skip
        say(f"open {url}")
        say("press Ctrl-C to stop (every decision is already saved)")
        if options.open_browser:
            webbrowser.open(url)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False,
                                ws="none")  # the page uses no websockets: none to import
        try:
            uvicorn.Server(config).run(sockets=[sock])
        finally:
            busy = reviewer.worker.busy()
            reviewer.close()
            sock.close()
            if busy:
                say("stopped with work in progress: it is recorded and resumes next time")
