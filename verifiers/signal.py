"""Signal checks: duration plausible for the text, clipping, level and silences (no model).

These are the cheap sanity metrics that catch what a learned verifier can miss: a candidate that
is far too long or too short for its text (an LLM-TTS that babbles on or stops early), digital
clipping, a long dead gap before, after or inside the speech, and frames the generator had to
drop. ``duration_ratio`` compares the clip with the duration expected for the text. A voice that
says how long it means to speak a text gives that length in ``clip.info["timing"]["predicted_s"]``
(the Piper generator: its duration predictor's mean length for the text, see
:mod:`verified_tts.generators.piper_timing`; hibari: its duration head's length at the take's
speed), and the clip is held to it, so a one-word
exclamation is not "too long" because it is short and the ratio is what the candidate's own noise
changed. Otherwise the expectation is a formula of the text: at a typical audiobook reading rate of
:data:`READING_RATE_CHARS_PER_S` letters and digits per second (human narration at 150-165 words
per minute of 4.7 letters is 12-13; the embedded espeak-ng default reads Harvard sentences 1-60
at a median of 13.3, range 9.9-18.2), counted on ``clip.spoken`` (the expanded text the generator
read, so "1999" counts as "nineteen ninety-nine") or on ``clip.text`` when that is empty, plus
whatever the options' text model adds for short lines and punctuation
(:mod:`verifiers.duration_model`, fitted by ``verified-tts calibrate``). The score's detail says
which (``expected_from``: "voice" or "text").
``pace_ratio`` and ``voice_pace_ratio`` are the book's duration gates. ``pace_ratio`` is the clip
against the voice's own predicted length where the voice gives one (then it equals
``duration_ratio``: the voice knows how long it pauses after "Act II." or reads "Hark!", and a
heading or a one-word line is held to that), and otherwise against a reading that also pauses where
the text's punctuation asks (:func:`expected_reading_s`:
:data:`LETTER_S` per letter or digit, :data:`CLAUSE_PAUSE_S` per comma, colon or semicolon,
:data:`SENTENCE_PAUSE_S` per sentence end inside the text and :data:`FINAL_PAUSE_S` for the one that
closes it): on real prose, where punctuation is dense, headings hold two sentences and lines as
short as "So!" are common, a letters-only expectation flagged clean readings as too long or too
short, and this one follows a narrator's pace (docs/real-prose.md); ``expected_from`` says which.
``voice_pace_ratio`` is the same value, reported only where the voice gave its length: a voice's
own length is a much tighter expectation than any formula of the text, so it carries its own,
narrower gate, and the formula's bounds on ``pace_ratio`` stay those fitted on the formula.
``speech_ratio`` is the duration ratio for the speech alone (first to last voiced frame, against the
voice's predicted span from its first word to its last where it gives one), which edge silences do
not blur: a repeated phrase or appended babble lengthens it, a cut ending shortens it. Silence is
framewise RMS below a dBFS threshold. Everything here is vectorised numpy per clip; the selection
policy, not this module, decides which values are acceptable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from verified_tts.options.verifiers import (
    CLAUSE_PAUSE_S,
    FINAL_PAUSE_S,
    LETTER_S,
    READING_RATE_CHARS_PER_S,
    SENTENCE_PAUSE_S,
    SignalOptions,
)
from verifiers.base import Clip, Score
from verifiers.duration_model import TextDurationModel

__all__ = [
    "CLAUSE_PAUSE_S",
    "FINAL_PAUSE_S",
    "LETTER_S",
    "METRICS",
    "READING_RATE_CHARS_PER_S",
    "SENTENCE_PAUSE_S",
    "SignalOptions",
    "SignalVerifier",
    "expected_duration_s",
    "expected_reading_s",
    "load_signal_verifier",
    "scoring_options",
    "text_model",
    "voice_predicted_s",
]

# what score() reports (target_duration_ratio only for a clip with a slot to fill)
METRICS = (
    "duration_s", "duration_ratio", "pace_ratio", "voice_pace_ratio", "speech_ratio", "clipping",
    "peak_dbfs", "leading_silence_s", "trailing_silence_s", "max_internal_silence_s",
    "dropped_frames", "target_duration_ratio",
)  # fmt: skip
_SPOKEN_CHARS = re.compile(r"[^\W_]", re.UNICODE)  # letters and digits, any script
_CLAUSE_MARKS = re.compile(r"[,;:]")
_INNER_ENDS = re.compile(r"[.!?…]+(?=[\"'”’)\]]*\s+\S)")
_FINAL_END = re.compile(r"[.!?…][\"'”’)\]]*\s*$")
_FLOOR_DBFS = -120.0  # what an all-zero clip reports instead of -inf (JSON has no -inf)


def scoring_options(options: Any) -> dict[str, Any]:
    """A verifier's options as its identity names them: all but ``enabled`` (whether it runs)."""
    return {k: v for k, v in asdict(options).items() if k != "enabled"}


def text_model(options: SignalOptions) -> TextDurationModel:
    """The duration model of a text, for voices that give no prediction of their own."""
    return TextDurationModel(
        intercept_s=options.expected_intercept_s,
        chars_per_s=options.reading_rate_chars_per_s,
        per_word_s=options.expected_per_word_s,
        per_pause_s=options.expected_per_pause_s,
        question_s=options.expected_question_s,
        exclamation_s=options.expected_exclamation_s,
        ellipsis_s=options.expected_ellipsis_s,
        trailing_comma_s=options.expected_trailing_comma_s,
    )


def expected_duration_s(text: str, chars_per_s: float = READING_RATE_CHARS_PER_S) -> float:
    """Seconds a narrator takes to read ``text``: its letters and digits at ``chars_per_s``."""
    return len(_SPOKEN_CHARS.findall(text)) / chars_per_s


def voice_predicted_s(info: Mapping[str, Any], key: str = "predicted_s") -> float | None:
    """The length the generator's voice means the clip's text to last, when it says so
    (``predicted_speech_s``: its speech alone, first word to last)."""
    timing = info.get("timing") if isinstance(info, Mapping) else None
    predicted = timing.get(key) if isinstance(timing, Mapping) else None
    return float(predicted) if isinstance(predicted, (int, float)) and predicted > 0 else None


def expected_reading_s(
    text: str,
    letter_s: float = LETTER_S,
    clause_pause_s: float = CLAUSE_PAUSE_S,
    sentence_pause_s: float = SENTENCE_PAUSE_S,
    final_pause_s: float = FINAL_PAUSE_S,
) -> float:
    """Seconds a narrator takes to read ``text`` with the pauses its punctuation asks for: per
    letter or digit, per comma, colon or semicolon, per sentence end inside the text and for the
    one that closes it."""
    return (
        len(_SPOKEN_CHARS.findall(text)) * letter_s
        + len(_CLAUSE_MARKS.findall(text)) * clause_pause_s
        + len(_INNER_ENDS.findall(text)) * sentence_pause_s
        + (final_pause_s if _FINAL_END.search(text) else 0.0)
    )


class SignalVerifier:
    """Duration, level and silence metrics for a batch of clips; see the module docstring."""

    name = "signal"
    reads_references = False  # its scores are the same whatever the speaker reference

    def __init__(self, options: SignalOptions | None = None) -> None:
        self.options = options or SignalOptions()

    def identity(self) -> Mapping[str, Any]:
        # 2: speech_ratio; 3: pace_ratio; 4: the voice's own predicted length where it gives one;
        # 5: pace_ratio held to it too; 6: voice_pace_ratio, where the voice gave its length
        return {"verifier": self.name, "version": 6, "options": scoring_options(self.options)}

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        return [self._score_one(clip) for clip in clips]

    def _score_one(self, clip: Clip) -> Score:
        options = self.options
        audio = np.asarray(clip.audio, dtype=np.float32).reshape(-1)
        rate = int(clip.sample_rate)
        duration = audio.size / rate
        magnitude = np.abs(audio)
        peak = float(magnitude.max()) if audio.size else 0.0

        said = clip.spoken or clip.text
        predicted = voice_predicted_s(clip.info)
        if predicted is not None:
            expected, source = predicted, "voice"
        else:
            expected, source = text_model(options).seconds(said), "text"
        # the speech alone against the speech the voice means, where it says (its words' span)
        expected_speech = voice_predicted_s(clip.info, "predicted_speech_s") or expected
        if predicted is not None:
            reading = predicted
        else:
            reading = expected_reading_s(
                said,
                options.letter_s,
                options.clause_pause_s,
                options.sentence_pause_s,
                options.final_pause_s,
            )
        # A text with nothing to read (punctuation only) expects no audio; report the ratio
        # against one frame so it stays finite and large for any real length.
        frame = max(1, round(rate * options.frame_ms / 1000.0))
        ratio = duration / max(expected, frame / rate)

        silent = self._silent_frames(audio, frame)
        frame_s = frame / rate
        voiced = np.flatnonzero(~silent)
        gap_start = None
        if voiced.size == 0:  # all silence: every second of it is both leading and trailing
            leading = trailing = duration
            internal = speech = 0.0
        else:
            first, last = int(voiced[0]), int(voiced[-1])
            leading = first * frame_s
            # the last frame may be partial: measure trailing silence to the true end
            trailing = max(0.0, duration - (last + 1) * frame_s)
            gaps = np.diff(voiced) - 1  # silent frames between consecutive voiced frames
            internal = float(gaps.max()) * frame_s if gaps.size else 0.0
            if internal > 0:  # where the longest gap starts: reasons name the word before it
                gap_start = (int(voiced[int(np.argmax(gaps))]) + 1) * frame_s
            speech = (last + 1 - first) * frame_s

        metrics = {
            "duration_s": float(duration),
            "duration_ratio": float(ratio),
            "speech_ratio": float(speech / max(expected_speech, frame / rate)),
            "clipping": float(np.mean(magnitude >= options.clip_level)) if audio.size else 0.0,
            "peak_dbfs": float(20.0 * np.log10(peak)) if peak > 0 else _FLOOR_DBFS,
            "leading_silence_s": float(leading),
            "trailing_silence_s": float(trailing),
            "max_internal_silence_s": float(internal),
            "dropped_frames": float(clip.info.get("dropped_frames", 0) or 0),
        }
        metrics["pace_ratio"] = float(duration / max(reading, frame / rate))
        if predicted is not None:
            metrics["voice_pace_ratio"] = metrics["pace_ratio"]
        target = getattr(clip, "target_duration_s", None)
        if target:  # a dubbing cue's slot: how well the clip fits it (1.0 = exactly)
            metrics["target_duration_ratio"] = float(duration / target)
        detail: dict[str, Any] = {
            "expected_duration_s": round(expected, 3),
            "expected_from": source,
            "speech_s": round(speech, 3),
        }
        if gap_start is not None:
            detail["longest_silence_start_s"] = round(gap_start, 3)
        return Score(metrics=metrics, detail=detail)

    def _silent_frames(self, audio: np.ndarray, frame: int) -> np.ndarray:
        """Boolean per frame (the last one zero-padded): RMS below the silence threshold."""
        if audio.size == 0:
            return np.zeros(0, dtype=bool)
        count = -(-audio.size // frame)
        padded = np.zeros(count * frame, dtype=np.float64)
        padded[: audio.size] = audio
        frames = padded.reshape(count, frame)
        # the zero-padded tail would dilute the last frame's RMS: divide by its real length
        lengths = np.full(count, frame, dtype=np.float64)
        lengths[-1] = audio.size - (count - 1) * frame
        rms = np.sqrt(np.einsum("ij,ij->i", frames, frames) / lengths)
        threshold = 10.0 ** (self.options.silence_threshold_dbfs / 20.0)
        return rms < threshold


def load_signal_verifier(options: SignalOptions | None = None) -> SignalVerifier:
    """Build the signal verifier (nothing to load; here for symmetry with the other verifiers)."""
    return SignalVerifier(options)
