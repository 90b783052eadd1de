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

from dataclasses import dataclass
from typing import Any

__all__ = ["NoiseSite", "seed_noise"]


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
