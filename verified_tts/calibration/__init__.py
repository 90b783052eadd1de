"""Calibration of the selection gates on injected faults.

Faults of known kinds (a skipped word, a repeated phrase, a cut ending, babble, a long silence, a
wrong voice, clipping) are injected into real candidates, so the truth is known by construction;
the verifiers score clean and faulted copies alike, and small pure modules here turn those scores
into ROC curves, thresholds at a target false-alarm rate, recommended gates and a simulation of
best-of-N selection at a given fault rate. :mod:`verified_tts.workflows.calibrate` runs it all.
"""

from __future__ import annotations

__all__: list[str] = []
