"""The ``verified-tts`` command line: typer apps that parse options and call the library.

:mod:`verified_tts.cli.commands` is the root app that mounts every topic module's commands
(render, dub, ab, outputs, calibrate, production, voices, cast, review) and the ``cluster`` and
``jobs`` groups; :mod:`verified_tts.cli.options` holds the options they share and
:mod:`verified_tts.cli.report` how each reports (``--json``: one JSON object on stdout).
"""

from verified_tts.cli.commands import app, main

__all__ = ["app", "main"]
