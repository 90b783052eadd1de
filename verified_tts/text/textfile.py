"""Reading a user's text file (a book, a subtitle file) with one-line errors for every mistake.

A missing path, a directory, an unreadable, empty, UTF-16, binary or non-UTF-8 file each raise a
:class:`~verified_tts.errors.UserError` that says what is wrong with which file and how to fix
it. A UTF-8 byte-order mark is accepted (and, where the caller allows it, one legacy encoding such
as Windows-1252, with a warning). Callers say what kind of file they expected, and may say
where an undecodable byte sits in their own terms (a subtitle cue rather than a byte offset).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from verified_tts.errors import UserError

__all__ = ["read_text_file"]

_NAMES = {"cp1252": "Windows-1252"}


def read_text_file(
    path: Path,
    *,
    kind: str,
    expected: str,
    empty_hint: str,
    locate: Callable[[bytes, int], str] | None = None,
    legacy_encoding: str | None = None,
    on_legacy: Callable[[str], None] | None = None,
) -> str:
    """The text of ``path``.

    ``kind`` names the file in messages ("book"), ``expected`` says what it should be
    ("a UTF-8 Markdown file"), ``empty_hint`` what an empty one needs, and ``locate(data,
    offset)`` optionally describes where an undecodable byte is.
    """
    if not path.exists():
        raise UserError(f"{kind} not found: {path} does not exist; check the path and spelling")
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a {kind}; give {expected} inside it")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}; check its permissions") from None
    if not data.strip():
        raise UserError(f"{path} is empty; {empty_hint}")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise UserError(f"{path} is UTF-16 text; re-save it as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise UserError(
            f"{path} is a binary file, not a {kind} (NUL byte at offset {nul}); give {expected}"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        where = locate(data, error.start) if locate else f"{path}"
        offset = "" if locate else f" at offset {error.start}"
        if legacy_encoding is not None:
            try:
                text = data.decode(legacy_encoding)
            except UnicodeDecodeError:
                pass
            else:
                if on_legacy is not None:
                    shown = data[error.start : error.start + 1].decode(legacy_encoding)
                    named = _NAMES.get(legacy_encoding, legacy_encoding)
                    on_legacy(
                        f"{where} is not UTF-8 (byte 0x{data[error.start]:02x}{offset}): the "
                        f"file is read as {named} ('{shown}'); re-save it as UTF-8 if that is wrong"
                    )
                return text
        raise UserError(
            f"{where} is not UTF-8 text (byte 0x{data[error.start]:02x}{offset}); "
            "re-save the file as UTF-8"
        ) from None
