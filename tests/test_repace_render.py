"""benchmarks/flags/repace_render.py: a render's takes judged again against their voice's length."""

from __future__ import annotations

from pathlib import Path

from benchmarks.flags.repace_render import regate
from verified_tts.output.manifest import CandidateRecord, UtteranceRecord

ROOT = Path(__file__).resolve().parent.parent

CLEAN = {
    "asr_min_take_logprob": -2.0, "asr_insertions": 0.0, "clipping": 0.0,
    "leading_silence_s": 0.0, "trailing_silence_s": 0.1, "max_internal_silence_s": 0.2,
    "dropped_frames": 0.0, "speaker": 0.95,
}  # fmt: skip


def _take(index: int, seconds: float, pace: float, score: float) -> CandidateRecord:
    scores = {**CLEAN, "duration_s": seconds, "duration_ratio": pace, "pace_ratio": pace}
    return CandidateRecord(index, scores, False, score, duration_s=seconds,
                           failed_gates=("pace_ratio",))  # fmt: skip


def test_takes_held_to_the_voice_length_pass_and_a_far_one_still_fails():
    # the formula called both takes 25% too long; the voice means 2.0 s for the text, and the
    # takes are held to it by voice_pace_ratio's bounds
    line = UtteranceRecord("k", 1, '"May I go see?"', 0, True,
                           (_take(0, 2.5, 1.25, 0.1), _take(1, 2.04, 1.25, 0.3)))  # fmt: skip
    again = regate([line], {"k": 2.0})[0]
    assert not again.flagged and again.winner == 1  # the better-scored take that passes
    assert again.candidates[1].scores["voice_pace_ratio"] == 2.04 / 2.0
    assert again.candidates[1].scores["pace_ratio"] == 2.04 / 2.0
    assert "voice_pace_ratio" in again.candidates[0].failed_gates  # 1.25 of its voice's length
    # no prediction: the takes keep the render's own metrics and verdict
    kept = regate([line], {"k": None})[0]
    assert kept.flagged and kept.candidates[1].scores["pace_ratio"] == 1.25
