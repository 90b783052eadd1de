"""The ``verified-tts`` command line: typer apps that parse options and call the library.

:mod:`verified_tts.cli.commands` holds the root app and the book, dubbing and A/B commands;
:mod:`verified_tts.cli.jobs` the ``cluster`` and ``jobs`` sub-apps that the root mounts.
"""

from verified_tts.cli.commands import app, main

__all__ = ["app", "main"]
