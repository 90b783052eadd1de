"""Seeded noise for VITS graphs: every ``RandomNormalLike`` becomes a slice of a noise input.

A Piper voice draws its noise inside the ONNX graph, in ``RandomNormalLike`` nodes (one in the
stochastic duration predictor, one for the prior). onnxruntime seeds those from its own state,
and ``onnxruntime.set_seed`` does not make runs repeat, so the audio could not be a function of a
candidate's seed. :func:`seed_noise` rewrites the graph once, when the voice loads: each such node
becomes ``Slice(noise_k, 0, Shape(x))`` of a new graph input ``noise_k`` (times the node's scale,
plus its mean), and the shape it needed comes out as an extra output ``noise_k_shape``. The caller
draws the noise from the candidate's seed. Noise shorter than needed is padded with zeros instead
of failing the run, and the shape output shows it, so the caller runs again with enough.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError

__all__ = [
    "DURATIONS",
    "DURATION_SCALE",
    "NoiseSite",
    "check_voice_graph",
    "expose_durations",
    "scale_durations",
    "seed_noise",
]

DURATIONS = "durations"  # the output expose_durations adds
DURATION_SCALE = "duration_scale"  # the input scale_durations adds
_GRAPH_INPUTS = {"input", "input_lengths", "scales"}


@dataclass(frozen=True)
class NoiseSite:
    """One replaced ``RandomNormalLike``: its new input, the shape output, and its rank."""

    node: str  # name of the replaced node, for messages
    input: str  # graph input the caller fills: float32, rank ``rank``
    shape_output: str  # graph output: the int64 shape the node needed in the last run
    rank: int


def seed_noise(model: Any) -> list[NoiseSite]:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place; return the noise sites, in order.

    Returns an empty list when the graph has no ``RandomNormalLike`` (nothing to seed).
    """
    import onnx
    from onnx import TensorProto, helper

    graph = model.graph
    inferred = onnx.shape_inference.infer_shapes(model)
    ranks = {
        info.name: len(info.type.tensor_type.shape.dim)
        for info in [*inferred.graph.value_info, *inferred.graph.input]
        if info.type.tensor_type.HasField("shape")
    }
    sites: list[NoiseSite] = []
    nodes = []
    for node in graph.node:
        if node.op_type != "RandomNormalLike":
            nodes.append(node)
            continue
        k = len(sites)
        source = node.input[0]
        rank = ranks.get(source) or ranks.get(node.output[0])
        if not rank:
            raise ValueError(f"cannot tell the rank of {node.name or source}'s input")
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        site = NoiseSite(
            node=node.name or f"RandomNormalLike_{k}",
            input=f"noise_{k}",
            shape_output=f"noise_{k}_shape",
            rank=rank,
        )
        prefix = f"/seeded_noise_{k}"
        zeros, axes = f"{prefix}/zeros", f"{prefix}/axes"
        graph.initializer.extend(
            [
                helper.make_tensor(zeros, TensorProto.INT64, [rank], [0] * rank),
                helper.make_tensor(axes, TensorProto.INT64, [rank], list(range(rank))),
            ]
        )
        sliced, padded = f"{prefix}/slice", f"{prefix}/padded"
        nodes.extend(
            [
                helper.make_node("Shape", [source], [site.shape_output], name=f"{prefix}/Shape"),
                helper.make_node(
                    "Slice",
                    [site.input, zeros, site.shape_output, axes],
                    [sliced],
                    name=f"{prefix}/Slice",
                ),
                # Too little noise is padded with zeros rather than failing the run: the shape
                # output tells the caller, who runs again with enough.
                helper.make_node("Shape", [sliced], [f"{prefix}/got"]),
                helper.make_node("Sub", [site.shape_output, f"{prefix}/got"], [f"{prefix}/short"]),
                helper.make_node("Concat", [zeros, f"{prefix}/short"], [f"{prefix}/pads"], axis=0),
                helper.make_node("Pad", [sliced, f"{prefix}/pads"], [padded], mode="constant"),
            ]
        )
        value = padded
        scale, mean = float(attributes.get("scale", 1.0)), float(attributes.get("mean", 0.0))
        if scale != 1.0:
            graph.initializer.append(
                helper.make_tensor(f"{prefix}/scale", TensorProto.FLOAT, [], [scale])
            )
            nodes.append(helper.make_node("Mul", [value, f"{prefix}/scale"], [f"{prefix}/scaled"]))
            value = f"{prefix}/scaled"
        if mean != 0.0:
            graph.initializer.append(
                helper.make_tensor(f"{prefix}/mean", TensorProto.FLOAT, [], [mean])
            )
            nodes.append(helper.make_node("Add", [value, f"{prefix}/mean"], [f"{prefix}/shifted"]))
            value = f"{prefix}/shifted"
        dtype = int(attributes.get("dtype", TensorProto.FLOAT))
        if dtype != TensorProto.FLOAT:
            nodes.append(helper.make_node("Cast", [value], [f"{prefix}/cast"], to=dtype))
            value = f"{prefix}/cast"
        nodes.append(helper.make_node("Identity", [value], [node.output[0]], name=f"{prefix}/Out"))
        graph.input.append(
            helper.make_tensor_value_info(
                site.input, TensorProto.FLOAT, [f"noise_{k}_d{d}" for d in range(rank)]
            )
        )
        graph.output.append(
            helper.make_tensor_value_info(site.shape_output, TensorProto.INT64, [rank])
        )
        sites.append(site)
    del graph.node[:]
    graph.node.extend(nodes)
    return sites


def expose_durations(model: Any) -> str | None:
    """Add the frames per phoneme id (VITS's ``w_ceil``: the ``Ceil`` whose sum is the number of
    frames) as the graph output :data:`DURATIONS`; return its name, or None if there is none."""
    from onnx import TensorProto, helper

    graph = model.graph
    ceil = _frames_ceil(model)
    if ceil is None:
        return None
    graph.node.append(
        helper.make_node("Identity", [ceil.output[0]], [DURATIONS], name="/durations")
    )
    graph.output.append(helper.make_tensor_value_info(DURATIONS, TensorProto.FLOAT, None))
    return DURATIONS


def _frames_ceil(model: Any) -> Any:
    """VITS's ``w_ceil``: the ``Ceil`` whose output a ``ReduceSum`` reads (the frame count)."""
    readers: dict[str, set[str]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    return next(
        (
            n
            for n in model.graph.node
            if n.op_type == "Ceil" and "ReduceSum" in readers.get(n.output[0], ())
        ),
        None,
    )


def scale_durations(model: Any) -> str | None:
    """Multiply each phoneme id's duration (VITS's ``w``, before it is ceiled to frames) by a new
    graph input :data:`DURATION_SCALE` of shape [1, 1, ids], so a take can lengthen or shorten
    its own sounds and pauses; with every scale 1 the graph computes what it did (``x * 1`` is
    exact). Returns the input's name, or None for a graph without ``w_ceil``."""
    from onnx import TensorProto, helper

    ceil = _frames_ceil(model)
    if ceil is None:
        return None
    scaled, target = "/duration_scale/scaled", ceil.output[0]
    nodes = []
    for node in model.graph.node:
        node = copy.deepcopy(node)
        if node.op_type == "Ceil" and node.output[0] == target:
            nodes.append(
                helper.make_node(
                    "Mul", [node.input[0], DURATION_SCALE], [scaled], name="/duration_scale/Mul"
                )
            )
            node.input[0] = scaled
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.input.append(
        helper.make_tensor_value_info(DURATION_SCALE, TensorProto.FLOAT, [1, 1, "ids"])
    )
    return DURATION_SCALE


def _gather_rows(model: Any, indices: str) -> int | None:
    """Rows of the table that a ``Gather`` on graph input ``indices`` reads (an embedding)."""
    from onnx import numpy_helper

    tables = {init.name: init for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[1] == indices:
            table = tables.get(node.input[0])
            if table is not None and len(table.dims) == 2:
                return int(numpy_helper.to_array(table).shape[0])
    return None


def check_voice_graph(
    model: Any, config: Mapping[str, Any], onnx_path: Path, config_path: Path
) -> None:
    """The graph is a Piper VITS voice, and the config belongs to it (else UserError)."""
    inputs = {i.name for i in model.graph.input}
    if not inputs >= _GRAPH_INPUTS:
        raise UserError(
            f"{onnx_path}: not a Piper voice (its graph takes {', '.join(sorted(inputs))}; a "
            "Piper voice takes input, input_lengths and scales)"
        )
    ids = [i for values in config["phoneme_id_map"].values() for i in values]
    symbols = _gather_rows(model, "input")
    if symbols is not None and ids and max(ids) >= symbols:
        raise UserError(
            f"{config_path} does not belong to {onnx_path}: its phoneme ids reach {max(ids)} but "
            f"the graph knows {symbols} symbols; use the JSON that came with the voice"
        )
    speakers = int(config.get("num_speakers", 1) or 1)
    if (speakers > 1) != ("sid" in inputs):
        graph = "several speakers" if "sid" in inputs else "one speaker"
        raise UserError(
            f"{config_path} does not belong to {onnx_path}: the config says {speakers} "
            f"speaker(s), the graph has {graph}; use the JSON that came with the voice"
        )
    rows = _gather_rows(model, "sid") if "sid" in inputs else None
    if rows is not None and speakers > rows:
        raise UserError(
            f"{config_path} does not belong to {onnx_path}: {speakers} speakers in the config, "
            f"{rows} in the graph"
        )
