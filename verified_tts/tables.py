"""Config tables to options: unknown keys are one-line errors, never silently ignored.

Every ``[section]`` of the TOML config ends up in a frozen options dataclass. These helpers do the
checking once for all of them, so a typo anywhere gets the same message: which table, which keys
are unknown, and which are known.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from verified_tts.errors import UserError

__all__ = ["check_keys", "options_from_table"]

T = TypeVar("T")


def check_keys(table: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    """Raise a UserError naming ``where`` when ``table`` has keys outside ``allowed``."""
    allowed = set(allowed)
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise UserError(
            f"unknown key(s) in {where}: {', '.join(unknown)}; known: {', '.join(sorted(allowed))}"
        )


def options_from_table(cls: type[T], table: Mapping[str, Any], where: str) -> T:
    """Build the options dataclass ``cls`` from a TOML table (TOML arrays become tuples)."""
    check_keys(table, (f.name for f in fields(cls)), where)
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in table.items()})
