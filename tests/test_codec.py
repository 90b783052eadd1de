"""SNAC codec: the Orpheus token layout both ways, frame validation, decode and encode.

Runs the real SNAC package on a random-weight model with the published 24 kHz configuration;
the mapping is checked against SNAC's own encoder, and decode against SNAC's own decoder. The
token layout and frame checks need no SNAC and run everywhere; the tests that load a model need
the ``snac`` package (the orpheus extra) and are skipped only under ``VTTS_SKIP_ENGINE``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from orpheus_fixtures import needs_engine, tiny_models

from verified_tts.errors import UserError
from verified_tts.generators.codecs.snac import (
    AUDIO_TOKEN_BASE,
    SAMPLES_PER_FRAME,
    codes_to_frames,
    frames_to_codes,
    frames_to_ids,
    load_codec,
    parse_frames,
)
from verified_tts.models import locate_model


@pytest.fixture(scope="module")
def codec_dir():
    return tiny_models().codec


@pytest.fixture(scope="module")
def codec(codec_dir):
    return load_codec(codec_dir, device="cpu")


@pytest.fixture(scope="module")
def reference(codec_dir):
    """SNAC exactly as its package loads it, untouched by our loader."""
    from snac import SNAC

    return SNAC.from_pretrained(str(codec_dir)).eval()


def test_layout_is_orpheus_training_layout():
    frame = np.array([[11, 22, 33, 44, 55, 66, 77]])
    ids = frames_to_ids(frame)
    assert ids == [
        AUDIO_TOKEN_BASE + k * 4096 + c for k, c in enumerate([11, 22, 33, 44, 55, 66, 77])
    ]
    l0, l1, l2 = frames_to_codes(np.vstack([frame, frame + 100]))
    assert l0.tolist() == [11, 111]
    assert l1.tolist() == [22, 55, 122, 155]  # positions 1 and 4
    assert l2.tolist() == [33, 44, 66, 77, 133, 144, 166, 177]  # positions 2, 3, 5, 6


@needs_engine
@pytest.mark.parametrize("samples", [2048 * 5, 24000, 2048 * 3 + 7])
def test_frames_both_ways_against_snac_encoder(reference, samples):
    rng = np.random.default_rng(samples)
    audio = torch.from_numpy((0.2 * rng.standard_normal(samples)).astype(np.float32))
    with torch.inference_mode():
        levels = reference.encode(audio.view(1, 1, -1))
    frames = codes_to_frames(levels)
    assert frames.shape == (-(-samples // SAMPLES_PER_FRAME), 7)
    # codes -> frames -> ids -> frames -> codes reproduces SNAC's own codes exactly
    parsed = parse_frames(frames_to_ids(frames))
    assert parsed.dropped == 0 and parsed.frames == frames.shape[0]
    for ours, theirs in zip(frames_to_codes(parsed.codes), levels, strict=True):
        assert np.array_equal(ours, theirs.numpy().reshape(-1))


def test_dropped_frames_are_counted_and_removed_whole():
    good = np.arange(7 * 6).reshape(6, 7) % 4096
    ids = frames_to_ids(good)
    ids[7 + 3] = AUDIO_TOKEN_BASE + 2 * 4096 + 5  # frame 1, position 3 gets a position-2 token
    ids[14] = 128_258  # frame 2 starts with end-of-speech
    ids[35 + 6] = AUDIO_TOKEN_BASE + 7 * 4096  # one past the last valid id at position 6
    ids += frames_to_ids(good[:1])[:4]  # an incomplete trailing frame
    parsed = parse_frames(ids)
    assert parsed.dropped == 4
    assert np.array_equal(parsed.codes, good[[0, 3, 4]])
    assert parsed.tokens == len(ids)


def test_block_edges_are_valid():
    # Upstream's decoder drops code 0 and accepts 4096; both edges are exact here.
    edges = np.array([[0] * 7, [4095] * 7])
    parsed = parse_frames(frames_to_ids(edges))
    assert parsed.dropped == 0 and np.array_equal(parsed.codes, edges)
    assert parse_frames([AUDIO_TOKEN_BASE - 1] + frames_to_ids(edges[:1])[1:]).dropped == 1
    with pytest.raises(ValueError):
        frames_to_ids(np.array([[4096] + [0] * 6]))


@needs_engine
def test_decode_matches_snac_decoder(reference, codec_dir):
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 4096, size=(9, 7))
    # Our decoder draws SNAC's noise from a seeded generator; zero the noise gain in both models
    # so the comparison checks the code levels and the weights, not the random draw.
    from snac.layers import NoiseBlock

    own = load_codec(codec_dir, device="cpu")
    for model in (own.model, reference):
        for module in model.modules():
            if isinstance(module, NoiseBlock):
                module.forward = lambda x: x  # x + noise * linear(x) with a zero noise gain
    ours = own.decode(frames, seed=3)
    levels = [torch.from_numpy(c).view(1, -1) for c in frames_to_codes(frames)]
    with torch.inference_mode():
        theirs = reference.decode(levels).numpy().reshape(-1)
    assert ours.dtype == np.float32 and ours.shape == (9 * SAMPLES_PER_FRAME,)
    assert np.allclose(ours, np.clip(theirs, -1, 1), atol=1e-4)


@needs_engine
def test_decode_is_reproducible_per_seed(codec):
    frames = np.random.default_rng(2).integers(0, 4096, size=(5, 7))
    a = codec.decode(frames, seed=7)
    assert np.array_equal(a, codec.decode(frames, seed=7))
    assert not np.array_equal(a, codec.decode(frames, seed=8))
    # decode_batch returns each item as decoded alone, in order, empty for no frames
    batch = codec.decode_batch([(frames[:2], 7), (frames, 7), (frames[:0], 1)])
    assert np.array_equal(batch[1], a)
    assert batch[0].shape == (2 * SAMPLES_PER_FRAME,) and batch[2].shape == (0,)


@needs_engine
def test_encode_resamples_to_24k(codec):
    clip = (0.1 * np.sin(np.linspace(0, 800, 16000))).astype(np.float32)  # 1 s at 16 kHz
    frames = codec.encode(clip, 16000)
    assert frames.shape == (12, 7)  # 24000 samples -> ceil(24000 / 2048) frames
    assert frames.min() >= 0 and frames.max() < 4096


@needs_engine  # load_codec needs snac before it looks at the folder
def test_uncached_hub_id_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError) as err:
        load_codec("nobody-here/snac-that-is-not-cached")
    message = str(err.value)
    assert "nobody-here/snac-that-is-not-cached" in message and "--codec" in message
    assert "\n" not in message


@needs_engine  # load_codec needs snac before it looks at the folder
def test_missing_folder_and_missing_weights(tmp_path):
    with pytest.raises(UserError, match="not a folder"):
        locate_model(tmp_path / "absent" / "dir", what="SNAC codec", option="--codec")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(UserError, match="pytorch_model.bin"):
        load_codec(tmp_path)
