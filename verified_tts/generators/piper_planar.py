"""One-dimensional convolutions of a Piper voice run as two-dimensional ones of height 1.

A VITS voice spends most of its time in the ``Conv`` nodes of its HiFi-GAN decoder, which are
one-dimensional (batch, channels, frames). onnxruntime's CPU provider runs those through im2col
and a matrix product; its blocked NCHWc layout, with direct convolution kernels vectorised over
blocks of channels, applies only to two-dimensional convolutions. :func:`planar_convolutions`
rewrites each one-dimensional ``Conv`` whose weights are constants as ``Unsqueeze`` -> a ``Conv``
of kernel 1 x K -> ``Squeeze``, keeping every tensor name the rest of the graph reads, so the
noise sites and the exposed durations are untouched. It is the same arithmetic summed in another
order: the samples agree with the plain graph's to float32 rounding (about 1e-4 at most), not bit
for bit, so a voice's identity says whether it ran planar. ``ConvTranspose`` is left alone (it has
no blocked kernel). benchmarks/speed/piper_planar.py measures the CPU time per second of audio both
ways.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PLANAR_SCHEME", "planar_convolutions"]

PLANAR_SCHEME = "conv1d-as-conv2d-v1"  # part of a planar voice's identity
_HEIGHT_AXIS = "planar_height_axis"


def planar_convolutions(model: Any) -> int:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place; return how many convolutions changed."""
    import numpy as np
    from onnx import helper, numpy_helper

    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    nodes = []
    changed = 0
    for node in graph.node:
        weight = weights.get(node.input[1]) if node.op_type == "Conv" else None
        if weight is None or len(weight.dims) != 3:
            nodes.append(node)
            continue
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            nodes.append(node)  # padding the 2-D way would differ; Piper's exports give pads
            continue
        changed += 1
        planar_weight = f"{weight.name}__planar"
        if planar_weight not in weights:
            array = numpy_helper.to_array(weight)[:, :, None, :]
            graph.initializer.append(numpy_helper.from_array(array, planar_weight))
            weights[planar_weight] = graph.initializer[-1]
        rows = f"{node.output[0]}__planar_in"
        out = f"{node.output[0]}__planar_out"
        nodes.append(helper.make_node("Unsqueeze", [node.input[0], _HEIGHT_AXIS], [rows]))
        nodes.append(
            helper.make_node(
                "Conv",
                [rows, planar_weight, *node.input[2:]],
                [out],
                name=node.name,
                **_planar_attributes(attributes),
            )
        )
        nodes.append(helper.make_node("Squeeze", [out, _HEIGHT_AXIS], [node.output[0]]))
    if changed:
        axis = numpy_helper.from_array(np.array([2], dtype=np.int64), _HEIGHT_AXIS)
        graph.initializer.append(axis)
        del graph.node[:]
        graph.node.extend(nodes)
    return changed


def _planar_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """A 1-D Conv's attributes for the same Conv over a height-1 plane."""
    planar: dict[str, Any] = {}
    for name, value in attributes.items():
        if name == "kernel_shape" or name in ("strides", "dilations"):
            planar[name] = [1, *value]
        elif name == "pads":
            planar[name] = [0, value[0], 0, value[1]]
        elif name != "auto_pad":
            planar[name] = value
    return planar
