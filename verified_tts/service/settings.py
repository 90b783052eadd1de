"""The front door's settings inside one Serve replica process (token digest, limits, metrics).

Set by ``Api.__init__`` and read by the FastAPI middleware of :mod:`verified_tts.service.app`,
which Serve unpickles apart from that module's globals.
"""

from __future__ import annotations

from typing import Any

__all__ = ["STATE"]

STATE: dict[str, Any] = {}
