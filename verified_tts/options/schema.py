"""One reader and one writer for every options dataclass and its TOML table.

Every ``[table]`` of the config is a frozen dataclass whose fields are declared with
:func:`option`: a default, a one-line doc, and whether the value names a file (``path``). The
annotations say what a value may be (``int``, ``float``, ``str``, ``bool``, unions with ``None``,
``tuple[...]`` from TOML arrays, ``Mapping[str, X]`` from tables, a nested options dataclass for
a nested table). :func:`from_table` builds the dataclass from a table and checks every key and
value with one message format (which table, which key, what is known or expected);
:func:`to_table` is its inverse (``None`` left out, tuples as lists). A class whose table has a
shape of its own (a generator's options under its name, the selection gates merged into a
profile) registers its reader and writer with :func:`register_table` and builds on
:func:`read_fields` and :func:`write_fields`. The reference of every option is in
:mod:`.reference`; operations on raw tables (values laid over them, paths they name) in
:mod:`.tables`.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass
from functools import cache
from typing import Any, TypeVar, Union

from verified_tts.errors import UserError

__all__ = [
    "Reading",
    "from_table",
    "hints",
    "option",
    "plain",
    "read_fields",
    "read_table",
    "read_value",
    "register_table",
    "table_label",
    "to_table",
    "unknown_keys",
    "write_fields",
]

T = TypeVar("T")
Visit = Callable[[tuple[str, ...], Any, "dataclasses.Field[Any]"], None]


def option(
    default: Any = MISSING,
    doc: str = "",
    *,
    factory: Callable[[], Any] | None = None,
    path: bool = False,
    sidecars: tuple[str, ...] = (),
    parse: Callable[[Any], Any] | None = None,
    convert: Callable[[Any], Any] | None = None,
    none: str | None = None,
) -> Any:
    """A dataclass field with its doc. ``path``: the value may name a local file (a job carries
    it, with any ``sidecars`` (suffixes) found beside it); ``parse`` turns a raw table value into
    the annotated shape before it is checked (e.g. ``"wav,mp3"`` into a list), ``convert`` is
    applied after (e.g. ``float`` where the stored type matters); ``none``: the word a table
    writes for None where the default is not None (TOML has no null)."""
    metadata: dict[str, Any] = {"doc": doc, "path": path, "sidecars": sidecars}
    if none is not None:
        metadata["none"] = none
    if parse is not None:
        metadata["parse"] = parse
    if convert is not None:
        metadata["convert"] = convert
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def table_label(keys: Sequence[str]) -> str:
    """``("generator", "piper")`` -> ``[generator.piper]``; the root table is ``config``."""
    return f"[{'.'.join(keys)}]" if keys else "config"


@dataclass(frozen=True)
class Reading:
    """Where a reader is in the config (the keys from the root) and who watches path values."""

    keys: tuple[str, ...] = ()
    visit: Visit | None = None

    @property
    def label(self) -> str:
        return table_label(self.keys)

    def child(self, key: str) -> Reading:
        return Reading((*self.keys, key), self.visit)


Reader = Callable[[type, Mapping[str, Any], Reading], Any]
Writer = Callable[[Any], dict[str, Any]]
_READERS: dict[type, Reader] = {}
_WRITERS: dict[type, Writer] = {}


def register_table(cls: type, *, read: Reader | None = None, write: Writer | None = None) -> None:
    """Give ``cls`` a table shape of its own (only that class, not its subclasses)."""
    if read is not None:
        _READERS[cls] = read
    if write is not None:
        _WRITERS[cls] = write


def unknown_keys(label: str, unknown: Sequence[str], known: Sequence[str]) -> UserError:
    """The one message for keys a table does not have, with a guess for a near miss."""
    message = f"unknown key(s) in {label}: {', '.join(unknown)}; known: {', '.join(known)}"
    guesses = []
    for key in unknown:
        close = difflib.get_close_matches(_name(key), known, n=1)
        if close:
            guesses.append(f"unknown option '{key}': did you mean '{close[0]}'?")
    return UserError(message + (f" ({'; '.join(guesses)})" if guesses else ""))


def _name(key: str) -> str:
    return str(key).replace("-", "_")  # ``repetition-penalty`` is ``repetition_penalty``


@cache
def hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of an options class (cached)."""
    return typing.get_type_hints(cls)


def _fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _not_table(label: str, value: Any) -> UserError:
    return UserError(
        f"{label} must be a table ([{label.strip('[]')}] with key = value lines), "
        f"not {type(value).__name__} {value!r:.40}"
    )


# ------------------------------------------------------------------------------------------------
# reading


def from_table(cls: type[T], table: Mapping[str, Any], where: str = "config") -> T:
    """Build ``cls`` from a TOML table; ``where`` names the table (``[assembly]``, or ``config``
    for the whole file). Unknown keys and values of the wrong kind are one-line UserErrors."""
    keys = tuple(k for k in where.strip("[]").split(".") if k) if where != "config" else ()
    return read_table(cls, table, Reading(keys))


def read_table(cls: type[T], table: Any, reading: Reading) -> T:
    """``cls`` from ``table`` at ``reading`` (its registered reader, or the plain fields)."""
    if isinstance(table, cls):
        return table
    if not isinstance(table, Mapping):
        raise _not_table(reading.label, table)
    reader = _READERS.get(cls)
    if reader is not None:
        return reader(cls, table, reading)
    return cls(**read_fields(cls, table, reading))


def read_fields(
    cls: type,
    table: Mapping[str, Any],
    reading: Reading,
    *,
    skip: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """The checked values of ``cls``'s fields that ``table`` gives. ``skip``: fields not read
    here (the caller fills them); ``extra``: further keys the table may have, which the caller
    reads itself (a skipped field's key among them)."""
    specs = _fields(cls)
    allowed = (set(specs) - set(skip)) | set(extra)
    unknown = [k for k in table if _name(k) not in allowed]
    if unknown:
        raise unknown_keys(reading.label, unknown, sorted(allowed))
    values: dict[str, Any] = {}
    for key, raw in table.items():
        name = _name(key)
        if name in skip or name not in specs:
            continue
        spec = specs[name]
        if spec.metadata.get("path") and reading.visit is not None:
            reading.visit((*reading.keys, str(key)), raw, spec)
        values[name] = read_value(hints(cls)[name], raw, reading, name, spec)
    for name, spec in specs.items():
        required = spec.default is MISSING and spec.default_factory is MISSING
        if required and name not in values and name not in skip:
            doc = spec.metadata.get("doc", "")
            raise UserError(f"{reading.label} needs {name}" + (f" ({doc})" if doc else ""))
    return values


def read_value(
    kind: Any,
    raw: Any,
    reading: Reading,
    name: str,
    spec: dataclasses.Field[Any] | None = None,
) -> Any:
    """``raw`` checked against the annotation ``kind`` (the option ``name`` of the table at
    ``reading``), converted where the annotation asks (lists to tuples, nested tables)."""
    metadata = spec.metadata if spec is not None else {}
    if "none" in metadata and raw == metadata["none"]:
        return None
    if "parse" in metadata:
        raw = metadata["parse"](raw)
    value = _check(kind, raw, reading, name)
    return metadata["convert"](value) if "convert" in metadata else value


class _Mismatch(Exception):
    """A value that does not fit an annotation (turned into one UserError by the caller)."""


def _check(kind: Any, raw: Any, reading: Reading, name: str) -> Any:
    try:
        return _fit(kind, raw, reading, name)
    except _Mismatch:
        raise UserError(
            f"{reading.label} {name} must be {expected(kind)}, not {raw!r:.40}"
        ) from None


def _fit(kind: Any, raw: Any, reading: Reading, name: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return raw
    if kind is type(None):
        if raw is None:
            return None
        raise _Mismatch
    if origin in (Union, types.UnionType):
        arms = typing.get_args(kind)
        if raw is None and type(None) in arms:
            return None
        for arm in arms:
            if arm is type(None):
                continue
            try:
                return _fit(arm, raw, reading, name)
            except _Mismatch:
                continue
        raise _Mismatch
    if dataclasses.is_dataclass(kind):
        return read_table(kind, raw, reading.child(name))
    if origin is tuple:
        if not isinstance(raw, (list, tuple)):
            raise _Mismatch
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_fit(args[0], item, reading, name) for item in raw)
        if len(raw) != len(args):
            raise _Mismatch
        return tuple(_fit(arg, item, reading, name) for arg, item in zip(args, raw, strict=True))
    if origin in (Mapping, dict, typing.Mapping) or kind in (Mapping, dict):
        if not isinstance(raw, Mapping):
            raise _Mismatch
        args = typing.get_args(kind) or (str, Any)
        if not all(isinstance(key, str) for key in raw):
            raise _Mismatch
        return {key: _fit(args[1], item, reading, name) for key, item in raw.items()}
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        raise _Mismatch
    if kind is int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        raise _Mismatch
    if kind is float:  # an integer is a number too; kept as given (content keys hash it)
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return raw
        raise _Mismatch
    if kind is str:
        if isinstance(raw, str):
            return raw
        raise _Mismatch
    raise TypeError(f"options cannot read a {kind!r} annotation")  # a bug in an options class


def expected(kind: Any) -> str:
    """What a value of annotation ``kind`` is, in words: ``a number``, ``a list of strings``."""
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        arms = [arm for arm in typing.get_args(kind) if arm is not type(None)]
        return " or ".join(expected(arm) for arm in arms)
    if dataclasses.is_dataclass(kind):
        return "a table"
    if origin is tuple:
        args = typing.get_args(kind)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_plural(args[0])}"
        return f"a list of {len(args)} {_plural(args[0])}"
    if origin in (Mapping, dict) or kind in (Mapping, dict):
        args = typing.get_args(kind) or (str, Any)
        return f"a table of NAME = {expected(args[1])}"
    return {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
        Any: "a value",
    }.get(kind, str(kind))


def _plural(kind: Any) -> str:
    return {bool: "booleans", int: "integers", float: "numbers", str: "strings"}.get(kind, "values")


# ------------------------------------------------------------------------------------------------
# writing


def to_table(value: Any) -> dict[str, Any]:
    """The TOML table of an options object: its fields (``None`` left out), nested options as
    tables, tuples as lists; ``from_table(type(x), to_table(x)) == x``."""
    writer = _WRITERS.get(type(value))
    if writer is not None:
        return writer(value)
    return write_fields(value)


def write_fields(value: Any, *, skip: Sequence[str] = ()) -> dict[str, Any]:
    """The plain fields of ``value`` as table entries (``None`` left out)."""
    out: dict[str, Any] = {}
    for spec in dataclasses.fields(value):
        item = getattr(value, spec.name)
        if item is None and "none" in spec.metadata:
            item = spec.metadata["none"]
        if spec.name in skip or item is None:
            continue
        out[spec.name] = plain(item)
    return out


def plain(value: Any) -> Any:
    """``value`` as TOML/JSON data: options as tables, tuples as lists, mappings as dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_table(value)
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items() if item is not None}
    return value
