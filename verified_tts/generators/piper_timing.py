"""Exact timings from a Piper voice's own duration predictor: frames per phoneme id, words, length.

VITS decides how long every phoneme id lasts before it makes a sample: its duration predictor
gives ``w``, ceiled to whole frames (``w_ceil``), and the decoder turns each frame into ``hop``
samples. The graph rewrite (:func:`~verified_tts.generators.piper_graph.expose_durations`) makes
``w_ceil`` an output of every run, so each candidate knows the frames its own noise drew and, with
the word of every id (:mod:`verified_tts.generators.piper_words`), where every word starts and
ends, to the sample. :class:`DurationPredictor` is the graph cut down to the duration predictor
(no prior, no decoder): it says how long the voice means to speak a text, the length a clean
candidate is expected to have, for the duration gate. That is the mean of the frames over
``draws`` draws of the voice's own duration noise (fixed by the ids, one batched run of the
predictor's noisy part after one run of the text encoder), or with ``draws`` 0 the deterministic
prediction at ``noise_w`` 0; benchmarks/flags/piper_durations.py measures which to use.
:func:`timing_info` packs it all into a candidate's ``info["timing"]`` (JSON, compact).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from verified_tts.generators.piper_graph import DURATION_SCALE

__all__ = [
    "DurationPredictor",
    "PredictorCut",
    "SentenceTiming",
    "cut_predictor",
    "timing_info",
    "word_times",
]

TIMING_VERSION = 1


@dataclass(frozen=True)
class SentenceTiming:
    """One sentence of a candidate: frames per phoneme id and the word of each id (-1: none)."""

    frames: tuple[int, ...]
    id_words: tuple[int, ...]


class DurationPredictor:
    """The voice's duration predictor alone, cut from the rewritten graph (see module docstring).

    Two sessions: ``encoder`` maps the ids to the tensors the duration noise meets first (the
    text encoder, run once per text), ``head`` maps those, the scales and the duration noise to
    the frames per id, for a whole batch of noise draws at once."""

    def __init__(
        self,
        encoder: Any,
        head: Any,
        frontier: Sequence[str],
        head_inputs: Sequence[str],
        noise: str,
        noise_dims: tuple[int, ...],
    ) -> None:
        self.encoder = encoder
        self.head = head
        self.frontier = tuple(frontier)
        self.head_inputs = tuple(head_inputs)
        self.noise = noise
        self.noise_dims = noise_dims

    def frames(
        self,
        ids: Sequence[int],
        scales: tuple[float, float, float],
        speaker: int = 0,
        draws: int = 0,
    ) -> float:
        """Frames the voice means ``ids`` to last: at ``noise_w`` 0, or the mean over ``draws``
        draws of the duration noise at the given ``noise_w`` (fixed by the ids)."""
        return float(self.mean_frames(ids, scales, speaker, draws).sum())

    def mean_frames(
        self,
        ids: Sequence[int],
        scales: tuple[float, float, float],
        speaker: int = 0,
        draws: int = 0,
        noise: np.ndarray | None = None,
    ) -> np.ndarray:
        """:meth:`frames` per id: the mean frames each id lasts (float, one per id)."""
        if noise is None:
            count = max(1, int(draws))
            shape = (count, *self.noise_dims, len(ids))
            if draws:
                digest = hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).digest()
                rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
                noise = rng.standard_normal(shape, dtype=np.float32)
            else:
                noise = np.zeros(shape, dtype=np.float32)
        if not draws:
            scales = (scales[0], scales[1], 0.0)
        return self.run(ids, scales, speaker, noise).mean(axis=0)

    def run(
        self,
        ids: Sequence[int],
        scales: tuple[float, float, float],
        speaker: int,
        noise: np.ndarray,
    ) -> np.ndarray:
        """Frames per id [draws, ids] of ``ids`` under each row of ``noise`` [draws, *dims, ids]:
        what a full run drawing the same duration noise gives."""
        one = {
            "input": np.asarray([list(ids)], dtype=np.int64),
            "input_lengths": np.asarray([len(ids)], dtype=np.int64),
            "scales": np.asarray(scales, dtype=np.float32),
            "sid": np.asarray([speaker], dtype=np.int64),
            # the voice's own length: every id at its own duration
            DURATION_SCALE: np.ones((1, 1, len(ids)), dtype=np.float32),
        }
        encoder_inputs = {i.name for i in self.encoder.get_inputs()}
        encoded = self.encoder.run(
            list(self.frontier), {k: v for k, v in one.items() if k in encoder_inputs}
        )
        count = noise.shape[0]
        feeds = {name: value for name, value in zip(self.frontier, encoded, strict=True)}
        feeds.update({k: v for k, v in one.items() if k != "scales"})
        feeds = {
            k: v if k == DURATION_SCALE else np.repeat(v, count, axis=0) for k, v in feeds.items()
        }
        feeds["scales"] = one["scales"]
        feeds[self.noise] = np.asarray(noise, dtype=np.float32)
        (durations,) = self.head.run(None, {k: feeds[k] for k in self.head_inputs})
        return np.asarray(durations, dtype=np.float64).reshape(count, -1)

    @classmethod
    def from_cut(
        cls, cut: PredictorCut, threads: int, noise_dims: tuple[int, ...]
    ) -> DurationPredictor:
        """The predictor's two sessions on a cut made earlier (perhaps by another process)."""
        return cls(
            _session(cut.encoder, threads),
            _session(cut.head, threads),
            cut.frontier,
            cut.head_inputs,
            cut.noise,
            noise_dims,
        )


@dataclass(frozen=True)
class PredictorCut:
    """The duration predictor cut from a rewritten graph: the serialised encoder and head, the
    tensors between them, the head's other inputs and its noise input."""

    encoder: bytes
    head: bytes
    frontier: tuple[str, ...]
    head_inputs: tuple[str, ...]
    noise: str


def cut_predictor(model: Any, durations: str, noise_inputs: Sequence[str]) -> PredictorCut:
    """Cut ``model`` (the rewritten ``onnx.ModelProto``) into the text encoder and the head that
    gives ``durations`` from it and one of ``noise_inputs``; ValueError where it does not fit."""
    import onnx

    graph_inputs = _inputs_of(model, durations)
    noise = [name for name in noise_inputs if name in graph_inputs]
    if len(noise) != 1:
        raise ValueError(f"the durations depend on {len(noise)} noise inputs, not one")
    frontier = _frontier(model, durations, noise[0])
    # the extractor wants a value_info for every tensor it cuts at, shape known or not
    model = copy.deepcopy(model)
    known = {info.name for info in model.graph.value_info}
    model.graph.value_info.extend(
        onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
        for name in frontier
        if name not in known
    )
    extractor = onnx.utils.Extractor(model)
    encoder_inputs = [n for n in graph_inputs if n in ("input", "input_lengths", "sid")]
    encoder = extractor.extract_model(encoder_inputs, frontier)
    head_inputs = _inputs_of(model, durations, stop=frontier)
    head = extractor.extract_model([*frontier, *head_inputs], [durations])
    return PredictorCut(
        encoder.SerializeToString(),
        head.SerializeToString(),
        tuple(frontier),
        (*frontier, *head_inputs),
        noise[0],
    )


def _session(model: bytes, threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _frontier(model: Any, output: str, noise: str) -> list[str]:
    """The float tensors on the way to ``output`` that the ids reach and the noise does not,
    read by a node the noise reaches: what the text encoder hands the noisy part."""
    import onnx
    from onnx import TensorProto

    inferred = onnx.shape_inference.infer_shapes(model)
    floats = {
        info.name
        for info in [*inferred.graph.value_info, *inferred.graph.input]
        if info.type.tensor_type.elem_type == TensorProto.FLOAT
    }
    initialised = {init.name for init in model.graph.initializer}
    reach: dict[str, frozenset[str]] = {i.name: frozenset([i.name]) for i in model.graph.input}
    for node in model.graph.node:  # graph nodes are in topological order
        reached = frozenset().union(*(reach.get(i, frozenset()) for i in node.input if i))
        for out in node.output:
            reach[out] = reached
    needed = set(_ancestors(model, output))
    frontier = set()
    for node in model.graph.node:
        if not set(node.output) & needed or noise not in reach.get(node.output[0], ()):
            continue
        for name in node.input:
            if (
                name
                and name not in initialised
                and name in floats
                and noise not in reach.get(name, ())
                and "input" in reach.get(name, ())
            ):
                frontier.add(name)
    if not frontier:
        raise ValueError("no encoder output found before the duration noise")
    return sorted(frontier)


def _ancestors(model: Any, output: str, stop: Sequence[str] = ()) -> set[str]:
    producer = {out: node for node in model.graph.node for out in node.output}
    seen: set[str] = set()
    stack = [output]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        node = producer.get(name)
        if node is not None and name not in stop:
            stack.extend(i for i in node.input if i)
    return seen


def _inputs_of(model: Any, output: str, stop: Sequence[str] = ()) -> list[str]:
    """The graph inputs ``output`` depends on (not through ``stop``), in the graph's order."""
    initialised = {init.name for init in model.graph.initializer}
    reached = _ancestors(model, output, stop)
    return [i.name for i in model.graph.input if i.name not in initialised and i.name in reached]


def word_times(
    sentences: Sequence[SentenceTiming], hop: int, pause: int
) -> dict[int, tuple[int, int, int, int, int]]:
    """Word index -> (sentence, first id, end id, start sample, end sample): the ids it reads
    and the samples [start, end) they cover in the candidate's audio (sentences joined by
    ``pause`` samples of silence)."""
    out: dict[int, list[int]] = {}
    offset = 0
    for number, sentence in enumerate(sentences):
        edges = np.concatenate([[0], np.cumsum(sentence.frames)]) * hop + offset
        for position, word in enumerate(sentence.id_words):
            if word < 0:
                continue
            if word not in out:
                out[word] = [number, position, position + 1, int(edges[position]), 0]
            out[word][2] = position + 1
            out[word][4] = int(edges[position + 1])
        offset = int(edges[-1]) + pause
    return {word: (a, b, c, d, e) for word, (a, b, c, d, e) in out.items()}


def timing_info(
    sentences: Sequence[SentenceTiming],
    words: Sequence[tuple[int, int]],
    *,
    hop: int,
    pause: int,
    sample_rate: float,
    predicted_frames: Sequence[np.ndarray],
) -> dict[str, Any]:
    """A candidate's ``info["timing"]``: frames per id per sentence, each word of the spoken text
    as [first char, end char, sentence, first id, end id, start s, end s] (a word with no id, if
    any, is left out), and ``predicted_s``: the voice's own length for the text, pauses included.
    """
    spans = word_times(sentences, hop, pause)
    rows = []
    for index, (first, end) in enumerate(words):
        if index in spans:
            sentence, id0, id1, start, stop = spans[index]
            rows.append(
                [first, end, sentence, id0, id1,
                 round(start / sample_rate, 5), round(stop / sample_rate, 5)]
            )  # fmt: skip
    pauses = pause * max(0, len(sentences) - 1)
    predicted = (sum(float(np.sum(f)) for f in predicted_frames) * hop + pauses) / sample_rate
    speech = _speech_samples(predicted_frames, [s.id_words for s in sentences], hop, pause)
    return {
        "version": TIMING_VERSION,
        "hop": hop,
        "pause": pause,
        "frames": [list(s.frames) for s in sentences],
        "words": rows,
        "predicted_s": round(predicted, 5),
        "predicted_speech_s": round(speech / sample_rate, 5),
    }


def _speech_samples(
    frames: Sequence[np.ndarray], id_words: Sequence[Sequence[int]], hop: int, pause: int
) -> float:
    """Samples from the first word's first id to the last word's last id, under ``frames``."""
    edges, offset = [], 0.0
    for sentence_frames, words in zip(frames, id_words, strict=True):
        starts = offset + np.concatenate([[0.0], np.cumsum(sentence_frames)]) * hop
        spoken = [k for k, word in enumerate(words) if word >= 0]
        if spoken:
            edges += [float(starts[spoken[0]]), float(starts[spoken[-1] + 1])]
        offset = float(starts[-1]) + pause
    return edges[-1] - edges[0] if edges else 0.0
