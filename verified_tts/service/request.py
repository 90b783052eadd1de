"""One speech request as the service reads it: OpenAI's fields plus ours, checked field by field.

:func:`parse_speech` turns the JSON body of ``POST /v1/audio/speech`` into a frozen
:class:`SpeechRequest`: ``model``, ``input``, ``voice``, ``response_format`` (wav, flac, mp3, opus,
aac, pcm) and ``speed`` as OpenAI's API has them, and our own ``n``, ``adaptive``, ``seed``,
``lexicon`` (``{"words": {...}, "patterns": {...}}``, as a lexicon file's tables) and ``gates``
(``{METRIC: {min, max, margin}}``, as ``[selection.gates]``). Every mistake is an
:class:`~verified_tts.service.errors.ApiError` naming the field; an unknown field is one too, so a
typo never falls back to a default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from verified_tts.service.errors import ApiError

__all__ = ["FORMATS", "MODEL_ALIASES", "MODEL_ID", "SpeechRequest", "parse_speech"]

MODEL_ID = "verified-tts"
# what OpenAI's clients send by default: spoken by this server's own voice and verifiers
MODEL_ALIASES = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
_IGNORED = ("instructions",)  # OpenAI's style prompt: our voices take none
_FIELDS = {
    "model",
    "input",
    "voice",
    "response_format",
    "speed",
    "n",
    "adaptive",
    "seed",
    "lexicon",
    "gates",
    "stream_format",
    *_IGNORED,
}


@dataclass(frozen=True)
class SpeechRequest:
    """What to say and how; ``lexicon`` and ``gates`` are canonical JSON (hashable, stable)."""

    input: str
    voice: str
    response_format: str = "mp3"
    speed: float = 1.0
    n: int | None = None
    adaptive: bool | None = None
    seed: int | None = None
    lexicon: str | None = None
    gates: str | None = None
    model: str = MODEL_ID

    def options(self) -> tuple[Any, ...]:
        """What must be equal for two requests to share one synthesis batch."""
        return (self.n, self.adaptive, self.gates, self.speed)

    def lexicon_table(self) -> dict[str, Any] | None:
        return json.loads(self.lexicon) if self.lexicon else None

    def gates_table(self) -> dict[str, Any] | None:
        return json.loads(self.gates) if self.gates else None


def _bad(field: str, message: str) -> ApiError:
    return ApiError(400, f"{field}: {message}", field)


def _string(body: Mapping[str, Any], field: str, default: str | None = None) -> str:
    value = body.get(field, default)
    if value is None:
        raise _bad(field, "is required")
    if not isinstance(value, str):
        raise _bad(field, f"must be a string, not {type(value).__name__}")
    return value


def _number(body: Mapping[str, Any], field: str, low: float, high: float) -> float | None:
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(field, f"must be a number from {low:g} to {high:g}")
    if not low <= value <= high:
        raise _bad(field, f"{value} is out of range: use {low:g} to {high:g}")
    return float(value)


def _integer(body: Mapping[str, Any], field: str, low: int, high: int) -> int | None:
    value = body.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(field, f"must be a whole number from {low} to {high}")
    if not low <= value <= high:
        raise _bad(field, f"{value} is out of range: use {low} to {high}")
    return value


def _table(body: Mapping[str, Any], field: str, keys: tuple[str, ...] | None) -> str | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _bad(field, "must be a JSON object")
    if keys is not None:
        unknown = sorted(set(value) - set(keys))
        if unknown:
            raise _bad(field, f"unknown table(s) {', '.join(unknown)}; use {', '.join(keys)}")
        for key in value:
            if not isinstance(value[key], Mapping):
                raise _bad(f"{field}.{key}", "must be a JSON object")
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def parse_speech(raw: bytes, *, max_input_chars: int) -> SpeechRequest:
    """The request in ``raw`` (the body's bytes), or the :class:`ApiError` that refuses it."""
    try:
        body = json.loads(raw or b"")
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ApiError(400, f"the body is not valid JSON ({error}): send a JSON object") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object with model, input and voice")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise _bad(unknown[0], f"unknown field; the fields are {', '.join(sorted(_FIELDS))}")
    model = _string(body, "model", MODEL_ID)
    if model not in (MODEL_ID, *MODEL_ALIASES):
        raise _bad("model", f"'{model}' is not served here; GET /v1/models lists {MODEL_ID}")
    text = _string(body, "input")
    if not text.strip():
        raise _bad("input", "is empty: give the words to say")
    if len(text) > max_input_chars:
        raise _bad(
            "input",
            f"{len(text)} characters is over this server's {max_input_chars}: "
            "split it, or submit it as a job (POST /v1/jobs)",
        )
    voice = _string(body, "voice", "default")
    response_format = _string(body, "response_format", "mp3").lower()
    if response_format not in FORMATS:
        raise _bad("response_format", f"'{response_format}' is not one of {', '.join(FORMATS)}")
    stream_format = body.get("stream_format")
    if stream_format not in (None, "audio"):
        raise _bad("stream_format", "only 'audio' (the whole file in one response) is served")
    speed = _number(body, "speed", 0.25, 4.0)
    adaptive = body.get("adaptive")
    if adaptive is not None and not isinstance(adaptive, bool):
        raise _bad("adaptive", "must be true or false")
    return SpeechRequest(
        input=text,
        voice=voice,
        response_format=response_format,
        speed=1.0 if speed is None else speed,
        n=_integer(body, "n", 1, 64),
        adaptive=adaptive,
        seed=_integer(body, "seed", 0, 2**31 - 1),
        lexicon=_table(body, "lexicon", ("words", "patterns")),
        gates=_table(body, "gates", None),
        model=model,
    )
