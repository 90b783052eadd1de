"""The configuration reference: every option with its table, type, default and doc.

:func:`reference` walks an options type and its nested tables in declaration order and yields an
:class:`OptionDoc` per option, from the one-line doc each field carries (:func:`option`). A type
whose table has a shape of its own (a generator's options under its name, the selection on top
of a profile) registers how its rows are made with :func:`register_reference`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import MISSING
from typing import Any, NamedTuple, Union

from verified_tts.options.schema import hints, plain, table_label

__all__ = [
    "OptionDoc",
    "default_of",
    "describe_fields",
    "reference",
    "register_reference",
    "type_name",
]

Describer = Callable[[type, tuple[str, ...]], Iterator["OptionDoc"]]
_DESCRIBERS: dict[type, Describer] = {}


def register_reference(cls: type, describe: Describer) -> None:
    """Make ``cls``'s reference rows with ``describe(cls, keys)`` instead of from its fields."""
    _DESCRIBERS[cls] = describe


class OptionDoc(NamedTuple):
    """One row of the configuration reference."""

    table: str  # "config" for top-level keys, else "[assembly]", "[generator.piper]", ...
    key: str
    type: str
    default: Any  # as TOML/JSON data; None when there is none
    doc: str


def reference(cls: type, keys: tuple[str, ...] = ()) -> Iterator[OptionDoc]:
    """Every option of ``cls`` and of its nested tables, in declaration order."""
    describer = _DESCRIBERS.get(cls)
    if describer is not None:
        yield from describer(cls, keys)
        return
    yield from describe_fields(cls, keys)


def describe_fields(
    cls: type, keys: tuple[str, ...], *, skip: Sequence[str] = ()
) -> Iterator[OptionDoc]:
    """The reference rows of ``cls``'s own fields; nested options tables follow as their own."""
    nested: list[tuple[str, type]] = []
    for spec in dataclasses.fields(cls):
        if spec.name in skip:
            continue
        kind = hints(cls)[spec.name]
        if dataclasses.is_dataclass(kind):
            nested.append((spec.name, kind))
            continue
        yield OptionDoc(table_label(keys), spec.name, type_name(kind), default_of(spec), _doc(spec))
    for name, kind in nested:
        yield from reference(kind, (*keys, name))


def _doc(spec: dataclasses.Field[Any]) -> str:
    return str(spec.metadata.get("doc", ""))


def default_of(spec: dataclasses.Field[Any]) -> Any:
    """A field's default as table data (None when it has none or it is None)."""
    if spec.default is not MISSING:
        return plain(spec.default)
    if spec.default_factory is not MISSING:
        return plain(spec.default_factory())
    return None


def type_name(kind: Any) -> str:
    """An annotation as the reference writes it: ``float | None``, ``list of str``."""
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(arm) for arm in typing.get_args(kind))
    if kind is type(None):
        return "None"
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of {type_name(args[0])}"
        if len(set(args)) == 1:
            return f"list of {len(args)} {type_name(args[0])}"
        return "list of " + ", ".join(type_name(arg) for arg in args)
    if origin in (Mapping, dict) or kind in (Mapping, dict):
        args = typing.get_args(kind) or (str, Any)
        return f"table of {type_name(args[1])}"
    if dataclasses.is_dataclass(kind):
        return "table"
    return "any" if kind is Any else getattr(kind, "__name__", str(kind))
