"""Resemblyzer's voice encoder without torch: its weights, its preprocessing and its network.

The speaker verifier's default encoder is Resemblyzer's ``VoiceEncoder`` (a 3-layer LSTM of 256
units over 40-band mel frames, a linear layer, ReLU and L2 normalisation, weights in the
resemblyzer wheel). Importing resemblyzer imports torch, which costs every process that loads the
verifier one to two seconds of a core (each render, job driver, Ray actor and server). This module
reads the checkpoint without torch (both of torch's file formats: the legacy one the wheel ships
and the zip one newer torch writes), does Resemblyzer's level normalisation, silence trimming and
partial slicing, and runs the network on onnxruntime, which the product already loads for Piper.
The checkpoint is read, and the graph built, only the first time a weights file is used; after
that the graph comes from the derived-files cache. The tests hold each step to resemblyzer's own
(embeddings within float32 rounding).
"""

from __future__ import annotations

import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from verified_tts.errors import UserError

__all__ = [
    "PARTIAL_FRAMES",
    "SAMPLE_RATE",
    "VoiceEncoderSession",
    "VoiceEncoderWeights",
    "bundled_weights_path",
    "load_weights",
    "normalize_volume",
    "partial_slices",
    "trim_long_silences",
]

SAMPLE_RATE = 16_000
PARTIAL_FRAMES = 160  # 1.6 s of 10 ms mel frames
_HOP = 160  # samples a mel frame
_LAYERS = 3
_INT16_MAX = 2**15 - 1
_VAD_WINDOW = 480  # 30 ms at 16 kHz, one of the windows webrtcvad accepts
_VAD_AVERAGE = 8  # frames in the moving average of the voice flags
_VAD_MAX_SILENCE = 6  # the longest silence kept whole, in windows
_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16}


@dataclass(frozen=True)
class VoiceEncoderWeights:
    """The encoder's parameters as float32 arrays: per LSTM layer the input and recurrent
    weights with their biases summed, then the output projection."""

    lstm: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    linear_weight: np.ndarray
    linear_bias: np.ndarray
    source: str


def bundled_weights_path() -> Path:
    """``pretrained.pt`` inside the installed resemblyzer wheel, found without importing it."""
    spec = find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        from verified_tts.errors import MissingExtra

        raise MissingExtra("the resemblyzer speaker encoder", "resemblyzer", "resemblyzer")
    return Path(next(iter(spec.submodule_search_locations))) / "pretrained.pt"


def load_weights(path: str | os.PathLike[str]) -> VoiceEncoderWeights:
    """The encoder's weights from a Resemblyzer checkpoint (``{"model_state": state_dict}``)."""
    try:
        state = _read_torch_checkpoint(Path(path))
    except (OSError, pickle.UnpicklingError, ValueError, KeyError, struct.error) as error:
        raise UserError(
            f"cannot read the resemblyzer weights '{os.fspath(path)}' ({error}): give a "
            "checkpoint saved by resemblyzer's training code, or leave [verifiers.speaker] model "
            "unset for the weights in the wheel"
        ) from error
    model = state.get("model_state", state) if isinstance(state, dict) else None
    try:
        layers = tuple(
            (
                _f32(model[f"lstm.weight_ih_l{layer}"]).T.copy(),
                _f32(model[f"lstm.weight_hh_l{layer}"]).T.copy(),
                _f32(model[f"lstm.bias_ih_l{layer}"]) + _f32(model[f"lstm.bias_hh_l{layer}"]),
            )
            for layer in range(_LAYERS)
        )
        weight, bias = _f32(model["linear.weight"]).T.copy(), _f32(model["linear.bias"])
    except (KeyError, TypeError) as error:
        raise UserError(
            f"'{os.fspath(path)}' is not a resemblyzer voice encoder checkpoint (no {error}): "
            "leave [verifiers.speaker] model unset for the weights in the wheel"
        ) from error
    return VoiceEncoderWeights(layers, weight, bias, os.fspath(path))


class VoiceEncoderSession:
    """The encoder as an onnxruntime graph (three LSTM nodes, the projection and ReLU) on one CPU
    thread: onnxruntime is already loaded for Piper, its LSTM kernel is as fast as torch's, and
    one thread avoids the barrier at each of the LSTM's 480 steps that made two threads cost
    ten times the CPU on a busy two-core machine."""

    def __init__(self, weights: str | os.PathLike[str]) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.source = os.fspath(weights)
        self._session = onnxruntime.InferenceSession(
            str(_cached_graph(Path(weights))), options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, mels: np.ndarray) -> np.ndarray:
        """Unit-norm embeddings [batch, 256] of mel partials [batch, frames, 40] (a partial
        whose projection is all zero gives NaN, as resemblyzer's module does)."""
        (raw,) = self._session.run(None, {"mels": np.ascontiguousarray(mels, dtype=np.float32)})
        with np.errstate(invalid="ignore", divide="ignore"):
            return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def _cached_graph(weights: Path) -> Path:
    """The encoder's ONNX file, built once per weights file and code version (reading the
    checkpoint and building the graph needs the ``onnx`` package, which costs a process almost a
    second to import)."""
    import hashlib
    import sys
    from importlib.metadata import version

    from verified_tts.storage.derived import derived_folder, recipe_digest

    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    recipe = recipe_digest(sys.modules[__name__]) + version("onnx")
    key = hashlib.sha256(f"{digest} {recipe}".encode()).hexdigest()[:32]
    folder = derived_folder(
        "voice-encoder",
        key,
        lambda into: (into / "encoder.onnx").write_bytes(_encoder_graph(load_weights(weights))),
    )
    return folder / "encoder.onnx"


def _encoder_graph(weights: VoiceEncoderWeights) -> bytes:
    """The serialised ONNX model: mels [batch, frames, 40] -> ReLU(projection) [batch, 256]."""
    from onnx import TensorProto, helper, numpy_helper

    def gates_for_onnx(matrix: np.ndarray) -> np.ndarray:
        # torch stacks the gates input, forget, cell, output; ONNX input, output, forget, cell
        input_gate, forget_gate, cell_gate, output_gate = np.split(matrix, 4, axis=0)
        return np.concatenate([input_gate, output_gate, forget_gate, cell_gate])

    initialisers = [numpy_helper.from_array(np.array([1], dtype=np.int64), "axis")]
    nodes = [helper.make_node("Transpose", ["mels"], ["layer_in0"], perm=[1, 0, 2])]
    units = 0
    for layer, (input_weight, recurrent_weight, bias) in enumerate(weights.lstm):
        units = recurrent_weight.shape[0]
        biases = np.concatenate([gates_for_onnx(bias), np.zeros_like(bias)])
        for name, value in (
            (f"W{layer}", gates_for_onnx(input_weight.T)[None]),
            (f"R{layer}", gates_for_onnx(recurrent_weight.T)[None]),
            (f"B{layer}", biases[None]),
        ):
            initialisers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        nodes.append(
            helper.make_node(
                "LSTM",
                [f"layer_in{layer}", f"W{layer}", f"R{layer}", f"B{layer}"],
                [f"sequence{layer}", f"last{layer}"],
                hidden_size=units,
            )
        )
        nodes.append(
            helper.make_node("Squeeze", [f"sequence{layer}", "axis"], [f"layer_in{layer + 1}"])
        )
    top = len(weights.lstm) - 1
    initialisers += [
        numpy_helper.from_array(np.array([0], dtype=np.int64), "first"),
        numpy_helper.from_array(weights.linear_weight, "linear_weight"),
        numpy_helper.from_array(weights.linear_bias, "linear_bias"),
    ]
    nodes += [
        helper.make_node("Squeeze", [f"last{top}", "first"], ["hidden"]),
        helper.make_node("MatMul", ["hidden", "linear_weight"], ["projected"]),
        helper.make_node("Add", ["projected", "linear_bias"], ["biased"]),
        helper.make_node("Relu", ["biased"], ["embedding"]),
    ]
    mels = helper.make_tensor_value_info("mels", TensorProto.FLOAT, ["batch", "frames", 40])
    out = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", units])
    graph = helper.make_graph(nodes, "voice_encoder", [mels], [out], initialisers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    return model.SerializeToString()


def partial_slices(samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> list[slice]:
    """Resemblyzer's mel-frame slices of an utterance of ``samples`` 16 kHz samples: partials of
    160 frames every ``rate``-th of a second, the last kept when it covers ``min_coverage`` of
    its frames (or when it is the only one); the wave is zero-padded to the last slice's end."""
    frames = int(np.ceil((samples + 1) / _HOP))
    step = int(np.round((SAMPLE_RATE / rate) / _HOP))
    starts = range(0, max(1, frames - PARTIAL_FRAMES + step + 1), step)
    slices = [slice(start, start + PARTIAL_FRAMES) for start in starts]
    last = slices[-1]
    coverage = (samples - last.start * _HOP) / (PARTIAL_FRAMES * _HOP)
    if coverage < min_coverage and len(slices) > 1:
        slices.pop()
    return slices


def normalize_volume(wav: np.ndarray, target_dbfs: float = -30.0) -> np.ndarray:
    """The wave raised (never lowered) to an RMS of ``target_dbfs``, as Resemblyzer does."""
    rms = np.sqrt(np.mean((wav * _INT16_MAX) ** 2))
    change = target_dbfs - 20 * np.log10(rms / _INT16_MAX)
    return wav if change < 0 else wav * (10 ** (change / 20))


def trim_long_silences(wav: np.ndarray) -> np.ndarray:
    """The wave without silences longer than Resemblyzer allows: webrtcvad (mode 3) flags each
    30 ms window, a moving average of 8 smooths the flags, and each voiced window keeps the three
    windows either side; the wave is first cut to whole windows."""
    import webrtcvad

    wav = wav[: len(wav) - len(wav) % _VAD_WINDOW]
    if not len(wav):
        return wav
    pcm = np.round(wav * _INT16_MAX).astype("<i2").tobytes()
    vad = webrtcvad.Vad(mode=3)
    window_bytes = 2 * _VAD_WINDOW
    flags = np.array(
        [
            vad.is_speech(pcm[start : start + window_bytes], sample_rate=SAMPLE_RATE)
            for start in range(0, len(pcm), window_bytes)
        ],
        dtype=np.float64,
    )
    padded = np.concatenate((np.zeros((_VAD_AVERAGE - 1) // 2), flags, np.zeros(_VAD_AVERAGE // 2)))
    sums = np.cumsum(padded)
    sums[_VAD_AVERAGE:] = sums[_VAD_AVERAGE:] - sums[:-_VAD_AVERAGE]
    voiced = np.round(sums[_VAD_AVERAGE - 1 :] / _VAD_AVERAGE).astype(bool)
    # scipy's binary dilation by a run of 7 windows (zeros beyond the ends): a silence of up to
    # six windows between voiced ones is kept whole
    reach = _VAD_MAX_SILENCE // 2
    kept = np.convolve(voiced, np.ones(2 * reach + 1))[reach : reach + len(voiced)] > 0
    return wav[np.repeat(kept, _VAD_WINDOW)]


def _f32(tensor: Any) -> np.ndarray:
    return np.asarray(tensor, dtype=np.float32)


class _Storage:
    def __init__(self, dtype: type, key: str, numel: int) -> None:
        self.dtype, self.key, self.numel = dtype, key, numel
        self.data: np.ndarray | None = None


class _PendingTensor:
    def __init__(self, storage: _Storage, offset: int, size: tuple, stride: tuple) -> None:
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride

    def materialise(self) -> np.ndarray:
        data = self.storage.data
        if data is None:
            raise ValueError(f"storage {self.storage.key} missing from the file")
        itemsize = data.itemsize
        return np.lib.stride_tricks.as_strided(
            data[self.offset :],
            shape=tuple(self.size),
            strides=tuple(s * itemsize for s in self.stride),
        ).copy()


def _rebuild_tensor(storage: _Storage, offset: int, size: tuple, stride: tuple, *_: Any) -> Any:
    return _PendingTensor(storage, offset, size, stride)


class _CheckpointUnpickler(pickle.Unpickler):
    """Unpickles a torch checkpoint with tensors as pending views of raw storages: only the
    classes a state dict needs are allowed, so the file cannot run code."""

    def __init__(self, file: BinaryIO, storages: dict[str, _Storage]) -> None:
        super().__init__(file)
        self.storages = storages

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return lambda tensor, *_: tensor
        if module == "torch" and name in _DTYPES:
            return _DTYPES[name]
        raise pickle.UnpicklingError(f"unexpected {module}.{name} in a weights file")

    def persistent_load(self, saved_id: Any) -> _Storage:
        kind, dtype, key, _location, numel = saved_id[:5]
        if kind != "storage" or not isinstance(dtype, type):
            raise pickle.UnpicklingError(f"unsupported storage record {saved_id!r}")
        if key not in self.storages:
            self.storages[key] = _Storage(dtype, str(key), int(numel))
        return self.storages[key]


def _read_torch_checkpoint(path: Path) -> Any:
    storages: dict[str, _Storage] = {}
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            [pickled] = [n for n in archive.namelist() if n.endswith("/data.pkl")]
            prefix = pickled.removesuffix("data.pkl")
            with archive.open(pickled) as file:
                result = _CheckpointUnpickler(file, storages).load()
            for key, storage in storages.items():
                raw = archive.read(f"{prefix}data/{key}")
                storage.data = np.frombuffer(raw, dtype=storage.dtype).astype(storage.dtype)
        return _materialise(result)
    with open(path, "rb") as file:
        for _header in range(3):  # magic number, protocol version, system info
            _CheckpointUnpickler(file, storages).load()
        result = _CheckpointUnpickler(file, storages).load()
        keys = _CheckpointUnpickler(file, storages).load()
        for key in keys:
            (numel,) = struct.unpack("<q", file.read(8))
            storage = storages[str(key)]
            count = numel * np.dtype(storage.dtype).itemsize
            storage.data = np.frombuffer(file.read(count), dtype=storage.dtype).copy()
    return _materialise(result)


def _materialise(value: Any) -> Any:
    if isinstance(value, _PendingTensor):
        return value.materialise()
    if isinstance(value, dict):
        return type(value)((key, _materialise(item)) for key, item in value.items())
    if isinstance(value, list | tuple):
        return type(value)(_materialise(item) for item in value)
    return value
