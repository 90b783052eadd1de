"""A line heard in its context: the end of the line before it, the line, the start of the next.

Seams and pauses cannot be judged from a line alone, so the review plays the take the book holds
for a line between the takes the book holds for its neighbours, as the assembly lays them: each
clip trimmed of its edge silences and levelled (:func:`~verified_tts.output.assembly.trim_silence`,
:func:`~verified_tts.output.assembly.level_clip`), with the sentence pause between lines of one
paragraph and the paragraph pause between paragraphs (the render's ``[assembly]`` settings). Only
lines of the same chapter are neighbours. The chapter's mastering (its RMS and room tone) is not
applied, so the levels are the clips', not the finished file's.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from verified_tts.options import AssemblyOptions

if TYPE_CHECKING:
    from verified_tts.output.manifest import UtteranceRecord
    from verified_tts.review.session import ReviewSession

__all__ = ["Context", "line_in_context"]

BEFORE_S = 2.0  # seconds of the line before that are heard
AFTER_S = 2.0  # seconds of the next line that are heard


@dataclass(frozen=True)
class Context:
    """The audio and where its parts lie (seconds)."""

    audio: np.ndarray
    rate: int
    before: str | None
    before_s: float
    line_start: float
    line_s: float
    after: str | None
    after_s: float

    def figures(self) -> dict[str, Any]:
        return {"before": self.before, "before_s": self.before_s, "line_start": self.line_start,
                "line_s": self.line_s, "after": self.after, "after_s": self.after_s}  # fmt: skip

    def wav(self) -> bytes:
        import soundfile as sf

        buffer = io.BytesIO()
        sf.write(buffer, self.audio, self.rate, format="WAV", subtype="PCM_16")
        return buffer.getvalue()


def _options(session: ReviewSession) -> AssemblyOptions:
    table = dict((session.head.config or {}).get("assembly") or {})
    names = {f.name for f in fields(AssemblyOptions)}
    return AssemblyOptions(**{k: v for k, v in table.items() if k in names})


def _clip(out: Path, record: UtteranceRecord, rate: int, options: AssemblyOptions) -> np.ndarray:
    import soundfile as sf

    from verified_tts.output.assembly import level_clip, trim_silence

    audio, got = sf.read(out / str(record.audio), dtype="float32", always_2d=False)
    if audio.ndim > 1:
        audio = audio.mean(axis=1)
    if got != rate:
        from scipy.signal import resample_poly

        audio = resample_poly(audio, rate, got).astype(np.float32)
    return level_clip(trim_silence(audio, rate), rate, options)


def _pause(
    a: UtteranceRecord, b: UtteranceRecord, options: AssemblyOptions, rate: int
) -> np.ndarray:
    seconds = options.sentence_pause if a.paragraph == b.paragraph else options.paragraph_pause
    return np.zeros(round(seconds * rate), dtype=np.float32)


def line_in_context(session: ReviewSession, position: int) -> Context:
    """Line ``position`` as the book holds it, between the ends of its neighbours."""
    record = session.state(position).effective()
    rate = int(session.head.sample_rate or 22050)
    options = _options(session)

    def neighbour(at: int) -> UtteranceRecord | None:
        if not 0 <= at < len(session.review.lines):
            return None
        other = session.state(at).effective()
        return other if other.chapter == record.chapter and other.audio else None

    line = _clip(session.out, record, rate, options)
    parts: list[np.ndarray] = []
    before = neighbour(position - 1)
    before_s = 0.0
    if before is not None:
        tail = _clip(session.out, before, rate, options)[-round(BEFORE_S * rate) :]
        parts += [tail, _pause(before, record, options, rate)]
        before_s = len(tail) / rate
    start = sum(len(p) for p in parts) / rate
    parts.append(line)
    after = neighbour(position + 1)
    after_s = 0.0
    if after is not None:
        head = _clip(session.out, after, rate, options)[: round(AFTER_S * rate)]
        parts += [_pause(record, after, options, rate), head]
        after_s = len(head) / rate
    return Context(
        audio=np.concatenate(parts),
        rate=rate,
        before=before.text if before is not None else None,
        before_s=round(before_s, 4),
        line_start=start,
        line_s=round(len(line) / rate, 4),
        after=after.text if after is not None else None,
        after_s=round(after_s, 4),
    )
