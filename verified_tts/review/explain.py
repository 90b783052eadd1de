"""Why a take is doubtful, in a listener's words, and which word of the line it is about.

A record that carries ``reasons`` (a list of ``{kind, word, text}``, the listener's terms the
verifiers give) is shown as it is. Older manifests have only the failed gates and the verifiers'
detail, so :func:`derived_reasons` says the same from those: the failed gate in words, with the
worst reference token under forced decoding as the word it is about; for a take that passed but
was heard as other words, what was heard (the render's own wording); else the gate it came
nearest to, where a listener would notice the difference (:func:`noticed`: not a pace within a
tenth of the expected one, nor a silence the assembly trims). :func:`mark` finds that word in
the line's text so the page can mark it. This module is the one place that turns metrics into
words for the review; a gate it has no words of its own for is said as the render says it
(:mod:`verified_tts.selection.reasons`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from verified_tts.output.manifest import CandidateRecord, UtteranceRecord
from verified_tts.selection.reasons import candidate_reasons as listener_reasons

__all__ = [
    "candidate_reasons",
    "heard_wrong",
    "noticed",
    "derived_reasons",
    "doubtful_word",
    "gate_scale",
    "line_reasons",
    "mark",
    "nearest_gate",
]


def _word(detail: Mapping[str, Any], text: str) -> str | None:
    """The worst reference token, widened to the word of ``text`` it is part of."""
    token = detail.get("worst_token")
    token = token.strip() if isinstance(token, str) else ""
    if not token:
        return None
    span = mark(text, token) if any(ch.isalnum() for ch in token) else None
    return text[span[0] : span[1]] if span else token


def _unclear(detail: Mapping[str, Any], text: str) -> tuple[str, str | None]:
    word = _word(detail, text)
    if word is None:
        return "a word is unclear", None
    if not any(ch.isalnum() for ch in word):
        return f"the \u201c{word}\u201d is read oddly (the ASR model doubts it)", word
    return f"the word \u201c{word}\u201d is unclear", word


# metric -> (kind, words for a failing value v)
_WORDS = {
    "asr_insertions": ("extra-words", "{v:g} {words} heard that the text does not have"),
    "speaker": ("voice", "sounds unlike the book's voice"),
    "speaker_take": ("voice", "sounds unlike the book's voice"),
    "clipping": ("clipping", "distorted: the audio clips"),
    "leading_silence_s": ("silence", "{v:.1f} s of silence before the line"),
    "trailing_silence_s": ("silence", "{v:.1f} s of silence after the line"),
    "max_internal_silence_s": ("silence", "a {v:.1f} s silence inside the line"),
    "dropped_frames": ("codec", "{v:g} broken audio frames"),
    "stretch": ("fit", "must be sped up {v:.2f}x to fit its cue"),
    "emotion": ("emotion", "does not sound as the text asks"),
    "wer": ("words", "the words heard differ from the text ({v:.0%} word error)"),
}


def _reason(
    metric: str, candidate: CandidateRecord, line: str, *, near: bool = False
) -> dict[str, Any]:
    value = candidate.metric(metric)
    v = 0.0 if value is None else value
    word = None
    if metric in ("asr_min_logprob", "asr_min_take_logprob", "asr_logprob"):
        kind = "unclear"
        text, word = _unclear(candidate.detail, line)
    elif metric == "duration_ratio":
        kind = "length"
        text = (f"reads {v - 1:.0%} longer than expected" if v >= 1
                else f"reads {1 - v:.0%} shorter than expected")  # fmt: skip
    elif metric in _WORDS:
        kind, template = _WORDS[metric]
        text = template.format(v=v, words="word" if v == 1 else "words")
    else:
        # the render's own wording (verified_tts.selection.reasons) for every other gate
        metrics = {**candidate.scores, metric: v}
        said = listener_reasons(metrics, candidate.detail, [metric], text=line)[0]
        kind, text, word = said.kind, said.text, said.word
    return {"kind": kind, "word": word, "text": f"nearly fails: {text}" if near else text}


_PACES = ("duration_ratio", "speech_ratio", "pace_ratio", "voice_pace_ratio")
# A line read within a tenth of its expected pace is not heard as fast or slow (the gate on the
# voice's own pace allows a tenth either way); the assembly trims a line's edge silences, so no
# listener hears them; a pause inside a sentence under 0.75 s is a comma's.
_UNNOTICED = {
    **{name: (lambda v: abs(v - 1.0) < 0.10) for name in _PACES},
    "leading_silence_s": lambda v: True,
    "trailing_silence_s": lambda v: True,
    "max_internal_silence_s": lambda v: v < 0.75,
}


def noticed(metric: str, value: float) -> bool:
    """Whether a listener would notice ``metric`` at ``value`` in one line."""
    unnoticed = _UNNOTICED.get(metric)
    return unnoticed is None or not unnoticed(float(value))


def heard_wrong(candidate: CandidateRecord) -> float:
    """How much of the line the ASR model heard as other words (0: every word as written): the
    take's word error rate, or a word it heard that the text does not have."""
    wer = candidate.metric("wer")
    extra = candidate.metric("asr_insertions") or candidate.metric("asr_deletions")
    share = min(1.0, float(wer or 0.0))
    return share if share > 0 else (0.1 if extra else 0.0)


def gate_scale(gate: Mapping[str, Any], bound: float) -> float:
    """What "near" a gate means: within its margin, or for a gate without one (a physical limit)
    within a quarter of its bound."""
    return float(gate.get("margin") or 0.0) or max(0.25 * abs(float(bound)), 1e-3)


def _slack(gate: Mapping[str, Any], value: float) -> float:
    """How far a value is inside a gate, in units of :func:`gate_scale` (below 0: it fails)."""
    slacks = []
    for side, sign in (("min", 1.0), ("max", -1.0)):
        bound = gate.get(side)
        if bound is None:
            continue
        slacks.append(sign * (value - float(bound)) / gate_scale(gate, bound))
    return min(slacks) if slacks else float("inf")


def nearest_gate(
    candidate: CandidateRecord, gates: Sequence[Mapping[str, Any]]
) -> tuple[str, float] | None:
    """The gate this candidate came nearest to, with its slack (in margins), of the gates whose
    figure a listener would notice (:func:`noticed`)."""
    best: tuple[str, float] | None = None
    for gate in gates:
        value = candidate.metric(str(gate.get("metric")))
        if value is None or not noticed(str(gate.get("metric")), value):
            continue
        slack = _slack(gate, value)
        if best is None or slack < best[1]:
            best = (str(gate["metric"]), slack)
    return best


def derived_reasons(
    candidate: CandidateRecord, gates: Sequence[Mapping[str, Any]] = (), text: str = ""
) -> list[dict[str, Any]]:
    """Reasons from the failed gates; for a take that passed, what the ASR model heard in place
    of the text's words, else the gate it nearly failed (within one :func:`gate_scale`, where a
    listener would notice), else none. ``text``, the line's, names the word a token is in."""
    if candidate.failed_gates:
        return [_reason(metric, candidate, text) for metric in candidate.failed_gates]
    if heard_wrong(candidate) > 0:
        metrics = dict(candidate.scores)
        name = "wer" if candidate.metric("wer") else (
            "asr_insertions" if candidate.metric("asr_insertions") else "asr_deletions")
        said = listener_reasons(metrics, candidate.detail, [name], text=text)
        if said:
            return [{"kind": said[0].kind, "word": said[0].word, "text": said[0].text}]
    nearest = nearest_gate(candidate, gates)
    if nearest is not None and nearest[1] < 1.0:
        return [_reason(nearest[0], candidate, text, near=True)]
    return []


def _recorded(record: CandidateRecord | UtteranceRecord) -> Any:
    """``reasons`` as a record carries them: a field of its own, or a key it does not know yet."""
    return getattr(record, "reasons", None) or record.extra.get("reasons")


def candidate_reasons(
    candidate: CandidateRecord, gates: Sequence[Mapping[str, Any]] = (), text: str = ""
) -> list[dict[str, Any]]:
    """The reasons the verifiers recorded for this take, else :func:`derived_reasons`."""
    recorded = _recorded(candidate)
    if recorded:
        return [dict(reason) for reason in recorded]
    return derived_reasons(candidate, gates, text)


def line_reasons(
    record: UtteranceRecord, gates: Sequence[Mapping[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Why the line's take is doubtful: the line's recorded reasons, else its winner's."""
    recorded = _recorded(record)
    if recorded:
        return [dict(reason) for reason in recorded]
    return candidate_reasons(record.winner_candidate, gates, record.text)


def doubtful_word(reasons: Sequence[Mapping[str, Any]]) -> str | None:
    return next((str(r["word"]) for r in reasons if r.get("word")), None)


def mark(text: str, word: str | None) -> tuple[int, int] | None:
    """Where ``word`` is in ``text`` (start, end), widened to the whole word; None if absent."""
    if not word:
        return None
    if not any(ch.isalnum() for ch in word):
        at = text.rfind(word)
        return (at, at + len(word)) if at >= 0 else None
    found = re.search(rf"(?<!\w){re.escape(word)}", text, re.IGNORECASE) or re.search(
        re.escape(word), text, re.IGNORECASE
    )
    if found is None:
        return None
    start, end = found.span()
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "'\u2019"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] in "'\u2019"):
        end += 1
    return start, end
