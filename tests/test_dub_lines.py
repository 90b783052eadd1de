"""The dub's own gates and its reasons in words."""

from __future__ import annotations

import pytest

from verified_tts.output.dub_reasons import cue_notes, cue_reasons, reason
from verified_tts.selection import dub_gates as dub_gates_module
from verified_tts.selection.dub_gates import dub_gates, dub_policy, stretch_gate
from verified_tts.selection.policy import Gate, SelectionPolicy, default_gates, default_policy


def test_dub_policy_puts_dub_gates_in_place_of_the_book_defaults_only(monkeypatch):
    shipped = {
        "duration_ratio": {"min": 0.8, "max": 1.2, "margin": 0.05},
        "speaker": {"min": 0.7},
        "speech_ratio": {"max": 1.3},  # a metric the book does not gate
        "asr_min_logprob": {"min": -9.0},
        "max_internal_silence_s": {},  # the dub switches this one off
    }
    monkeypatch.setattr(dub_gates_module, "_shipped", lambda: (shipped, True))
    book = default_policy()
    policy = dub_policy(book, 1.25)
    gates = {g.metric: g for g in policy.gates}
    assert gates["duration_ratio"] == Gate("duration_ratio", min=0.8, max=1.2, margin=0.05)
    assert gates["speaker"] == Gate("speaker", min=0.7)
    assert gates["speech_ratio"] == Gate("speech_ratio", max=1.3)
    assert gates["asr_min_logprob"].min == -9.0
    assert "max_internal_silence_s" not in gates
    assert gates["stretch"] == stretch_gate(1.25) == Gate("stretch", max=1.25, margin=0.25)
    assert gates["clipping"] == {g.metric: g for g in default_gates()}["clipping"]
    # a gate the user set stays as set; one the user switched off stays off
    own = SelectionPolicy.from_mapping({"gates": {"speaker": {"min": 0.5}, "duration_ratio": {}}})
    mine = {g.metric: g for g in dub_policy(own, 1.5).gates}
    assert mine["speaker"] == Gate("speaker", min=0.5) and "duration_ratio" not in mine
    assert mine["stretch"].max == 1.5
    # Whisper gates fitted under the packed scorer do not replace the per-clip scorer's (the
    # book's worst-token gate is on the takes-compared metric since the real-prose gates)
    per_clip = {g.metric: g for g in dub_policy(default_policy(False), 1.25, False).gates}
    assert (
        per_clip["asr_min_take_logprob"]
        == {g.metric: g for g in default_gates(False)}["asr_min_take_logprob"]
    )
    assert dub_gates(packed_wer=False).get("asr_min_logprob") is None
    assert "asr_min_logprob" not in per_clip


def test_the_shipped_dub_gates_differ_from_the_book_gates():
    shipped = dub_gates()
    assert shipped, "calibration/data/dub_gates.toml ships the dub gates"
    book = {g.metric: g for g in default_gates()}
    assert any(book.get(metric) != gate for metric, gate in shipped.items())


def test_reasons_say_in_words_what_is_wrong():
    gates = [Gate("speaker", min=0.81), Gate("stretch", max=1.25)]
    metrics = {"duration_ratio": 1.62, "speaker": 0.71, "stretch": 1.31, "asr_min_logprob": -9.0}
    voice = {"expected_from": "voice", "worst_token": " Scales", "transcript": "Scale!"}
    words = cue_reasons(["duration_ratio", "speaker", "stretch", "asr_min_logprob"], metrics,
                        voice, gates)  # fmt: skip
    assert words == [
        "reads 1.6 times longer than this voice predicts",
        "does not sound like the voice (similarity 0.71, needs 0.81)",
        "too long for its slot: needs 1.31x speed (limit 1.25)",
        "a word is unclear: 'Scales' (heard 'Scale!')",
    ]
    text = {"expected_from": "text"}
    assert reason("duration_ratio", {"duration_ratio": 0.7}, text, None) == (
        "reads 30% shorter than expected"
    )
    assert reason("duration_ratio", {"duration_ratio": 1.2}, voice, None).startswith(
        "reads 20% longer than this voice"
    )
    assert reason("max_internal_silence_s", {"max_internal_silence_s": 1.84}, {}, None) == (
        "a 1.8 s pause inside the line"
    )
    punctuation = reason("asr_min_logprob", {}, {"worst_token": ":"}, None)
    assert punctuation == "a word is unclear"
    assert cue_notes({"speaker_note": "too short to judge the voice"}) == [
        "too short to judge the voice"
    ]
    assert cue_notes({}) == []


@pytest.mark.parametrize("metric", ["asr_insertions", "asr_deletions", "clipping", "wer"])
def test_every_gate_has_words(metric):
    said = reason(metric, {metric: 2.0}, {"transcript": "so"}, None)
    assert metric not in said and said
