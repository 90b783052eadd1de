"""A second embedded voice: hibari-tts "heart" (American English, female, 24 kHz) on onnxruntime.

The ``hibari-tts`` wheel (Apache-2.0; distilled from Kokoro-82M) carries the voice as an int8 ONNX
graph plus its own grapheme-to-phoneme front end (misaki's lexicons and rules, a small network for
unknown words; no espeak-ng). The graph maps phoneme ids and a speed to acoustic features (per
12.5 ms frame: harmonic, noise and free-phase spectra and F0), and hibari's numpy signal stage
turns them into a waveform. The graph is deterministic; the only randomness of hibari itself is the
signal stage's noise branch, which barely changes a take: the same text gives the same length and
nearly the same samples for every seed, so best-of-N would choose among copies. Candidates here
differ on purpose, by draws from the candidate's seed that this module records: a speed for the
whole utterance (``speed_jitter``, the spread of its logarithm) and a scale for each phoneme's
duration (``duration_jitter``), which moves pauses at punctuation, word timing and, because the
graph predicts pitch and energy from the expanded durations, the melody. The graph is rewritten at
load so that each phoneme's predicted duration is multiplied by a new input, ``duration_scale``;
with every scale 1 its output is bit-identical to the original graph's. Each draw, the speed and
the signal noise come from separate streams of one seeded numpy generator, so the same seed gives
the same bytes. The graph takes one sequence at a time, so a "batch" is the distinct graph runs of
a call (candidates that would give identical features share one run) spread over a thread pool,
one onnxruntime thread each (the thread count of a run changes its last bits, so it is part of the
identity; the number of runs in parallel is not). Each take records the length the voice means its
text to last at the take's speed (``info["timing"]["predicted_s"]``: the duration head's output
before any duration scale, as the graph rounds it), so the signal verifier holds hibari to its own
pace, as it holds Piper, not to a text formula fitted on Piper's. Lexicon phonemes are spliced into
the text (:mod:`verified_tts.generators.hibari_phonemes`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.audio import shift_pitch
from verified_tts.cores import cores
from verified_tts.errors import UserError
from verified_tts.generators.base import Candidate, SynthesisRequest
from verified_tts.generators.hibari_phonemes import splice_lexicon
from verified_tts.options.generation import HIBARI_SPEED_RANGE, HibariOptions, pitch_factor

__all__ = ["DEFAULT_VOICE", "HibariGenerator", "HibariOptions", "load", "phoneme_chunks"]

DEFAULT_VOICE = "heart"
DRAW_SCHEME = "numpy-pcg64-seed-sentence-stream-v1"  # how seeds become draws; part of identity()
_DURATION_INPUT = "duration_scale"
_OUTPUTS = ("lh", "theta", "ln", "lr", "phi", "f0")
_SPEED_STREAM, _DURATION_STREAM, _NOISE_STREAM = 0, 1, 2


def _hibari() -> Any:
    try:
        import hibari
        import hibari.dsp
        import hibari.voices
    except ImportError as error:
        raise UserError(
            "the hibari generator needs the 'hibari-tts' package, which is not installed: run "
            "`pip install hibari-tts` (or reinstall verified-tts)"
        ) from error
    return hibari


@functools.cache
def _g2p(british: bool) -> Any:
    """hibari's front end for one accent, made once a process: it reads its lexicons and tagger
    (about half a second) when made, and every voice and moved voice of the accent reads text the
    same way."""
    from hibari.g2p import G2P

    return G2P(british=british)


def voice_file(voice: str, model: str | None = None) -> Path:
    """The ONNX file of a hibari voice, never downloading: the wheel's, the cache's, or --model."""
    hibari = _hibari()
    if model:
        path = Path(model).expanduser()
        if not path.is_file():
            raise UserError(f"--model {model}: no such file; pass a hibari ONNX export")
        return path
    voices = hibari.voices.VOICES
    if voice not in voices:
        raise UserError(
            f"hibari has no voice '{voice}': choose one of {', '.join(voices)} "
            "(`verified-tts voices` lists the ones on this machine)"
        )
    try:
        return Path(hibari.voices.voice_path(voice, download_missing=False))
    except FileNotFoundError:
        entry = voices[voice]
        raise UserError(
            f"hibari voice '{voice}' is not on this machine and verified-tts never downloads "
            f"models: fetch it once with `hibari --voice {voice} hello -o /dev/null`, or copy "
            f"{entry['file']} into {hibari.voices.cache_dir()}"
        ) from None


def _rewrite(model: Any) -> None:
    """Multiply each phoneme's predicted duration by a new graph input, before speed and rounding;
    give as two more outputs the durations as predicted (at speed 1, before any scale) and the
    steps the graph then used per phoneme.

    The duration head ends in Exp, Sub, Div(speed), Round, Clip(1): the scale goes between Sub
    and Div.
    """
    from onnx import TensorProto, helper

    graph = model.graph
    divisions = [n for n in graph.node if n.op_type == "Div" and "speed" in n.input]
    if len(divisions) != 1 or divisions[0].input[1] != "speed":
        raise ValueError("its speed input does not divide one duration tensor")
    division = divisions[0]
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    rounded = readers.get(division.output[0], [])
    clipped = readers.get(rounded[0].output[0], []) if len(rounded) == 1 else []
    if [n.op_type for n in rounded + clipped] != ["Round", "Clip"]:
        raise ValueError("its durations are not rounded and clipped after the speed")
    for name in (division.input[0], clipped[0].output[0]):
        graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    scaled = f"{division.input[0]}_scaled"
    position = list(graph.node).index(division)
    graph.node.insert(
        position,
        helper.make_node("Mul", [division.input[0], _DURATION_INPUT], [scaled], "duration_jitter"),
    )
    division.input[0] = scaled
    graph.input.append(helper.make_tensor_value_info(_DURATION_INPUT, TensorProto.FLOAT, ["L"]))


def _session(path: Path, threads: int) -> Any:
    import onnx
    import onnxruntime

    try:
        model = onnx.load(str(path))
    except Exception as error:  # onnx raises DecodeError, ValueError, ... for a foreign file
        raise UserError(f"{path}: not an ONNX graph ({type(error).__name__})") from error
    inputs = {i.name for i in model.graph.input}
    outputs = [o.name for o in model.graph.output]
    if inputs != {"ids", "speed"} or tuple(outputs) != _OUTPUTS:
        raise UserError(
            f"{path}: not a hibari voice (it takes {', '.join(sorted(inputs))} and gives "
            f"{', '.join(outputs)}; a hibari voice takes ids and speed and gives "
            f"{', '.join(_OUTPUTS)})"
        )
    try:
        _rewrite(model)
    except ValueError as error:
        raise UserError(f"{path}: not a hibari voice ({error})") from error
    session_options = onnxruntime.SessionOptions()
    session_options.intra_op_num_threads = max(1, threads)
    session_options.inter_op_num_threads = 1
    session_options.log_severity_level = 3
    try:
        return onnxruntime.InferenceSession(
            model.SerializeToString(), session_options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:
        raise UserError(f"{path}: onnxruntime cannot load it ({error})") from error


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def phoneme_chunks(g2p: Any, text: str) -> list[str]:
    """hibari's reading of ``text``: one misaki phoneme string per sentence (long sentences cut at
    clause punctuation), as ``hibari.Hibari.phonemize`` makes them."""
    from hibari.tts import _CLAUSE, MAX_PHONEMES, Hibari

    chunks = []
    for sentence in Hibari.split_sentences(text):
        phonemes = g2p(sentence)
        if not phonemes:
            continue
        if len(phonemes) <= MAX_PHONEMES:
            chunks.append(phonemes)
            continue
        current = ""
        for part in _CLAUSE.split(phonemes):
            if current and len(current) + len(part) + 1 > MAX_PHONEMES:
                chunks.append(current)
                current = part
            else:
                current = f"{current} {part}" if current else part
        if current:
            chunks.append(current)
    return chunks


class HibariGenerator:
    """A hibari voice with seeded, recorded variation; see the module docstring."""

    name = "hibari"

    def __init__(self, voice: str, path: Path, options: HibariOptions) -> None:
        hibari = _hibari()
        self.options = options
        self.voice = voice
        self.model = voice if path.name == hibari.voices.VOICES[voice]["file"] else path.name
        self.sample_rate = int(hibari.SAMPLE_RATE)
        # a moved voice is spoken slower by the factor it is then sped up by: its own pace
        self.pitch = pitch_factor(options.pitch)
        self.path = path
        self.digest = _sha256(path)
        self.version = str(hibari.__version__)
        self._dsp = hibari.dsp
        self._session = _session(path, options.threads)
        import json

        vocab_path = Path(hibari.__file__).parent / "assets" / "vocab.json"
        self.vocab: Mapping[str, int] = json.loads(vocab_path.read_text(encoding="utf-8"))
        self.g2p = _g2p(bool(hibari.voices.VOICES[voice]["british"]))
        self._pool = ThreadPoolExecutor(cores(options.workers), thread_name_prefix="hibari")

    def identity(self) -> Mapping[str, Any]:
        return {
            "generator": self.name,
            "model": self.model,
            "model_sha256": self.digest,
            "hibari": self.version,  # its front end (lexicons, rules, network) reads the text
            "signal": self._dsp.FFT_BACKEND,
            "sampling": {
                "speed": self.options.speed,
                "speed_jitter": self.options.speed_jitter,
                "duration_jitter": self.options.duration_jitter,
                "draws": DRAW_SCHEME,
            },
            "sentence_pause": self.options.sentence_pause,
            **({"pitch": self.options.pitch} if self.options.pitch else {}),
            # onnxruntime splits the int8 matrix products by thread: another count, other bits
            "threads": self.options.threads,
            "info": 2,  # 2: each take records the voice's own length (info["timing"])
        }

    @property
    def takes_differ(self) -> bool:
        """Whether two seeds read a text differently. Without jitter they differ only in the
        signal stage's noise (a tiny share of the energy, the same length), which neither the
        verifiers nor a listener can choose by, so a render makes one take a line."""
        return bool(self.options.speed_jitter or self.options.duration_jitter)

    def check_voice(self, voice: str | None) -> None:
        """A per-line voice must be this one: one hibari generator speaks one voice."""
        from verified_tts.voices import own_speaker

        speaker = own_speaker(voice, self.name, self.voice)
        if speaker not in (None, "", self.voice):
            raise UserError(
                f"voice '{voice}' is not hibari:{self.voice}, the voice this generator loaded: "
                f"choose it with --voice hibari:{speaker}, or remove that line's voice"
            )

    def phonemes(
        self, text: str, lexicon: Sequence[tuple[str, str]] = ()
    ) -> tuple[list[str], list[str]]:
        """Phoneme strings per sentence of ``text`` with lexicon words spoken as given; also the
        lexicon words not found in the text."""
        spliced, unmatched = splice_lexicon(text, lexicon)
        return phoneme_chunks(self.g2p, spliced), unmatched

    def ids(self, phonemes: str) -> list[int]:
        return [0, *[self.vocab[c] for c in phonemes if c in self.vocab], 0]

    def draw_speed(self, seed: int) -> float:
        """The candidate's speed: ``speed`` times a log-normal draw of spread ``speed_jitter``."""
        pace = self.options.speed / self.pitch
        if not self.options.speed_jitter:
            return float(np.clip(pace, *HIBARI_SPEED_RANGE)) if self.pitch != 1 else float(pace)
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, 0, _SPEED_STREAM])
        speed = pace * float(np.exp(self.options.speed_jitter * rng.standard_normal()))
        return float(np.clip(np.float32(speed), *HIBARI_SPEED_RANGE))

    def draw_durations(self, seed: int, sentence: int, count: int) -> np.ndarray:
        """Per-phoneme duration scales of one sentence (all 1 without ``duration_jitter``)."""
        if not self.options.duration_jitter:
            return np.ones(count, dtype=np.float32)
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, sentence, _DURATION_STREAM])
        noise = rng.standard_normal(count, dtype=np.float32)
        return np.exp(np.float32(self.options.duration_jitter) * noise).astype(np.float32)

    def features(self, ids: Sequence[int], speed: float, scales: np.ndarray) -> list[np.ndarray]:
        """One graph run: the acoustic features of one sentence."""
        return self.run(ids, speed, scales)[0]

    def run(
        self, ids: Sequence[int], speed: float, scales: np.ndarray
    ) -> tuple[list[np.ndarray], int]:
        """One graph run: the acoustic features of one sentence, and the frames its duration head
        means the sentence to last at ``speed`` before any duration scale (the graph's own
        arithmetic: each phoneme's duration divided by the speed, rounded, at least one frame)."""
        feeds = {
            "ids": np.asarray([ids], dtype=np.int64),
            "speed": np.asarray([speed], dtype=np.float32),
            _DURATION_INPUT: scales,
        }
        try:
            *features, durations, steps = self._session.run(None, feeds)
        except Exception as error:  # onnxruntime's own error types
            raise UserError(
                f"hibari voice {self.model} failed on a sentence of {len(ids)} phonemes: {error}"
            ) from error
        # the decoder's frames per duration step, from this run: its frames over the steps used
        per_step = features[-1].shape[-1] / max(1.0, float(steps.sum()))
        meant = np.maximum(1.0, np.round(durations.astype(np.float32) / np.float32(speed)))
        return [output[0] for output in features], round(per_step * float(meant.sum()))

    def waveform(self, features: Sequence[np.ndarray], seed: int, sentence: int) -> np.ndarray:
        """hibari's signal stage, its noise drawn from (seed, sentence)."""
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, sentence, _NOISE_STREAM])
        audio = self._dsp.synth(*features, rng)
        return np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        read: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[str], list[str]]] = {}
        runs: dict[tuple[Any, ...], tuple[list[int], float, np.ndarray]] = {}
        plans = []  # per request: its speed and, per sentence, (run key, sentence number)
        for request in requests:
            self.check_voice(request.voice)
            source = (request.text, tuple(request.phonemes))
            if source not in read:
                read[source] = self.phonemes(*source)
            speed = self.draw_speed(request.seed)
            sentences = []
            for number, phonemes in enumerate(read[source][0]):
                ids = self.ids(phonemes)
                if len(ids) < 3:
                    continue
                scales = self.draw_durations(request.seed, number, len(ids))
                key = (tuple(ids), speed, scales.tobytes())
                runs.setdefault(key, (ids, speed, scales))
                sentences.append((key, number))
            plans.append((speed, sentences))
        # onnxruntime and the FFTs release the GIL: threads are real parallelism here
        keys = list(runs)
        outputs = dict(
            zip(keys, self._pool.map(lambda key: self.run(*runs[key]), keys), strict=True)
        )
        waves = [
            (index, number, key, request.seed)
            for index, (request, (_, sentences)) in enumerate(zip(requests, plans, strict=True))
            for key, number in sentences
        ]
        audio_of = dict(
            zip(
                ((index, number) for index, number, _, _ in waves),
                self._pool.map(
                    lambda job: self.waveform(outputs[job[2]][0], job[3], job[1]), waves
                ),
                strict=True,
            )
        )
        rate = self.sample_rate * self.pitch  # as synthesized, before a moved voice's own pace
        pause = np.zeros(round(self.options.sentence_pause * rate), dtype=np.float32)
        candidates = []
        for index, (request, (speed, sentences)) in enumerate(zip(requests, plans, strict=True)):
            pieces: list[np.ndarray] = []
            for position, (_, number) in enumerate(sentences):
                if position and pause.size:
                    pieces.append(pause)
                pieces.append(audio_of[(index, number)])
            audio = shift_pitch(
                np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32), self.pitch
            )
            unmatched = read[(request.text, tuple(request.phonemes))][1]
            # the voice's own length for the text at this take's speed, as Piper gives its own:
            # the duration gates then hold the take to it, not to a text formula fitted on Piper
            frames = sum(outputs[key][1] for key, _ in sentences)
            pauses = pause.size * max(0, len(sentences) - 1)
            info: dict[str, Any] = {
                "sentences": len(sentences),
                "phoneme_ids": sum(len(runs[key][0]) for key, _ in sentences),
                "speed": round(speed, 6),
                "timing": {"predicted_s": round((frames * self._dsp.HOP + pauses) / rate, 5)},
            }
            if self.options.duration_jitter:
                info["duration_jitter"] = self.options.duration_jitter
            if unmatched:  # lexicon words not found in the text: read as hibari reads them
                info["lexicon_unmatched"] = unmatched
            candidates.append(
                Candidate(
                    utterance_key=request.utterance_key,
                    index=request.index,
                    seed=request.seed,
                    audio=audio,
                    sample_rate=self.sample_rate,
                    info=info,
                )
            )
        return candidates


def load(config: Any) -> HibariGenerator:
    """Registry entry point: build the generator from a ``GeneratorConfig`` (the keys it takes
    are checked by its declaration, :data:`verified_tts.generators.GENERATOR_SPECS`)."""
    options = config.options
    if not isinstance(options, HibariOptions):  # a mapping: the [generator.hibari] table
        options = HibariOptions.from_mapping(dict(options or {}))
    voice = (config.voice or DEFAULT_VOICE).removeprefix("hibari:")
    return HibariGenerator(voice, voice_file(voice, config.model), options)
