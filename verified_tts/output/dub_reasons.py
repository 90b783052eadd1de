"""Why a dubbed cue was flagged, in a listener's words: one phrase per failed gate, and notes.

A dubbing producer reads ``dub.json`` (and the summary) for what to listen to, so a flag says what
is wrong with the take rather than which metric missed its bound: "reads 1.6 times longer than
this voice predicts", "a word is unclear: 'Scales' (heard 'scale')", "too long for its slot:
needs 1.31x speed (limit 1.25)". :func:`cue_reasons` turns the winner's metrics, its score detail
and the gates it failed into those phrases; :func:`cue_notes` gives what a listener should know
even when nothing failed ("too short to judge the voice" when a clip had too little speech for
the speaker check and no short takes of the voice to compare with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verified_tts.selection.policy import Gate

__all__ = ["cue_notes", "cue_reasons", "reason"]

_SILENCES = {
    "leading_silence_s": "{:.1f} s of silence before the line",
    "trailing_silence_s": "{:.1f} s of silence after the line",
    "max_internal_silence_s": "a {:.1f} s pause inside the line",
}


def _heard(detail: Mapping[str, Any]) -> str:
    transcript = str(detail.get("transcript") or "").strip()
    return f" (heard '{transcript}')" if transcript else ""


def _length(ratio: float, detail: Mapping[str, Any], what: str) -> str:
    against = "this voice predicts" if detail.get("expected_from") == "voice" else "expected"
    if ratio >= 1.5:
        return f"{what} {ratio:.1f} times longer than {against}"
    if ratio >= 1.0:
        return f"{what} {100 * (ratio - 1):.0f}% longer than {against}"
    return f"{what} {100 * (1 - ratio):.0f}% shorter than {against}"


def reason(
    metric: str, metrics: Mapping[str, float], detail: Mapping[str, Any], gate: Gate | None
) -> str:
    """One failed gate in a listener's words."""
    value = float(metrics.get(metric, float("nan")))
    if metric == "duration_ratio":
        return _length(value, detail, "reads")
    if metric == "speech_ratio":
        return _length(value, detail, "its speech runs")
    if metric == "speaker":
        bound = f", needs {gate.min:.2f}" if gate is not None and gate.min is not None else ""
        return f"does not sound like the voice (similarity {value:.2f}{bound})"
    if metric == "asr_min_logprob":
        token = str(detail.get("worst_token") or "").strip()
        word = f": '{token}'" if token and any(ch.isalnum() for ch in token) else ""
        return f"a word is unclear{word}{_heard(detail)}"
    if metric == "asr_logprob":
        return f"hard to make out{_heard(detail)}"
    if metric == "asr_insertions":
        return f"{value:.0f} word(s) heard that are not in the line{_heard(detail)}"
    if metric == "asr_deletions":
        return f"{value:.0f} word(s) of the line not heard{_heard(detail)}"
    if metric == "wer":
        return f"the words differ from the line{_heard(detail)}"
    if metric == "stretch":
        limit = f" (limit {gate.max:.2f})" if gate is not None and gate.max is not None else ""
        return f"too long for its slot: needs {value:.2f}x speed{limit}"
    if metric in _SILENCES:
        return _SILENCES[metric].format(value)
    if metric == "clipping":
        return f"distorted: {100 * value:.1f}% of samples clipped"
    if metric == "dropped_frames":
        return f"{value:.0f} audio frame(s) the model made were unusable"
    if metric == "emotion":
        return "the delivery does not carry the emotion asked for"
    return f"{metric} = {value:.3g} is out of bounds"


def cue_reasons(
    failed: Sequence[str],
    metrics: Mapping[str, float],
    detail: Mapping[str, Any],
    gates: Sequence[Gate],
) -> list[str]:
    """The failed gates of a flagged winner in a listener's words, in the order they failed."""
    by_metric = {gate.metric: gate for gate in gates}
    return [reason(metric, metrics, detail, by_metric.get(metric)) for metric in failed]


def cue_notes(detail: Mapping[str, Any]) -> list[str]:
    """What a listener should know about a take besides its flags."""
    note = detail.get("speaker_note")
    return [str(note)] if note else []
