"""X-codec2 (Llasa) and BiCodec (Spark-TTS): decode, encode, checkpoint format, front-ends.

Both run on random-weight models built from configuration (verified_tts.testing.tiny_models): the
real transformers ``Xcodec2Model`` and our BiCodec modules loaded from a checkpoint written in
Spark-TTS's format (weight-normalised layers as weight_g/weight_v).
"""

from __future__ import annotations

import librosa
import numpy as np
import pytest
import torch
from orpheus_fixtures import tiny_models

from verified_tts.errors import UserError


@pytest.fixture(scope="module")
def xcodec2():
    from verified_tts.generators.codecs.xcodec2 import load_codec

    return load_codec(tiny_models("llasa").codec, device="cpu")


@pytest.fixture(scope="module")
def bicodec():
    from verified_tts.generators.codecs.bicodec import load_codec

    return load_codec(tiny_models("spark").codec, device="cpu")


def _noise(seconds: float, rate: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (0.1 * rng.standard_normal(int(seconds * rate))).astype(np.float32)


def test_xcodec2_decodes_320_samples_a_code_deterministically(xcodec2):
    codes = np.random.default_rng(1).integers(0, 65_536, 40)
    a, b = xcodec2.decode(codes), xcodec2.decode(codes)
    assert a.shape == (40 * 320,) and a.dtype == np.float32
    assert np.array_equal(a, b) and np.abs(a).max() > 0
    other = xcodec2.decode_batch([(codes, 0), (codes[:10], 0), (np.zeros(0, np.int64), 0)])
    assert np.array_equal(other[0], a) and other[1].shape == (3200,) and other[2].size == 0


def test_xcodec2_encodes_50_codes_a_second(xcodec2):
    codes = xcodec2.encode(_noise(1.5, 24_000), 24_000)  # resampled to 16 kHz first
    assert codes.dtype == np.int64 and codes.min() >= 0 and codes.max() < 65_536
    assert abs(len(codes) - 75) <= 2


def _kaldi_fbank(wave: np.ndarray, rate: int = 16_000, bins: int = 80) -> np.ndarray:
    """Kaldi's log mel filterbank (compute-fbank's defaults without dither) from its formulas:
    400-sample frames every 160 (snip edges), DC removed, pre-emphasis 0.97 (the first sample
    against itself), Povey window, 512-point power spectrum, triangles equally spaced on
    1127 ln(1 + f/700) from 20 Hz to Nyquist over the FFT bins below Nyquist, log floored at
    float32's epsilon."""
    frame, shift, nfft = 400, 160, 512
    count = 1 + (len(wave) - frame) // shift
    frames = wave[np.arange(frame)[None, :] + shift * np.arange(count)[:, None]].astype(np.float64)
    frames -= frames.mean(axis=1, keepdims=True)
    frames[:, 1:] -= 0.97 * frames[:, :-1].copy()
    frames[:, 0] -= 0.97 * frames[:, 0]
    povey = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / (frame - 1))) ** 0.85
    power = np.abs(np.fft.rfft(frames * povey, nfft)) ** 2

    def mel(f):
        return 1127.0 * np.log(1.0 + np.asarray(f) / 700.0)

    edges = mel(20.0) + (mel(rate / 2) - mel(20.0)) * np.arange(bins + 2) / (bins + 1)
    at = mel(np.arange(nfft // 2) * rate / nfft)
    banks = np.zeros((bins, nfft // 2 + 1))
    for m in range(bins):
        rising = (at - edges[m]) / (edges[m + 1] - edges[m])
        falling = (edges[m + 2] - at) / (edges[m + 2] - edges[m + 1])
        banks[m, : nfft // 2] = np.clip(np.minimum(rising, falling), 0.0, None)
    return np.log(np.maximum(power @ banks.T, np.finfo(np.float32).eps))


def test_xcodec2_features_are_kaldi_fbank_stacked_in_pairs():
    from transformers import SeamlessM4TFeatureExtractor

    from verified_tts.generators.codecs.xcodec2 import fbank_features

    audio = _noise(1.0, 16_000)[: 16_000 - 16_000 % 320]
    feats = fbank_features(audio)
    # frames of 400 every 160 over the clip plus half a hop each side, two stacked per row
    frames = 1 + (16_000 + 320 - 400) // 160
    assert feats.shape == (frames // 2, 160)
    assert np.allclose(feats.reshape(-1, 80).mean(axis=0), 0, atol=0.1)  # standardised per bin
    # the reference: Kaldi's fbank of the padded clip at 16-bit scale, each bin standardised
    # (sample variance), frames stacked in pairs, as W2V-BERT's feature extractor defines them
    padded = np.pad(audio.astype(np.float64), (160, 160))
    reference = _kaldi_fbank(padded * 32768.0)
    reference = (reference - reference.mean(0)) / np.sqrt(reference.var(0, ddof=1) + 1e-7)
    reference = reference[: len(reference) // 2 * 2].reshape(-1, 160)
    assert np.abs(feats - reference).max() < 1e-4
    # and transformers' own W2V-BERT (SeamlessM4T) extractor, at its defaults
    extracted = SeamlessM4TFeatureExtractor()(padded, sampling_rate=16_000, return_tensors="np")
    assert np.abs(feats - extracted["input_features"][0]).max() < 1e-5


def test_xcodec2_folder_without_weights_is_one_clear_error(tmp_path):
    from verified_tts.generators.codecs.xcodec2 import load_codec

    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(UserError, match=r"xcodec2-hf"):
        load_codec(tmp_path)


def test_bicodec_checkpoint_is_in_spark_format_and_round_trips(bicodec):
    from safetensors.torch import load_file

    from verified_tts.generators.codecs.bicodec_modules import fold_weight_norm

    state = load_file(str(tiny_models("spark").codec / "BiCodec" / "model.safetensors"))
    assert "decoder.model.0.weight_g" in state and "decoder.model.0.weight" not in state
    assert "speaker_encoder.perceiver_sampler.norm.gamma" in state
    assert (
        "quantizer.codebook.weight" in state and "prenet.vocos_backbone.norm.scale.weight" in state
    )
    folded = fold_weight_norm(state)
    ours = bicodec.net.state_dict()
    assert set(folded) == set(ours)
    assert torch.allclose(folded["decoder.model.0.weight"], ours["decoder.model.0.weight"])


def test_bicodec_decodes_semantic_tokens_with_a_speaker(bicodec):
    rng = np.random.default_rng(2)
    speaker = rng.integers(0, 4096, 32)
    semantic = rng.integers(0, 8192, 25)
    a = bicodec.decode((speaker, semantic))
    assert a.shape == (25 * 320,) and np.abs(a).max() > 0
    assert np.array_equal(a, bicodec.decode((speaker, semantic)))  # deterministic
    other_speaker = bicodec.decode((rng.integers(0, 4096, 32), semantic))
    assert not np.allclose(a, other_speaker)  # the globals do condition the decoder


def test_bicodec_encodes_a_reference_to_32_globals_and_semantic_tokens(bicodec):
    speaker, semantic = bicodec.encode(_noise(2.0, 22_050, seed=3), 22_050)
    assert speaker.shape == (32,) and speaker.min() >= 0 and speaker.max() < 4096
    assert semantic.min() >= 0 and semantic.max() < 8192 and abs(len(semantic) - 100) <= 2


def test_fsq_indices_and_codes_are_inverse():
    from verified_tts.generators.codecs.bicodec_modules import FSQ

    fsq = FSQ([4, 4, 4, 4, 4, 4])
    indices = torch.arange(4096)
    codes = fsq.codes(indices)  # grid values in {-1, -0.5, 0, 0.5}
    assert codes.shape == (4096, 6) and set(codes.unique().tolist()) == {-1.0, -0.5, 0.0, 0.5}
    # a latent that FSQ bounds onto exactly those grid points quantises back to the same index
    half_l, offset, half_width = 3 * (1 + 1e-3) / 2, 0.5, 2
    shift = torch.tensor(offset / half_l).atanh()
    latent = ((codes * half_width + offset) / half_l).atanh() - shift
    assert torch.equal(fsq.quantize_indices(latent)[1], indices)


def test_bicodec_mel_matches_a_slaney_magnitude_mel(bicodec):
    wav = _noise(1.0, 16_000, seed=4)
    ours = bicodec.mel_frames(wav)[0].numpy()
    reference = librosa.feature.melspectrogram(
        y=wav,
        sr=16_000,
        n_fft=1024,
        hop_length=320,
        win_length=640,
        center=True,
        pad_mode="reflect",
        power=1.0,
        n_mels=128,
        fmin=10,
        fmax=8000,
        htk=False,
        norm="slaney",
    ).T
    assert ours.shape == reference.shape
    assert np.abs(ours - reference).max() <= 1e-5 * np.abs(reference).max()


def test_bicodec_needs_the_whole_folder_to_encode(tmp_path, bicodec):
    import shutil

    from verified_tts.generators.codecs.bicodec import load_codec

    shutil.copytree(tiny_models("spark").codec / "BiCodec", tmp_path / "BiCodec")
    alone = load_codec(tmp_path / "BiCodec", device="cpu")
    assert alone.decode((np.zeros(32, np.int64), np.ones(5, np.int64))).shape == (1600,)
    with pytest.raises(UserError, match="wav2vec2-large-xlsr-53"):
        alone.encode(_noise(1.0, 16_000), 16_000)


def test_volume_normalize_follows_spark():
    from verified_tts.generators.codecs.bicodec import volume_normalize

    loud = np.concatenate([np.full(100, 0.9), np.full(900, 0.05)]).astype(np.float32)
    out = volume_normalize(loud)
    assert np.abs(out).max() <= 1.0
    quiet = np.full(50, 0.001, dtype=np.float32)
    assert np.allclose(volume_normalize(quiet), 0.1)  # raised to 0.1 peak, too few loud samples
