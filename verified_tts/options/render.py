"""The whole configuration of a render, as the TOML file has it.

Top-level run settings (``candidates``, ``seed``, ``adaptive``, ``keep``, ``max_chars``,
``window``, ``prefetch``, ``voices_dir``), then ``[generator]`` (with the chosen generator's
table, e.g. ``[generator.orpheus]``), ``[verifiers.NAME]``, ``[selection]`` (read on top of the
profile the WER verifier names), ``[assembly]``, ``[production]``, ``[ray]``, ``[dub]``,
``[search]`` and ``[pronunciation]``. ``adaptive`` is the selection policy's and is written at
the top, as the file has it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options.generation import GeneratorConfig
from verified_tts.options.output import AssemblyOptions, DubOptions, ProductionOptions
from verified_tts.options.pronunciation import PronunciationOptions
from verified_tts.options.reference import OptionDoc, describe_fields, register_reference
from verified_tts.options.run import RayOptions, SearchOptions
from verified_tts.options.schema import (
    Reading,
    from_table,
    option,
    read_fields,
    read_value,
    register_table,
    table_label,
    write_fields,
)
from verified_tts.options.selection import (
    DEFAULT_PROFILE,
    SelectionPolicy,
    describe_policy,
    load_profile,
    read_policy,
    write_policy,
)
from verified_tts.options.verifiers import VerifiersConfig

__all__ = ["RenderConfig"]


@dataclass(frozen=True)
class RenderConfig:
    """Everything a render needs besides its input and output paths."""

    generator: GeneratorConfig = option(factory=GeneratorConfig, doc="What to load")
    candidates: int = option(8, "Candidates per utterance (N)")
    seed: int = option(0, "Base seed of every candidate")
    keep: str = option("all", "Keep all candidates' audio, or winners only")
    max_chars: int = option(250, "Longest utterance in characters (a generator may lower it)")
    window: int = option(16, "Utterances in flight together")
    voices_dir: str | None = option(
        None, "A folder of Piper voices (VOICE.onnx beside VOICE.onnx.json) for voice names"
    )
    prefetch: bool = option(True, "Generate the next window's first round while verifying")
    verifiers: VerifiersConfig = option(factory=VerifiersConfig, doc="The verifiers' tables")
    selection: SelectionPolicy = option(
        factory=lambda: load_profile(DEFAULT_PROFILE).policy,
        doc="Gates, weights and the adaptive schedule, on top of the WER verifier's profile",
    )
    voice_selection: Mapping[str, SelectionPolicy] = option(
        factory=dict,
        doc="Per voice (its catalogue name): gates, weights and stop settings over [selection]",
    )
    assembly: AssemblyOptions = option(factory=AssemblyOptions, doc="Pauses and levels")
    production: ProductionOptions = option(factory=ProductionOptions, doc="Input and delivery")
    ray: RayOptions = option(factory=RayOptions, doc="Ray backend resources")
    dub: DubOptions = option(factory=DubOptions, doc="Dubbing timing and mix")
    search: SearchOptions = option(factory=SearchOptions, doc="Best-of-N or beam search")
    pronunciation: PronunciationOptions = option(
        factory=PronunciationOptions, doc="Pronunciation and text-form candidates"
    )

    def __post_init__(self) -> None:
        if isinstance(self.verifiers, Mapping):  # a mapping of verifier tables, as in the file
            verifiers = from_table(VerifiersConfig, self.verifiers, "[verifiers]")
            object.__setattr__(self, "verifiers", verifiers)
        if self.candidates < 1:
            raise UserError(f"--candidates must be at least 1 (got {self.candidates})")
        if self.keep not in ("all", "winners"):
            raise UserError(f"keep must be 'all' or 'winners' (got '{self.keep}')")
        if self.window < 1:
            raise UserError(f"window must be at least 1 (got {self.window})")

    def profile(self) -> SelectionPolicy:
        """The policy of the profile the WER verifier names, under which ``selection`` reads."""
        return load_profile(self.verifiers.wer.profile_name).policy

    def utterance_chars(self) -> int:
        """``max_chars``, lowered to the generator's own limit (codec LMs degrade when long)."""
        limit = self.generator.max_chars()
        return min(self.max_chars, limit) if limit else self.max_chars

    def variant(
        self,
        *,
        candidates: int | None = None,
        adaptive: bool | None = None,
        keep: str | None = None,
        selection: SelectionPolicy | None = None,
    ) -> RenderConfig:
        """This config with some settings changed; adaptivity is the selection policy's."""
        policy = selection if selection is not None else self.selection
        voices = dict(self.voice_selection)
        if adaptive is not None:
            policy = replace(policy, adaptive=adaptive)
            voices = {name: replace(p, adaptive=adaptive) for name, p in voices.items()}
        return replace(
            self,
            candidates=self.candidates if candidates is None else candidates,
            keep=self.keep if keep is None else keep,
            selection=policy,
            voice_selection=voices,
        )

    def policy_for(self, voice: str | None) -> SelectionPolicy:
        """The selection policy of the lines ``voice`` (a catalogue name) speaks."""
        return self.voice_selection.get(voice, self.selection) if voice else self.selection


def _read_render(cls: type, table: Mapping[str, Any], reading: Reading) -> RenderConfig:
    values = read_fields(
        cls, table, reading, skip=("selection", "voice_selection"), extra=("selection", "adaptive")
    )
    adaptive = read_value(bool, table.get("adaptive", True), reading, "adaptive")
    verifiers = values.get("verifiers", VerifiersConfig())
    base = load_profile(verifiers.wer.profile_name).policy
    selection_table = table.get("selection", {})
    voices: Mapping[str, Any] = {}
    if isinstance(selection_table, Mapping) and "voices" in selection_table:
        selection_table = dict(selection_table)
        voices = selection_table.pop("voices")
    where = reading.child("selection")
    selection = read_policy(selection_table, where, base, adaptive=adaptive)
    if not isinstance(voices, Mapping):
        raise UserError(
            '[selection.voices] must hold a table per voice, e.g. [selection.voices."hibari:heart"]'
        )
    # a voice's table reads on top of the book's [selection], as that one on top of the profile
    voice_selection = {
        str(name): read_policy(sub, where.child("voices").child(str(name)), selection,
                               adaptive=adaptive)
        for name, sub in voices.items()
    }  # fmt: skip
    return RenderConfig(**values, selection=selection, voice_selection=voice_selection)


def _write_render(config: RenderConfig) -> dict[str, Any]:
    table = write_fields(config, skip=("selection", "voice_selection"))
    top = {k: v for k, v in table.items() if not isinstance(v, dict)}
    sections = {k: v for k, v in table.items() if isinstance(v, dict)}
    return {
        **top,
        "adaptive": config.selection.adaptive,
        **sections,
        "selection": {
            **write_policy(config.selection, config.profile()),
            **(
                {
                    "voices": {
                        name: write_policy(policy, config.selection)
                        for name, policy in config.voice_selection.items()
                    }
                }
                if config.voice_selection
                else {}
            ),
        },
    }


def _describe_render(cls: type, keys: tuple[str, ...]) -> Iterator[OptionDoc]:
    rows = list(describe_fields(cls, keys, skip=("selection", "voice_selection")))
    top = [row for row in rows if row.table == "config"]
    adaptive = OptionDoc("config", "adaptive", "bool", True, "Sample in rounds and stop early")
    yield from top
    yield adaptive
    yield from (row for row in rows if row.table != "config")
    yield from describe_policy((*keys, "selection"))
    yield OptionDoc(
        table_label((*keys, "selection")),
        "voices",
        "table per voice",
        {},
        'A voice\'s own [selection] ([selection.voices."hibari:heart"]): its gates, weights and '
        "stop settings over the book's; the rest are the book's",
    )


register_table(RenderConfig, read=_read_render, write=_write_render)
register_reference(RenderConfig, _describe_render)
