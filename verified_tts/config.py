"""Render configuration: frozen dataclasses, read from an optional TOML file plus CLI overrides.

The TOML file mirrors the dataclasses: top-level run settings (``candidates``, ``seed``,
``adaptive``, ``keep``, ``max_chars``, ``window``), then ``[search]`` (best-of-N or beam search,
:mod:`verified_tts.search`), ``[generator]`` (with a per-generator
table such as ``[generator.orpheus]``), ``[verifiers.<name>]`` tables passed to each verifier's
options, ``[selection]`` (gates and weights) and ``[assembly]`` (pauses and loudness). CLI options
override the file; the file overrides the defaults. Unknown keys are errors, so a typo never
silently falls back to a default.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.generators import DEFAULT_GENERATOR, GeneratorConfig, utterance_max_chars
from verified_tts.search import SearchOptions
from verified_tts.selection import SelectionPolicy
from verified_tts.tables import check_keys
from verified_tts.verification import parse_verifier_table
from verifiers import VERIFIERS, WerOptions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "AssemblyOptions",
    "DubOptions",
    "ProductionOptions",
    "RayOptions",
    "RenderConfig",
    "build_config",
    "read_config_file",
]


@dataclass(frozen=True)
class AssemblyOptions:
    """Pauses (seconds) between segments and the loudness every winner is brought to."""

    sentence_pause: float = 0.35
    paragraph_pause: float = 0.8
    chapter_pause: float = 2.0
    lead_in: float = 0.75  # room tone at a chapter's head: ACX asks for 0.5-1 s
    tail: float = 2.0  # and 1-5 s at its tail
    loudness_lufs: float = -20.0  # each clip's loudness before the chapter is mastered
    peak_dbfs: float = -3.0
    master: bool = True  # master every chapter to ACX levels (RMS, peak, room tone)
    rms_db: float = -20.0  # chapter RMS: the middle of ACX's -23..-18 dB
    room_tone_db: float | None = -75.0  # low noise instead of digital silence; None: none


@dataclass(frozen=True)
class ProductionOptions:
    """``[production]``: what is read from the input and what is delivered."""

    formats: tuple[str, ...] = ("wav", "flac")  # any of wav, flac, m4b, mp3, epub3, srt, vtt
    chapters: str | None = None  # a selection such as "3-7" or "1,4-5" (1-based)
    keep_extras: bool = False  # EPUB: also read front matter and notes
    lexicon: str | None = None  # pronunciation lexicon (TOML)
    credits: bool = False  # opening and closing credits as their own chapters
    narrator: str | None = None
    author: str | None = None  # overrides the EPUB's author (Markdown has none)
    split_hours: float | None = None  # M4B parts of at most this many hours
    toc_depth: int | None = None  # EPUB: chapters at this TOC depth (None: chapter-sized level)
    language_override: str | None = None  # read as this language, whatever dc:language says
    read_along: str = "sentences"  # epub3 highlights and timings.json: "sentences" or "words"
    epub_audio: str = "aac"  # the audio inside book.epub: "aac" (AAC in MP4) or "mp3"

    def __post_init__(self) -> None:
        from verified_tts.output.encode import FORMATS
        from verified_tts.output.readalong import check_read_along

        formats = tuple(f.strip().lower() for f in self.formats if f.strip())
        object.__setattr__(self, "formats", formats)
        unknown = [f for f in formats if f not in FORMATS]
        if unknown or not formats:
            raise UserError(
                f"unknown output format '{','.join(unknown)}': choose from {', '.join(FORMATS)} "
                "(comma-separated, e.g. --format m4b,mp3)"
            )
        if self.split_hours is not None and self.split_hours <= 0:
            raise UserError(f"--split-hours must be positive (got {self.split_hours})")
        if self.toc_depth is not None and (type(self.toc_depth) is not int or self.toc_depth < 1):
            raise UserError(f"--toc-depth must be a whole number from 1 (got {self.toc_depth!r})")
        check_read_along(self.read_along, self.epub_audio)


@dataclass(frozen=True)
class RayOptions:
    """``[ray]``: resources of the Ray backend (``--ray``). They decide where and how fast work
    runs, never the audio or the winners, so no content key includes them."""

    replicas: int = 1  # generator actors, each holding one engine
    generator_num_gpus: float = 0.0
    generator_num_cpus: float = 1.0
    verifier_num_gpus: float = 0.0
    verifier_num_cpus: float = 0.25  # signal/WER/speaker actors fit beside a generator on 2 CPUs
    pool_size: int = 1  # actors per verifier
    pools: Mapping[str, int] = field(default_factory=dict)  # per-verifier pool size overrides
    chunk: int = 0  # requests per actor call; 0 = split each batch evenly over the actors
    max_in_flight: int = 2  # calls queued per actor: the backpressure bound
    max_restarts: int = 3  # times Ray restarts a killed actor
    max_task_retries: int = 3  # times a call lost with its actor is retried

    def __post_init__(self) -> None:
        sizes = {"replicas": self.replicas, "pool_size": self.pool_size, **dict(self.pools)}
        for name, value in {**sizes, "max_in_flight": self.max_in_flight}.items():
            if int(value) < 1:
                raise UserError(f"[ray] {name} must be at least 1 (got {value})")


@dataclass(frozen=True)
class DubOptions:
    """Timing, stretch and mixing settings of a dub (``[dub]`` in the TOML config)."""

    speed_limit: float = 1.25  # the most a winner is sped up (1.25 = 25% faster)
    max_extend_s: float = 1.0  # how far a slot may reach into the silence after its cue
    min_gap_s: float = 0.1  # silence always kept before the next cue starts
    tail_s: float = 1.0  # silence after the last cue's end (without --duration)
    duration: float | None = None  # the track's length in seconds (default: last end + tail)
    duck_db: float = 12.0  # how far the original is lowered under speech in the mix
    voices: Mapping[str, str] = field(default_factory=dict)  # speaker -> generator voice

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed_limit) and 1.0 <= self.speed_limit <= 4.0):
            raise UserError(
                f"--speed-limit must be between 1.0 (never stretch) and 4.0 "
                f"(got {self.speed_limit})"
            )
        for name in ("max_extend_s", "min_gap_s", "tail_s", "duck_db"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise UserError(f"[dub] {name} must be a number >= 0 (got {value})")
        if self.duration is not None and not (math.isfinite(self.duration) and self.duration > 0):
            raise UserError(
                f"--duration must be a positive number of seconds (got {self.duration})"
            )
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.voices.items()):
            raise UserError('[dub.voices] maps speaker names to voices: NAME = "voice"')


@dataclass(frozen=True)
class RenderConfig:
    """Everything a render needs besides its input and output paths."""

    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    candidates: int = 8
    seed: int = 0
    keep: str = "all"  # "all" candidates' audio, or "winners" only
    max_chars: int = 250
    window: int = 16  # utterances in flight together
    prefetch: bool = True  # generate the next window's first round while verifying this one
    verifiers: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: {"wer": {}, "speaker": {}, "emotion": {}, "signal": {}}
    )
    selection: SelectionPolicy = field(default_factory=SelectionPolicy)
    assembly: AssemblyOptions = field(default_factory=AssemblyOptions)
    production: ProductionOptions = field(default_factory=ProductionOptions)
    ray: RayOptions = field(default_factory=RayOptions)
    dub: DubOptions = field(default_factory=DubOptions)
    search: SearchOptions = field(default_factory=SearchOptions)

    def __post_init__(self) -> None:
        if self.candidates < 1:
            raise UserError(f"--candidates must be at least 1 (got {self.candidates})")
        if self.keep not in ("all", "winners"):
            raise UserError(f"keep must be 'all' or 'winners' (got '{self.keep}')")
        if self.window < 1:
            raise UserError(f"window must be at least 1 (got {self.window})")

    def utterance_chars(self) -> int:
        """``max_chars``, lowered to the generator's own limit (codec LMs degrade when long)."""
        limit = utterance_max_chars(self.generator)
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
        if adaptive is not None:
            policy = replace(policy, adaptive=adaptive)
        return replace(
            self,
            candidates=self.candidates if candidates is None else candidates,
            keep=self.keep if keep is None else keep,
            selection=policy,
        )


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a TOML config file, with one-line errors for the usual mistakes."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"config file {path} does not exist: pass an existing TOML file")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise UserError(f"config file {path} is not UTF-8 text") from error
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"config file {path} is not valid TOML: {error}") from error


_SIMPLE = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}


def _check_types(table: Mapping[str, Any], cls: type, where: str) -> None:
    """Values of ``table`` against ``cls``'s plain annotations (int, float, str, bool, ``| None``),
    so a TOML value of the wrong kind is one line here rather than a TypeError deep inside."""
    annotations = {f.name: str(f.type) for f in fields(cls)}
    for key, value in table.items():
        kinds = [k.strip() for k in annotations.get(key, "").split("|")]
        if not kinds or any(k not in _SIMPLE and k != "None" for k in kinds):
            continue  # not a plain annotation: its own parser checks it
        if value is None and "None" in kinds:
            continue
        allowed = tuple(t for k in kinds if k in _SIMPLE for t in _SIMPLE[k])
        is_bool = isinstance(value, bool)
        if not isinstance(value, allowed) or (is_bool and bool not in allowed):
            wanted = " or ".join(k for k in kinds if k != "None")
            raise UserError(f"{where} {key} must be {wanted}, not {value!r:.40}")


def _table(parent: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """``parent[key]`` as a dict (empty when absent); anything but a table is one line."""
    value = parent.get(key, {})
    if not isinstance(value, Mapping):
        raise UserError(
            f"{where} must be a table ([{where.strip('[]')}] with key = value lines), "
            f"not {type(value).__name__} {value!r:.40}"
        )
    return dict(value)


def build_config(file: Mapping[str, Any] | None = None, **overrides: Any) -> RenderConfig:
    """Merge defaults <- TOML table <- CLI overrides (None means "not given")."""
    file = dict(file or {})
    top_level = {"candidates", "seed", "adaptive", "keep", "max_chars", "window", "prefetch"}
    sections = {
        "generator", "verifiers", "selection", "assembly", "dub", "ray", "production", "search"
    }  # fmt: skip
    check_keys(file, top_level | sections, "config")

    generator_table = _table(file, "generator", "[generator]")
    generator_keys = {f.name for f in fields(GeneratorConfig)} - {"options"}
    name = overrides.get("generator") or generator_table.get("name", DEFAULT_GENERATOR)
    if not isinstance(name, str):
        raise UserError(f"[generator] name must be a generator's name in quotes, not {name!r:.40}")
    options = _table(generator_table, name, f"[generator.{name}]")
    plain = {k: v for k, v in generator_table.items() if not isinstance(v, Mapping)}
    check_keys(plain, generator_keys, "[generator]")
    _check_types(plain, GeneratorConfig, "[generator]")
    generator = GeneratorConfig(**{**plain, "name": name, "options": options})
    generator_overrides = {
        key: overrides[key]
        for key in ("model", "codec", "voice", "voice_ref", "voice_ref_text")
        if overrides.get(key) is not None
    }
    generator = replace(generator, **generator_overrides)

    verifier_tables = _table(file, "verifiers", "[verifiers]")
    check_keys(verifier_tables, set(VERIFIERS), "[verifiers]")
    verifiers = {name: _table(verifier_tables, name, f"[verifiers.{name}]") for name in VERIFIERS}
    for name, table in verifiers.items():  # typos fail here, before any model loads
        parse_verifier_table(name, table)

    assembly_table = _table(file, "assembly", "[assembly]")
    check_keys(assembly_table, {f.name for f in fields(AssemblyOptions)}, "[assembly]")
    _check_types(assembly_table, AssemblyOptions, "[assembly]")

    dub_table = _table(file, "dub", "[dub]")
    check_keys(dub_table, {f.name for f in fields(DubOptions)}, "[dub]")
    _check_types(dub_table, DubOptions, "[dub]")
    if not isinstance(dub_table.get("voices", {}), Mapping):
        raise UserError('[dub.voices] must be a table of NAME = "voice"')
    production_table = dict(file.get("production", {}))
    check_keys(production_table, {f.name for f in fields(ProductionOptions)}, "[production]")
    production_table.update(
        {k: v for k, v in dict(overrides.get("production") or {}).items() if v is not None}
    )
    if isinstance(production_table.get("formats"), str):
        production_table["formats"] = production_table["formats"].split(",")

    ray_table = _table(file, "ray", "[ray]")
    check_keys(ray_table, {f.name for f in fields(RayOptions)}, "[ray]")
    _check_types(ray_table, RayOptions, "[ray]")

    search_table = file.get("search", {})
    if not isinstance(search_table, Mapping):
        raise UserError("[search] must be a table: width, expansions, chunk_s, budget_s, ...")
    search = SearchOptions.from_mapping(
        search_table, strategy=overrides.get("search"), budget_s=overrides.get("budget")
    )

    run = {k: file[k] for k in top_level if k in file}
    _check_types(run, RenderConfig, "config")
    run.update({k: overrides[k] for k in top_level if overrides.get(k) is not None})
    adaptive = bool(run.pop("adaptive", True))
    selection = SelectionPolicy.from_mapping(
        _table(file, "selection", "[selection]"),
        adaptive=adaptive,
        packed_wer=bool(verifiers["wer"].get("packing", WerOptions.packing)),
    )
    return RenderConfig(
        generator=generator,
        verifiers=verifiers,
        selection=selection,
        assembly=AssemblyOptions(**assembly_table),
        production=ProductionOptions(**production_table),
        ray=RayOptions(**ray_table),
        dub=DubOptions(**dub_table),
        search=search,
        **run,
    )
