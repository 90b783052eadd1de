"""X-codec2 (Llasa's codec) through transformers' ``Xcodec2Model``: 16 kHz, 50 codes a second.

One FSQ codebook of 65,536 codes; a code is Llasa's speech token ``<|s_N|>`` minus the first
speech id. Decoding is deterministic, so equal-length candidates may share a forward pass without
changing anyone's audio on GPU; on CPU each is decoded alone (bit-reproducible). Encoding a
reference (Llasa's zero-shot prompt) needs the semantic encoder's mel features. transformers'
``Xcodec2FeatureExtractor`` computes them with torchaudio's Kaldi fbank, and torchaudio cannot load
beside a CPU torch build, so the same features (80 Kaldi mel bins, Povey window, pre-emphasis,
per-bin standardisation, two frames stacked) are computed here with transformers' own numpy
``spectrogram``. The checkpoint format is the ``HKUSTAudio/xcodec2-hf`` one (config.json +
model.safetensors); no download happens at construction.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import MissingExtra, UserError
from verified_tts.models import hub_snapshot, locate_model

__all__ = ["CODEBOOK_SIZE", "HOP", "SAMPLE_RATE", "Xcodec2Codec", "fbank_features", "load_codec"]

SAMPLE_RATE = 16_000
HOP = 320  # samples per code: 50 codes a second
CODEBOOK_SIZE = 65_536
_MEL_BINS, _FRAME, _SHIFT, _STACK = 80, 400, 160, 2


def fbank_features(audio: np.ndarray) -> np.ndarray:
    """(frames // 2, 160) standardised Kaldi log-mel features, as Xcodec2FeatureExtractor makes.

    ``audio`` is 16 kHz mono, already padded to a whole number of codes; like the extractor,
    half a hop of zeros goes on each side before framing, and frames are not centred.
    """
    from transformers.audio_utils import mel_filter_bank, spectrogram, window_function

    wave = np.pad(audio.astype(np.float64), (HOP // 2, HOP // 2)) * 32768.0
    mel = mel_filter_bank(
        num_frequency_bins=257,
        num_mel_filters=_MEL_BINS,
        min_frequency=20,
        max_frequency=SAMPLE_RATE // 2,
        sampling_rate=SAMPLE_RATE,
        norm=None,
        mel_scale="kaldi",
        triangularize_in_mel_space=True,
    )
    feats = spectrogram(
        wave,
        window_function(_FRAME, "povey", periodic=False),
        frame_length=_FRAME,
        hop_length=_SHIFT,
        fft_length=512,
        power=2.0,
        center=False,
        preemphasis=0.97,
        mel_filters=mel,
        log_mel="log",
        mel_floor=1.192092955078125e-07,
        remove_dc_offset=True,
    ).T  # (frames, 80)
    mean = feats.mean(axis=0, keepdims=True)
    var = feats.var(axis=0, ddof=1, keepdims=True) if len(feats) > 1 else np.zeros_like(mean)
    feats = (feats - mean) / np.sqrt(var + 1e-7)
    usable = len(feats) - len(feats) % _STACK
    return feats[:usable].reshape(usable // _STACK, _MEL_BINS * _STACK).astype(np.float32)


class Xcodec2Codec:
    """A loaded X-codec2: decode code sequences to 16 kHz audio, encode audio to codes."""

    def __init__(self, model: Any, device: str, source: str, max_batch: int | None = None) -> None:
        self.model = model
        self.device = device
        self.source = source
        self.max_batch = max_batch if max_batch is not None else (1 if device == "cpu" else 16)
        config = model.config
        self.sample_rate = int(config.sampling_rate)
        hop = int(np.prod(config.downsampling_ratios))
        levels = int(np.prod(config.quantization_levels))
        if self.sample_rate != SAMPLE_RATE or hop != HOP or levels != CODEBOOK_SIZE:
            raise UserError(
                f"X-codec2 codec '{source}' is {self.sample_rate} Hz, {hop} samples a code, "
                f"{levels} codes; Llasa needs 16 kHz, 320, 65536 (HKUSTAudio/xcodec2-hf)"
            )

    def decode(self, codes: np.ndarray, seed: int = 0) -> np.ndarray:
        """(n,) codes -> float32 mono audio of n * 320 samples at 16 kHz."""
        return self.decode_batch([(codes, seed)])[0]

    def decode_batch(self, items: Sequence[tuple[np.ndarray, int]]) -> list[np.ndarray]:
        """Decode several candidates; equal-length ones share a forward pass (up to max_batch)."""
        import torch

        out: list[np.ndarray] = [np.zeros(0, dtype=np.float32)] * len(items)
        groups: dict[int, list[int]] = {}
        for i, (codes, _) in enumerate(items):
            n = int(np.asarray(codes).size)
            if n:
                groups.setdefault(n, []).append(i)
        step = max(1, self.max_batch)
        for same in groups.values():
            for start in range(0, len(same), step):
                members = same[start : start + step]
                batch = np.stack([np.asarray(items[i][0], dtype=np.int64) for i in members])
                codes = torch.from_numpy(batch)[:, None, :].to(self.device)
                with torch.inference_mode():
                    audio = self.model.decode(audio_codes=codes).audio_values
                audio = audio.float().cpu().numpy()[:, 0, :]
                for row, i in enumerate(members):
                    out[i] = np.ascontiguousarray(np.clip(audio[row], -1.0, 1.0), dtype=np.float32)
        return out

    def encode(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        """Mono audio at any rate -> (n,) int64 codes (resampled to 16 kHz first)."""
        import torch

        from verified_tts.audio import resample

        wav = resample(np.asarray(audio, dtype=np.float32), int(sample_rate), SAMPLE_RATE)
        # As the extractor does: one zero sample, then zeros up to a whole number of codes.
        wav = np.pad(wav, (0, 1))
        wav = np.pad(wav, (0, (-len(wav)) % HOP))
        feats = fbank_features(wav)
        values = torch.from_numpy(wav)[None, None, :].to(self.device)
        features = torch.from_numpy(feats)[None].to(self.device)
        with torch.inference_mode():
            codes = self.model.encode(values, features).audio_codes
        return codes.reshape(-1).cpu().numpy().astype(np.int64)


def load_codec(
    id_or_dir: str | os.PathLike[str], device: str | None = None, max_batch: int | None = None
) -> Xcodec2Codec:
    """Load X-codec2 from a local folder (config.json + model.safetensors) or a hub id."""
    try:
        import torch
        from transformers import Xcodec2Model
    except ImportError as exc:
        raise MissingExtra("the X-codec2 codec", "llasa", "transformers>=5.13") from exc
    folder = Path(
        locate_model(
            id_or_dir,
            what="X-codec2 codec",
            option="--codec",
            required=("config.json",),
            fetch=hub_snapshot(["config.json", "*.safetensors"]),
        ).path
    )
    if not any(folder.glob("*.safetensors")):
        raise UserError(
            f"X-codec2 folder '{folder}' has no *.safetensors: expected the layout of "
            "HKUSTAudio/xcodec2-hf (config.json + model.safetensors)"
        )
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        model = Xcodec2Model.from_pretrained(str(folder)).eval().to(device)
    except (OSError, ValueError) as exc:
        raise UserError(f"could not load X-codec2 from '{folder}': {exc}") from exc
    return Xcodec2Codec(model, device=device, source=str(id_or_dir), max_batch=max_batch)
