"""Markdown structure for the text front-end: a book's source into chapters of readable blocks.

:func:`parse_markdown` walks markdown-it-py's CommonMark token stream (no regex parsing of
Markdown) and keeps only what a narrator reads: headings, paragraphs, list items and block
quotes, with emphasis markup, link targets, images, code, raw HTML, comments and footnote
markers dropped. Headings at the chapter level start chapters and are read as their first
block (one that opens with a bare number is read "Chapter II. ...", :func:`chapter_heading`);
a single leading H1 is the book's title and opens chapter 0, which also holds whatever
comes before the first real chapter; deeper headings are read as section titles inside their
chapter. Lines of a paragraph that open with a quote mark or a dash are dialogue and become
blocks of their own. ``<!-- tts: emotion=sad voice=tara -->`` comments set the emotion and
voice of the blocks that follow, until changed or until the chapter ends; ``spell=FBI,NASA``
has the listed words spelled letter by letter in the same way, and ``pause=1.5`` sets the pause
(seconds) before the next block. Every block keeps
the 1-based source line of each of its lines.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token

from verified_tts.errors import UserError
from verified_tts.text.normalize import roman_to_int

__all__ = [
    "DIRECTIVE_KEYS",
    "Block",
    "BlockKind",
    "Document",
    "Section",
    "chapter_heading",
    "parse_directives",
    "parse_markdown",
]

BlockKind = Literal["heading", "paragraph", "dialogue"]

DIRECTIVE_KEYS = ("emotion", "voice", "spell", "pause")
_MAX_PAUSE_S = 30.0

# Opening marks of a dialogue line: straight, curly and guillemet quotes, em/horizontal dash,
# and the typewriter "--" some plain-text editions use for a dash.
_DIALOGUE_OPENERS = ('"', "“", "”", "'", "‘", "«", "»", "„", "—", "―", "--")
_ENDS_SENTENCE = re.compile(r"[.!?…][\"'”’»)\]]*$")
_FOOTNOTE_MARKER = re.compile(r"\[\^[^\]\s]+\]")
_FOOTNOTE_DEFINITION = re.compile(r"^\s*\[\^[^\]\s]+\]:")
_DIRECTIVE = re.compile(r"<!--\s*tts\s*:(.*?)-->", re.IGNORECASE | re.DOTALL)
_BARE_NUMBER = re.compile(r"^([IVXLCDM]+|\d{1,3})\.(?=\s|$)")


@dataclass(frozen=True)
class Block:
    """One readable unit: a heading, a paragraph (or list item, quote) or a dialogue line."""

    kind: BlockKind
    text: str
    line: int
    # (offset in ``text``, source line) where each source line of the block begins.
    line_starts: tuple[tuple[int, int], ...] = ()
    emotion: str | None = None
    voice: str | None = None
    spell: tuple[str, ...] = ()  # words spelled letter by letter
    pause_before: float | None = None  # seconds of pause before this block (a pause directive)
    # (text as written, espeak-ng IPA) a book gives for part of the block (EPUB ssml:ph)
    phonemes: tuple[tuple[str, str], ...] = ()

    def line_at(self, offset: int) -> int:
        """The 1-based source line of the character at ``offset`` in ``text``."""
        if not self.line_starts:
            return self.line
        index = bisect.bisect_right([start for start, _ in self.line_starts], offset) - 1
        return self.line_starts[max(index, 0)][1]


@dataclass(frozen=True)
class Section:
    """A chapter's blocks; ``title`` is its heading's text (None before the first heading)."""

    title: str | None
    line: int | None
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Document:
    """The book's title (from a single leading H1) and its chapters, in reading order."""

    title: str | None
    sections: tuple[Section, ...]


Directive = dict[str, str | None]


def parse_directives(html: str, line: int) -> list[Directive]:
    """The ``tts:`` directives in an HTML fragment starting at source ``line``.

    Each directive maps the keys it names to a value, or to None for ``key=none``. Anything
    malformed is a :class:`UserError` naming the line, since a silently ignored directive would
    render a whole chapter in the wrong voice.
    """
    directives = []
    for match in _DIRECTIVE.finditer(html):
        at = line + html.count("\n", 0, match.start())
        settings: Directive = {}
        for item in match.group(1).split():
            key, sep, value = item.partition("=")
            key, value = key.strip().lower(), value.strip().strip("\"'")
            if not sep or key not in DIRECTIVE_KEYS or not value:
                raise UserError(
                    f"line {at}: cannot read '{item}' in the tts directive; write "
                    f"<!-- tts: emotion=NAME voice=NAME --> (NAME=none clears it)"
                )
            if key == "pause" and not _pause_ok(value):
                raise UserError(
                    f"line {at}: pause={value} is not a number of seconds between 0 and "
                    f"{_MAX_PAUSE_S:g}; write e.g. <!-- tts: pause=1.5 -->"
                )
            settings[key] = None if value.lower() == "none" else value
        directives.append(settings)
    return directives


def _pause_ok(value: str) -> bool:
    try:
        return 0 <= float(value) <= _MAX_PAUSE_S
    except ValueError:
        return False


@dataclass
class _Line:
    number: int
    text: str = ""
    # Directives met inside this line (inline HTML); they apply from the next block on.
    directives: list[Directive] = field(default_factory=list)


def _inline_lines(inline: Token, first_line: int) -> list[_Line]:
    """The readable text of an inline token, one entry per source line."""
    lines = [_Line(first_line)]
    children = inline.children or []
    skip_link = False
    for index, child in enumerate(children):
        kind = child.type
        if kind in ("softbreak", "hardbreak"):
            lines.append(_Line(lines[-1].number + 1))
        elif kind == "text" and not skip_link:
            lines[-1].text += _FOOTNOTE_MARKER.sub("", child.content)
        elif kind == "code_inline":
            lines[-1].text += child.content
        elif kind == "html_inline":
            lines[-1].directives += parse_directives(child.content, lines[-1].number)
            # A multi-line inline comment still occupies source lines.
            for _ in range(child.content.count("\n")):
                lines.append(_Line(lines[-1].number + 1))
        elif kind == "link_open":
            # "[^1]" becomes a link when a matching "[^1]: ..." definition exists: a footnote.
            following = children[index + 1] if index + 1 < len(children) else None
            skip_link = bool(following and following.content.startswith("^"))
        elif kind == "link_close":
            skip_link = False
        # Images (alt text), emphasis and other markup carry nothing to read.
    return lines


def _is_dialogue(text: str) -> bool:
    return text.startswith(_DIALOGUE_OPENERS)


def _group_lines(lines: Sequence[_Line]) -> list[tuple[BlockKind, list[_Line]]]:
    """Split a paragraph's lines into paragraph and dialogue groups.

    A dialogue line starts a group of its own; a following plain line stays with it while the
    dialogue line has not ended its sentence (hard-wrapped text), and otherwise starts prose.
    """
    groups: list[tuple[BlockKind, list[_Line]]] = []
    for line in lines:
        text = line.text.strip()
        if not text:
            continue
        if _is_dialogue(text):
            groups.append(("dialogue", [line]))
        elif groups and (
            groups[-1][0] == "paragraph"
            or not _ENDS_SENTENCE.search(groups[-1][1][-1].text.strip())
        ):
            groups[-1][1].append(line)
        else:
            groups.append(("paragraph", [line]))
    return groups


def _join(lines: Sequence[_Line]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Join lines with single spaces, recording where each source line starts."""
    text, starts = "", []
    for line in lines:
        words = " ".join(line.text.split())
        if not words:
            continue
        if text:
            text += " "
        starts.append((len(text), line.number))
        text += words
    return text, tuple(starts)


class _Builder:
    """Collects sections and blocks while the token stream is walked."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.title: str | None = None
        self.line: int | None = None
        self.blocks: list[Block] = []
        self.state: Directive = {}
        # Directive settings met since the last block: they survive into a new chapter, so a
        # directive written just above a heading applies to that chapter.
        self.pending: Directive = {}
        self.pause: float | None = None

    def directive(self, settings: Directive) -> None:
        settings = dict(settings)
        if "pause" in settings:  # applies once, to the next block only
            pause = settings.pop("pause")
            self.pause = float(pause) if pause is not None else None
        self.state.update(settings)
        self.pending.update(settings)

    def chapter(self, title: str | None, line: int) -> None:
        self.close()
        self.title, self.line = title, line
        self.state = dict(self.pending)

    def block(self, kind: BlockKind, lines: Sequence[_Line]) -> None:
        text, starts = _join(lines)
        if not text:
            return
        self.blocks.append(
            Block(
                kind=kind,
                text=text,
                line=starts[0][1],
                line_starts=starts,
                emotion=self.state.get("emotion"),
                voice=self.state.get("voice"),
                spell=tuple(w for w in (self.state.get("spell") or "").split(",") if w),
                pause_before=self.pause,
            )
        )
        self.pending = {}
        self.pause = None

    def close(self) -> None:
        if self.blocks or self.title:
            self.sections.append(Section(self.title, self.line, tuple(self.blocks)))
        self.title, self.line, self.blocks = None, None, []


def _heading_text(inline: Token, line: int) -> str:
    return _join(_inline_lines(inline, line))[0]


def _book_title_index(tokens: Sequence[Token]) -> int | None:
    """Index of the heading_open of a single H1 that opens the book, if there is one."""
    h1s = [i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h1"]
    readable = [i for i, t in enumerate(tokens) if t.type in ("heading_open", "paragraph_open")]
    if len(h1s) == 1 and readable and readable[0] == h1s[0]:
        return h1s[0]
    return None


def _chapter_level(tokens: Sequence[Token], title_index: int | None) -> int:
    levels = [
        int(t.tag[1:])
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and i != title_index
    ]
    return min(levels, default=1)


def chapter_heading(text: str) -> str:
    """A chapter heading as a listener expects it read: one that opens with a bare number
    ("II. The Fox and the Grapes", "3. Rain") is "Chapter II. The Fox and the Grapes"."""
    match = _BARE_NUMBER.match(text)
    if match and (match.group(1).isdigit() or roman_to_int(match.group(1)) is not None):
        return f"Chapter {text}"
    return text


def _source_line(token: Token) -> int:
    return token.map[0] + 1 if token.map else 1


def parse_markdown(source: str) -> Document:
    """Parse a Markdown book into its title and chapters of readable blocks."""
    tokens = MarkdownIt("commonmark").parse(source)
    title_index = _book_title_index(tokens)
    chapter_level = _chapter_level(tokens, title_index)
    book_title: str | None = None
    builder = _Builder()
    for index, token in enumerate(tokens):
        if token.type == "html_block":
            for settings in parse_directives(token.content, _source_line(token)):
                builder.directive(settings)
        elif token.type == "heading_open":
            line = _source_line(token)
            text = _heading_text(tokens[index + 1], line)
            if index == title_index:
                book_title = text or None
            read = text
            if index == title_index or int(token.tag[1:]) <= chapter_level:
                builder.chapter(text or None, line)
                if index != title_index:
                    read = chapter_heading(text)
            builder.block("heading", [_Line(line, read)])
        elif token.type == "paragraph_open":
            inline = tokens[index + 1]
            if _FOOTNOTE_DEFINITION.match(inline.content):
                continue
            lines = _inline_lines(inline, _source_line(token))
            for kind, group in _group_lines(lines):
                builder.block(kind, group)
            for line in lines:
                for settings in line.directives:
                    builder.directive(settings)
        # Fences, indented code, tables and horizontal rules are not read.
    builder.close()
    return Document(book_title, tuple(builder.sections))
