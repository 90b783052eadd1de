"""User-facing errors: one class whose message is the single line the CLI prints.

Anything a user can cause (a bad path, an unreadable file, a model that is not there, a missing
optional extra) is raised as :class:`UserError` with a message that says what is wrong, where, and
how to fix it. The CLI prints that line and exits non-zero; everything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

__all__ = ["MissingExtra", "UserError"]


class UserError(Exception):
    """A problem with the user's input or set-up, explained in one line."""

    exit_code = 2


class MissingExtra(UserError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, feature: str, extra: str, module: str, hint: str = "") -> None:
        message = (
            f"{feature} needs the '{module}' package, which is not installed: "
            f"run `pip install 'verified-tts[{extra}]'`"
        )
        if hint:
            message += f" ({hint})"
        super().__init__(message)
        self.extra = extra
