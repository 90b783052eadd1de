"""The Ray Serve application: an ``Api`` front door (FastAPI) and a ``Speaker`` deployment.

``Api`` checks every request's bearer token and size first (401, 413), reads speech requests
(:mod:`~verified_tts.service.request`), bounds how many are in flight (429 with ``Retry-After``
past ``max_queue``) and sends each to ``Speaker`` through a deployment handle, once more if the
replica died under it. ``Speaker`` loads the models once per replica and answers through a
batching window (:mod:`~verified_tts.service.batcher`) over the
:class:`~verified_tts.service.engine.SpeechEngine`, so concurrent requests share the generator's
and the verifiers' batches. Jobs go to the existing queue
(:mod:`~verified_tts.service.jobs_routes`).
Every error is JSON naming the field; structured log lines (JSON, :mod:`~verified_tts.service.logs`)
record each request, retry and batch in ``DIR/service/log.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from ray import serve
from starlette.exceptions import HTTPException as StarletteHTTPException

from verified_tts.service.auth import authorized
from verified_tts.service.errors import ApiError, error_body
from verified_tts.service.formats import MEDIA_TYPES, encode
from verified_tts.service.logs import attach, event
from verified_tts.service.metrics import ApiMetrics, SpeakerMetrics, render
from verified_tts.service.request import MODEL_ALIASES, MODEL_ID, SpeechRequest, parse_speech

__all__ = ["Api", "Speaker", "build_app"]

api = FastAPI(title="verified-tts", docs_url=None, redoc_url=None, openapi_url=None)


def _state() -> dict[str, Any]:
    """The front door's settings in this replica process. Serve pickles the FastAPI app into the
    replica, so they live in a module looked up at call time, not in a global of this one."""
    from verified_tts.service import settings

    return settings.STATE


def _json_error(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


@api.exception_handler(ApiError)
async def _api_error(_: Request, error: ApiError) -> JSONResponse:
    return _json_error(error)


@api.exception_handler(StarletteHTTPException)
async def _http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
    return JSONResponse(
        error_body(error.status_code, f"{request.url.path}: {error.detail}"),
        status_code=error.status_code,
    )


@api.exception_handler(Exception)
async def _unexpected(request: Request, error: Exception) -> JSONResponse:
    event("error", logging.ERROR, exc_info=True, path=request.url.path,
          error=type(error).__name__)  # fmt: skip
    return JSONResponse(
        error_body(500, f"internal error ({type(error).__name__}); see the log"), status_code=500
    )


@api.middleware("http")
async def _guard(request: Request, call_next: Any) -> Response:
    """Token and size first, for every path; then count and time the request."""
    started = time.perf_counter()
    route = (
        request.url.path
        if request.url.path.count("/") <= 3
        else "/".join(request.url.path.split("/")[:4])
    )
    if not authorized(request.headers.get("authorization"), _state()["token_digest"]):
        which = "no bearer token" if "authorization" not in request.headers else "wrong token"
        response: Response = _json_error(
            ApiError(
                401, f"{which}: send Authorization: Bearer TOKEN (printed by `verified-tts serve`)"
            )
        )
        response.headers["WWW-Authenticate"] = "Bearer"
    else:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > _state()["max_body"]:
            response = _json_error(
                ApiError(
                    413,
                    f"the body is {length} bytes, over this server's {_state()['max_body']}",
                    "body",
                )
            )
        else:
            response = await call_next(request)
    metrics: ApiMetrics = _state()["metrics"]
    seconds = time.perf_counter() - started
    metrics.requests.labels(route, str(response.status_code)).inc()
    metrics.latency.labels(route).observe(seconds)
    event("request", method=request.method, path=route, status=response.status_code,
          seconds=round(seconds, 4))  # fmt: skip
    return response


async def _body(request: Request) -> bytes:
    """The body, refused with 413 past the limit even without a Content-Length."""
    parts, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > _state()["max_body"]:
            raise ApiError(
                413, f"the body is over this server's {_state()['max_body']} bytes", "body"
            )
        parts.append(chunk)
    return b"".join(parts)


def _died(error: BaseException) -> bool:
    from ray import exceptions

    return isinstance(error, exceptions.RayActorError | exceptions.ActorUnavailableError)


@serve.deployment(max_ongoing_requests=512, health_check_period_s=2, health_check_timeout_s=30)
class Speaker:
    """One replica's loaded models, answering through a batching window."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from verified_tts.config import build_config
        from verified_tts.service.batcher import WindowBatcher
        from verified_tts.service.engine import SpeechEngine

        attach(Path(settings["home"]))
        config = build_config(settings["table"], **settings["overrides"])
        self.engine = SpeechEngine(config, Path(settings["home"]))
        self.metrics = SpeakerMetrics()
        # a request is dropped when its window is taken, after its caller has gone: the count
        # must come from the batcher then, not from the cancelled call
        self.batcher = WindowBatcher(
            self._speak,
            max_size=settings["max_batch"],
            wait_s=settings["batch_wait_s"],
            on_drop=self.metrics.dropped.inc,
        )

    def _speak(self, requests: list[SpeechRequest]) -> list[Any]:
        self.metrics.batch.observe(len(requests))
        started = time.perf_counter()
        answers = self.engine.speak(requests)
        made = [a for a in answers if not isinstance(a, ApiError)]
        event("batch", requests=len(requests), answered=len(made),
              candidates=sum(a.candidates for a in made),
              seconds=round(time.perf_counter() - started, 3))  # fmt: skip
        return answers

    async def speak(self, request: SpeechRequest) -> dict[str, Any]:
        answer = await self.batcher.submit(request)
        if isinstance(answer, ApiError):
            return {"error": answer.body(), "status": answer.status}
        audio = await asyncio.to_thread(
            encode, answer.audio, answer.sample_rate, request.response_format
        )
        self.metrics.answers.inc()
        self.metrics.flagged.inc(int(answer.flagged))
        self.metrics.candidates.labels("generated" if answer.synthesized else "store").inc(
            answer.candidates
        )
        return {
            "audio": audio,
            "headers": {
                "X-Verified-Id": answer.id,
                "X-Verified-Flagged": "true" if answer.flagged else "false",
                "X-Verified-Reason": "; ".join(answer.reasons)[:500] or "passed every gate",
                "X-Verified-Scores": json.dumps(dict(answer.scores), separators=(",", ":")),
                "X-Verified-Seed": str(answer.seed),
                "X-Verified-Store-Key": answer.id,
                "X-Verified-Candidates": str(answer.candidates),
                "X-Verified-Synthesized": "true" if answer.synthesized else "false",
                "X-Verified-Batch": str(answer.batch),
            },
        }

    def voices(self) -> list[dict[str, Any]]:
        return self.engine.voices()

    def record(self, answer_id: str) -> dict[str, Any]:
        try:
            return {"record": self.engine.record(answer_id)}
        except ApiError as error:
            return {"error": error.body(), "status": error.status}

    def metrics_text(self) -> str:
        from prometheus_client import Gauge

        gauge = getattr(self, "_waiting", None)
        if gauge is None:
            gauge = self._waiting = Gauge(
                "verified_tts_batch_waiting",
                "Requests in the speaker's window or batch",
                registry=self.metrics.registry,
            )
        gauge.set(self.batcher.waiting)
        return render(self.metrics.registry)

    def batches(self) -> list[int]:
        return list(self.batcher.batches)


# The front door only awaits handles and the queue: it reserves no CPU (like Serve's own proxy),
# so a job's generator and verifier actors fit beside the Speaker on a small machine.
@serve.deployment(max_ongoing_requests=2048, ray_actor_options={"num_cpus": 0})
@serve.ingress(api)
class Api:
    """The front door: auth, limits, the OpenAI-shaped routes, jobs, metrics."""

    def __init__(self, speaker: Any, settings: dict[str, Any]) -> None:
        _state().update(
            token_digest=settings["token_digest"],
            max_body=settings["max_body"],
            metrics=ApiMetrics(),
        )
        attach(Path(settings["home"]))
        self.speaker = speaker
        self.settings = settings
        self.home = Path(settings["home"])
        self.inflight = 0
        self._queue: Any = None

    # -- speech -----------------------------------------------------------------------------------
    @api.post("/v1/audio/speech")
    async def speech(self, request: Request) -> Response:
        metrics: ApiMetrics = _state()["metrics"]
        if self.inflight >= self.settings["max_queue"]:
            wait = max(1, round(self.inflight / max(1, self.settings["max_batch"])))
            raise ApiError(
                429,
                f"{self.inflight} requests are in flight, this server's limit: retry in {wait} s",
                headers={"Retry-After": str(wait)},
            )
        self.inflight += 1
        metrics.queue_depth.set(self.inflight)
        try:
            parsed = parse_speech(
                await _body(request), max_input_chars=self.settings["max_input_chars"]
            )
            answer = await self._speak(parsed, metrics)
        finally:
            self.inflight -= 1
            metrics.queue_depth.set(self.inflight)
        if "error" in answer:
            return JSONResponse(answer["error"], status_code=answer["status"])
        return Response(
            answer["audio"],
            media_type=MEDIA_TYPES[parsed.response_format],
            headers=answer["headers"],
        )

    async def _speak(self, parsed: SpeechRequest, metrics: ApiMetrics) -> dict[str, Any]:
        for attempt in (1, 2):
            try:
                return await self.speaker.speak.remote(parsed)
            except Exception as error:
                if not _died(error):
                    raise
                if attempt == 2:
                    raise ApiError(
                        503,
                        "the synthesis replica died twice under this request: retry it",
                        headers={"Retry-After": "5"},
                    ) from None
                metrics.retries.inc()
                event("replica_died", logging.WARNING, retrying=True, error=type(error).__name__)
                await asyncio.sleep(0.5)
        raise AssertionError("unreachable")

    @api.get("/v1/audio/speech/{answer_id}")
    async def speech_record(self, answer_id: str) -> JSONResponse:
        found = await self.speaker.record.remote(answer_id)
        if "error" in found:
            return JSONResponse(found["error"], status_code=found["status"])
        return JSONResponse(found["record"])

    @api.get("/v1/models")
    async def models(self) -> JSONResponse:
        made = int(self.settings["started_at"])
        data = [{"id": MODEL_ID, "object": "model", "created": made, "owned_by": "verified-tts"}]
        data += [
            {
                "id": alias,
                "object": "model",
                "created": made,
                "owned_by": "verified-tts",
                "alias_of": MODEL_ID,
            }
            for alias in MODEL_ALIASES
        ]
        return JSONResponse({"object": "list", "data": data})

    @api.get("/v1/voices")
    async def voices(self) -> JSONResponse:
        return JSONResponse({"object": "list", "data": await self.speaker.voices.remote()})

    @api.get("/metrics")
    async def metrics(self) -> Response:
        text = render(_state()["metrics"].registry) + await self.speaker.metrics_text.remote()
        return Response(text, media_type="text/plain; version=0.0.4")

    @api.get("/v1/batches")
    async def batches(self) -> JSONResponse:
        return JSONResponse({"sizes": await self.speaker.batches.remote()})

    # -- jobs -------------------------------------------------------------------------------------
    def queue(self) -> Any:
        if self._queue is None:
            from jobs.queue import JobQueue

            self._queue = JobQueue(self.settings["state_dir"], self.settings["jobs_address"])
        return self._queue

    async def _record(self, job_id: str) -> Any:
        from verified_tts.errors import UserError

        try:
            return await asyncio.to_thread(self.queue().status, job_id)
        except UserError as error:
            raise ApiError(404, str(error), "id") from None

    @api.post("/v1/jobs")
    async def submit(self, request: Request) -> JSONResponse:
        from verified_tts.service.jobs_routes import submit_job

        try:
            body = json.loads(await _body(request) or b"")
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ApiError(400, f"the body is not valid JSON ({error})") from None
        if not isinstance(body, dict):
            raise ApiError(400, "the body must be a JSON object with command and input or path")
        view = await asyncio.to_thread(submit_job, self.queue(), body, self.home)
        return JSONResponse(view, status_code=201)

    @api.get("/v1/jobs")
    async def jobs(self) -> JSONResponse:
        from verified_tts.service.jobs_routes import job_view

        records = await asyncio.to_thread(self.queue().list)
        return JSONResponse({"object": "list", "data": [job_view(r) for r in records]})

    @api.get("/v1/jobs/{job_id}")
    async def job(self, job_id: str) -> JSONResponse:
        from verified_tts.service.jobs_routes import job_view, list_files

        record = await self._record(job_id)
        return JSONResponse({**job_view(record), "files": list_files(record)})

    @api.get("/v1/jobs/{job_id}/events")
    async def job_events(self, job_id: str) -> StreamingResponse:
        from verified_tts.service.jobs_routes import events

        record = await self._record(job_id)
        stream = events(self.queue(), record.id, self.settings["event_poll_s"])

        async def produce() -> Any:
            while True:
                item = await asyncio.to_thread(next, stream, None)
                if item is None:
                    return
                yield item

        return StreamingResponse(produce(), media_type="text/event-stream")

    @api.get("/v1/jobs/{job_id}/files/{relative:path}")
    async def job_file(self, job_id: str, relative: str) -> FileResponse:
        from verified_tts.service.jobs_routes import output_file

        record = await self._record(job_id)
        return FileResponse(output_file(record, relative))

    @api.delete("/v1/jobs/{job_id}")
    async def cancel(self, job_id: str) -> JSONResponse:
        from verified_tts.errors import UserError
        from verified_tts.service.jobs_routes import job_view

        record = await self._record(job_id)
        try:
            done = await asyncio.to_thread(self.queue().cancel, record.id)
        except UserError as error:
            raise ApiError(409, str(error), "id") from None
        return JSONResponse(job_view(done))


def build_app(settings: dict[str, Any]) -> Any:
    """The bound application: ``Api`` over ``Speaker`` (``settings['replicas']`` of it)."""
    speaker = Speaker.options(num_replicas=settings["replicas"]).bind(settings)
    return Api.bind(speaker, settings)
