"""Cast files: a voice for the narrator, for each character, and for dialogue nobody is known to
say.

:func:`find_cast` reads a book with its dialogue attributed (:mod:`verified_tts.text.attribution`)
and lists the characters who speak, with their line counts, first line and gender where the text
says it, and suggests a voice for each from the voice catalogue (:mod:`verified_tts.voices`): a
voice of the character's gender and the narrator's language that is not the narrator's where
there is one, the most distinct ones for the characters who speak most, else the default
dialogue voice. :func:`cast_toml` writes that as ``cast.toml``, with the confidence threshold
the attribution used (a guess below it goes to the dialogue voice, and a render with the cast
attributes with the same threshold: :func:`cast_threshold`),
which the producer edits; :func:`read_cast` reads it back, checking every voice name against the
catalogue and every character against the book, each mistake a one-line error naming the file,
the table and the fix.
:func:`apply_cast` gives each dialogue segment its character's voice, the same in every chapter,
and a quote with no known speaker the default dialogue voice; narration keeps the render's voice,
which is the narrator's. A voice a line sets in the book's own markup is kept.
"""

from __future__ import annotations

import os
import tomllib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verified_tts.casting.characters import NARRATOR
from verified_tts.casting.report import THRESHOLD, check_threshold
from verified_tts.errors import UserError
from verified_tts.text.book import Book, Chapter

__all__ = [
    "Cast",
    "Character",
    "apply_cast",
    "cast_threshold",
    "cast_toml",
    "find_cast",
    "read_cast",
    "speaker_genders",
]


@dataclass(frozen=True)
class Character:
    """A character who speaks in the book, as the attribution found them."""

    name: str
    lines: int  # speeches (a paragraph of dialogue is one)
    first_line: str
    gender: str | None = None


@dataclass(frozen=True)
class Cast:
    """Who speaks with which voice: catalogue names (``ENGINE:VOICE[:SPEAKER]``)."""

    narrator: str
    dialogue: str  # quotes no rule could attribute
    characters: Mapping[str, str] = field(default_factory=dict)  # character -> voice
    threshold: float = THRESHOLD  # a speaker guess less confident than this has no speaker

    def voice_of(self, speaker: str | None) -> str:
        return self.characters.get(speaker, self.dialogue) if speaker else self.dialogue


def _characters(book: Book, genders: Mapping[str, str]) -> list[Character]:
    lines: Counter[str] = Counter()
    first: dict[str, str] = {}
    seen: set[tuple[int, int]] = set()
    for segment in book.segments:
        if segment.kind != "dialogue" or not segment.speaker:
            continue
        first.setdefault(segment.speaker, segment.text)
        if (segment.chapter, segment.paragraph) not in seen:
            seen.add((segment.chapter, segment.paragraph))
            lines[segment.speaker] += 1
    return [
        Character(name, count, first[name], genders.get(name))
        for name, count in sorted(lines.items(), key=lambda item: (-item[1], item[0]))
    ]


def _language(voice: Any) -> str:
    return (voice.language or "").lower().replace("_", "-").split("-")[0]


def _suggest(characters: list[Character], narrator: str, voices: list[Any]) -> dict[str, str]:
    """A voice per character: of their gender (of either, where the text gives none), in the
    narrator's language and not the narrator's; the characters who speak most get the voices the
    speaker verifier hears as most distinct from the narrator and from each other
    (:mod:`verified_tts.casting.voice_order`), and a pool shorter than the characters is shared
    round again in that order. A character whose gender has no voice left (espeak-ng lists only
    men's voices) gets the most distinct voice of either gender that the fewest characters have
    yet: never the narrator's while another is there. espeak-ng's voices are suggested only when
    the narrator is one of them: beside a neural narrator they would sound out of place."""
    from verified_tts.casting.voice_order import distinct_order

    own = next((v for v in voices if v.name == narrator), None)
    language = _language(own) if own else "en"
    espeak = own is not None and own.generator == "espeak"
    pools: dict[str, list[str]] = {}
    for gender in ("female", "male"):
        pool = [
            v.name
            for v in voices
            if v.gender == gender
            and v.name != narrator
            and _language(v) == language
            and (v.generator == "espeak") == espeak
        ]
        pools[gender] = distinct_order(pool, narrator)
    # a character whose gender the text does not give (the Mouse, the Dodo) still gets a voice of
    # their own, from either pool
    pools[""] = distinct_order(pools["female"] + pools["male"], narrator)
    taken: Counter[str] = Counter()  # voice -> characters given it
    suggested = {}
    for character in characters:  # most lines first
        pool = pools.get(character.gender or "") or pools[""]
        if not pool:
            continue
        # the most distinct voice of the pool that the fewest characters have yet
        voice = min(pool, key=lambda v: (taken[v], pool.index(v)))
        suggested[character.name] = voice
        taken[voice] += 1
    return suggested


def speaker_genders(book: Book) -> dict[str, str]:
    """Each speaker's gender where the text says it (a title such as Mrs., or the pronouns near
    their name: :func:`verified_tts.text.names.character_genders`), by majority of lines."""
    votes: dict[str, Counter[str]] = {}
    for segment in book.segments:
        if segment.speaker and segment.speaker_gender:
            votes.setdefault(segment.speaker, Counter())[segment.speaker_gender] += 1
    return {name: tally.most_common(1)[0][0] for name, tally in votes.items()}


def find_cast(
    book: Book, *, narrator: str, voices: list[Any], threshold: float = THRESHOLD
) -> tuple[Cast, list[Character]]:
    """The characters of a book read with ``dialogue=True`` (and ``threshold``) and a suggested
    :class:`Cast`."""
    characters = _characters(book, speaker_genders(book))
    suggested = _suggest([c for c in characters if c.name != NARRATOR], narrator, voices)
    # the first-person narrator's own quotes are in the narrator's voice
    voices_of = {c.name: suggested.get(c.name, narrator) for c in characters}
    cast = Cast(narrator=narrator, dialogue=narrator, characters=voices_of, threshold=threshold)
    return cast, characters


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def cast_toml(book_path: str, cast: Cast, characters: list[Character]) -> str:
    """The text of ``cast.toml``: the voices to edit, and what the text says of each character."""
    lines = [
        f"# The cast of {book_path}, found by `verified-tts cast`. Edit the voices, then render",
        f"# with `verified-tts render {book_path} --cast cast.toml`. `verified-tts voices` lists",
        "# the voices that can speak here. Characters are as the attribution names them; give two",
        "# names of one character the same voice. Lines, first line and gender are for reading.",
        "",
        f"narrator = {_quoted(cast.narrator)}",
        f"dialogue = {_quoted(cast.dialogue)}  # quotes nobody could be found to say",
        f"threshold = {cast.threshold:g}  # a speaker guess less confident than this takes the "
        "dialogue voice",
    ]
    for character in characters:
        lines += [
            "",
            f"[characters.{_quoted(character.name)}]",
            f"voice = {_quoted(cast.characters.get(character.name, cast.dialogue))}",
            f"lines = {character.lines}",
            f"first_line = {_quoted(character.first_line[:120])}",
        ]
        if character.gender:
            lines.append(f"gender = {_quoted(character.gender)}")
    return "\n".join(lines) + "\n"


_TOP_KEYS = {"narrator", "dialogue", "threshold", "characters"}
_CHARACTER_KEYS = {"voice", "lines", "first_line", "gender"}


def _voice(name: Any, where: str, path: Path, voices_dir: str | Path | None) -> str:
    from verified_tts.voices import find_voice

    if not isinstance(name, str) or not name.strip():
        raise UserError(f'{path}: {where} must be a voice name in quotes such as "hibari:heart"')
    try:
        voice = find_voice(name.strip(), voices_dir)
    except UserError as error:
        raise UserError(f"{path}: {where}: {error}") from None
    if not voice.available:
        raise UserError(
            f"{path}: {where}: voice {voice.name} cannot be loaded here ({voice.note}): pick one "
            "that `verified-tts voices` lists"
        )
    return voice.name


def _speakers_and_text(book: Book) -> tuple[set[str], str]:
    speakers = {s.speaker for s in book.segments if s.speaker}
    return speakers, " ".join(s.text for s in book.segments)


def _table(path: Path) -> dict[str, Any]:
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(
            f"cast file {path} does not exist: write one with `verified-tts cast BOOK`"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read cast file {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path} is not valid TOML: {error}") from None
    return table


def _threshold(table: Mapping[str, Any], path: Path) -> float:
    return check_threshold(table.get("threshold", THRESHOLD), f"{path}: threshold")


def cast_threshold(path: str | os.PathLike[str]) -> float:
    """The attribution threshold the cast file at ``path`` was made with (the default for a file
    from before it was recorded): the book is read with it before the cast applies."""
    path = Path(path)
    return _threshold(_table(path), path)


def read_cast(
    path: str | os.PathLike[str], book: Book | None = None, voices_dir: str | Path | None = None
) -> Cast:
    """The cast in ``path``; with ``book``, every character must occur in it."""
    path = Path(path)
    table = _table(path)
    unknown = sorted(set(table) - _TOP_KEYS)
    if unknown:
        raise UserError(
            f"{path}: unknown key '{unknown[0]}': a cast file has narrator, dialogue, threshold "
            "and [characters.NAME] tables"
        )
    if "narrator" not in table:
        raise UserError(f'{path}: no narrator: add narrator = "ENGINE:VOICE" at the top')
    threshold = _threshold(table, path)
    narrator = _voice(table["narrator"], "narrator", path, voices_dir)
    dialogue = _voice(table.get("dialogue", narrator), "dialogue", path, voices_dir)
    characters_table = table.get("characters", {})
    if not isinstance(characters_table, dict):
        raise UserError(f'{path}: characters must be tables: [characters."Anne"] voice = ...')
    speakers, text = _speakers_and_text(book) if book is not None else (set(), "")
    characters = {}
    for name, entry in characters_table.items():
        where = f"[characters.{_quoted(name)}]"
        if not isinstance(entry, dict):
            raise UserError(f'{path}: {where} must be a table with voice = "ENGINE:VOICE"')
        extra = sorted(set(entry) - _CHARACTER_KEYS)
        if extra:
            raise UserError(f"{path}: {where}: unknown key '{extra[0]}': a character has a voice")
        if "voice" not in entry:
            raise UserError(f'{path}: {where} has no voice: add voice = "ENGINE:VOICE"')
        if book is not None and name not in speakers and name not in text:
            raise UserError(
                f"{path}: {where}: '{name}' never occurs in the book: check the spelling "
                "against the book, or remove the table"
            )
        characters[name] = _voice(entry["voice"], f"{where} voice", path, voices_dir)
    return Cast(narrator, dialogue, characters, threshold)


def apply_cast(book: Book, cast: Cast) -> Book:
    """The book with each dialogue segment in its speaker's voice (narration unchanged)."""
    chapters = []
    for chapter in book.chapters:
        segments = []
        for segment in chapter.segments:
            if segment.kind == "dialogue" and segment.voice is None:
                voice = cast.voice_of(segment.speaker)
                # the narrator's own voice stays unset, so its lines keep the render's keys
                segment = replace(segment, voice=None if voice == cast.narrator else voice)
            segments.append(segment)
        chapters.append(Chapter(chapter.index, chapter.title, tuple(segments)))
    return replace(book, chapters=tuple(chapters))
