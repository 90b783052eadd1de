"""Several voices on several generators: each generator loaded once, requests routed by voice.

A book with a cast (a narrator on Piper joe, a character on hibari heart) or a dub with a voice per
speaker asks for candidates whose ``SynthesisRequest.voice`` is a catalogue name
(:mod:`verified_tts.voices`). :class:`VoiceSet` resolves each name to the generator configuration
that speaks it, loads each distinct configuration once (two speakers of one Piper voice share one
loaded voice), hands every generator its own requests in one batch, with the voice replaced by the
generator's own speaker setting, and returns the candidates in request order, each at its
generator's sample rate. A request without a voice goes to the default generator unchanged.
:meth:`VoiceSet.identity` names what changes one voice's audio, for content keys per voice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from verified_tts.generators import Candidate, Generator, GeneratorConfig, SynthesisRequest
from verified_tts.generators import load_generator as _load_generator
from verified_tts.storage.keys import stable_hash

__all__ = ["CastGenerator", "VoiceSet", "speaking_generator", "voice_name"]


class VoiceSet:
    """Generators for the voices a run uses, each loaded on first use and kept."""

    def __init__(
        self,
        default: GeneratorConfig,
        *,
        voices_dir: str | Path | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        load_generator: Callable[[GeneratorConfig], Generator] = _load_generator,
    ) -> None:
        self.default = default
        self.voices_dir = voices_dir
        self.options = {name: dict(table) for name, table in (options or {}).items()}
        self._load = load_generator
        self._loaded: dict[str, Generator] = {}

    def config_for(self, voice: str | None) -> GeneratorConfig:
        """The generator configuration that speaks ``voice`` (a catalogue name or None)."""
        from verified_tts.voices import engine_of, find_voice

        if engine_of(voice) is None:
            return self.default if voice is None else replace(self.default, voice=voice)
        found = find_voice(str(voice), self.voices_dir)
        base = self.default if self.default.name == found.generator else None
        config = found.generator_config(base)
        extra = self.options.get(found.generator)
        if not extra:
            return config
        from verified_tts.options import to_table

        # the table given for that generator, under what the voice itself implies
        return replace(config, options={**to_table(config.options), **extra, **found.options})

    def generator(self, voice: str | None) -> Generator:
        """The loaded generator of ``voice``'s configuration (loaded now if it is the first)."""
        config = self.config_for(voice)
        config = replace(config, voice=self._load_voice(config))
        key = stable_hash(asdict(config))
        if key not in self._loaded:
            self._loaded[key] = self._load(config)
        return self._loaded[key]

    @staticmethod
    def _load_voice(config: GeneratorConfig) -> str | None:
        # A Piper voice loads once for all its speakers; hibari and espeak load per voice.
        return None if config.name == "piper" else config.voice

    def identity(self, voice: str | None) -> Mapping[str, Any]:
        """What changes ``voice``'s audio: its generator's identity and its own speaker setting."""
        config = self.config_for(voice)
        return {**self.generator(voice).identity(), "speaker": config.voice}

    @property
    def loaded(self) -> tuple[Generator, ...]:
        return tuple(self._loaded.values())

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        """Candidates in request order; one batch per generator."""
        batches: dict[int, tuple[Generator, list[int], list[SynthesisRequest]]] = {}
        for position, request in enumerate(requests):
            generator = self.generator(request.voice)
            own = self.config_for(request.voice).voice
            entry = batches.setdefault(id(generator), (generator, [], []))
            entry[1].append(position)
            entry[2].append(replace(request, voice=own))
        results: list[Candidate | None] = [None] * len(requests)
        for generator, positions, batch in batches.values():
            for position, candidate in zip(positions, generator.sample(batch), strict=True):
                results[position] = candidate
        return [candidate for candidate in results if candidate is not None]


class CastGenerator:
    """The render's generator, plus the generators of the other voices a book's lines name.

    It is a :class:`Generator` whose name, model, rate and identity are the render's own, so a
    book in one voice is keyed and rendered exactly as without it. A line whose voice the
    render's generator speaks (``piper:joe``, or a speaker of the loaded Piper voice) goes to it;
    a line in another generator's voice (``hibari:heart``, ``espeak:en-us+f3``) goes to a
    :class:`VoiceSet`, which loads that generator once, when the render is planned. Each candidate
    comes back at its own voice's rate (assembly brings it to the book's).
    """

    def __init__(self, default: Generator, voices: VoiceSet) -> None:
        self.default = default
        self.voices = voices
        self.name = default.name
        self.model = default.model
        self.sample_rate = default.sample_rate

    def speaks(self, voice: str | None) -> bool:
        """Whether the render's own generator speaks ``voice``."""
        from verified_tts.errors import UserError
        from verified_tts.voices import engine_of, own_speaker

        if engine_of(voice) is None:
            return True
        try:
            own_speaker(voice, self.default.name, self.default.model)
        except UserError:
            return False
        return True

    def identity(self) -> Mapping[str, Any]:
        return self.default.identity()

    def identity_for(self, voice: str | None) -> Mapping[str, Any]:
        """What changes ``voice``'s audio; loads the generator of another engine's voice now, so a
        voice that cannot be loaded fails before any line is spoken."""
        return self.default.identity() if self.speaks(voice) else self.voices.identity(voice)

    def sample_rate_for(self, voice: str | None) -> int:
        return self.sample_rate if self.speaks(voice) else self.voices.generator(voice).sample_rate

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        """Candidates in request order: the render's own voices in one batch, the rest routed."""
        own = [position for position, r in enumerate(requests) if self.speaks(r.voice)]
        other = [position for position in range(len(requests)) if position not in set(own)]
        results: dict[int, Candidate] = {}
        if own:
            made = self.default.sample([requests[p] for p in own])
            results.update(zip(own, made, strict=True))
        if other:
            made = self.voices.sample([requests[p] for p in other])
            results.update(zip(other, made, strict=True))
        return [results[position] for position in range(len(requests))]


def speaking_generator(generator: Generator, voice: str | None) -> Generator:
    """The generator that speaks ``voice`` in a render whose generator is ``generator``."""
    if isinstance(generator, CastGenerator):
        return generator.default if generator.speaks(voice) else generator.voices.generator(voice)
    return generator


def voice_name(
    generator: Generator, voice: str | None, voices_dir: str | Path | None = None
) -> str:
    """The catalogue name of the voice a line with ``voice`` is spoken in (``hibari:heart``,
    ``piper:en_US-joe-medium`` for the default voice): what the manifest says spoke the line and
    what ``[selection.voices]`` names."""
    from verified_tts.voices import spoken_voice

    speaking = speaking_generator(generator, voice)
    return spoken_voice(voice, speaking.name, speaking.model, voices_dir)
