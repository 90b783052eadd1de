"""Errors of the HTTP service: one JSON object per refusal, naming the field, never a traceback.

:class:`ApiError` carries the HTTP status, the request field it is about (``param``, as OpenAI's
errors name it) and one line saying what is wrong and how to fix it; :func:`error_body` is the
JSON every route returns for it (``{"error": {"message", "type", "param", "code"}}``, the shape
the ``openai`` client reads).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "error_body"]

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "service_unavailable",
}


class ApiError(Exception):
    """A request the service refuses: ``status``, the ``param`` at fault and a one-line message."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, self.param)


def error_body(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    """The JSON of an error response."""
    return {
        "error": {
            "message": message,
            "type": _TYPES.get(
                status, "server_error" if status >= 500 else "invalid_request_error"
            ),
            "param": param,
            "code": status,
        }
    }
