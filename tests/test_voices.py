"""The voice catalogue: one name everywhere, a voices folder, routing by voice, say, mixed rates."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import CLI, ROOT
from tests.piper_fixtures import build_tiny_voice
from verified_tts.config import build_config
from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.generators.voice_set import VoiceSet
from verified_tts.options import EspeakOptions, HibariOptions, PiperOptions
from verified_tts.voices import catalogue, engine_of, find_voice, own_speaker, resolve_voice


@pytest.fixture(scope="module")
def voices_dir(tmp_path_factory) -> Path:
    """A folder with a three-speaker tiny Piper voice, a second one, and two broken entries."""
    folder = tmp_path_factory.mktemp("voices")
    tiny = build_tiny_voice(folder)
    for suffix in ("", ".json"):
        shutil.move(f"{tiny}{suffix}", folder / f"en_GB-tiny-low.onnx{suffix}")
    (folder / "one").mkdir()
    single = build_tiny_voice(folder / "one", speakers={}, sample_rate=22050)
    for suffix in ("", ".json"):
        shutil.move(f"{single}{suffix}", folder / f"de_DE-solo-medium.onnx{suffix}")
    for stem, code in (("en_GB-tiny-low", "en_GB"), ("de_DE-solo-medium", "de_DE")):
        config_path = folder / f"{stem}.onnx.json"
        config = json.loads(config_path.read_text())
        config_path.write_text(json.dumps({**config, "language": {"code": code}}))
    (folder / "lonely.onnx").write_bytes(b"x")  # no config beside it
    (folder / "broken.onnx").write_bytes(b"x")
    (folder / "broken.onnx.json").write_text("{not json")
    return folder


def test_catalogue_lists_the_embedded_voices_and_espeak():
    voices = {v.name: v for v in catalogue()}
    joe, heart = voices["piper:en_US-joe-medium"], voices["hibari:heart"]
    assert (joe.generator, joe.language, joe.gender, joe.sample_rate) == (
        "piper", "en-US", "male", 22050,
    )  # fmt: skip
    assert (heart.generator, heart.language, heart.gender, heart.sample_rate) == (
        "hibari", "en-US", "female", 24000,
    )  # fmt: skip
    assert voices["espeak:en-us"].sample_rate == 22050 and "espeak:de" in voices
    assert all(v.available for v in voices.values())
    assert 'say "' in heart.sample_command() and "--voice hibari:heart" in heart.sample_command()
    # hibari's other voices are downloads: listed only when asked for, never fetched
    everything = {v.name: v for v in catalogue(everything=True)}
    others = [
        v
        for n, v in everything.items()
        if n.startswith("hibari:") and n.partition("@")[0] != "hibari:heart"
    ]
    assert others and all(not v.available for v in others if "downloaded" not in v.note)


def test_voices_folder_reads_each_config(voices_dir):
    voices = {v.name: v for v in catalogue(voices_dir, everything=True)}
    tiny = voices["piper:en_GB-tiny-low"]
    assert tiny.language == "en-GB" and tiny.sample_rate == 16000 and tiny.gender is None
    assert tiny.speakers == ("anna", "ben", "cleo") and tiny.model.endswith("en_GB-tiny-low.onnx")
    assert voices["piper:de_DE-solo-medium"].sample_rate == 22050
    lonely = voices["piper:lonely"]
    assert not lonely.available and "no lonely.onnx.json" in lonely.note
    assert not voices["piper:broken"].available and "unreadable" in voices["piper:broken"].note
    assert "piper:lonely" not in {v.name for v in catalogue(voices_dir)}
    with pytest.raises(UserError, match="does not exist"):
        catalogue(voices_dir / "missing")


def test_names_find_their_voice_and_its_generator(voices_dir):
    assert find_voice("piper:joe").name == "piper:en_US-joe-medium"  # the NAME part of the file
    assert find_voice("piper:joe").generator_config() == GeneratorConfig(name="piper")
    heart = find_voice("hibari:heart").generator_config()
    assert (heart.name, heart.voice) == ("hibari", "heart")
    espeak = find_voice("espeak:en-us+f3")
    assert espeak.gender == "female"
    assert espeak.generator_config().options == EspeakOptions(language="en-us")
    assert espeak.generator_config().voice == "f3"
    speaker = find_voice("piper:tiny:ben", voices_dir)
    assert speaker.name == "piper:en_GB-tiny-low:ben" and speaker.speaker == "ben"
    assert speaker.generator_config().model == speaker.model
    assert engine_of("hibari:heart") == "hibari" and engine_of("tara") is None
    assert engine_of("orpheus:tara") is None  # not a catalogue engine: the generator's own name


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("piper:jo", "did you mean piper:joe"),
        ("piper:tiny:zed", "no speaker 'zed'"),
        ("piper:joe:2", "has one speaker"),
        ("piper:broken", "cannot be loaded"),
        ("hibari:nobody", "unknown voice 'hibari:nobody'"),
        ("espeak:xx-yy", "unknown voice 'espeak:xx-yy'"),
        ("espeak:en-us+zz9", "no voice variant 'zz9'"),
        ("heart", "not a voice name"),
    ],
)
def test_bad_names_are_one_line(voices_dir, name, message):
    with pytest.raises(UserError, match=message) as error:
        find_voice(name, voices_dir)
    assert "\n" not in str(error.value)


def test_config_and_cli_names_pick_the_generator(voices_dir):
    assert build_config({}, voice="hibari:heart").generator.name == "hibari"
    table = {"voices_dir": str(voices_dir), "generator": {"voice": "piper:tiny:cleo"}}
    config = build_config(table)
    assert config.voices_dir == str(voices_dir)
    assert (config.generator.name, config.generator.voice) == ("piper", "cleo")
    assert config.generator.model.endswith("en_GB-tiny-low.onnx")
    assert build_config({}, voice="espeak:en-us+m3").generator.options == EspeakOptions()
    # a generator's own voice names pass unchanged
    assert build_config({}, generator="orpheus", voice="tara").generator.voice == "tara"
    with pytest.raises(UserError, match="spoken by the hibari generator, not piper"):
        build_config({}, generator="piper", voice="hibari:heart")
    with pytest.raises(UserError, match="drop --model"):
        resolve_voice(GeneratorConfig(name="hibari", voice="hibari:heart", model="x.onnx"))


def test_a_line_may_name_the_loaded_voice_only():
    assert own_speaker("piper:joe", "piper", "en_US-joe-medium") is None
    assert own_speaker("piper:en_US-joe-medium:3", "piper", "en_US-joe-medium") == "3"
    assert own_speaker("anna", "piper", "en_US-joe-medium") == "anna"
    with pytest.raises(UserError, match="one render speaks with one generator's voice"):
        own_speaker("hibari:heart", "piper", "en_US-joe-medium")
    assert own_speaker("espeak:en-us+f3", "espeak", "espeak-ng:en-us") == "f3"
    with pytest.raises(UserError, match="is not espeak:en-us, the voice"):
        own_speaker("espeak:de", "espeak", "espeak-ng:en-us")
    joe = load_generator(GeneratorConfig(name="piper"))
    assert joe.speaker_id("piper:joe") == 0
    with pytest.raises(UserError, match="is not piper:en_US-joe-medium"):
        joe.speaker_id("hibari:heart")
    # a book's line in another generator's voice fails when the render is planned
    from verified_tts.pipeline import plan_utterances
    from verified_tts.text.book import parse_book

    book = parse_book("One line.\n\n<!-- tts: voice=piper:joe -->\n\nTwo.\n")
    assert len(plan_utterances(book.segments, joe, base_seed=0, voice=None)) == 2
    other = parse_book("One line.\n\n<!-- tts: voice=hibari:heart -->\n\nTwo.\n")
    with pytest.raises(UserError, match="voice hibari:heart is not piper:en_US-joe-medium"):
        plan_utterances(other.segments, joe, base_seed=0, voice=None)
    espeak = load_generator(GeneratorConfig(name="espeak"))
    spoken = espeak.sample([SynthesisRequest("u", 0, 1, "Hello.", voice="espeak:en-us+f3")])
    assert spoken[0].info["prosody"]["variant"] == "f3"


def test_voice_set_routes_each_line_to_its_generator_and_loads_each_once(voices_dir):
    loads = []

    def counting(config):
        loads.append((config.name, config.model, config.voice))
        return load_generator(config)

    voices = VoiceSet(GeneratorConfig(), voices_dir=voices_dir, load_generator=counting)
    text = "The birch canoe slid on the smooth planks."
    lines = ["piper:joe", "hibari:heart", None, "piper:tiny:anna", "piper:tiny:ben", "hibari:heart"]
    requests = [SynthesisRequest(f"u{k}", 0, 11, text, voice=v) for k, v in enumerate(lines)]
    candidates = voices.sample(requests)
    assert [c.utterance_key for c in candidates] == [r.utterance_key for r in requests]
    assert [c.sample_rate for c in candidates] == [22050, 24000, 22050, 16000, 16000, 24000]
    tiny = find_voice("piper:tiny", voices_dir).model
    expected = [("piper", None, None), ("hibari", None, "heart"), ("piper", tiny, None)]
    # one Piper joe for the default and piper:joe, one tiny voice for both its speakers
    assert sorted(loads, key=str) == sorted(expected, key=str)
    assert not np.array_equal(candidates[3].audio, candidates[4].audio)  # two speakers
    assert np.array_equal(candidates[0].audio, candidates[2].audio)  # piper:joe is the default
    assert np.array_equal(candidates[1].audio, candidates[5].audio)  # same seed, same voice
    heart, joe = voices.identity("hibari:heart"), voices.identity("piper:joe")
    assert heart["generator"] == "hibari" and joe["generator"] == "piper"
    assert voices.identity("piper:tiny:anna") != voices.identity("piper:tiny:ben")
    assert len(voices.loaded) == 3


def test_voice_set_options_apply_per_generator():
    voices = VoiceSet(GeneratorConfig(), options={"hibari": {"speed_jitter": 0.05}})
    assert voices.config_for("hibari:heart").options == HibariOptions(speed_jitter=0.05)
    assert voices.identity("hibari:heart")["sampling"]["speed_jitter"] == 0.05
    assert voices.config_for(None).options == PiperOptions()


def test_mixed_rates_are_resampled_once_at_the_books_rate(tmp_path):
    """A 24 kHz tone in a 22,050 Hz book keeps its pitch and length."""
    from verified_tts.audio import resample
    from verified_tts.options import AssemblyOptions
    from verified_tts.output.assembly import Placed, assemble_book

    seconds, tone = 1.0, 440.0
    at_24k = (0.3 * np.sin(2 * np.pi * tone * np.arange(24000) / 24000)).astype(np.float32)
    moved = resample(at_24k, 24000, 22050)
    assert moved.dtype == np.float32 and len(moved) == 22050
    spectrum = np.abs(np.fft.rfft(moved[2000:-2000] * np.hanning(len(moved) - 4000)))
    peak = np.argmax(spectrum) * 22050 / (len(moved) - 4000)
    assert abs(peak - tone) < 2.0
    assert resample(at_24k, 24000, 24000) is at_24k
    at_22k = (0.3 * np.sin(2 * np.pi * tone * np.arange(22050) / 22050)).astype(np.float32)
    options = AssemblyOptions(master=False, lead_in=0.0, tail=0.0, sentence_pause=0.5)
    placed = [
        Placed(at_22k, 0, "One", "sentence", sample_rate=22050),
        Placed(at_24k, 0, "One", "end", sample_rate=24000),
    ]
    files = assemble_book(placed, 22050, tmp_path, options, formats=("wav",))
    audio, rate = sf.read(tmp_path / files[0].wav)
    assert rate == 22050 and abs(len(audio) / rate - (2 * seconds + 0.5)) < 0.05


def test_cli_voices_and_say(tmp_path, voices_dir):
    listing = tmp_path / "voices.json"
    result = subprocess.run(
        [*CLI, "voices", "--voices-dir", str(voices_dir), "--json", str(listing)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    shown = {v["name"]: v for v in json.loads(listing.read_text())["voices"]}
    expected = {"piper:en_US-joe-medium", "hibari:heart", "espeak:en-us", "piper:en_GB-tiny-low"}
    assert expected <= set(shown)
    # espeak-ng's other languages only on request; the folder's voices always
    assert "espeak:de" not in shown and "piper:de_DE-solo-medium" in shown
    assert shown["hibari:heart"]["sample"].startswith('verified-tts say "')
    assert "hear one: verified-tts say" in result.stderr
    sample = tmp_path / "heart.wav"
    said = subprocess.run(
        [*CLI, "say", "Dr. Smith paid 5 dollars.", "--voice", "hibari:heart", "--out", str(sample)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert said.returncode == 0, said.stderr
    audio, rate = sf.read(sample)
    assert rate == 24000 and len(audio) / rate > 1.0
    bad = subprocess.run(
        [*CLI, "say", "Hello.", "--voice", "hibari:nobody", "--out", str(tmp_path / "x.wav")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "unknown voice 'hibari:nobody'" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "x.wav").exists()
    # a region's listing keeps the voices of its language as a whole (espeak's "en" is British)
    british = tmp_path / "en-gb.json"
    subprocess.run([*CLI, "voices", "--language", "en-gb", "--json", str(british)], cwd=ROOT,
                   capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    names = {v["name"] for v in json.loads(british.read_text())["voices"]}
    assert {"espeak:en", "espeak:en-gb-x-rp"} <= names and "espeak:en-us" not in names
    none = subprocess.run([*CLI, "voices", "--language", "xx"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert none.returncode == 0 and "no voice here speaks 'xx'" in " ".join(none.stderr.split())


def test_say_writes_the_clip_as_spoken(tmp_path):
    from verified_tts.workflows.say import say

    clip = say("It costs 5 dollars.", tmp_path / "joe.flac", voice="piper:joe", seed=3)
    assert clip.voice == "piper:en_US-joe-medium" and "five" in clip.spoken
    audio, rate = sf.read(clip.path)
    assert rate == clip.sample_rate == 22050 and abs(len(audio) / rate - clip.duration_s) < 0.01
    again = say("It costs 5 dollars.", tmp_path / "again.flac", voice="piper:joe", seed=3)
    assert np.array_equal(sf.read(again.path)[0], audio)
    for out, message in ((tmp_path / "x.mp3", "write a .wav or .flac"), (tmp_path, "folder")):
        with pytest.raises(UserError, match=message):
            say("Hello.", out)
    with pytest.raises(UserError, match="nothing to say"):
        say("   ", tmp_path / "y.wav")
