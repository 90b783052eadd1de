"""Tiny random-weight codecs for the codec LMs of :mod:`verified_tts.testing.tiny_models`.

The codecs are the real ones built from configuration with random weights: SNAC with the
published 24 kHz config (Orpheus), transformers' ``Xcodec2Model`` with a small consistent config
(Llasa), and BiCodec (our implementation, saved in the checkpoint's format with weight-normalised
layers as ``weight_g``/``weight_v``) with a small wav2vec2 beside it (Spark-TTS). Each
``build_*`` saves into a folder in the format its generator's loader reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = [
    "SNAC_24KHZ_CONFIG",
    "SNAC_24KHZ_SMALL_DECODER",
    "bicodec_config",
    "build_bicodec",
    "build_snac_24khz",
    "build_xcodec2",
    "xcodec2_config",
]

# The published hubertsiuzdak/snac_24khz configuration.
SNAC_24KHZ_CONFIG = {
    "sampling_rate": 24000,
    "encoder_dim": 48,
    "encoder_rates": [2, 4, 8, 8],
    "decoder_dim": 1024,
    "decoder_rates": [8, 8, 4, 2],
    "attn_window_size": None,
    "codebook_size": 4096,
    "codebook_dim": 8,
    "vq_strides": [4, 2, 1],
    "noise": True,
    "depthwise": True,
}


# The same codec with a narrow decoder (128 channels, not 1,024): the same rate, hop, codebooks
# and strides, so the same token layout and the same samples a frame, at a twentieth of the
# decoding time on a CPU; the tests decode with it (benchmarks of decoding cost use the published).
SNAC_24KHZ_SMALL_DECODER = {**SNAC_24KHZ_CONFIG, "decoder_dim": 128}


def build_snac_24khz(folder: Path, *, seed: int = 0, small_decoder: bool = False) -> Path:
    """Save a random-weight SNAC with the 24 kHz configuration (or its small-decoder variant), as
    SNAC.from_pretrained expects."""
    import torch
    from snac import SNAC

    config = SNAC_24KHZ_SMALL_DECODER if small_decoder else SNAC_24KHZ_CONFIG
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = SNAC(**config)
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


def xcodec2_config(tiny: bool = True) -> Any:
    """A small, consistent X-codec2 config (quantization_dim = hidden + semantic hidden), or the
    published one (``tiny=False``: 16 kHz, 320 a code, 65,536 FSQ codes in both)."""
    from transformers import Xcodec2Config

    if not tiny:
        return Xcodec2Config()
    semantic = {
        "model_type": "wav2vec2-bert",
        "hidden_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 128,
        "feature_projection_input_dim": 160,
        "output_hidden_size": 64,
        "add_adapter": False,
    }
    return Xcodec2Config(
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        encoder_hidden_size=8,
        quantization_dim=128 + 64,
        semantic_model_config=semantic,
    )


def build_xcodec2(folder: Path, *, seed: int = 0, tiny: bool = True) -> Path:
    """Save a random-weight ``Xcodec2Model`` (the xcodec2-hf format) into ``folder``."""
    import torch
    from transformers import Xcodec2Model

    torch.manual_seed(seed)
    Xcodec2Model(xcodec2_config(tiny)).eval().save_pretrained(str(folder))
    return folder


def bicodec_config(tiny: bool = True) -> dict[str, Any]:
    """BiCodec's ``audio_tokenizer`` section: Spark-TTS-0.5B's, or a small one of the same
    layout (8,192 semantic codes, 32 global tokens of 4,096 codes, 320 samples a token)."""
    big = not tiny
    wide, dim, inter = (1024, 384, 2048) if big else (64, 32, 64)
    return {
        "mel_params": {
            "sample_rate": 16000,
            "n_fft": 1024,
            "win_length": 640,
            "hop_length": 320,
            "mel_fmin": 10,
            "mel_fmax": None,
            "num_mels": 128,
        },
        "encoder": {
            "input_channels": 1024 if big else 64,
            "vocos_dim": dim,
            "vocos_intermediate_dim": inter,
            "vocos_num_layers": 12 if big else 1,
            "out_channels": wide,
            "sample_ratios": [1, 1],
        },
        "decoder": {
            "input_channel": wide,
            "channels": 1536 if big else 32,
            "rates": [8, 5, 4, 2],
            "kernel_sizes": [16, 11, 8, 4],
        },
        "quantizer": {
            "input_dim": wide,
            "codebook_size": 8192,
            "codebook_dim": 8,
            "commitment": 0.25,
            "codebook_loss_weight": 2.0,
            "use_l2_normlize": True,
            "threshold_ema_dead_code": 0.2,
        },
        "speaker_encoder": {
            "input_dim": 128,
            "out_dim": wide,
            "latent_dim": 128 if big else 16,
            "token_num": 32,
            "fsq_levels": [4, 4, 4, 4, 4, 4],
            "fsq_num_quantizers": 1,
        },
        "prenet": {
            "input_channels": wide,
            "vocos_dim": dim,
            "vocos_intermediate_dim": inter,
            "vocos_num_layers": 12 if big else 1,
            "out_channels": wide,
            "condition_dim": wide,
            "sample_ratios": [1, 1],
            "use_tanh_at_final": False,
        },
        "postnet": {
            "input_channels": wide,
            "vocos_dim": dim,
            "vocos_intermediate_dim": inter,
            "vocos_num_layers": 6 if big else 1,
            "out_channels": wide,
            "use_tanh_at_final": False,
        },
    }


def build_bicodec(folder: Path, *, seed: int = 0, tiny: bool = True) -> Path:
    """A Spark-TTS codec folder: config.yaml, BiCodec/ (config + weights), wav2vec2 beside it."""
    import torch
    import yaml
    from safetensors.torch import save_file
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

    from verified_tts.generators.codecs.bicodec_modules import BiCodecNet, split_weight_norm

    section = bicodec_config(tiny)
    codec_dir = folder / "BiCodec"
    codec_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    net = BiCodecNet(section)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if name.endswith("latents"):
                p.normal_(0.0, 0.02)
    state = {k: v.contiguous() for k, v in split_weight_norm(net).items()}
    save_file(state, str(codec_dir / "model.safetensors"))
    (codec_dir / "config.yaml").write_text(yaml.safe_dump({"audio_tokenizer": section}))
    settings = {
        "sample_rate": 16000,
        "ref_segment_duration": 6,
        "latent_hop_length": 320,
        "volume_normalize": True,
        "highpass_cutoff_freq": 40,
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(settings))
    w2v = folder / "wav2vec2-large-xlsr-53"
    if tiny:
        w2v_config = Wav2Vec2Config(
            hidden_size=64,
            num_hidden_layers=16,  # the features mix hidden states 11, 14 and 16
            num_attention_heads=2,
            intermediate_size=64,
            conv_dim=(32,) * 7,
            feat_extract_norm="layer",
            do_stable_layer_norm=True,
        )
    else:
        w2v_config = Wav2Vec2Config(
            hidden_size=1024,
            num_hidden_layers=24,
            num_attention_heads=16,
            intermediate_size=4096,
            feat_extract_norm="layer",
            do_stable_layer_norm=True,
        )
    torch.manual_seed(seed + 1)
    Wav2Vec2Model(w2v_config).eval().save_pretrained(str(w2v))
    Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=16000, padding_value=0.0, do_normalize=True
    ).save_pretrained(str(w2v))
    return folder
