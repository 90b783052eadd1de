"""The options leaf: one reader and writer for every options type, docs for every option, the
shipped profiles, and verifiers that report exactly the metrics they declare."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil
import tomllib
from pathlib import Path

import numpy as np
import pytest
import tomli_w

import verified_tts.options as options_package
from verified_tts.config import build_config
from verified_tts.errors import UserError
from verified_tts.options import (
    AssemblyOptions,
    CalibrateOptions,
    DubOptions,
    DurationFitOptions,
    EmotionOptions,
    EspeakOptions,
    Gate,
    GeneratorConfig,
    HibariOptions,
    JudgeOptions,
    LlasaOptions,
    OrpheusOptions,
    PiperOptions,
    ProductionOptions,
    PronunciationOptions,
    RayOptions,
    RenderConfig,
    SearchOptions,
    SelectionPolicy,
    SignalOptions,
    SparkOptions,
    SpeakerOptions,
    VerifiersConfig,
    WerOptions,
    from_table,
    load_profile,
    profile_names,
    reference,
    to_table,
)
from verified_tts.options.generation import CodecLMOptions, StandInGeneratorOptions
from verified_tts.options.verifiers import StandInVerifierOptions

ROOT = Path(__file__).resolve().parents[1]

RICH_TABLE = {
    "candidates": 4,
    "seed": 7,
    "adaptive": False,
    "keep": "winners",
    "max_chars": 180,
    "window": 4,
    "prefetch": False,
    "generator": {
        "name": "espeak",
        "voice": "f3",
        "espeak": {"rate": [120, 150]},
        "piper": {"noise_scale": 0.5},
    },  # fmt: skip
    "verifiers": {"wer": {"packing": False, "beam_size": 3}, "emotion": {"enabled": False}},
    "selection": {
        "gates": {"speaker": {}, "wer": {"max": 0.4}, "asr_min_logprob": {"min": -9.5}},
        "weights": {"speaker": 2.0},
        "stop": "margin",
        "rounds": [1, 3],
    },
    "assembly": {"sentence_pause": 0.5, "room_tone_db": -70, "master": False},
    "production": {"formats": "m4b,mp3", "chapters": "1-2", "lexicon": "words.toml"},
    "ray": {"replicas": 2, "pools": {"wer": 3}},
    "dub": {"speed_limit": 1.1, "voices": {"ANNA": "f3"}, "duration": 30.0},
    "search": {"strategy": "beam", "width": 3, "process": ["speaker"]},
}

# a value of every options type other than its default
EXAMPLES = {
    RenderConfig: build_config(RICH_TABLE),
    GeneratorConfig: GeneratorConfig(name="orpheus", model="m", options={"top_k": 20}),
    PiperOptions: PiperOptions(noise_scale=0.3, threads=2),
    HibariOptions: HibariOptions(speed=1.1, speed_jitter=0.03, duration_jitter=0.1),
    EspeakOptions: EspeakOptions(variants=("f3",), pitch=(40, 50)),
    CodecLMOptions: CodecLMOptions(in_flight=4, dtype="bfloat16"),
    OrpheusOptions: OrpheusOptions(temperature=0.7, kv_cache_gib=1.5),
    LlasaOptions: LlasaOptions(max_speech_s=20.0),
    SparkOptions: SparkOptions(voice_seed=3),
    VerifiersConfig: VerifiersConfig(wer=WerOptions(model="large-v3", profile="per_clip")),
    WerOptions: WerOptions(packing=False, pack_clips=4),
    SpeakerOptions: SpeakerOptions(backend="ecapa", enabled=False),
    EmotionOptions: EmotionOptions(model="m", batch_size=1),
    SignalOptions: SignalOptions(frame_ms=10.0),
    DurationFitOptions: DurationFitOptions(fill_low=0.5),
    StandInGeneratorOptions: StandInGeneratorOptions(seconds_per_candidate=0.01),
    StandInVerifierOptions: StandInVerifierOptions(seconds_per_clip=0.02),
    SelectionPolicy: SelectionPolicy.from_mapping({"gates": {"wer": {"max": 0.3}}}),
    Gate: Gate("wer", max=0.5, margin=0.1),
    AssemblyOptions: AssemblyOptions(lead_in=1.0, room_tone_db=None),
    ProductionOptions: ProductionOptions(formats=("m4b",), split_hours=2.0),
    DubOptions: DubOptions(min_gap_s=0.2, voices={"BOB": "m1"}),
    SearchOptions: SearchOptions(budget_s=3.0),
    RayOptions: RayOptions(chunk=2),
    CalibrateOptions: CalibrateOptions(sentences=10, kinds=("skip", "repeat")),
    JudgeOptions: JudgeOptions(model="bundled:base", beam_size=1),
    PronunciationOptions: PronunciationOptions(
        candidates=True, sources=("cmudict",), dialects=("en-gb-x-rp",), margin=0.3
    ),
}


def options_types() -> set[type]:
    """Every dataclass the leaf defines."""
    found = set()
    for info in pkgutil.iter_modules(options_package.__path__, "verified_tts.options."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if dataclasses.is_dataclass(value) and value.__module__ == info.name:
                found.add(value)
    return found - {options_package.Profile, options_package.schema.Reading}


def test_every_options_type_has_an_example():
    assert options_types() == set(EXAMPLES)


@pytest.mark.parametrize("kind", sorted(EXAMPLES, key=lambda k: k.__name__))
def test_every_options_type_round_trips_through_its_table(kind):
    values = [EXAMPLES[kind]] + ([kind()] if kind not in (JudgeOptions, Gate) else [])
    for value in values:
        table = to_table(value)
        assert from_table(kind, table) == value
        # the table is TOML and JSON (the manifest), and reads back from either
        assert from_table(kind, tomllib.loads(tomli_w.dumps(table))) == value
        assert from_table(kind, json.loads(json.dumps(table))) == value
        assert "null" not in json.dumps(table)  # None is left out, never written
    if kind is RenderConfig:  # the gates keep their order, so the decisions' keys stay
        value = EXAMPLES[kind]
        assert from_table(kind, to_table(value)).selection.identity() == value.selection.identity()


def test_the_config_is_typed_all_the_way_down():
    config = EXAMPLES[RenderConfig]
    assert config.generator.options == EspeakOptions(rate=(120, 150))
    assert config.verifiers.wer == WerOptions(packing=False, beam_size=3)
    assert not config.verifiers.emotion.enabled
    assert config.production.formats == ("m4b", "mp3") and config.selection.adaptive is False
    gates = {g.metric: g for g in config.selection.gates}
    assert "speaker" not in gates and gates["asr_min_logprob"].min == -9.5
    # on the per-clip profile (packing = false): its gates, the user's on top
    assert gates["pace_ratio"] == Gate("pace_ratio", min=0.8, max=1.15, margin=0.077)
    assert gates["voice_pace_ratio"] == Gate("voice_pace_ratio", min=0.9, max=1.1, margin=0.08639)
    assert RenderConfig() == build_config({})
    # a table given as a mapping is read as the generator's own options type
    assert GeneratorConfig(name="llasa", options={"top_p": 0.5}).options == LlasaOptions(top_p=0.5)
    with pytest.raises(UserError, match="takes PiperOptions, not EspeakOptions"):
        GeneratorConfig(name="piper", options=EspeakOptions())


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"candidatez": 3}, r"^unknown key\(s\) in config: candidatez; known: adaptive, "),
        ({"assembly": {"pause": 1}}, r"^unknown key\(s\) in \[assembly\]: pause; known: "),
        (
            {"verifiers": {"wer": {"pakcing": True}}},
            r"^unknown key\(s\) in \[verifiers.wer\]: pakcing; .*did you mean 'packing'",
        ),
        ({"verifiers": {"whisper": {}}}, r"^unknown key\(s\) in \[verifiers\]: whisper; known: "),
        (
            {"generator": {"name": "orpheus", "orpheus": {"temprature": 1}}},
            r"^unknown key\(s\) in \[generator.orpheus\]: temprature; ",
        ),
        ({"generator": {"espeak": {"speed": 1}}}, r"^unknown key\(s\) in \[generator.espeak\]: "),
        ({"generator": {"pipr": {}}}, r"^unknown key\(s\) in \[generator\]: pipr; known: codec"),
        ({"search": {"widht": 2}}, r"^unknown key\(s\) in \[search\]: widht; "),
        ({"selection": {"gate": {}}}, r"^unknown key\(s\) in \[selection\]: gate; "),
        ({"dub": {"speed": 1}}, r"^unknown key\(s\) in \[dub\]: speed; "),
        ({"ray": {"replica": 1}}, r"^unknown key\(s\) in \[ray\]: replica; "),
        ({"production": {"format": "mp3"}}, r"^unknown key\(s\) in \[production\]: format; "),
        (
            {"assembly": {"sentence_pause": "long"}},
            r"^\[assembly\] sentence_pause must be a number, not 'long'$",
        ),
        ({"candidates": 2.5}, r"^config candidates must be an integer, not 2.5$"),
        (
            {"verifiers": {"wer": {"packing": "yes"}}},
            r"^\[verifiers.wer\] packing must be true or false, not 'yes'$",
        ),
        (
            {"generator": {"name": "espeak", "espeak": {"rate": [1, 2, 3]}}},
            r"^\[generator.espeak\] rate must be a list of 2 integers, not \[1, 2, 3\]$",
        ),
        (
            {"dub": {"voices": {"ANNA": 3}}},
            r"^\[dub\] voices must be a table of NAME = a string, not \{'ANNA': 3\}$",
        ),
        ({"assembly": 3}, r"^\[assembly\] must be a table \(\[assembly\] with key = value"),
        (
            {"selection": {"gates": {"wer": {"max": "low"}}}},
            r"^\[selection.gates\] wer max must be a number, not 'low'$",
        ),
        (
            {"verifiers": {"wer": {"profile": "fast"}}},
            r"^\[verifiers.wer\] profile 'fast' is not a selection profile: choose one of packed",
        ),
    ],
)
def test_one_message_for_unknown_keys_and_wrong_types(table, message):
    with pytest.raises(UserError, match=message) as caught:
        build_config(table)
    assert "\n" not in str(caught.value)


def test_every_option_has_a_doc_and_the_reference_lists_them():
    for kind in options_types() - {Gate}:
        for spec in dataclasses.fields(kind):
            assert spec.metadata.get("doc"), f"{kind.__name__}.{spec.name} has no doc"
    rows = list(reference())
    keys = [(row.table, row.key) for row in rows]
    assert len(keys) == len(set(keys))
    for expected in [
        ("config", "candidates"),
        ("config", "adaptive"),
        ("[generator]", "voice_ref"),
        ("[generator.orpheus]", "temperature"),
        ("[generator.piper]", "noise_scale"),
        ("[verifiers.wer]", "profile"),
        ("[verifiers.speaker]", "enabled"),
        ("[selection]", "gates"),
        ("[selection]", "stop_gain"),
        ("[assembly]", "room_tone_db"),
        ("[production]", "formats"),
        ("[dub]", "voices"),
        ("[ray]", "pools"),
        ("[search]", "budget_s"),
    ]:
        assert expected in keys, expected
    row = next(r for r in rows if (r.table, r.key) == ("[generator.orpheus]", "temperature"))
    assert (row.type, row.default) == ("float", 0.6) and row.doc
    stop = next(r for r in rows if (r.table, r.key) == ("[selection]", "stop_gain"))
    assert stop.default == load_profile("packed").policy.stop_gain  # the default profile's
    assert all(r.table == "config" for r in reference(CalibrateOptions))


def test_profiles_are_config_files_that_name_their_benchmark():
    assert {"packed", "per_clip"} <= set(profile_names())
    for name in profile_names():
        profile = load_profile(name)
        assert profile.benchmarks, f"{name}.toml names no benchmark result"
        for result in profile.benchmarks:
            assert (ROOT / result).is_file(), result
        text = (ROOT / "verified_tts" / "profiles" / f"{name}.toml").read_text(encoding="utf-8")
        # the file is a config (the format calibrate's gates.toml has): read as one, it is the
        # profile on any scorer
        for packing in (True, False):
            table = {**tomllib.loads(text), "verifiers": {"wer": {"packing": packing}}}
            assert build_config(table).selection == profile.policy
    # SelectionPolicy's own defaults are the per_clip profile's
    assert SelectionPolicy() == load_profile("per_clip").policy


def test_the_wer_verifier_names_its_profile():
    assert WerOptions().profile_name == "packed"
    assert WerOptions(packing=False).profile_name == "per_clip"
    named = build_config({"verifiers": {"wer": {"profile": "per_clip"}}})
    assert named.selection == load_profile("per_clip").policy
    assert named.verifiers.wer.packing  # the scorer stays packed; only its profile is named
    with pytest.raises(UserError, match="no selection profile 'fast'"):
        load_profile("fast")


def test_build_config_overrides_go_on_top_of_the_file():
    table = {"generator": {"name": "espeak"}, "dub": {"speed_limit": 1.1, "voices": {"A": "f3"}}}
    config = build_config(
        table, candidates=3, generator="piper", voice="ben", production={"formats": "mp3"},
        dub={"speed_limit": 1.3, "voices": {"B": "m1"}, "duck_db": None}, search="beam",
        budget=2.0,
    )  # fmt: skip
    assert (config.candidates, config.generator.name, config.generator.voice) == (3, "piper", "ben")
    assert config.production.formats == ("mp3",)
    assert config.dub == DubOptions(speed_limit=1.3, voices={"A": "f3", "B": "m1"})
    assert config.search == SearchOptions(strategy="beam", budget_s=2.0)
    with pytest.raises(TypeError, match="unknown overrides: candidatez"):
        build_config({}, candidatez=3)


def test_verifiers_report_exactly_the_metrics_they_declare(synthesizer_factory, tmp_path):
    from tests.emotion_model import build_emotion_model
    from verified_tts.generators import SynthesisRequest
    from verified_tts.verification import load_verifiers
    from verifiers import VERIFIERS, Clip

    synthesizer = synthesizer_factory()
    text = "The birch canoe slid on the smooth planks."
    (candidate,) = synthesizer.generator.sample([SynthesisRequest("u", 0, 1, text)])
    audio, rate = np.asarray(candidate.audio), candidate.sample_rate
    speaker = synthesizer.verifiers.get("speaker")
    reference_embedding = speaker.embed([Clip(audio=audio, sample_rate=rate, text=text)])[0]
    clip = Clip(
        audio=audio, sample_rate=rate, text=text, spoken=text, emotion="happy",
        speaker_reference=reference_embedding, target_duration_s=3.0,
        info={"timing": {"predicted_s": 2.5, "predicted_speech_s": 2.3}},
    )  # fmt: skip
    model = build_emotion_model(tmp_path / "emotion", {0: "neutral", 1: "happy"})
    extra = load_verifiers(
        {"emotion": {"model": str(model)}, "duration_fit": {}, "standin": {}},
        order=("emotion", "duration_fit", "standin"),
    )
    verifiers = {v.name: v for v in (*synthesizer.verifiers.active, *extra.active)}
    assert set(verifiers) == set(VERIFIERS)
    for name, verifier in verifiers.items():
        (score,) = verifier.score([clip])
        assert set(score.metrics) == set(VERIFIERS[name].metrics), name
