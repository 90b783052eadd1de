"""The options every synthesising command shares, declared once, and the one way they become a
:class:`~verified_tts.config.RenderConfig`.

``render``, ``dub``, ``ab``, ``calibrate`` and ``rerender`` each take some of the same options
(``--config``, ``--generator``, ``--model``, ``--codec``, ``--voice``, ``--voice-ref``, ``--seed``,
``-n``, ...). :func:`synthesis_options` adds the ones a command names to its typer signature and
hands the command one frozen :class:`SynthesisArgs` instead of a dozen keywords;
:meth:`SynthesisArgs.settings` merges them over the ``--config`` file with
:func:`verified_tts.config.build_config`, and :meth:`SynthesisArgs.overrides` gives the same
values to anything else that builds a config (``rerender`` rebuilds from a manifest).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from verified_tts.generators import generator_help

__all__ = [
    "SHARED_OPTIONS",
    "VOICE_OPTIONS",
    "ConfigOption",
    "SeedOption",
    "SynthesisArgs",
    "config_table",
    "synthesis_options",
]

F = TypeVar("F", bound=Callable[..., Any])

# name -> its typer declaration; the name is also SynthesisArgs' field and build_config's keyword
SHARED_OPTIONS: dict[str, Any] = {
    "candidates": Annotated[
        int | None, typer.Option("-n", "--candidates", help="Candidates per utterance (default 8).")
    ],
    "generator": Annotated[str | None, typer.Option("--generator", help=generator_help())],
    "model": Annotated[
        str | None,
        typer.Option(
            "--model", help="Generator model: a Piper VOICE.onnx, or a local folder or hub id."
        ),
    ],
    "codec": Annotated[str | None, typer.Option("--codec", help="Codec (SNAC) folder or hub id.")],
    "voice": Annotated[
        str | None,
        typer.Option(
            "--voice",
            help="Generator voice: a name (a Piper speaker name or number), or for spark "
            "GENDER:PITCH:SPEED.",
        ),
    ],
    "voice_ref": Annotated[
        Path | None,
        typer.Option("--voice-ref", help="WAV of the target voice (speaker verifier reference)."),
    ],
    "voice_ref_text": Annotated[
        str | None,
        typer.Option("--voice-ref-text", help="Words spoken in --voice-ref (zero-shot prompts)."),
    ],
    "seed": Annotated[int | None, typer.Option("--seed", help="Base seed of every candidate.")],
    "adaptive": Annotated[
        bool | None,
        typer.Option("--adaptive/--no-adaptive", help="Sample in rounds and stop early (default)."),
    ],
    "config": Annotated[Path | None, typer.Option("--config", help="TOML config file.")],
    "keep": Annotated[
        str | None, typer.Option("--keep", help="Keep 'all' candidates' audio or 'winners' only.")
    ],
    "search": Annotated[
        str | None,
        typer.Option(
            "--search", help="best-of-n (default) or beam: verifier-guided partial search."
        ),
    ],
    "budget": Annotated[
        float | None,
        typer.Option("--budget", help="Seconds of audio generated per utterance, at most."),
    ],
    "ray": Annotated[
        str | None,
        typer.Option(
            "--ray", help="Run on a Ray cluster: HOST:PORT, or auto (local or the job's)."
        ),
    ],
}

# for commands that take one of them on its own (voices, say, cast)
ConfigOption = SHARED_OPTIONS["config"]
SeedOption = SHARED_OPTIONS["seed"]

# what a command that generates takes when it does not say otherwise
VOICE_OPTIONS = ("generator", "model", "codec", "voice", "voice_ref", "voice_ref_text", "seed")


def config_table(config: Path | None) -> dict[str, Any]:
    """The ``--config`` TOML file as a table (empty without one), with one-line errors."""
    from verified_tts.config import read_config_file

    return read_config_file(config) if config else {}


@dataclass(frozen=True)
class SynthesisArgs:
    """The shared options as given on the command line; None means "not given"."""

    config: Path | None = None
    candidates: int | None = None
    generator: str | None = None
    model: str | None = None
    codec: str | None = None
    voice: str | None = None
    voice_ref: Path | None = None
    voice_ref_text: str | None = None
    seed: int | None = None
    adaptive: bool | None = None
    keep: str | None = None
    search: str | None = None
    budget: float | None = None
    ray: str | None = None  # where to run, not part of the configuration

    def table(self) -> dict[str, Any]:
        """The ``--config`` file's table."""
        return config_table(self.config)

    def overrides(self) -> dict[str, Any]:
        """The given options as :func:`~verified_tts.config.build_config` keywords."""
        values = {k: v for k, v in asdict(self).items() if k not in ("config", "ray")}
        if values["voice_ref"] is not None:
            values["voice_ref"] = str(values["voice_ref"])
        return {k: v for k, v in values.items() if v is not None}

    def settings(self, **sections: Any):  # -> RenderConfig
        """Defaults <- the ``--config`` file <- these options <- ``sections`` (``production``,
        ``dub``: mappings of those tables' keys)."""
        from verified_tts.config import build_config

        return build_config(self.table(), **self.overrides(), **sections)


_FIELDS = {f.name for f in fields(SynthesisArgs)}


def synthesis_options(*names: str, parameter: str = "synthesis") -> Callable[[F], F]:
    """Give a typer command the shared options ``names`` (default :data:`VOICE_OPTIONS` and
    ``config``); the command receives them as one :class:`SynthesisArgs` in ``parameter``."""
    chosen = names or (*VOICE_OPTIONS, "config")
    unknown = [name for name in chosen if name not in _FIELDS]
    if unknown:
        raise TypeError(f"no shared option named {', '.join(unknown)}")

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != parameter]
        shared = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=SHARED_OPTIONS[name]
            )  # fmt: skip
            for name in chosen
        ]

        @functools.wraps(command)
        def with_shared(**values: Any) -> Any:
            given = {name: values.pop(name) for name in chosen}
            return command(**values, **{parameter: SynthesisArgs(**given)})

        with_shared.__signature__ = signature.replace(parameters=[*own, *shared])  # type: ignore[attr-defined]
        return with_shared  # type: ignore[return-value]

    return decorate
