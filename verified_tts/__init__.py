"""verified-tts: best-of-N verifier-guided text-to-speech for audiobooks and dubbing.

For every utterance of a book or a subtitle file, sample N candidates from a TTS generator, score
them with verifiers (ASR likelihood and WER, speaker similarity, emotion, signal checks), keep the
winner, and assemble the winners into the deliverable. The public API is :func:`render` with a
:class:`RenderConfig` (built by :func:`build_config`), and the :class:`Synthesizer` underneath it
for callers that render their own utterances.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "RenderConfig",
    "RenderSummary",
    "Synthesizer",
    "UserError",
    "__version__",
    "build_config",
    "render",
]

_LAZY = {
    "RenderConfig": "verified_tts.config",
    "build_config": "verified_tts.config",
    "RenderSummary": "verified_tts.workflows.render",
    "render": "verified_tts.workflows.render",
    "Synthesizer": "verified_tts.pipeline",
    "UserError": "verified_tts.errors",
}

if TYPE_CHECKING:
    from verified_tts.config import RenderConfig, build_config
    from verified_tts.errors import UserError
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.render import RenderSummary, render


def __getattr__(name: str) -> Any:
    # Lazy, so `import verified_tts` (and the CLI's --help) does not load numpy or the verifiers.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'verified_tts' has no attribute {name!r}")
