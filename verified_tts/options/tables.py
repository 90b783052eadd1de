"""Operations on raw config tables before they are read: values laid over them, and the values
that name files.

:func:`overlay` sets values at dotted keys (the CLI's flags over the file's table);
:func:`table_paths` finds every value that an option marked as a path names, for the job queue
to carry those files with a job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from verified_tts.options.schema import Reading, read_table

__all__ = ["overlay", "table_paths"]


def table_paths(
    cls: type, table: Mapping[str, Any]
) -> list[tuple[tuple[str, ...], str, tuple[str, ...]]]:
    """Every value of ``table`` (read as ``cls``) whose option names a file, with its keys from
    the root and its field's sidecar suffixes: ``[(keys, value, sidecars), ...]``. The table is
    checked on the way, so a bad one is its one-line error here."""
    found: list[tuple[tuple[str, ...], str, tuple[str, ...]]] = []

    def visit(keys: tuple[str, ...], value: Any, spec: dataclasses.Field[Any]) -> None:
        if isinstance(value, str) and value:
            found.append((keys, value, tuple(spec.metadata.get("sidecars", ()))))

    read_table(cls, table, Reading((), visit))
    return found


def overlay(table: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """``table`` with ``values`` set at their dotted keys (``"generator.name"``); ``None`` means
    not given, a mapping is merged into the mapping already there (a voice map on top of the
    file's). A table in the way that is not a table is left for :func:`from_table` to refuse."""
    out = {key: dict(item) if isinstance(item, Mapping) else item for key, item in table.items()}
    for dotted, value in values.items():
        if value is None:
            continue
        *parents, last = dotted.split(".")
        target: Any = out
        for parent in parents:
            child = target.setdefault(parent, {})
            if not isinstance(child, Mapping):
                target = None
                break
            target[parent] = child = dict(child)
            target = child
        if target is None:
            continue
        if isinstance(value, Mapping) and isinstance(target.get(last), Mapping):
            target[last] = {**target[last], **value}
        else:
            target[last] = value
    return out
