"""Dubbing films of every common layout: mono, stereo, 5.1 and 7.1 AAC soundtracks, checked as a
player and a broadcaster would.

The first three Sintel cues (moved to the start) are dubbed with the fast generator into four
generated 17-second films, one per layout, one after another into one output folder, so the
lines are voiced once and the later films reuse them from the store. Each dubbed film is read
back with PyAV: the streams a player sees (codec, layout, language, default flag, duration within
one video frame of the source), the video and original audio packets bit for bit, the dub's
loudness by the project's meter and by pyloudnorm, and where the dialogue sits (the centre
channel of 5.1 and 7.1, the middle of stereo). The bad-input cases (a stem of another layout, a
film whose layout cannot be dubbed, messy subtitles, a failed mux) are each one line before any
line is voiced, or a rerun without synthesis.
"""

from __future__ import annotations

import json
import shutil
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from verified_tts.errors import UserError
from verified_tts.output.channels import LAYOUTS
from verified_tts.output.loudness import measure_loudness
from verified_tts.storage.store import STORE_DIR
from verified_tts.testing.films import (
    RATE,
    channel_rise_db,
    decoded,
    make_film,
    packets,
    reference_lufs,
    soundtrack,
    streams,
    video_packets,
)
from verified_tts.workflows.dub import dub

SINTEL = Path(__file__).resolve().parent / "data" / "sintel-en.srt"
SHIFT_S = 106.0  # the first cue starts at 107.25 s: moved to 1.25 s
SECONDS = 17.0
FPS = 10
TARGET = -23.0


def sintel_start(path: Path, cues: int = 3) -> tuple[Path, list[tuple[float, float]]]:
    """The first ``cues`` Sintel cues, moved ``SHIFT_S`` earlier; and their (start, end)."""
    import srt

    parsed = list(srt.parse(SINTEL.read_text(encoding="utf-8")))[:cues]
    for subtitle in parsed:
        subtitle.start -= timedelta(seconds=SHIFT_S)
        subtitle.end -= timedelta(seconds=SHIFT_S)
    path.write_text(srt.compose(parsed), encoding="utf-8")
    return path, [(s.start.total_seconds(), s.end.total_seconds()) for s in parsed]


@pytest.fixture(scope="module")
def dubbed(tmp_path_factory, synthesizer_factory):
    """Each layout's source film, dubbed film, dub.json and summary; one synthesis for all."""
    folder = tmp_path_factory.mktemp("films")
    subtitles, cues = sintel_start(folder / "sintel.srt")
    synthesizer = synthesizer_factory(candidates=2)
    out = folder / "out"
    found = {}
    for channels in LAYOUTS:
        # the stereo film carries no language tag: --original-language gives it one
        source = make_film(folder / f"film{channels}.mp4", SECONDS, channels, dialogue=cues,
                           fps=FPS, language=None if channels == 2 else "eng")  # fmt: skip
        summary = dub(
            subtitles, out, synthesizer.config, synthesizer=synthesizer, video=source,
            language="es", original_language="en",
        )  # fmt: skip
        report = json.loads((out / "dub.json").read_text(encoding="utf-8"))
        found[channels] = (source, summary.video, report, summary)
    return found, cues, subtitles, synthesizer


@pytest.mark.parametrize("channels", list(LAYOUTS))
def test_each_layout_comes_back_as_a_film_a_player_reads(dubbed, channels):
    films, _, _, _ = dubbed
    source, film, report, _ = films[channels]
    layout = LAYOUTS[channels]
    found = streams(film)
    assert [s["type"] for s in found] == ["video", "audio", "audio", "subtitle"]
    dub_track, original, text = found[1], found[2], found[3]
    assert [dub_track[k] for k in ("codec", "layout", "language")] == ["aac", layout, "spa"]
    assert dub_track["default"] and not original["default"]  # the dub first and default
    assert [original[k] for k in ("codec", "layout", "language")] == ["aac", layout, "eng"]
    assert (text["codec"], text["language"]) == ("mov_text", "spa")
    assert report["mixing"]["layout"] == layout
    # the picture and the original sound are copied, not re-encoded
    assert video_packets(film) == video_packets(source)
    assert packets(film, "audio", 1) == packets(source, "audio", 0)
    # every track lasts as long as the source, to one video frame
    source_streams = streams(source)
    for stream in found[:2]:
        assert abs(stream["seconds"] - source_streams[0]["seconds"]) <= 1 / FPS, stream
    delivered, rate = decoded(film, 0)
    assert abs(delivered.shape[0] / rate - SECONDS) <= 1 / FPS


@pytest.mark.parametrize("channels", list(LAYOUTS))
def test_each_layout_meets_the_loudness_target_by_both_meters(dubbed, channels):
    films, _, _, _ = dubbed
    _, film, report, summary = films[channels]
    delivered, rate = decoded(film, 0)
    ours = measure_loudness(delivered, rate)
    assert ours.integrated_lufs == pytest.approx(TARGET, abs=0.5)
    assert reference_lufs(delivered, rate) == pytest.approx(TARGET, abs=1.0)
    assert ours.true_peak_dbtp <= -1.0 + 0.3
    assert summary.loudness["integrated_lufs"] == pytest.approx(TARGET, abs=0.1)


def _spans(cues):
    during = [(start + 0.2, end - 0.2) for start, end in cues]
    between = [(end + 0.6, following - 0.4)
               for (_, end), (following, _) in zip(cues, cues[1:], strict=False)]  # fmt: skip
    return during, between


@pytest.mark.parametrize("channels", [6, 8])
def test_in_surround_the_dialogue_is_in_the_centre_channel(dubbed, channels):
    """During the cues the centre rises by the dub; the surrounds only dip (ducked): the
    centre's rise is at least 10 dB above theirs."""
    films, cues, _, _ = dubbed
    delivered, rate = decoded(films[channels][1], 0)
    rise = channel_rise_db(delivered, rate, *_spans(cues))
    surrounds = rise[4:]
    assert rise[2] - surrounds.max() >= 10.0, rise
    assert np.all(surrounds <= 0.5)  # the bed under the lines is ducked, nothing added


def test_in_stereo_the_dialogue_is_centred_and_in_mono_mixed_in(dubbed):
    films, cues, _, _ = dubbed
    stereo, rate = decoded(films[2][1], 0)
    mid_side = np.stack([stereo[:, 0] + stereo[:, 1], stereo[:, 0] - stereo[:, 1]], axis=1)
    mid, side = channel_rise_db(mid_side, rate, *_spans(cues))
    assert mid - side >= 10.0 and side <= 0.5  # the same on both channels: cancels in L-R
    mono, rate = decoded(films[1][1], 0)
    assert channel_rise_db(mono, rate, *_spans(cues))[0] >= 3.0


def test_the_later_films_reuse_the_voiced_lines(dubbed):
    films, _, _, _ = dubbed
    first, *later = [films[channels][3] for channels in LAYOUTS]
    assert first.candidates_generated > 0
    assert all(s.candidates_generated == 0 and s.candidates_reused > 0 for s in later)


def test_a_mono_stem_is_spread_and_a_stem_of_another_layout_refused(dubbed, tmp_path):
    films, _, subtitles, synthesizer = dubbed
    surround = films[6][0]
    stereo_stem, mono_stem = tmp_path / "me-stereo.wav", tmp_path / "me-mono.wav"
    sf.write(stereo_stem, soundtrack(2)(0, round(SECONDS * RATE)), RATE)
    sf.write(mono_stem, soundtrack(1)(0, round(SECONDS * RATE)), RATE)
    out = tmp_path / "refused"
    with pytest.raises(UserError) as caught:
        dub(subtitles, out, synthesizer.config, synthesizer=synthesizer, video=surround,
            background=stereo_stem)  # fmt: skip
    message = str(caught.value)
    assert "is stereo but film6.mp4 is 5.1" in message and "\n" not in message
    assert not out.exists()  # refused before any work
    # a mono stem is matched: spread over the front left and right, the centre left to the dub
    spread = tmp_path / "spread"
    shutil.copytree(films[6][1].parent / STORE_DIR, spread / STORE_DIR)
    summary = dub(subtitles, spread, synthesizer.config, synthesizer=synthesizer,
                  video=surround, background=mono_stem)  # fmt: skip
    assert summary.candidates_generated == 0
    delivered, rate = decoded(summary.video, 0)
    levels = np.sqrt(np.mean(np.square(delivered[round(16.0 * RATE) :]), axis=0))
    assert levels[0] == pytest.approx(levels[1], rel=0.05) and levels[0] > 100 * levels[4]


def test_a_layout_that_cannot_be_dubbed_is_one_line_before_any_synthesis(tmp_path, dubbed):
    import av

    _, _, subtitles, synthesizer = dubbed
    film = tmp_path / "quad.mp4"
    with av.open(str(film), "w") as out:  # 4.0: front and back pairs, no centre
        video = out.add_stream("libx264", rate=FPS)
        video.width, video.height, video.pix_fmt = 32, 24, "yuv420p"
        sound = out.add_stream("aac", rate=RATE)
        sound.layout = "quad"
        for _ in range(5):
            out.mux(video.encode(av.VideoFrame(32, 24, "yuv420p")))
        out.mux(video.encode(None))
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 4096), np.float32), "flt", "quad")
        frame.rate = RATE
        out.mux(sound.encode(frame))
        out.mux(sound.encode(None))
    with pytest.raises(UserError, match="has 4 audio channels: a dub is mixed in mono, stereo"):
        dub(subtitles, tmp_path / "out", synthesizer.config, synthesizer=synthesizer, video=film)
    assert not (tmp_path / "out").exists()


def test_a_failed_mux_keeps_the_voiced_lines_and_reruns_without_synthesis(dubbed, tmp_path):
    films, _, subtitles, synthesizer = dubbed
    source = films[2][0]
    out = tmp_path / "out"  # a fresh folder: the first run voices the lines
    blocker = out / "film2.dub.mp4"  # a folder where the film goes: the rename fails
    blocker.mkdir(parents=True)
    with pytest.raises(UserError) as caught:
        dub(subtitles, out, synthesizer.config, synthesizer=synthesizer, video=source)
    message = str(caught.value)
    assert "writing film2.dub.mp4 failed" in message and "voiced lines are kept" in message
    assert "\n" not in message
    blocker.rmdir()
    started = time.perf_counter()
    summary = dub(subtitles, out, synthesizer.config, synthesizer=synthesizer, video=source)
    assert summary.candidates_generated == 0 and summary.video.is_file()
    assert time.perf_counter() - started < 30.0


def test_the_mix_streams_in_memory_that_does_not_grow_with_the_film(tmp_path):
    """The proxy for the two-hour benchmark: the most memory Python and numpy hold at once while
    an 80-second stereo bed is mixed, measured and delivered is no more than 1.2 times what a
    20-second one needs."""
    import tracemalloc

    from verified_tts.output.bed import read_bed
    from verified_tts.output.mix import MixSettings, plan_mix
    from verified_tts.output.timeline import Timeline

    line = (0.3 * np.sin(2 * np.pi * 200 * np.arange(RATE) / RATE)).astype(np.float32)

    def peak(seconds: float) -> int:
        stem = tmp_path / f"bed{seconds:g}.wav"
        sound = soundtrack(2)
        with sf.SoundFile(stem, "w", samplerate=RATE, channels=2, subtype="FLOAT") as handle:
            for first in range(0, round(seconds * RATE), 10 * RATE):
                handle.write(sound(first, min(round(seconds * RATE), first + 10 * RATE)))
        bed, _ = read_bed(None, None, stem)
        lines = [(float(start), start + 1.0) for start in range(2, int(seconds) - 2, 7)]
        track = Timeline(RATE, round(seconds * RATE),
                         tuple((round(a * RATE), line) for a, _ in lines))  # fmt: skip
        tracemalloc.start()
        plan = plan_mix(track, bed, lines, MixSettings(), length_s=seconds)
        for _ in plan.blocks():
            pass
        result = plan.result()
        _, most = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert result.loudness.integrated_lufs == pytest.approx(-23.0, abs=0.5)
        assert result.channels == 2 and len(result.cues) == len(lines)
        return most

    short, long = peak(20.0), peak(80.0)
    assert long <= 1.2 * short, (short, long)
