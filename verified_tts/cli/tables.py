"""Tables a user copies from: the key column is never cut, the other columns give way.

Rich shares a narrow terminal between a table's columns by wrapping and, where a word is longer
than its column, by cutting it with an ellipsis, so in 80 columns ``verified-tts voices`` showed
"piper:en_US…", a name that cannot be typed back. :func:`copy_table` builds a table whose key
column (the voice name, the job id, the file, the word) does not wrap and is not shrunk while
another column can give way; the other columns fold long words onto the next line instead of
cutting them, so nothing shown is lost.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

__all__ = ["copy_table"]


def copy_table(
    title: str,
    columns: Iterable[str],
    *,
    keys: Iterable[str],
    right: Iterable[str] = (),
    **table_options: object,
) -> Table:
    """A table with ``columns``; those in ``keys`` are shown whole, the rest fold (none cut)."""
    keys, right = set(keys), set(right)
    table = Table(title=title, **table_options)  # type: ignore[arg-type]
    for column in columns:
        justify = "right" if column in right else "left"
        if column in keys:
            table.add_column(column, justify=justify, no_wrap=True, overflow="fold")
        else:
            table.add_column(column, justify=justify, overflow="fold")
    return table
