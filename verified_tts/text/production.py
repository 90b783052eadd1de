"""From an input file to the book a production renders: format, chapter selection, credits, lexicon.

:func:`load_input` reads Markdown, plain text (``.txt``, a Project Gutenberg style book) or EPUB
(by suffix; an EPUB's chapters at ``toc_depth``), keeps
the chapters a ``--chapters`` selection names (1-based, as the book lists them and as
:func:`list_chapters` shows them; the chapters keep their numbers, so their files do too), adds
opening and closing credits (title, author, narrator; each line its own utterance, each credit
its own chapter and so its own file, as ACX asks) and applies the pronunciation lexicon to every
spoken text, credits included: the producer's ``--lexicon`` first, then the entries of the
book's own PLS lexicons that it does not override. :func:`check_language` refuses a book whose
language the configured voice does not speak, unless ``language_override`` says what to read it
as.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from verified_tts.errors import UserError
from verified_tts.options import GeneratorConfig, ProductionOptions
from verified_tts.text.book import Book, Chapter, Segment, load_book
from verified_tts.text.lexicon import (
    Lexicon,
    LexiconEntry,
    apply_lexicon,
    load_lexicon,
    merge_lexicons,
)

__all__ = [
    "PLAIN_TEXT_SUFFIXES",
    "ChapterSummary",
    "LoadedBook",
    "check_language",
    "list_chapters",
    "load_input",
    "read_book",
    "select_chapters",
]

PLAIN_TEXT_SUFFIXES = (".txt", ".text")
OPENING_CREDITS = "Opening Credits"
CLOSING_CREDITS = "Closing Credits"


@dataclass(frozen=True)
class LoadedBook:
    book: Book  # after chapter selection, credits and lexicon
    skipped: tuple[str, ...]  # what the EPUB or plain-text reader left out
    lexicon: Lexicon | None  # the producer's entries, then the book's own
    warnings: tuple[str, ...] = ()  # the book's malformed PLS, unknown IPA symbols
    toc_depth: int | None = None  # the EPUB TOC depth the chapters were cut at
    toc_depths: tuple[int, ...] = ()  # the depths its TOC has
    chapters: tuple[Chapter, ...] = ()  # every chapter of the book, before the selection


@dataclass(frozen=True)
class ChapterSummary:
    """A chapter as ``verified-tts chapters`` lists it."""

    number: int  # 1-based, as --chapters names it
    title: str | None
    words: int
    utterances: int

    def as_dict(self) -> dict[str, object]:
        return {"number": self.number, "title": self.title, "words": self.words,
                "utterances": self.utterances}  # fmt: skip


def list_chapters(loaded: LoadedBook) -> tuple[ChapterSummary, ...]:
    """Number, title, words and utterances of each chapter a render of the book can make."""
    return tuple(
        ChapterSummary(
            number,
            chapter.title,
            sum(len(segment.text.split()) for segment in chapter.segments),
            len(chapter.segments),
        )
        for number, chapter in enumerate(loaded.chapters, 1)
    )


def _primary(tag: str) -> str:
    import langcodes

    try:
        return langcodes.Language.get(tag.replace("_", "-")).language or tag.lower()
    except (ValueError, langcodes.LanguageTagError):
        return tag.lower().replace("_", "-").split("-")[0]


def _voices() -> str:
    from verified_tts.generators import GENERATOR_SPECS, voice_languages

    listed = []
    for name, spec in GENERATOR_SPECS.items():
        if spec.summary is None:  # not for users (the driver's stand-in): --help omits it too
            continue
        try:
            languages = voice_languages(GeneratorConfig(name=name))
        except UserError:  # the default voice's package is not installed
            continue
        listed.append(f"{name} ({', '.join(languages or ('?',))})")
    return ", ".join(listed)


def check_language(
    book: Book, generator: GeneratorConfig, source: str | os.PathLike, overridden: bool = False
) -> None:
    """Refuse a book in a language the configured voice does not speak: one line that names
    the language, where it came from (the EPUB's dc:language, or ``overridden`` by
    --language-override), the voice's languages and the voices there are."""
    from verified_tts.generators import voice_languages

    if not book.language or _primary(book.language) in ("und", "zxx", "mul"):
        return
    speaks = voice_languages(generator)
    if speaks is None or _primary(book.language) in {_primary(tag) for tag in speaks}:
        return
    voice = generator.name + (f" {Path(generator.model).stem}" if generator.model else "")
    speaks_text = f"it speaks {', '.join(speaks)}; the default voices: {_voices()}"
    listing = f"`verified-tts voices --language {book.language}` lists them"
    if overridden:
        raise UserError(
            f"--language-override {book.language} reads {source} as '{book.language}', which "
            f"the {voice} voice does not speak ({speaks_text}): choose a voice for it with "
            f"--voice ({listing}), or drop --language-override"
        )
    raise UserError(
        f"{source} is in '{book.language}' (its dc:language), which the {voice} voice does not "
        f"speak ({speaks_text}): choose a voice for '{book.language}' with --voice ({listing}) "
        f"or --generator/--model, or pass --language-override {speaks[0]} to read the book as "
        f"{speaks[0]} anyway"
    )


def select_chapters(book: Book, spec: str | None) -> Book:
    """Keep the chapters ``spec`` names ("3-7", "1,4-5"); numbers are 1-based positions."""
    if not spec:
        return book
    count = len(book.chapters)
    wanted: set[int] = set()
    for part in spec.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise UserError(f"--chapters '{spec}': write numbers and ranges, e.g. 3-7 or 1,4-5")
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if not 1 <= first <= last <= count:
            raise UserError(
                f"--chapters '{spec}': the book has chapters 1-{count}; {part.strip()} is not "
                "inside that range"
            )
        wanted.update(range(first, last + 1))
    kept = tuple(c for position, c in enumerate(book.chapters, 1) if position in wanted)
    return _with_end(replace(book, chapters=kept))


def _with_end(book: Book) -> Book:
    """The last segment of the book ends it; other chapters end with a chapter pause."""
    chapters = []
    for position, chapter in enumerate(book.chapters):
        last = "end" if position == len(book.chapters) - 1 else "chapter"
        segments = chapter.segments[:-1] + (replace(chapter.segments[-1], pause_after=last),)
        chapters.append(Chapter(chapter.index, chapter.title, segments))
    return replace(book, chapters=tuple(chapters))


def _credit(index: int, title: str, lines: list[str]) -> Chapter:
    segments = tuple(
        Segment(
            chapter=index,
            paragraph=position,
            sentence=0,
            text=line,
            spoken=line,
            kind="paragraph",
            line=0,
            pause_after="paragraph" if position < len(lines) - 1 else "chapter",
        )
        for position, line in enumerate(lines)
    )
    return Chapter(index, title, segments)


def add_credits(book: Book, *, title: str, author: str | None, narrator: str | None) -> Book:
    """Opening credits before the first chapter and closing credits after the last."""
    who = [f"Written by {author}."] if author else []
    who += [f"Narrated by {narrator}."] if narrator else []
    first = min(c.index for c in book.chapters)
    last = max(c.index for c in book.chapters)
    opening = _credit(first - 1, OPENING_CREDITS, [f"{title}.", *who])
    closing = _credit(last + 1, CLOSING_CREDITS, [f"This has been {title}.", *who, "The end."])
    return _with_end(replace(book, chapters=(opening, *book.chapters, closing)))


def read_book(
    path: str | os.PathLike, *, max_chars: int = 250, keep_extras: bool = False
) -> tuple[Book, tuple[str, ...]]:
    """The book at ``path`` by its suffix (EPUB, plain text, else Markdown) and what its reader
    left out of the audio."""
    path = Path(path)
    _refuse_documents(path)
    suffix = path.suffix.lower()
    if suffix == ".epub":
        from verified_tts.text.epub import load_epub

        loaded = load_epub(path, max_chars=max_chars, keep_extras=keep_extras)
        return loaded.book, loaded.skipped
    if suffix in PLAIN_TEXT_SUFFIXES:
        from verified_tts.text.plaintext import load_plaintext

        plain = load_plaintext(path, max_chars=max_chars, keep_extras=keep_extras)
        return plain.book, plain.skipped
    return load_book(path, max_chars=max_chars), ()


_SUBTITLE_SUFFIXES = (".srt", ".vtt", ".ass", ".ssa")
# formats a manuscript often comes in that are not read here: saved as EPUB or text, they are
_DOCUMENT_FORMATS = {
    ".docx": "a Word document", ".doc": "a Word document", ".odt": "an OpenDocument text",
    ".rtf": "a Rich Text file", ".pages": "a Pages document", ".pdf": "a PDF",
    ".mobi": "a Kindle book", ".azw": "a Kindle book", ".azw3": "a Kindle book",
    ".fb2": "a FictionBook file",
}  # fmt: skip


def _refuse_documents(path: Path) -> None:
    if path.suffix.lower() in _DOCUMENT_FORMATS:
        raise UserError(
            f"{path} is {_DOCUMENT_FORMATS[path.suffix.lower()]}, which verified-tts does not "
            "read: save or export it as EPUB, plain text (.txt) or Markdown (.md), and give that"
        )


def load_input(
    path: str | os.PathLike,
    options: ProductionOptions,
    *,
    max_chars: int = 250,
    dialogue: bool = False,
    voices_dir: str | os.PathLike | None = None,
    threshold: float | None = None,
) -> LoadedBook:
    """Read, select, credit and respell the book at ``path``; see the module docstring. With
    ``dialogue`` (implied by a cast file in ``options``), quoted speech is read apart from the
    narration and attributed, a speaker guess below ``threshold`` (else the cast file's, else the
    default) left to the dialogue voice; the cast gives each character's lines their voice."""
    path = Path(path)
    if path.suffix.lower() in _SUBTITLE_SUFFIXES:  # read as prose, its timestamps would be spoken
        raise UserError(
            f"{path} is a subtitle file, not a book: voice its cues on their timeline with "
            f"`verified-tts dub {path}`"
        )
    _refuse_documents(path)
    dialogue = dialogue or options.cast is not None
    if options.cast and threshold is None:
        from verified_tts.cast import cast_threshold

        threshold = cast_threshold(options.cast)
    skipped: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    book_entries: tuple[LexiconEntry, ...] = ()
    depth, depths = None, ()
    if path.suffix.lower() == ".epub":
        from verified_tts.text.epub import load_epub

        loaded = load_epub(
            path,
            max_chars=max_chars,
            keep_extras=options.keep_extras,
            toc_depth=options.toc_depth,
            dialogue=dialogue,
            threshold=threshold,
        )
        book, skipped, warnings = loaded.book, loaded.skipped, loaded.warnings
        book_entries, depth, depths = loaded.lexicon, loaded.toc_depth, loaded.toc_depths
    elif path.suffix.lower() in PLAIN_TEXT_SUFFIXES:
        from verified_tts.text.plaintext import load_plaintext

        plain = load_plaintext(
            path,
            max_chars=max_chars,
            keep_extras=options.keep_extras,
            dialogue=dialogue,
            threshold=threshold,
        )
        book, skipped = plain.book, plain.skipped
    else:
        book = load_book(path, max_chars=max_chars, dialogue=dialogue, threshold=threshold)
    if options.cast:
        from verified_tts.cast import apply_cast, read_cast

        book = apply_cast(book, read_cast(options.cast, book, voices_dir))
    if options.author:
        book = replace(book, author=options.author)
    if options.language_override:
        book = replace(book, language=_language_tag(options.language_override))
    chapters = book.chapters
    book = select_chapters(book, options.chapters)
    if options.credits:
        book = add_credits(
            book,
            title=book.title or path.stem.replace("_", " "),
            author=book.author,
            narrator=options.narrator,
        )
    lexicon = merge_lexicons(
        load_lexicon(options.lexicon) if options.lexicon else None, book_entries
    )
    return LoadedBook(
        apply_lexicon(book, lexicon), skipped, lexicon, warnings, depth, depths, chapters
    )


def _language_tag(tag: str) -> str:
    import langcodes

    if not langcodes.tag_is_valid(tag.strip().replace("_", "-")):
        raise UserError(
            f"--language-override '{tag}' is not a language tag: write a BCP 47 tag such as en, "
            "en-GB or fr"
        )
    return tag.strip().replace("_", "-")
