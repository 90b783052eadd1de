"""The fastest generator: espeak-ng through the ``espeakng-loader`` wheel, sampled prosody.

espeak-ng is deterministic, so "sampling" here is a seeded draw of prosody inside natural bounds
(speaking rate, pitch, pitch range, gap between words, voice variant): candidate k's seed picks its
prosody, and the same seed always gives byte-identical audio. The library and its data come from
the wheel and are reached with ctypes (:mod:`verified_tts.generators.espeak_ng`), so nothing needs a
system install; espeak-ng keeps global state, so synthesis is serialised with one lock.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from verified_tts.errors import UserError
from verified_tts.generators.base import Candidate, SynthesisRequest
from verified_tts.generators.espeak_ng import CHARS_UTF8, EspeakLibrary
from verified_tts.options.generation import EspeakOptions

__all__ = ["EspeakGenerator", "EspeakOptions", "Prosody", "draw_prosody", "load"]

_PARAM_RATE, _PARAM_VOLUME, _PARAM_PITCH, _PARAM_RANGE, _PARAM_WORDGAP = 1, 2, 3, 4, 7
_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


@dataclass(frozen=True)
class Prosody:
    """One candidate's draw: what espeak-ng is told before it speaks."""

    variant: str
    rate: int
    pitch: int
    pitch_range: int
    word_gap: int


def draw_prosody(seed: int, options: EspeakOptions) -> Prosody:
    """Draw prosody from a seed; the same seed and options give the same draw."""
    rng = np.random.default_rng(seed)

    def uniform_int(bounds: tuple[int, int]) -> int:
        low, high = bounds
        return int(rng.integers(low, high + 1))

    return Prosody(
        variant=str(options.variants[int(rng.integers(len(options.variants)))]),
        rate=uniform_int(options.rate),
        pitch=uniform_int(options.pitch),
        pitch_range=uniform_int(options.pitch_range),
        word_gap=uniform_int(options.word_gap),
    )


class _EspeakLibrary:
    """espeak-ng synthesis, with the library opened afresh for every utterance.

    espeak-ng keeps static state between utterances (the pitch-flutter phase among it) that
    ``espeak_Terminate`` does not reset, so the same text and parameters would give different
    samples depending on what was spoken before. :class:`EspeakLibrary` opens and closes the
    library for every use, which is what makes a seed reproduce its audio byte for byte.
    """

    def __init__(self) -> None:
        self._library = EspeakLibrary.find()
        self._chunks: list[np.ndarray] = []
        self._callback = _SYNTH_CALLBACK(self._collect)  # keep a reference: C holds the pointer
        with self._library.session() as (_lib, sample_rate):
            self.sample_rate = sample_rate

    def variants(self) -> set[str]:
        """Names of the voice variants shipped in the wheel's data (``voices/!v``)."""
        return {path.name for path in (self._library.data_path / "voices" / "!v").iterdir()}

    def _collect(self, wav: Any, count: int, _events: Any) -> int:
        if count > 0:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        return 0

    def speak(self, text: str, language: str, prosody: Prosody) -> np.ndarray:
        voice = f"{language}+{prosody.variant}"
        with self._library.session() as (lib, _rate):
            lib.espeak_SetSynthCallback(self._callback)
            if lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise UserError(
                    f"espeak-ng has no voice '{voice}': check [generator.espeak] "
                    "language and variants"
                )
            for parameter, value in (
                (_PARAM_RATE, prosody.rate),
                (_PARAM_VOLUME, 100),
                (_PARAM_PITCH, prosody.pitch),
                (_PARAM_RANGE, prosody.pitch_range),
                (_PARAM_WORDGAP, prosody.word_gap),
            ):
                lib.espeak_SetParameter(parameter, value, 0)
            self._chunks = []
            encoded = text.encode("utf-8") + b"\0"
            lib.espeak_Synth(encoded, len(encoded), 0, 0, 0, CHARS_UTF8, None, None)
            lib.espeak_Synchronize()
            chunks, self._chunks = self._chunks, []
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(chunks).astype(np.float32) / np.float32(32768.0)


class EspeakGenerator:
    """espeak-ng with seeded prosody draws; see the module docstring."""

    name = "espeak"

    def __init__(self, options: EspeakOptions | None = None) -> None:
        self.options = options or EspeakOptions()
        self._library = _EspeakLibrary()
        known = self._library.variants()
        missing = [v for v in self.options.variants if v not in known]
        if missing:
            raise UserError(
                f"espeak-ng has no voice variant {', '.join(missing)}: use --voice with "
                f"variants such as {', '.join(sorted(known)[:12])} (comma-separated)"
            )
        self.sample_rate = self._library.sample_rate
        self.model = f"espeak-ng:{self.options.language}"

    def identity(self) -> Mapping[str, Any]:
        return {"generator": self.name, "model": self.model, "options": asdict(self.options)}

    def _options_for(self, voice: str | None) -> EspeakOptions:
        """A voice directive (``<!-- tts: voice=f3 -->``) names the variants to draw from."""
        variants = tuple(v.strip() for v in voice.split(",")) if voice else self.options.variants
        if variants == self.options.variants:
            return self.options
        known = self._library.variants()
        missing = [v for v in variants if v not in known]
        if missing:
            raise UserError(
                f"espeak-ng has no voice variant {', '.join(missing)}: use variants such as "
                f"{', '.join(sorted(known)[:12])}"
            )
        return EspeakOptions(**{**asdict(self.options), "variants": variants})

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        candidates = []
        for request in requests:
            options = self._options_for(request.voice)
            prosody = draw_prosody(request.seed, options)
            audio = self._library.speak(request.text, self.options.language, prosody)
            candidates.append(
                Candidate(
                    utterance_key=request.utterance_key,
                    index=request.index,
                    seed=request.seed,
                    audio=audio,
                    sample_rate=self.sample_rate,
                    info={"prosody": asdict(prosody)},
                )
            )
        return candidates


def languages(config: Any) -> tuple[str, ...]:
    """The espeak-ng language the options name (``[generator.espeak] language``)."""
    return (config.options.language,)


def load(config: Any) -> EspeakGenerator:
    """Registry entry point: build the generator from a ``GeneratorConfig``."""
    if config.model or config.codec:
        raise UserError(
            "the espeak generator has no --model or --codec (espeak-ng comes with the package): "
            "drop them, or choose a model-based generator with --generator orpheus"
        )
    options = config.options
    if config.voice:  # `--voice` picks the variant family, e.g. "f3" or "m1,m3"
        options = EspeakOptions(**{**asdict(options), "variants": tuple(config.voice.split(","))})
    return EspeakGenerator(options)
