"""Dubbing end to end: subtitles in, cues placed inside their slots on one track, a report out."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import srt

from verified_tts.config import build_config
from verified_tts.errors import UserError
from verified_tts.output.dub_track import DubOptions, compute_slots, time_stretch
from verified_tts.output.mix import duck_gain
from verified_tts.pipeline import Synthesizer
from verified_tts.text.subtitles import Cue
from verified_tts.verification import LoadedVerifiers
from verified_tts.workflows.dub import dub, dub_settings

ROOT = Path(__file__).resolve().parent.parent
SINTEL = Path(__file__).resolve().parent / "data" / "sintel-en.srt"
SPEED_LIMIT = 1.25

# Tight slots on purpose: a line that needs a little stretch, one that cannot fit and has no
# silence after it, one that cannot fit but has silence to run into, a short one, an empty one.
TIGHT = """1
00:00:00,500 --> 00:00:02,000
This blade has a dark past.

2
00:00:02,300 --> 00:00:03,300
It has shed much innocent blood, and more.

3
00:00:03,300 --> 00:00:04,000
{\\an8}You're a fool for traveling alone, so completely unprepared.

4
00:00:06,000 --> 00:00:07,000
<i>Thank you.</i>

5
00:00:07,500 --> 00:00:08,000
[MUSIC]
"""


@pytest.fixture(scope="module")
def synthesizer(synthesizer_factory) -> Synthesizer:
    """The session's loaded models at N=2, without the speaker verifier to keep the suite fast
    (it plays no part in timing; the render tests cover it)."""
    base = synthesizer_factory(candidates=2)
    verifiers = LoadedVerifiers(
        tuple(v for v in base.verifiers.active if v.name != "speaker"), base.verifiers.status
    )
    return Synthesizer(base.generator, verifiers, base.config)


def sintel_subset(path: Path, cues: int) -> Path:
    """The first ``cues`` cues of the Sintel subtitles, as written."""
    blocks = SINTEL.read_text(encoding="utf-8").strip().split("\n\n")
    path.write_text("\n\n".join(blocks[:cues]) + "\n", encoding="utf-8")
    return path


def run(src: Path, out: Path, synthesizer: Synthesizer, **kwargs):
    summary = dub(src, out, synthesizer.config, synthesizer=synthesizer, **kwargs)
    report = json.loads((out / "dub.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    return summary, report, manifest


@pytest.fixture(scope="module")
def sintel(tmp_path_factory, synthesizer):
    base = tmp_path_factory.mktemp("sintel")
    src = sintel_subset(base / "sintel-4.srt", 4)
    out = base / "out"
    warnings: list[str] = []
    summary, report, manifest = run(src, out, synthesizer, on_warning=warnings.append)
    return src, out, summary, report, manifest, warnings


@pytest.fixture(scope="module")
def tight(tmp_path_factory, synthesizer):
    base = tmp_path_factory.mktemp("tight")
    src = base / "tight.srt"
    src.write_text(TIGHT, encoding="utf-8")
    original = base / "original.wav"
    rate = 44100
    t = np.arange(round(9.5 * rate)) / rate
    music = 0.2 * np.sin(2 * np.pi * 110 * t)
    sf.write(original, np.stack([music, music], axis=1).astype(np.float32), rate)
    out = base / "out"
    summary, report, manifest = run(
        src, out, synthesizer, speed_limit=SPEED_LIMIT, mix=original, duck_db=12
    )
    return src, out, summary, report, manifest, original


def check_timeline(out: Path, report: dict) -> None:
    """Every cue starts at its cue, ends inside its slot (or, flagged, before the next cue, or
    flagged with the seconds it runs over the next line: a line is never cut), stays within the
    speed limit, and nothing sounds anywhere else on the track."""
    track, rate = sf.read(out / "track.wav", dtype="float32")
    assert rate == report["sample_rate"] and abs(len(track) / rate - report["duration_s"]) < 1e-3
    cues = report["cues"]
    voiced = np.zeros(len(track), dtype=bool)
    for position, cue in enumerate(cues):
        assert cue["placed_start"] == cue["start"]
        assert cue["stretch"] <= report["options"]["speed_limit"] + 1e-9
        assert cue["stretch"] == pytest.approx(min(max(cue["needed_stretch"], 1.0), SPEED_LIMIT))
        assert cue["slot_seconds"] >= cue["end"] - cue["start"] - 1e-9
        following = cues[position + 1]["start"] if position + 1 < len(cues) else None
        if following is not None:
            assert cue["slot_end"] <= following  # a slot never reaches into the next cue
            # an overrun may use the silence before the next cue, less the gap kept before it
            limit = max(cue["end"], following - report["options"]["min_gap_s"])
            assert cue["placed_end"] <= limit + cue["overlap_next_seconds"] + 1e-3
            if cue["overlap_next_seconds"] > 0:
                assert cue["flagged"] and cue["placed_end"] > limit
                assert any("over the next line" in r for r in cue["flag_reasons"])
        if not cue["flagged"]:
            assert cue["placed_end"] <= cue["slot_end"] + 1e-3
            assert cue["overlap_seconds"] == 0 and cue["overlap_next_seconds"] == 0
        else:
            assert cue["flag_reasons"]
        first, last = round(cue["placed_start"] * rate), round(cue["placed_end"] * rate)
        assert np.abs(track[first:last]).max() > 0.05  # the line is there
        voiced[first:last] = True
    assert np.abs(track[~voiced]).max(initial=0.0) == 0.0  # silence between slots


def test_sintel_cues_are_placed_inside_their_slots(sintel):
    _, out, summary, report, _, warnings = sintel
    assert warnings == []
    assert [c["text"] for c in report["cues"]] == [
        "This blade has a dark past.",
        "It has shed much innocent blood.",
        "You're a fool for traveling alone, so completely unprepared.",
        "You're lucky your blood's still flowing.",
    ]
    # slots: to the cue's end plus at most 1 s of the silence before the next cue
    assert [c["slot_seconds"] for c in report["cues"]] == [4.25, 5.0, 3.65, 4.05]
    check_timeline(out, report)
    assert summary.cues == 4 and summary.flagged == report["stats"]["flagged"]
    assert report["duration_s"] == pytest.approx(124.8 + 1.0)  # last end + the tail


def test_sintel_report_manifest_and_voiced_srt(sintel):
    _, out, summary, report, manifest, _ = sintel
    assert manifest["n"] == 2 and manifest["dub"] == "dub.json"
    assert manifest["book"]["wav"] == "track.wav" and (out / "track.flac").is_file()
    assert [u["text"] for u in manifest["utterances"]] == [c["text"] for c in report["cues"]]
    gates = manifest["selection"]["gates"]
    assert {"metric": "stretch", "max": 1.25, "margin": 0.25} in gates
    for cue, utterance in zip(report["cues"], manifest["utterances"], strict=True):
        assert set(cue) >= {
            "index",
            "start",
            "end",
            "text",
            "slot_seconds",
            "speech_seconds",
            "stretch",
            "overlap_seconds",
            "flagged",
            "scores",
        }
        assert {"stretch", "duration_fit", "wer"} <= set(cue["scores"])
        assert cue["key"] == utterance["key"] and cue["flagged"] >= utterance["flagged"]
        assert (out / cue["audio"]).is_file()
    voiced = list(srt.parse((out / "voiced.srt").read_text(encoding="utf-8")))
    assert [s.content for s in voiced] == [c["text"] for c in report["cues"]]
    assert [s.end.total_seconds() for s in voiced] == pytest.approx(
        [c["placed_end"] for c in report["cues"]], abs=1e-3
    )
    assert summary.candidates_generated == manifest["stats"]["candidates_generated"] > 0


def test_a_given_synthesizer_s_start_up_is_reported_by_its_first_dub(synthesizer, tmp_path):
    # as load_ray_synthesizer records the seconds it took to start the actors
    loaded = Synthesizer(synthesizer.generator, synthesizer.verifiers, synthesizer.config)
    loaded.stats.seconds["load"] = 2.5
    src = sintel_subset(tmp_path / "sintel-1.srt", 1)
    _, _, first = run(src, tmp_path / "first", loaded)
    assert first["stats"]["seconds"]["load"] >= 2.5
    _, _, second = run(src, tmp_path / "second", loaded)  # reported once, not by every dub
    assert second["stats"]["seconds"].get("load", 0.0) < 2.5


def test_rerun_reuses_the_store(sintel, synthesizer):
    src, out, first, report, _, _ = sintel
    track = (out / "track.wav").read_bytes()
    again, again_report, _ = run(src, out, synthesizer)
    assert again.candidates_generated == 0
    assert again_report["cues"] == report["cues"]
    assert (out / "track.wav").read_bytes() == track


def test_a_damaged_loser_is_reported_and_generated_again(sintel, synthesizer, tmp_path):
    import shutil

    _, out, _, _, manifest, _ = sintel
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    src = copy.parent / "sintel-4.srt"
    shutil.copy(sintel[0], src)
    utterance = next(u for u in manifest["utterances"] if u["winner"] == 0)
    loser = copy / utterance["candidates"][1]["audio"]
    loser.unlink()
    summary, _, again = run(src, copy, synthesizer)
    assert summary.damaged == (
        f"candidate {loser.stem}: its audio file is missing; generated again",
    )
    assert summary.candidates_generated == 1 and loser.is_file()

    # its audio came back identical (the stored digest), so did its scores and every decision
    def results(m):
        return [(u["key"], u["winner"], [c["scores"] for c in u["candidates"]])
                for u in m["utterances"]]  # fmt: skip

    assert results(again) == results(manifest)


def test_tight_slots_stretch_within_the_limit_and_flag_what_cannot_fit(tight):
    _, out, summary, report, _, _ = tight
    cues = {c["index"]: c for c in report["cues"]}
    assert sorted(cues) == [1, 2, 3, 4]  # cue 5 has nothing to say
    assert report["skipped"][0]["index"] == 5 and "nothing to say" in report["warnings"][0]
    check_timeline(out, report)
    # cue 2 has no silence before cue 3: at the speed limit it is still too long, so it runs on
    # over cue 3's start, whole (never cut), flagged with how far
    assert cues[2]["stretch"] == SPEED_LIMIT and cues[2]["overlap_next_seconds"] > 0
    assert cues[2]["placed_end"] == pytest.approx(3.3 + cues[2]["overlap_next_seconds"], abs=1e-3)
    assert cues[2]["placed_end"] - cues[2]["placed_start"] == pytest.approx(
        cues[2]["speech_seconds"] / SPEED_LIMIT, abs=2e-3
    )
    # cue 3 runs on into the silence before cue 4, as far as it needs
    assert cues[3]["overlap_seconds"] > 0
    assert cues[3]["placed_end"] - cues[3]["placed_start"] == pytest.approx(
        cues[3]["speech_seconds"] / SPEED_LIMIT, abs=2e-3
    )
    # the report lists the overruns first, longest first
    listed = [o["index"] for o in report["overruns"]]
    assert set(listed) >= {2, 3}
    lengths = [o["overlap_seconds"] + o["overlap_next_seconds"] for o in report["overruns"]]
    assert lengths == sorted(lengths, reverse=True)
    assert cues[2]["flagged"] and cues[3]["flagged"]
    assert any("ran" in r and "past its slot" in r for r in cues[3]["flag_reasons"])
    assert not cues[4]["flagged"] and cues[4]["stretch"] == 1.0
    assert summary.flagged == report["stats"]["flagged"] >= 2
    assert report["stats"]["max_stretch"] <= SPEED_LIMIT
    assert summary.overran == report["stats"]["overran"] >= 2


def test_flags_say_in_words_what_is_wrong(tight):
    """Cues 2 and 3 cannot fit their slots: every candidate fails the stretch gate, and the
    report says so in a listener's words, with the gates it failed beside for tools."""
    _, _, _, report, _, _ = tight
    from verifiers import VERIFIERS

    metric_names = {"stretch", "duration_ratio", "speech_ratio", "asr_min_logprob", "speaker"}
    for cue in report["cues"]:
        assert isinstance(cue["notes"], list)
        gated = [r for r in cue["flag_reasons"] if r.startswith("no candidate passed the gates")]
        if gated:
            assert cue["failed_gates"], "the failed gates are kept for tools"
            assert not any(name in gated[0] for name in metric_names | set(VERIFIERS))
    reasons = " ".join(r for c in report["cues"] for r in c["flag_reasons"])
    assert "too long for its slot: needs" in reasons


def test_mix_ducks_the_original_under_the_dub(tight):
    _, out, summary, report, _, original = tight
    mix, rate = sf.read(out / "mix.wav", dtype="float32")
    source, source_rate = sf.read(original, dtype="float32")
    assert summary.mix == out / "mix.wav" and rate == source_rate and mix.shape == source.shape
    # between lines (6.9-7.4 s has no speech and no ramp) the original plays at full level
    quiet = slice(round(7.4 * rate), round(7.45 * rate))
    assert np.allclose(mix[quiet], source[quiet] * report["mix_gain"], atol=2e-3)


def test_slots_extend_into_silence_but_never_into_the_next_cue():
    cues = [
        Cue(1, 1.0, 2.0, "a", None, 1),
        Cue(2, 2.3, 3.0, "b", None, 5),
        Cue(3, 3.0, 4.0, "c", None, 9),
        Cue(4, 9.0, 10.0, "d", None, 13),
    ]
    options = DubOptions(max_extend_s=1.0, min_gap_s=0.1)
    slots = compute_slots(cues, options, track_end=10.5)
    assert [(s.start, s.end, s.limit) for s in slots] == [
        (1.0, pytest.approx(2.2), pytest.approx(2.2)),  # 0.3 s of silence, less the gap
        (2.3, 3.0, 3.0),  # the next cue starts at its end: no extension at all
        (3.0, 5.0, pytest.approx(8.9)),  # bounded by max_extend_s; may overrun up to the gap
        (9.0, 10.5, 10.5),  # the last one up to the track's end
    ]


def test_time_stretch_keeps_pitch_and_hits_the_length():
    rate = 22050
    t = np.arange(2 * rate) / rate
    audio = (0.5 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    fast = time_stretch(audio, rate, 1.25)
    assert len(fast) == round(len(audio) / 1.25)
    spectrum = np.abs(np.fft.rfft(fast[rate // 10 : -rate // 10]))
    frequency = np.fft.rfftfreq(len(fast) - 2 * (rate // 10), 1 / rate)[np.argmax(spectrum)]
    assert frequency == pytest.approx(220, abs=3)  # a resampler would give 275 Hz
    assert np.array_equal(time_stretch(audio, rate, 1.0), audio)


def test_ducking_lowers_the_original_only_under_speech():
    rate = 1000
    original = np.full((5 * rate, 2), 0.5, dtype=np.float32)
    gain = duck_gain(original.shape[0], rate, [(2.0, 3.0, 12.0)], 0.15, 0.3)
    mix = original * gain[:, None]
    assert mix.shape == original.shape
    assert mix[500, 0] == pytest.approx(0.5)  # before the attack
    assert mix[2500, 0] == pytest.approx(0.5 * 10 ** (-12 / 20), rel=1e-3)  # under speech
    assert mix[4000, 1] == pytest.approx(0.5)  # after the release
    assert 0.126 < mix[1900, 0] < 0.5  # the ramp down starts before the speech


def test_ducking_holds_late_in_a_long_film():
    rate = 48_000  # 400 s in: sample positions past float32's exact integers
    gain = duck_gain(420 * rate, rate, [(400.0, 401.0, 12.0)], 0.15, 0.3)
    assert gain[round(400.5 * rate)] == pytest.approx(10 ** (-12 / 20), rel=1e-5)
    assert gain[round(399.0 * rate)] == 1.0 and gain[round(402.0 * rate)] == 1.0
    assert 10 ** (-12 / 20) < gain[round(399.9 * rate)] < 1.0  # the attack ramp


def test_settings_from_the_config_table_and_bad_values():
    table = {"speed_limit": 1.1, "voices": {"ANNA": "f3"}}
    settings = dub_settings(table, speed_limit=None, duck_db=6.0, voices={"BOB": "m1"})
    assert settings == {"speed_limit": 1.1, "duck_db": 6.0, "voices": {"ANNA": "f3", "BOB": "m1"}}
    build_config({"dub": table})  # the render config leaves [dub] to the dub command
    with pytest.raises(UserError, match=r"unknown key\(s\) in \[dub\]: speed"):
        dub_settings({"speed": 1.2})
    with pytest.raises(UserError, match="--speed-limit"):
        DubOptions(speed_limit=0.9)
    with pytest.raises(UserError, match="--duration"):
        DubOptions(duration=-1.0)


def test_a_library_callers_dub_table_is_used_and_arguments_override_it(tmp_path, synthesizer):
    table = {"dub": {"speed_limit": 1.1, "min_gap_s": 0.3, "voices": {"SINTEL": "f3"}}}
    config = build_config(table, candidates=2, generator="espeak")
    own = Synthesizer(synthesizer.generator, synthesizer.verifiers, config)
    src = sintel_subset(tmp_path / "s.srt", 2)
    _, report, manifest = run(src, tmp_path / "out", own)
    assert report["options"]["speed_limit"] == 1.1 and report["options"]["min_gap_s"] == 0.3
    assert report["options"]["voices"] == {"SINTEL": "f3"}
    assert all(cue["stretch"] <= 1.1 + 1e-9 for cue in report["cues"])
    assert {g["metric"]: g.get("max") for g in manifest["selection"]["gates"]}["stretch"] == 1.1
    assert manifest["config"]["dub"]["speed_limit"] == 1.1  # what the dub ran with
    # a keyword argument (the CLI's flag) replaces the table's value; a voice map merges
    _, report, manifest = run(src, tmp_path / "out", own, speed_limit=1.2, voices={"X": "m1"})
    assert report["options"]["speed_limit"] == 1.2 and report["options"]["min_gap_s"] == 0.3
    assert report["options"]["voices"] == {"SINTEL": "f3", "X": "m1"}
    assert manifest["config"]["dub"]["speed_limit"] == 1.2


def test_bad_input_fails_before_any_synthesis(tmp_path, synthesizer):
    config = synthesizer.config
    src = sintel_subset(tmp_path / "s.srt", 2)
    with pytest.raises(UserError, match="does not exist"):
        dub(tmp_path / "nope.srt", tmp_path / "out", config, synthesizer=synthesizer)
    with pytest.raises(UserError, match="--mix .* does not exist"):
        dub(src, tmp_path / "out", config, mix=tmp_path / "none.wav", synthesizer=synthesizer)
    not_audio = tmp_path / "notes.wav"
    not_audio.write_text("not audio")
    with pytest.raises(UserError, match="not an audio file"):
        dub(src, tmp_path / "out", config, mix=not_audio, synthesizer=synthesizer)
    with pytest.raises(UserError, match="ends before the first cue"):
        dub(src, tmp_path / "out", config, duration=60.0, synthesizer=synthesizer)
    assert not (tmp_path / "out").exists()


def test_duration_cuts_the_track_and_drops_later_cues(tmp_path, synthesizer):
    src = sintel_subset(tmp_path / "s.srt", 2)
    warnings: list[str] = []
    summary, report, _ = run(
        src,
        tmp_path / "out",
        replace_config(synthesizer, 1),
        duration=112.0,
        on_warning=warnings.append,
    )
    assert report["duration_s"] == 112.0 and summary.cues == 2
    assert report["cues"][1]["end"] == 112.0 and "ends after --duration" in warnings[0]
    check_timeline(tmp_path / "out", report)


def replace_config(synthesizer: Synthesizer, n: int) -> Synthesizer:
    return Synthesizer(
        synthesizer.generator, synthesizer.verifiers, replace(synthesizer.config, candidates=n)
    )


def test_cli_dub_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.srt"
    bad.write_text("1\n00:00:01,000 --> 00:00:00,500\nHi.\n", encoding="utf-8")
    command = [sys.executable, "-m", "verified_tts", "dub", str(bad), "--out", str(tmp_path / "o")]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cue 1 (line 2) ends" in lines[0]
    result = subprocess.run(
        [*command[:-2], "--speed-limit", "0.5"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 2 and "--speed-limit" in result.stderr


@pytest.mark.slow
def test_cli_dub_end_to_end(tmp_path):
    src = sintel_subset(tmp_path / "s.srt", 1)
    config = tmp_path / "dub.toml"
    config.write_text('[dub]\nspeed_limit = 1.2\n[dub.voices]\nANNA = "m3"\n', encoding="utf-8")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "verified_tts", "dub", str(src), "--out", str(out)]
    result = subprocess.run(
        [*command, "-n", "1", "--config", str(config), "--generator", "espeak"],  # m3: espeak
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "dubbed into" in result.stderr and "fit without stretching" in result.stderr
    report = json.loads((out / "dub.json").read_text())
    assert report["options"]["speed_limit"] == 1.2 and report["n"] == 1
    assert report["options"]["voices"] == {"ANNA": "m3"}
    assert (out / "track.wav").is_file() and (out / "manifest.json").is_file()
