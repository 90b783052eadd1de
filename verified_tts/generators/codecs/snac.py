"""SNAC 24 kHz codec: the Orpheus token layout both ways, frame validation, decode and encode.

Orpheus speaks in SNAC frames of 7 tokens; the token at position k of a frame is
``128266 + k * 4096 + code`` and the three SNAC levels take positions L0 = [0], L1 = [1, 4] and
L2 = [2, 3, 5, 6] (1, 2 and 4 codes per 2048-sample frame). This module maps generated ids to
frames and frames to SNAC's three code tensors and back, drops a frame whole when any of its
tokens is outside its position's block (and counts it: the count is a quality signal), decodes
frames to 24 kHz float32 audio, and SNAC-encodes a reference clip for the zero-shot voice prompt.
SNAC's decoder adds random noise; it is drawn from a generator seeded by the candidate's seed, so
the same tokens and seed always give the same audio. The weights are found through
:func:`verified_tts.models.locate_model` (a local folder or a Hugging Face id).
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from verified_tts.errors import MissingExtra, UserError
from verified_tts.models import hub_snapshot, locate_model

if TYPE_CHECKING:
    import torch

__all__ = [
    "AUDIO_TOKEN_BASE",
    "CODEBOOK_SIZE",
    "FRAME_LAYOUT",
    "FRAME_TOKENS",
    "SAMPLES_PER_FRAME",
    "SAMPLE_RATE",
    "ParsedFrames",
    "SnacCodec",
    "codes_to_frames",
    "frames_to_codes",
    "frames_to_ids",
    "load_codec",
    "parse_frames",
]

AUDIO_TOKEN_BASE = 128_266  # id of code 0 at frame position 0
CODEBOOK_SIZE = 4096
FRAME_TOKENS = 7
SAMPLE_RATE = 24_000
SAMPLES_PER_FRAME = 2048  # SNAC 24 kHz: hop 512 x coarsest stride 4
# Frame position k -> (SNAC level, index of that code within the level's codes for this frame).
FRAME_LAYOUT: tuple[tuple[int, int], ...] = (
    (0, 0),
    (1, 0),
    (2, 0),
    (2, 1),
    (1, 1),
    (2, 2),
    (2, 3),
)
_CODES_PER_FRAME = (1, 2, 4)  # per level
# Column order that turns a (n, 7) frame array into each level's codes, frame-major.
_LEVEL_COLUMNS = tuple(
    [k for k, (lvl, _) in sorted(enumerate(FRAME_LAYOUT), key=lambda kv: kv[1]) if lvl == level]
    for level in range(3)
)


@dataclass(frozen=True, eq=False)
class ParsedFrames:
    """Generated ids split into valid frames; malformed and incomplete frames are counted."""

    codes: np.ndarray  # (n_frames, 7) int64 codes in [0, 4096), one row per kept frame
    dropped: int  # frames discarded whole (a token outside its position's block, or a partial tail)
    tokens: int  # audio-stream tokens looked at (stop tokens excluded)

    @property
    def frames(self) -> int:
        return int(self.codes.shape[0])


def parse_frames(token_ids: Iterable[int]) -> ParsedFrames:
    """Split generated ids into 7-token frames, keeping only frames whose every token is valid.

    Frames are aligned to the first generated token (the prompt ends at start-of-speech). A frame
    with any token outside its position's 4096-id block is dropped whole rather than patched, and
    an incomplete trailing frame counts as dropped too: both mean the model lost the layout.
    """
    ids = np.asarray(list(token_ids), dtype=np.int64)
    n_full = len(ids) // FRAME_TOKENS
    rows = ids[: n_full * FRAME_TOKENS].reshape(n_full, FRAME_TOKENS)
    codes = rows - AUDIO_TOKEN_BASE - CODEBOOK_SIZE * np.arange(FRAME_TOKENS, dtype=np.int64)
    ok = np.all((codes >= 0) & (codes < CODEBOOK_SIZE), axis=1)
    dropped = int(n_full - ok.sum()) + (1 if len(ids) % FRAME_TOKENS else 0)
    return ParsedFrames(codes=codes[ok], dropped=dropped, tokens=len(ids))


def frames_to_ids(codes: np.ndarray) -> list[int]:
    """The token ids of (n, 7) frame codes, frame after frame."""
    codes = np.asarray(codes, dtype=np.int64).reshape(-1, FRAME_TOKENS)
    if codes.size and (codes.min() < 0 or codes.max() >= CODEBOOK_SIZE):
        raise ValueError("SNAC codes must lie in [0, 4096)")
    offsets = AUDIO_TOKEN_BASE + CODEBOOK_SIZE * np.arange(FRAME_TOKENS, dtype=np.int64)
    return (codes + offsets).reshape(-1).tolist()


def frames_to_codes(codes: np.ndarray) -> list[np.ndarray]:
    """(n, 7) frames -> SNAC's three levels as (n,), (2n,) and (4n,) int64 arrays."""
    codes = np.asarray(codes, dtype=np.int64).reshape(-1, FRAME_TOKENS)
    return [codes[:, cols].reshape(-1) for cols in _LEVEL_COLUMNS]


def codes_to_frames(levels: Sequence[Any]) -> np.ndarray:
    """SNAC's three levels (arrays or tensors, batch dim of 1 allowed) -> (n, 7) frames."""
    flat = [np.asarray(_to_numpy(level), dtype=np.int64).reshape(-1) for level in levels]
    if len(flat) != 3:
        raise ValueError(f"expected 3 SNAC levels, got {len(flat)}")
    n = len(flat[0])
    for level, per in zip(flat, _CODES_PER_FRAME, strict=True):
        if len(level) != n * per:
            raise ValueError("SNAC levels do not have 1:2:4 lengths")
    frames = np.empty((n, FRAME_TOKENS), dtype=np.int64)
    for level, cols in enumerate(_LEVEL_COLUMNS):
        frames[:, cols] = flat[level].reshape(n, _CODES_PER_FRAME[level])
    return frames


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


# --- loading ---------------------------------------------------------------------------------


# --- the codec -------------------------------------------------------------------------------

_noise = threading.local()  # per decoding thread: one torch.Generator per batch item


def _seeded_noise_forward(self: Any, x: torch.Tensor) -> torch.Tensor:
    """SNAC NoiseBlock.forward with noise from per-item seeded generators instead of torch.randn.

    SNAC's decoder draws noise from the global RNG, which makes decoding non-reproducible and
    racy across threads; each item gets its own generator so a candidate's audio depends only
    on its codes and seed, whatever else shares its batch or thread.
    """
    import torch

    gens = getattr(_noise, "generators", None)
    batch, _, length = x.shape
    if gens is None or len(gens) != batch:
        raise RuntimeError("SNAC decode outside SnacCodec.decode (no noise generators set)")
    noise = torch.stack([torch.randn((1, length), generator=g) for g in gens])
    noise = noise.to(device=x.device, dtype=x.dtype)
    return x + noise * self.linear(x)


class SnacCodec:
    """A loaded SNAC 24 kHz model: decode frames to audio, encode audio to frames."""

    def __init__(self, model: Any, device: str, source: str, max_batch: int | None = None) -> None:
        self.model = model
        self.device = device
        self.source = source
        # Batched convolutions round differently from single ones (~1e-6), so on CPU, where
        # batching buys little, every candidate is decoded alone and is bit-reproducible.
        self.max_batch = max_batch if max_batch is not None else (1 if device == "cpu" else 16)
        self.sample_rate = int(model.sampling_rate)
        self.samples_per_frame = int(model.hop_length) * int(model.vq_strides[0])
        if self.sample_rate != SAMPLE_RATE or self.samples_per_frame != SAMPLES_PER_FRAME:
            raise UserError(
                f"SNAC codec '{source}' is {self.sample_rate} Hz with {self.samples_per_frame} "
                f"samples per frame; Orpheus needs the 24 kHz model (hubertsiuzdak/snac_24khz)"
            )
        if len(model.vq_strides) != 3:
            raise UserError(f"SNAC codec '{source}' has {len(model.vq_strides)} levels, not 3")

    def decode(self, codes: np.ndarray, seed: int) -> np.ndarray:
        """(n, 7) frames -> float32 mono audio of n * 2048 samples at 24 kHz."""
        return self.decode_batch([(codes, seed)])[0]

    def decode_batch(self, items: Sequence[tuple[np.ndarray, int]]) -> list[np.ndarray]:
        """Decode several candidates; equal-length ones share a forward pass (up to max_batch).

        Only equal frame counts are batched: padding would change the last frames' audio
        through the decoder's receptive field, and a candidate must sound the same whatever
        shares its batch.
        """
        import torch

        out: list[np.ndarray | None] = [None] * len(items)
        groups: dict[int, list[int]] = {}
        for i, (codes, _) in enumerate(items):
            n = int(np.asarray(codes).reshape(-1, FRAME_TOKENS).shape[0])
            if n == 0:
                out[i] = np.zeros(0, dtype=np.float32)
            else:
                groups.setdefault(n, []).append(i)
        chunks = [
            same[start : start + max(1, self.max_batch)]
            for same in groups.values()
            for start in range(0, len(same), max(1, self.max_batch))
        ]
        for members in chunks:
            per_item = [frames_to_codes(items[i][0]) for i in members]
            levels = [
                torch.from_numpy(np.stack([p[level] for p in per_item])).to(self.device)
                for level in range(3)
            ]
            _noise.generators = [
                torch.Generator().manual_seed(int(items[i][1]) & 0xFFFF_FFFF_FFFF_FFFF)
                for i in members
            ]
            try:
                with torch.inference_mode():
                    audio = self.model.decode(levels)
            finally:
                _noise.generators = None
            audio = audio.float().cpu().numpy()[:, 0, :]
            for row, i in enumerate(members):
                out[i] = np.ascontiguousarray(np.clip(audio[row], -1.0, 1.0), dtype=np.float32)
        return [a if a is not None else np.zeros(0, dtype=np.float32) for a in out]

    def encode(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        """Mono audio at any rate -> (n, 7) frames (the clip is resampled to 24 kHz first)."""
        import torch

        wav = np.asarray(audio, dtype=np.float32)
        if wav.ndim == 2:  # (samples, channels) as soundfile reads it
            wav = wav.mean(axis=1)
        if sample_rate != self.sample_rate:
            from verified_tts.audio import resample

            wav = resample(wav, int(sample_rate), self.sample_rate)
        tensor = torch.from_numpy(np.ascontiguousarray(wav, dtype=np.float32))
        with torch.inference_mode():
            levels = self.model.encode(tensor.view(1, 1, -1).to(self.device))
        return codes_to_frames(levels)


def load_codec(
    id_or_dir: str | os.PathLike[str], device: str | None = None, max_batch: int | None = None
) -> SnacCodec:
    """Load SNAC 24 kHz from a local folder (config.json + pytorch_model.bin) or a hub id."""
    try:
        import torch
        from snac import SNAC
        from snac.layers import NoiseBlock
    except ImportError as exc:
        raise MissingExtra("the SNAC codec", "orpheus", "snac") from exc

    folder = Path(
        locate_model(
            id_or_dir,
            what="SNAC codec",
            option="--codec",
            fetch=hub_snapshot(["config.json", "pytorch_model.bin"]),
        ).path
    )
    for name in ("config.json", "pytorch_model.bin"):
        if not (folder / name).is_file():
            raise UserError(
                f"SNAC codec folder '{folder}' has no {name}: expected the layout of "
                "hubertsiuzdak/snac_24khz (config.json + pytorch_model.bin)"
            )
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model = SNAC.from_pretrained(str(folder)).eval()
    for module in model.modules():
        # Fold weight norm into plain weights once: inference recomputes it every call otherwise.
        if torch.nn.utils.parametrize.is_parametrized(module):
            for name in list(module.parametrizations.keys()):
                torch.nn.utils.parametrize.remove_parametrizations(module, name)
        if isinstance(module, NoiseBlock):
            module.forward = types.MethodType(_seeded_noise_forward, module)
    model = model.to(device)
    return SnacCodec(model, device=device, source=str(id_or_dir), max_batch=max_batch)
