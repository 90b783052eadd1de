"""The review's web app (Starlette): one page, a small JSON API, and the takes' audio.

Every request must carry the review's token: the address ``verified-tts review`` prints has it
as ``?token=``, the first visit turns it into a cookie (HttpOnly, SameSite=Strict, named for the
port) and drops it from the address, and every request after that shows the cookie. A change is a
POST that must also carry the token in an ``X-Review-Token`` header, which a page from another
site cannot set without a CORS grant this app never gives, so no other site can make a change
for the producer. Audio is looked up by line and take number from the manifest (a decided word's
readings by word and reading number) and served only from inside the output folder; nothing in a
request names a path. The page, its script and its
styles are files of this package, sent with a Content-Security-Policy that allows nothing from
anywhere else.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from verified_tts.errors import UserError
from verified_tts.output.html import escape
from verified_tts.review.actions import Reviewer

__all__ = ["TOKEN_HEADER", "create_app", "new_token"]

TOKEN_HEADER = "x-review-token"
_STATIC = {"review.js": "text/javascript", "review.css": "text/css"}
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; media-src 'self'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'")  # fmt: skip
_REFUSED = (
    "this review needs its token: open the address that `verified-tts review` printed "
    "(it ends in ?token=...)"
)


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _static(name: str) -> str:
    return resources.files("verified_tts.review").joinpath("static", name).read_text("utf-8")


class _TokenGate:
    """ASGI middleware: no token, no answer (see the module docstring)."""

    def __init__(self, app: Any, token: str, cookie: str) -> None:
        self.app, self.token, self.cookie = app, token, cookie

    def _ok(self, value: str | None) -> bool:
        return bool(value) and secrets.compare_digest(str(value), self.token)

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        header = request.headers.get(TOKEN_HEADER)
        cookie = request.cookies.get(self.cookie)
        if request.method in ("GET", "HEAD"):
            if self._ok(request.query_params.get("token")):
                response: Response = RedirectResponse(request.url.path, status_code=303)
                response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict",
                                    path="/")  # fmt: skip
                await response(scope, receive, send)
                return
            allowed = self._ok(cookie) or self._ok(header)
        elif request.method == "POST":
            allowed = self._ok(header)
        else:
            allowed = False
        if not allowed:
            await PlainTextResponse(_REFUSED, status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = _CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    return response


def _int(value: Any, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} must be a whole number, not {value!r}") from None


def create_app(reviewer: Reviewer, token: str, *, cookie: str = "vtts_review") -> Any:
    """The app serving ``reviewer``'s session to whoever holds ``token``."""
    session = reviewer.session

    def api(work: Callable[..., Any]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                body = await request.json() if request.method == "POST" else {}
                if not isinstance(body, dict):
                    raise UserError("send a JSON object")
                result = await run_in_threadpool(work, request, body)
            except UserError as error:
                return _headers(JSONResponse({"error": str(error)}, status_code=400))
            except ValueError:
                return _headers(JSONResponse({"error": "the request is not JSON"}, 400))
            if isinstance(result, Response):
                return _headers(result)
            return _headers(JSONResponse(result))

        return endpoint

    def entry(e: Any) -> dict[str, Any]:
        return {"seq": e.seq, "summary": session.summary()}

    def lines(request: Request, _: dict) -> Any:
        query = request.query_params
        chapter = query.get("chapter")
        return session.rows(
            show=query.get("show", "all"),
            chapter=_int(chapter, "chapter") if chapter not in (None, "") else None,
            query=query.get("q", ""),
            offset=_int(query.get("offset", 0), "offset"),
            limit=min(500, _int(query.get("limit", 100), "limit")),
        )

    def audio(request: Request, _: dict) -> Response:
        params = request.path_params
        if "chapter" in params:
            path = session.chapter_audio(params["chapter"])
        elif "job" in params:
            path = session.inside(reviewer.tried_audio(params["job"], params["index"]))
        elif "word" in params:
            path = session.word_audio(params["word"], params["reading"])
        else:
            path = session.take_audio(params["pos"], params["index"])
        if path is None:
            return PlainTextResponse("no such audio", status_code=404)
        return FileResponse(path, media_type="audio/flac")

    def context(request: Request, _: dict) -> Any:
        from verified_tts.review.context import line_in_context

        heard = line_in_context(session, request.path_params["pos"])
        if request.url.path.startswith("/api/"):
            return heard.figures()
        return Response(heard.wav(), media_type="audio/wav")

    async def page(request: Request) -> Response:
        html = (
            _static("index.html")
            .replace("{{TOKEN}}", escape(token))
            .replace("{{TITLE}}", escape(session.summary()["title"]))
        )
        return _headers(Response(html, media_type="text/html; charset=utf-8"))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return PlainTextResponse("not found", status_code=404)
        return _headers(Response(_static(name), media_type=_STATIC[name]))

    def body_int(body: dict, name: str, default: Any = None) -> int:
        return _int(body.get(name, default), name)

    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/api/summary", api(lambda r, b: session.summary())),
        Route("/api/lines", api(lines)),
        Route("/api/line/{pos:int}", api(lambda r, b: session.detail(r.path_params["pos"]))),
        Route("/api/jobs", api(lambda r, b: {"jobs": reviewer.worker.jobs()})),
        Route("/audio/chapter/{chapter:int}", api(audio)),
        Route("/audio/context/{pos:int}", api(context)),
        Route("/audio/tried/{job:int}/{index:int}", api(audio)),
        Route("/audio/word/{word:int}/{reading:int}", api(audio)),
        Route("/api/words", api(lambda r, b: session.words())),
        Route("/api/speakers", api(lambda r, b: reviewer.speakers(
            _int(r.query_params.get("offset", 0), "offset"),
            min(500, _int(r.query_params.get("limit", 100), "limit"))))),
        Route("/api/speaker", api(lambda r, b: entry(reviewer.speaker(
            body_int(b, "pos"), str(b.get("speaker", ""))))), methods=["POST"]),
        Route("/api/context/{pos:int}", api(context)),
        Route("/audio/{pos:int}/{index:int}", api(audio)),
        Route("/api/choose", api(lambda r, b: entry(reviewer.choose(
            body_int(b, "pos"), body_int(b, "candidate")))), methods=["POST"]),
        Route("/api/approve", api(lambda r, b: entry(reviewer.approve(body_int(b, "pos")))),
              methods=["POST"]),
        Route("/api/more", api(lambda r, b: entry(reviewer.more(
            body_int(b, "pos"), body_int(b, "k", 4)))), methods=["POST"]),
        Route("/api/edit", api(lambda r, b: entry(reviewer.edit(
            body_int(b, "pos"), str(b.get("spoken", ""))))), methods=["POST"]),
        Route("/api/lexicon/preview", api(lambda r, b: reviewer.lexicon_lines(
            str(b.get("word", "")), b.get("say"), b.get("phonemes"))), methods=["POST"]),
        Route("/api/lexicon/try", api(lambda r, b: reviewer.try_lexicon(
            body_int(b, "pos"), str(b.get("word", "")), b.get("say"), b.get("phonemes"))),
            methods=["POST"]),
        Route("/api/lexicon", api(lambda r, b: entry(reviewer.lexicon(
            str(b.get("word", "")), b.get("say"), b.get("phonemes")))), methods=["POST"]),
        Route("/api/undo", api(lambda r, b: entry(reviewer.undo(
            body_int(b, "seq") if b.get("seq") is not None else None))), methods=["POST"]),
        Route("/api/deliver", api(lambda r, b: {"job": reviewer.deliver().id}),
              methods=["POST"]),
    ]  # fmt: skip
    app = Starlette(routes=routes)
    return _TokenGate(app, token, cookie)
