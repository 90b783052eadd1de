"""benchmarks/flags/speaker_consensus.py: the speaker gate against a line's own takes, evaluated on
clean lines, on one take in another voice and on a line in another voice throughout, and the
rule that chose the shipped setting."""

from __future__ import annotations

import pytest

from benchmarks.flags import speaker_consensus
from verified_tts.selection.consensus import SPEAKER_ALLOWANCE, SPEAKER_CEILING, with_take_metrics

BOUND = 0.8093


def _line(clean, voice, text="So!"):
    return {"text": text, "speech_s": 0.4, "clean": list(clean), "voice": list(voice)}


LINES = [
    _line([0.80, 0.79, 0.78], [0.55, 0.56, 0.54]),  # every take just below: an exclamation
    _line([0.92, 0.90], [0.60, 0.62], text="A plain sentence."),
    _line([0.91, 0.88], [0.76, 0.77], text="A line a near voice reaches."),
]


def test_the_benchmark_lifts_takes_as_a_render_does():
    values = [0.80, 0.79, 0.60]
    product = with_take_metrics([{"speaker": v} for v in values], [{}] * 3)
    assert speaker_consensus.lifted(values, SPEAKER_CEILING, SPEAKER_ALLOWANCE) == [
        pytest.approx(m["speaker_take"]) for m in product
    ]
    assert speaker_consensus.lifted([0.7], 0.81, 0.1) == [0.7]  # a lone take is as it was


def test_today_s_gate_flags_the_exclamation_and_an_allowance_clears_it_but_not_a_fault():
    today = speaker_consensus.evaluate(LINES, BOUND, 0.81, 0.0)
    assert today["clean_lines_flagged"] == 1 and today["flagged_lines"][0]["text"] == "So!"
    assert today["one_take_wrong_voice_caught"] == 1.0
    assert today["every_take_wrong_voice_caught"] == 1.0
    small = speaker_consensus.evaluate(LINES, BOUND, 0.81, 0.02)
    assert small["clean_lines_flagged"] == 0
    assert small["every_take_wrong_voice_caught"] == 1.0
    # an allowance as wide as the near voice's distance lets that line through
    wide = speaker_consensus.evaluate(LINES, BOUND, 0.81, 0.05)
    assert wide["every_take_wrong_voice_caught"] == pytest.approx(2 / 3, abs=1e-4)


def test_the_rule_keeps_recall_then_flags_fewest_then_forgives_least():
    settings = [speaker_consensus.evaluate(LINES, BOUND, 0.81, 0.0)] + [
        speaker_consensus.evaluate(LINES, BOUND, c, a)
        for c in (0.81, 0.85) for a in (0.02, 0.05)
    ]  # fmt: skip
    chosen = speaker_consensus.choose(settings)
    assert (chosen["ceiling"], chosen["allowance"]) == (0.81, 0.02)
