"""BiCodec (Spark-TTS's codec): 32 global tokens + 50 semantic tokens a second <-> 16 kHz audio.

Loads the published Spark-TTS folder layout: ``BiCodec/config.yaml`` + ``BiCodec/model.safetensors``
(the codec), ``wav2vec2-large-xlsr-53/`` (the features a reference is encoded from) and the
top-level ``config.yaml`` (reference segment length, volume normalisation). ``--codec`` may name
that folder or its ``BiCodec`` subfolder (then the wav2vec2 folder is looked for beside it).
The network is :mod:`.bicodec_modules` (our torch implementation with the checkpoint's state-dict
names), because Spark-TTS's code and ``spark-tts-lib`` import torchaudio, which cannot load beside
a CPU torch build; the reference's mel spectrogram (torchaudio's ``MelSpectrogram`` in upstream,
magnitude, Slaney scale and norm) is computed with ``torch.stft`` and transformers' mel filters.
Decoding is deterministic; equal-length candidates share a forward pass on GPU.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import MissingExtra, UserError
from verified_tts.models import hub_snapshot, locate_model

__all__ = [
    "GLOBAL_SIZE",
    "GLOBAL_TOKENS",
    "HOP",
    "SAMPLE_RATE",
    "SEMANTIC_SIZE",
    "BiCodec",
    "load_codec",
    "volume_normalize",
]

SAMPLE_RATE = 16_000
HOP = 320  # samples per semantic token: 50 a second
GLOBAL_TOKENS = 32
GLOBAL_SIZE = 4096
SEMANTIC_SIZE = 8192


def volume_normalize(audio: np.ndarray, coeff: float = 0.2) -> np.ndarray:
    """Spark-TTS's reference loudness rule: quiet clips up to 0.1 peak, then the mean of the
    90th-99th percentile magnitudes scaled towards ``coeff`` (gain within 0.1..10, peak <= 1).

    As upstream, the percentiles come from the clip's magnitudes before the quiet-clip gain.
    """
    magnitudes = np.sort(np.abs(audio))
    if magnitudes[-1] < 0.1:
        audio = audio / max(magnitudes[-1], 1e-3) * 0.1
    loud = magnitudes[magnitudes > 0.01]
    if loud.size <= 10:
        return audio
    level = float(np.mean(loud[int(loud.size * 0.9) : int(loud.size * 0.99)]))
    audio = audio * float(np.clip(coeff / max(level, 1e-9), 0.1, 10))
    peak = float(np.max(np.abs(audio)))
    return audio / peak if peak > 1 else audio


class BiCodec:
    """A loaded BiCodec (and, when present, its wav2vec2 feature model for encoding)."""

    def __init__(
        self,
        net: Any,
        config: Mapping[str, Any],
        device: str,
        source: str,
        *,
        wav2vec2: Path | None,
        max_batch: int | None = None,
    ) -> None:
        self.net = net
        self.config = dict(config)
        self.device = device
        self.source = source
        self.sample_rate = SAMPLE_RATE
        self.max_batch = max_batch if max_batch is not None else (1 if device == "cpu" else 16)
        self._wav2vec2_dir = wav2vec2
        self._wav2vec2: tuple[Any, Any] | None = None
        mel = self.config.get("mel_params", {})
        self.mel = {
            "n_fft": int(mel.get("n_fft", 1024)),
            "win_length": int(mel.get("win_length", 640)),
            "hop_length": int(mel.get("hop_length", 320)),
            "fmin": float(mel.get("mel_fmin", 10)),
            "fmax": mel.get("mel_fmax"),
            "n_mels": int(mel.get("num_mels", 128)),
        }

    # --- decoding -------------------------------------------------------------------------------

    def decode(self, codes: tuple[np.ndarray, np.ndarray], seed: int = 0) -> np.ndarray:
        return self.decode_batch([(codes, seed)])[0]

    def decode_batch(
        self, items: Sequence[tuple[tuple[np.ndarray, np.ndarray], int]]
    ) -> list[np.ndarray]:
        """Each item is ((32 global codes, n semantic codes), seed) -> n * 320 samples."""
        import torch

        out: list[np.ndarray] = [np.zeros(0, dtype=np.float32)] * len(items)
        groups: dict[int, list[int]] = {}
        for i, ((globals_, semantic), _) in enumerate(items):
            if np.asarray(semantic).size and np.asarray(globals_).size == GLOBAL_TOKENS:
                groups.setdefault(int(np.asarray(semantic).size), []).append(i)
        step = max(1, self.max_batch)
        for same in groups.values():
            for start in range(0, len(same), step):
                members = same[start : start + step]
                sem = np.stack([np.asarray(items[i][0][1], dtype=np.int64) for i in members])
                glo = np.stack([np.asarray(items[i][0][0], dtype=np.int64) for i in members])
                with torch.inference_mode():
                    audio = self.net.detokenize(
                        torch.from_numpy(sem).to(self.device),
                        torch.from_numpy(glo)[:, None, :].to(self.device),
                    )
                audio = audio.float().cpu().numpy()[:, 0, :]
                for row, i in enumerate(members):
                    out[i] = np.ascontiguousarray(np.clip(audio[row], -1.0, 1.0), dtype=np.float32)
        return out

    # --- encoding -------------------------------------------------------------------------------

    def _features_model(self) -> tuple[Any, Any]:
        if self._wav2vec2 is None:
            if self._wav2vec2_dir is None or not self._wav2vec2_dir.is_dir():
                raise UserError(
                    f"BiCodec '{self.source}' has no wav2vec2-large-xlsr-53 folder beside it: "
                    "encoding a reference needs the whole Spark-TTS folder as --codec"
                )
            from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2Model

            folder = str(self._wav2vec2_dir)
            model = Wav2Vec2Model.from_pretrained(folder).eval().to(self.device)
            self._wav2vec2 = (Wav2Vec2FeatureExtractor.from_pretrained(folder), model)
        return self._wav2vec2

    def mel_frames(self, wav: np.ndarray) -> Any:
        """(1, frames, n_mels) magnitude mel spectrogram, as torchaudio's MelSpectrogram makes it
        (centred reflect-padded STFT, periodic Hann window, Slaney mel scale and norm)."""
        import torch
        from transformers.audio_utils import mel_filter_bank

        m = self.mel
        x = torch.from_numpy(np.asarray(wav, dtype=np.float32))[None]
        spec = torch.stft(
            x,
            n_fft=m["n_fft"],
            hop_length=m["hop_length"],
            win_length=m["win_length"],
            window=torch.hann_window(m["win_length"]),
            center=True,
            pad_mode="reflect",
            return_complex=True,
        ).abs()  # (1, freq, frames)
        banks = mel_filter_bank(
            num_frequency_bins=m["n_fft"] // 2 + 1,
            num_mel_filters=m["n_mels"],
            min_frequency=m["fmin"],
            max_frequency=float(m["fmax"] or SAMPLE_RATE / 2),
            sampling_rate=SAMPLE_RATE,
            norm="slaney",
            mel_scale="slaney",
        )
        fb = torch.from_numpy(banks.astype(np.float32))  # (freq, n_mels)
        return (spec.transpose(1, 2) @ fb).to(self.device)

    def encode(self, audio: np.ndarray, sample_rate: int) -> tuple[np.ndarray, np.ndarray]:
        """A reference clip -> (32 global codes, its semantic codes), as Spark-TTS tokenises it."""
        import torch

        from verified_tts.audio import resample

        wav = resample(np.asarray(audio, dtype=np.float32), int(sample_rate), SAMPLE_RATE)
        if self.config.get("volume_normalize", True):
            wav = volume_normalize(wav)
        seconds = float(self.config.get("ref_segment_duration", 6))
        hop = int(self.config.get("latent_hop_length", HOP))
        length = int(SAMPLE_RATE * seconds) // hop * hop
        ref = np.tile(wav, length // len(wav) + 1)[:length] if length > len(wav) else wav[:length]
        processor, model = self._features_model()
        inputs = processor(wav, sampling_rate=SAMPLE_RATE, return_tensors="pt").input_values
        with torch.inference_mode():
            hidden = model(inputs.to(self.device), output_hidden_states=True).hidden_states
            feats = (hidden[11] + hidden[14] + hidden[16]) / 3
            semantic, global_ = self.net.tokenize(feats, self.mel_frames(ref))
        return (
            global_.reshape(-1).cpu().numpy().astype(np.int64),
            semantic.reshape(-1).cpu().numpy().astype(np.int64),
        )


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"cannot read BiCodec config '{path}': {exc}") from exc
    return data if isinstance(data, dict) else {}


def load_codec(
    id_or_dir: str | os.PathLike[str], device: str | None = None, max_batch: int | None = None
) -> BiCodec:
    """Load BiCodec from a Spark-TTS folder (or its BiCodec subfolder) or a hub id."""
    try:
        import torch
        from safetensors.torch import load_file
    except ImportError as exc:
        raise MissingExtra("the BiCodec codec", "spark", "safetensors") from exc
    from verified_tts.generators.codecs.bicodec_modules import BiCodecNet, fold_weight_norm

    root = Path(
        locate_model(
            id_or_dir,
            what="BiCodec codec",
            option="--codec",
            fetch=hub_snapshot(["config.yaml", "BiCodec/*", "wav2vec2-large-xlsr-53/*"]),
        ).path
    )
    codec_dir = root / "BiCodec" if (root / "BiCodec").is_dir() else root
    top = root if codec_dir != root else root.parent
    for name in ("config.yaml", "model.safetensors"):
        if not (codec_dir / name).is_file():
            raise UserError(
                f"BiCodec folder '{codec_dir}' has no {name}: expected the Spark-TTS layout "
                "(SparkAudio/Spark-TTS-0.5B with BiCodec/config.yaml and model.safetensors)"
            )
    section = _read_yaml(codec_dir / "config.yaml").get("audio_tokenizer")
    if not isinstance(section, dict):
        raise UserError(f"'{codec_dir / 'config.yaml'}' has no audio_tokenizer section")
    settings = _read_yaml(top / "config.yaml") if (top / "config.yaml").is_file() else {}
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    net = BiCodecNet(section)
    state = fold_weight_norm(load_file(str(codec_dir / "model.safetensors")))
    # The checkpoint also holds torchaudio's mel buffers (computed here instead): ignored.
    state = {k: v for k, v in state.items() if not k.startswith("mel_transformer.")}
    missing, unexpected = net.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise UserError(
            f"BiCodec checkpoint '{codec_dir}' does not match its config: missing "
            f"{missing[:3]}, unexpected {unexpected[:3]}"
        )
    net = net.eval().to(device)
    mel = {**section.get("mel_params", {})}
    config = {**settings, "mel_params": mel}
    wav2vec2 = top / "wav2vec2-large-xlsr-53"
    return BiCodec(net, config, device, str(id_or_dir), wav2vec2=wav2vec2, max_batch=max_batch)
