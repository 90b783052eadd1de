"""The service's bearer token: made at start (or read from ``--token-file``), checked per request.

:func:`load_token` returns the token to print (a fresh ``secrets.token_urlsafe`` or the file's
first line); the deployments get only its SHA-256 digest (:func:`digest`), and
:func:`authorized` compares a request's ``Authorization: Bearer ...`` header with it in constant
time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

from verified_tts.errors import UserError

__all__ = ["authorized", "digest", "load_token"]


def load_token(token_file: Path | None) -> str:
    if token_file is None:
        return secrets.token_urlsafe(24)
    try:
        token = token_file.read_text(encoding="utf-8").strip().splitlines()
    except OSError as error:
        raise UserError(
            f"--token-file {token_file}: {error.strerror}: give a readable file"
        ) from None
    if not token or len(token[0].strip()) < 16:
        raise UserError(
            f"--token-file {token_file}: the first line must be a token of 16+ characters"
        )
    return token[0].strip()


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def authorized(header: str | None, token_digest: str) -> bool:
    if not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(digest(header[len("Bearer ") :].strip()), token_digest)
