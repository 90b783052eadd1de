"""The speaker verifier's encoder without torch (verifiers/voice_encoder.py), held step by step to
resemblyzer's own torch implementation: the weights read from both of torch's file formats, the
level normalisation, the silence trimming, the partial slices and the network's output."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from resemblyzer import VoiceEncoder
from resemblyzer import audio as resemblyzer_audio

from verified_tts.errors import UserError
from verified_tts.generators.base import SynthesisRequest
from verified_tts.generators.espeak import EspeakGenerator, EspeakOptions
from verifiers.speaker import SpeakerOptions, load_speaker_verifier
from verifiers.voice_encoder import (
    VoiceEncoderSession,
    bundled_weights_path,
    load_weights,
    normalize_volume,
    partial_slices,
    trim_long_silences,
)


@pytest.fixture(scope="module")
def torch_encoder():
    return VoiceEncoder(device="cpu", verbose=False)


@pytest.fixture(scope="module")
def speech_with_a_long_pause():
    from verified_tts.audio import resample

    generator = EspeakGenerator(EspeakOptions())
    [one, two] = generator.sample(
        [
            SynthesisRequest("u", 0, 7, "The birch canoe slid on the smooth planks."),
            SynthesisRequest("u", 1, 8, "Glue the sheet to the dark blue background."),
        ]
    )
    pause = np.zeros(2 * one.sample_rate, dtype=np.float32)
    wav = np.concatenate([one.audio, pause, two.audio]).astype(np.float32)
    return resample(wav, one.sample_rate, 16_000)


def test_the_wheels_weights_read_without_torch_are_torchs(torch_encoder):
    weights = load_weights(bundled_weights_path())
    state = torch_encoder.state_dict()
    for layer, (input_weight, recurrent_weight, bias) in enumerate(weights.lstm):
        assert np.array_equal(input_weight.T, state[f"lstm.weight_ih_l{layer}"].numpy())
        assert np.array_equal(recurrent_weight.T, state[f"lstm.weight_hh_l{layer}"].numpy())
        summed = state[f"lstm.bias_ih_l{layer}"] + state[f"lstm.bias_hh_l{layer}"]
        assert np.array_equal(bias, summed.numpy())
    assert np.array_equal(weights.linear_weight.T, state["linear.weight"].numpy())
    assert np.array_equal(weights.linear_bias, state["linear.bias"].numpy())


def test_a_checkpoint_in_torchs_zip_format_reads_the_same(torch_encoder, tmp_path):
    path = tmp_path / "encoder.pt"
    torch.save({"model_state": torch_encoder.state_dict(), "step": 3}, path)
    ours, theirs = load_weights(path), load_weights(bundled_weights_path())
    assert np.array_equal(ours.linear_weight, theirs.linear_weight)
    for mine, wheel in zip(ours.lstm, theirs.lstm, strict=True):
        assert all(np.array_equal(a, b) for a, b in zip(mine, wheel, strict=True))
    # and the verifier takes it as its model file
    verifier = load_speaker_verifier(SpeakerOptions(model=str(path)))
    assert verifier.identity()["model"] == str(path)


def test_a_file_that_is_not_a_checkpoint_is_one_line(tmp_path):
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(UserError, match="cannot read the resemblyzer weights .*junk.pt"):
        load_speaker_verifier(SpeakerOptions(model=str(junk)))
    other = tmp_path / "other.pt"
    torch.save({"model_state": {"fc.weight": torch.zeros(2, 2)}}, other)
    with pytest.raises(UserError, match="not a resemblyzer voice encoder checkpoint"):
        load_speaker_verifier(SpeakerOptions(model=str(other)))


def test_the_network_gives_torchs_embeddings(torch_encoder):
    session = VoiceEncoderSession(bundled_weights_path())
    mels = (np.random.default_rng(3).random((16, 160, 40)) * 4).astype(np.float32)
    mels[5] = 0.0  # a silent partial: resemblyzer divides zero by zero, and so do we
    with torch.no_grad():
        expected = torch_encoder(torch.from_numpy(mels)).numpy()
    ours = session(mels)
    assert ours.shape == (16, 256) and ours.dtype == np.float32
    silent = np.isnan(expected).all(axis=1)
    assert np.array_equal(np.isnan(ours).all(axis=1), silent)
    np.testing.assert_allclose(ours[~silent], expected[~silent], atol=2e-6)


def test_level_and_silence_trimming_are_resemblyzers(speech_with_a_long_pause):
    wav = speech_with_a_long_pause
    quiet = wav * 0.05
    assert np.array_equal(
        normalize_volume(quiet), resemblyzer_audio.normalize_volume(quiet, -30, increase_only=True)
    )
    loud = np.clip(wav * 20, -1, 1)  # above the target level: left as it is
    assert np.array_equal(normalize_volume(loud), loud)
    levelled = normalize_volume(quiet)
    trimmed = trim_long_silences(levelled)
    assert np.array_equal(trimmed, resemblyzer_audio.trim_long_silences(levelled))
    assert len(trimmed) < len(levelled) - 16_000  # most of the two-second pause is gone
    for windows in (0, 1, 3, 6, 7, 9):  # shorter than the dilation, and a part window over
        short = levelled[8_000 : 8_000 + 480 * windows + 100]
        assert np.array_equal(
            trim_long_silences(short), resemblyzer_audio.trim_long_silences(short)
        )


@pytest.mark.parametrize("samples", [1, 16_000, 25_599, 25_600, 33_000, 48_000, 123_457])
def test_partial_slices_are_resemblyzers(samples):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, theirs = VoiceEncoder.compute_partial_slices(samples, 1.3, 0.75)
    assert partial_slices(samples) == theirs


def test_loading_and_scoring_never_imports_torch(tmp_path):
    # torch costs every process that loads the verifier 1-2 s of a core; the encoder does
    # not need it
    script = (
        "import sys\n"
        "import numpy as np\n"
        "from verifiers.base import Clip\n"
        "from verifiers.speaker import load_speaker_verifier\n"
        "wave = np.sin(np.arange(44_100) * 0.05).astype(np.float32) * 0.3\n"
        "assert load_speaker_verifier().embed([Clip(wave, 22_050, 'x')]).shape == (1, 256)\n"
        "print(sorted(m for m in ('torch', 'resemblyzer', 'librosa') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
