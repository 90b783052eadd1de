"""Dubbing into a film: the picture copied, the mix at its loudness over the background, muxed.

A six-second film is made with PyAV (moving frames; a soundtrack of two tones under noise, with a
speech-like buzz as the original dialogue during the cues), and a music-and-effects stem of the
same background. Two speakers' subtitles are dubbed with the fast generator into the film, once
over the film's own audio (ducked by the set depth) and once over the stem (ducked only as far as
the dialogue-to-background ratio needs). The files are checked as a player and a broadcaster
would: streams, tags and default flags, the video packets bit for bit, the bed's level between and
under the lines (measured by taking the placed dub back out of the mix), loudness and true peak.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from video_fixtures import RATE, background, make_film, speech_like, video_packets

from verified_tts.audio import resample
from verified_tts.errors import UserError
from verified_tts.output.loudness import measure_loudness
from verified_tts.workflows.dub import dub

SECONDS = 6.0
SUBTITLES = """1
00:00:00,600 --> 00:00:02,000
<v Anna>The boat is ready.

2
00:00:02,600 --> 00:00:03,800
<v Ben>Then we leave tonight.

3
00:00:04,400 --> 00:00:05,400
<v Anna>Good.
"""
LINES = [(0.6, 2.0), (2.6, 3.8), (4.4, 5.4)]
DUCK_DB = 12.0


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    folder = tmp_path_factory.mktemp("film")
    bed = background(SECONDS)
    original = bed + speech_like(SECONDS, LINES)[:, None]
    film = make_film(folder / "film.mp4", SECONDS, audio=original)
    stem = folder / "me.wav"
    sf.write(stem, bed, RATE, subtype="FLOAT")
    subtitles = folder / "film.srt"
    subtitles.write_text(SUBTITLES, encoding="utf-8")
    return folder, film, stem, subtitles, bed


def dub_film(material, synthesizer, name: str, **options):
    folder, film, _, subtitles, _ = material
    out = folder / name
    summary = dub(
        subtitles,
        out,
        synthesizer.config,
        synthesizer=synthesizer,
        video=film,
        voices={"Anna": "f3", "Ben": "m3"},
        language="es",
        **options,
    )
    return out, summary, json.loads((out / "dub.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def over_original(material, synthesizer_factory):
    return dub_film(material, synthesizer_factory(candidates=2), "original", duck_db=DUCK_DB)


@pytest.fixture(scope="module")
def over_stem(material, synthesizer_factory):
    _, _, stem, _, _ = material
    return dub_film(
        material, synthesizer_factory(candidates=2), "stem", background=stem,
        dialogue_ratio_db=20.0, loudness_lufs=-16.0,
    )  # fmt: skip


def streams(path: Path) -> list[dict]:
    import av

    with av.open(str(path)) as container:
        return [
            {
                "type": s.type,
                "codec": s.codec_context.name,
                "language": s.metadata.get("language"),
                "default": bool(int(s.disposition) & 1),
            }
            for s in container.streams
        ]


def decoded_track(path: Path, index: int) -> tuple[np.ndarray, int]:
    """Audio track ``index`` (0 = the first audio track) of a film, decoded."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.audio[index]
        blocks = [frame.to_ndarray().T for frame in container.decode(stream)]
        return np.concatenate(blocks).astype(np.float32), stream.codec_context.sample_rate


def bed_level_db(mix: np.ndarray, dub_part: np.ndarray, bed: np.ndarray, start: float, end: float):
    """The bed's level in the mix against the bed alone (dB), in [start, end) seconds: the
    placed dub (scaled as the mix scaled it) is taken back out of the mix first."""
    first, last = round(start * RATE), round(end * RATE)
    residual = mix[first:last] - dub_part[first:last]
    return 20 * np.log10(np.sqrt(np.mean(residual**2)) / np.sqrt(np.mean(bed[first:last] ** 2)))


def test_the_dubbed_film_keeps_the_picture_and_adds_a_default_language_track(
    material, over_original
):
    _, film, _, _, _ = material
    out, summary, report = over_original
    dubbed = out / "film.dub.mp4"
    assert summary.video == dubbed and report["video"] == "film.dub.mp4"
    assert video_packets(dubbed) == video_packets(film)  # copied, not re-encoded
    found = streams(dubbed)
    assert [s["type"] for s in found] == ["video", "audio", "audio", "subtitle"]
    dub_track, kept, text = found[1], found[2], found[3]
    assert dub_track["codec"] == "aac" and dub_track["language"] == "spa" and dub_track["default"]
    assert kept["codec"] == "aac" and not kept["default"]  # the original, second
    assert text["codec"] == "mov_text" and text["language"] == "spa"
    original, _ = decoded_track(dubbed, 1)
    source, _ = decoded_track(film, 0)
    assert np.array_equal(original, source)  # the original audio packets copied too


def test_every_line_sits_in_its_cue_window_and_subtitles_follow_what_was_spoken(over_original):
    out, _, report = over_original
    import srt

    cues = report["cues"]
    assert [c["speaker"] for c in cues] == ["Anna", "Ben", "Anna"]
    assert [c["voice"] for c in cues] == ["f3", "m3", "f3"]
    for cue, (start, _) in zip(cues, LINES, strict=True):
        assert cue["placed_start"] == pytest.approx(start)
        assert cue["placed_end"] <= cue["slot_end"] + 1e-3 or cue["flagged"]
    spoken = list(srt.parse((out / "voiced.srt").read_text(encoding="utf-8")))
    assert [s.content for s in spoken] == [c["text"] for c in cues]
    assert [round(s.end.total_seconds(), 3) for s in spoken] == [c["placed_end"] for c in cues]
    vtt = (out / "voiced.vtt").read_text(encoding="utf-8")
    assert vtt.startswith("WEBVTT") and all(c["text"] in vtt for c in cues)


def test_the_original_is_ducked_by_the_set_depth_under_the_lines(material, over_original):
    _, _, _, _, bed = material
    out, _, report = over_original
    mix, rate = sf.read(out / "mix.wav", dtype="float32", always_2d=True)
    track, track_rate = sf.read(out / "track.wav", dtype="float32")
    gain = 10 ** (report["mixing"]["gain_db"] / 20)
    dub_part = resample(track, track_rate, rate)[: mix.shape[0], None] * gain
    original = bed + speech_like(SECONDS, LINES)[:, None]
    # between the lines (away from the ramps) the original plays, scaled by the loudness gain
    between = bed_level_db(mix, dub_part, original, 2.35, 2.45)
    assert between == pytest.approx(report["mixing"]["gain_db"], abs=0.3)
    for cue in report["cues"]:
        assert cue["mix"]["ducked_db"] >= DUCK_DB
        middle = (cue["placed_start"] + cue["placed_end"]) / 2
        under = bed_level_db(mix, dub_part, original, middle - 0.1, middle + 0.1)
        expected = report["mixing"]["gain_db"] - cue["mix"]["ducked_db"]
        assert under == pytest.approx(expected, abs=0.5)


def test_over_a_stem_the_ratio_holds_and_the_mix_meets_its_loudness_target(material, over_stem):
    _, _, _, _, bed = material
    out, summary, report = over_stem
    mixing = report["mixing"]
    assert mixing["bed"] == "background" and mixing["target_lufs"] == -16.0
    for cue in report["cues"]:
        assert cue["mix"]["dialogue_to_bed_db"] >= 20.0 - 0.5  # the ratio asked for
    mix, rate = sf.read(out / "mix.wav", dtype="float32", always_2d=True)
    measured = measure_loudness(mix, rate)
    assert measured.integrated_lufs == pytest.approx(-16.0, abs=0.5)
    assert measured.true_peak_dbtp <= -1.0 + 0.3
    assert summary.loudness == mixing["measured"]
    # what the film carries, decoded from its AAC track, holds the same figures
    delivered, delivered_rate = decoded_track(out / "film.dub.mp4", 0)
    heard = measure_loudness(delivered, delivered_rate)
    assert heard.integrated_lufs == pytest.approx(-16.0, abs=0.5)
    assert heard.true_peak_dbtp <= -1.0 + 0.3
    # between the lines the background is audible at the mix's gain
    track, track_rate = sf.read(out / "track.wav", dtype="float32")
    dub_part = resample(track, track_rate, rate)[: mix.shape[0], None] * 10 ** (
        mixing["gain_db"] / 20
    )
    assert bed_level_db(mix, dub_part, bed, 2.35, 2.45) == pytest.approx(
        mixing["gain_db"], abs=0.3
    )


def test_a_matroska_film_comes_back_as_matroska_with_srt_subtitles(
    tmp_path, material, synthesizer_factory
):
    _, _, _, subtitles, bed = material
    film = make_film(tmp_path / "film.mkv", SECONDS, audio=bed, video_codec="mpeg4")
    out = tmp_path / "out"
    summary = dub(
        subtitles, out, synthesizer_factory(candidates=1).config,
        synthesizer=synthesizer_factory(candidates=1), video=film,
    )  # fmt: skip
    assert summary.video == out / "film.dub.mkv"
    found = streams(summary.video)
    assert [s["codec"] for s in found] == ["mpeg4", "aac", "aac", "srt"]
    assert found[1]["language"] == "eng" and found[1]["default"]  # the voice's language
    assert video_packets(summary.video) == video_packets(film)


def test_a_film_without_audio_plays_the_dub_alone_and_says_so(
    tmp_path, material, synthesizer_factory
):
    _, _, _, subtitles, _ = material
    film = make_film(tmp_path / "silent.mp4", SECONDS)
    warnings: list[str] = []
    summary = dub(
        subtitles, tmp_path / "out", synthesizer_factory(candidates=1).config,
        synthesizer=synthesizer_factory(candidates=1), video=film, on_warning=warnings.append,
    )  # fmt: skip
    assert any("has no audio track: the dub plays alone" in w for w in warnings)
    found = streams(summary.video)
    assert [s["type"] for s in found] == ["video", "audio", "subtitle"]


def test_bad_films_and_stems_are_one_line_before_any_synthesis(tmp_path, material):
    _, film, _, subtitles, _ = material
    not_video = tmp_path / "notes.mp4"
    not_video.write_text("this is not a film")
    short_stem = tmp_path / "short.wav"
    sf.write(short_stem, background(2.0), RATE)
    cases = [
        (["--video", str(tmp_path / "missing.mp4")], "does not exist"),
        (["--video", str(not_video)], "cannot be read as a video"),
        (["--video", str(film), "--background", str(short_stem)], "give the stem of the whole"),
        (["--video", str(film), "--language", "xx-zz-1"], "is not a language code"),
        (["--video", str(film), "--loudness", "5"], "--loudness must be"),
    ]
    for extra, message in cases:
        out = tmp_path / "out"
        command = [sys.executable, "-m", "verified_tts", "dub", str(subtitles), "--out", str(out),
                   "--generator", "espeak", *extra]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert result.returncode == 2, (extra, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert not out.exists()  # refused before any work


def test_unknown_language_in_the_library_is_a_user_error(tmp_path, material, synthesizer_factory):
    _, film, _, subtitles, _ = material
    with pytest.raises(UserError, match="not a language code"):
        dub(
            subtitles, tmp_path / "out", synthesizer_factory().config,
            synthesizer=synthesizer_factory(), video=film, language="qq-1",
        )  # fmt: skip


def test_a_cast_gives_each_speaker_a_voice_of_its_own_generator(
    tmp_path, material, synthesizer_factory
):
    """Anna on the second embedded voice, Ben on espeak: each cue is spoken by its speaker's
    voice, each voice has its own speaker reference, and the track is at one rate."""
    from verified_tts.cast import read_cast

    _, film, _, subtitles, _ = material
    cast_file = tmp_path / "cast.toml"
    cast_file.write_text(
        'narrator = "espeak:en-us"\n[characters."Anna"]\nvoice = "hibari:heart"\n'
        '[characters."Ben"]\nvoice = "espeak:en-us+m3"\n',
        encoding="utf-8",
    )
    out = tmp_path / "cast"
    synthesizer = synthesizer_factory(candidates=2)
    dub(subtitles, out, synthesizer.config, synthesizer=synthesizer, video=film,
        cast=read_cast(cast_file))  # fmt: skip
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    spoken = [u["spoken_by"] for u in manifest["utterances"]]
    assert spoken == ["hibari:heart", "espeak:en-us+m3", "hibari:heart"]
    voices = manifest["voices"]
    assert voices["hibari:heart"]["generator"] == "hibari"
    assert voices["hibari:heart"]["reference"] == "its own winners"
    track, rate = sf.read(out / "track.wav")
    assert rate == voices["espeak:en-us+m3"]["sample_rate"]  # the hibari lines resampled to it
    assert (out / "film.dub.mp4").is_file()


def test_a_cast_without_a_speakers_voice_is_one_line_before_any_synthesis(
    tmp_path, material, synthesizer_factory
):
    from verified_tts.cast import read_cast

    _, _, _, subtitles, _ = material
    cast_file = tmp_path / "cast.toml"
    cast_file.write_text(
        'narrator = "espeak:en-us"\n[characters."Anna"]\nvoice = "espeak:en-us+f3"\n',
        encoding="utf-8",
    )
    with pytest.raises(UserError, match="gives no voice to Ben"):
        dub(subtitles, tmp_path / "none", synthesizer_factory().config,
            synthesizer=synthesizer_factory(), cast=read_cast(cast_file))  # fmt: skip
    assert not (tmp_path / "none" / "manifest.json").exists()


def test_the_dub_language_defaults_to_the_voices_as_a_bcp47_tag():
    from verified_tts.config import build_config
    from verified_tts.options import DubOptions
    from verified_tts.workflows.dub import _language

    assert _language(DubOptions(), build_config({})) == "en-US"  # Piper's own code is en_US
    assert _language(DubOptions(language="de"), build_config({})) == "de"
