"""A clip longer than Whisper's 30 s window: its words go to the window that heard them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_wer import RATE, say  # noqa: F401  (the espeak fixture)
from verifiers.base import Clip
from verifiers.wer import WerOptions, load_wer_verifier
from verifiers.wer_windows import share_words

SLOW = [
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It's easy to tell the depth of a well.",
]
FAST = [
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "The hogs were fed chopped corn and garbage.",
    "Four hours of steady work faced us.",
    "A large size in stockings is hard to sell.",
    "The boy was there when the sun rose.",
    "A rod is used to catch pink salmon.",
    "The source of the huge river is the clear spring.",
]


def test_share_words_follows_the_transcripts_not_the_durations():
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight"]
    # the first window is long but holds only three words
    bounds = share_words(words, ["one two three", "four five six seven eight"], [20.0, 10.0])
    assert bounds == [0, 3, 8]
    # a misheard word does not move the cut
    assert share_words(words, ["one too three", "four five six seven ate"], [20.0, 10.0]) == [
        0,
        3,
        8,
    ]
    # a window that heard nothing: shared by duration
    assert share_words(words, ["", "four five six seven eight"], [20.0, 10.0]) == [0, 5, 8]


@pytest.fixture(scope="module")
def verifier():
    return load_wer_verifier(WerOptions(packing=False, beam_size=1))


def test_slow_then_fast_reading_over_30_seconds_loses_no_word_at_the_cut(verifier, say):  # noqa: F811
    gap = np.zeros(int(RATE * 2.5), np.float32)
    short = np.zeros(RATE // 10, np.float32)
    parts = [p for line in SLOW for p in (say(line), gap)] + [
        p for line in FAST for p in (say(line), short)
    ]
    audio = np.concatenate(parts)
    assert 30 < len(audio) / RATE < 60
    text = " ".join(SLOW + FAST)
    score = verifier.score([Clip(audio, RATE, text)])[0]
    assert score.detail["windows"] == 2
    assert score.metrics["wer"] < 0.3
    # every word is force-decoded in the window that holds it: no word sinks the worst token
    assert score.metrics["asr_min_logprob"] > -6.0, score.detail["worst_token"]
