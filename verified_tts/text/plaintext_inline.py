"""Inline clean-up for plain-text books: what print conventions of a Gutenberg text leave in lines.

A plain-text edition marks in characters what a printed book showed in type: ``_italics_``,
``*emphasis*`` and ``=bold=``, words in capitals for small capitals (chapter openings, signs,
titles), editorial brackets (``[Illustration: ...]``, ``[Footnote 3: ...]``, ``[Transcriber's
Note: ...]``) and footnote marks (``[3]``, ``[A]``), and words hyphenated across a line end. None
of that is read aloud; neither is a brace that a table draws down several lines to group them (a
cast list's "Flower Messengers {Rose." between "{Pansy." and "{Poppy."), which a plain-text edition
types as the same ``{`` or ``}`` in the same column of each line (:func:`erase_drawn_braces`).
:func:`join_lines` joins a paragraph's hard-wrapped lines (mending line-end
hyphenation with the book's own vocabulary as evidence), :func:`clean` removes the markup and
brackets (returning what it removed, for the book's ``skipped`` list) while keeping track of where
each source line starts, and :func:`uncap` and :func:`title_case` turn capitals into the case a
reader (and an ASR model) expects.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "EDITORIAL",
    "Joined",
    "clean",
    "erase_drawn_braces",
    "join_lines",
    "title_case",
    "uncap",
    "vocabulary",
]

# One [keyword ...] bracket an editor added: never part of the author's text.
EDITORIAL = re.compile(
    r"\[\s*(?:Illustration|Illustrations|Footnote|Sidenote|Side-note|Transcriber'?s?\s+[Nn]otes?|"
    r"Transcriber|Note|Decoration|Image|Picture|Frontispiece|Blank\s+Page|Errata|Greek|Hebrew|"
    r"Music|Pg\.?|Page)\b(?:[^\[\]]|\[[^\[\]]*\])*\]",
    re.IGNORECASE,
)
_MARK = re.compile(r"\[(?:\d{1,3}|[A-Z]|\*{1,3}|†|‡)\]|\{(?:\d{1,4}|[ivxlc]{1,6})\}")
# _italic_, *emphasis*, =bold=: markers at word edges, on both sides of a run of text.
_EMPHASIS = tuple(
    re.compile(rf"(?<![\w{m}]){re.escape(m)}(?=[^\s{m}])((?:(?!{re.escape(m)}).)+?)(?<=[^\s{m}])"
               rf"{re.escape(m)}(?![\w{m}])", re.DOTALL)
    for m in ("_", "*", "=")
)  # fmt: skip
_STARS = re.compile(r"(?:\*\s*){3,}")  # a thought break inside a paragraph
_CAPS_WORD = re.compile(r"(?<![\w'’])([A-Z][A-Z'’]*(?:-[A-Z][A-Z'’]*)*)(?![\w'’])")
_ROMAN_ONLY = re.compile(r"[IVX]+")
_SMALL_WORDS = frozenset(
    re.findall(r"\w+", "a an and as at but by for in nor of on or the to with")
)
_WORD = re.compile(r"[A-Za-z]+")


def vocabulary(text: str) -> Counter[str]:
    """How often each lower-cased word (letters only) and each hyphenated compound occurs."""
    counts: Counter[str] = Counter(w.lower() for w in _WORD.findall(text))
    counts.update(m.lower() for m in re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)+", text))
    return counts


def _mend(left: str, right: str, words: Counter[str]) -> str:
    """The word a line-end hyphen split (``left`` ends with "-"): with or without the hyphen,
    whichever the book itself writes more often; a compound of two words it knows otherwise
    keeps its hyphen (printers of these editions rejoin split words and keep real compounds)."""
    head = re.search(r"[A-Za-z]+-$", left)
    tail = re.match(r"[A-Za-z]+", right)
    if not head or not tail:
        return left + right
    a, b = head.group(0)[:-1].lower(), tail.group(0).lower()
    joined, hyphenated = words.get(a + b, 0), words.get(f"{a}-{b}", 0)
    if joined > hyphenated:
        return left[:-1] + right
    if hyphenated > joined or (words.get(a, 0) > 1 and words.get(b, 0) > 1):
        return left + right
    return left[:-1] + right


class Joined:
    """A paragraph's text with the offset at which each source line begins."""

    def __init__(self, text: str, starts: Sequence[tuple[int, int]]) -> None:
        self.text = text
        self.starts = tuple(starts)

    def substitute(self, pattern: re.Pattern[str], replacement: str | None = None) -> list[str]:
        """Apply ``pattern`` (each match replaced by ``replacement``, or by its first group when
        None), shifting line starts; returns the removed matches."""
        pieces, removed, shifts = [], [], []
        position = 0
        for match in pattern.finditer(self.text):
            new = match.group(1) if replacement is None else replacement
            pieces.append(self.text[position : match.start()] + new)
            shifts.append((match.end(), len(match.group(0)) - len(new)))
            removed.append(match.group(0))
            position = match.end()
        if not removed:
            return []
        pieces.append(self.text[position:])
        self.text = "".join(pieces)
        self.starts = tuple(
            (offset - sum(delta for end, delta in shifts if end <= offset), line)
            for offset, line in self.starts
        )
        return removed


def _lone_braces(line: str) -> set[tuple[int, str]]:
    """Columns of the braces in ``line`` that no partner on the line closes or opens."""
    lone, opened = set(), []
    for column, char in enumerate(line):
        if char == "{":
            opened.append(column)
        elif char == "}":
            if opened:
                opened.pop()
            else:
                lone.add((column, "}"))
    return lone | {(column, "{") for column in opened}


def erase_drawn_braces(lines: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line number, text) lines with every drawn brace blanked: a ``{`` or ``}`` without a
    partner on its line that has one in the same column on the line above or below."""
    lone = [_lone_braces(text) for _, text in lines]
    out = []
    for index, (number, text) in enumerate(lines):
        around = set().union(*lone[max(0, index - 1) : index], *lone[index + 1 : index + 2])
        drawn = {column for column, char in lone[index] & around}
        out.append((number, "".join(" " if i in drawn else c for i, c in enumerate(text))))
    return out


def join_lines(lines: Sequence[tuple[int, str]], words: Counter[str]) -> Joined:
    """Join (line number, text) lines with single spaces, mending line-end hyphens and keeping
    a typewriter dash ("--") at a line end attached to the next word."""
    text, starts = "", []
    for number, line in lines:
        line = " ".join(line.split())
        if not line:
            continue
        if not text:
            starts.append((0, number))
            text = line
            continue
        if text.endswith("--") or line.startswith("--"):
            starts.append((len(text), number))
            text += line
        elif re.search(r"[A-Za-z]-$", text) and line[:1].islower():
            mended = _mend(text, line, words)
            starts.append((len(mended) - len(line), number))
            text = mended
        else:
            text += " "
            starts.append((len(text), number))
            text += line
    return Joined(text, starts)


def clean(joined: Joined) -> list[str]:
    """Remove editorial brackets, footnote marks and emphasis markers from ``joined`` in place;
    returns the brackets removed (marks and markers are not listed)."""
    removed = joined.substitute(EDITORIAL, "")
    joined.substitute(_MARK, "")
    joined.substitute(_STARS, " ")
    for pattern in _EMPHASIS:
        joined.substitute(pattern)
    tidied = Joined(joined.text, joined.starts)
    tidied.substitute(re.compile(r"\s{2,}"), " ")
    tidied.substitute(re.compile(r"\s+(?=[,.;:!?])"), "")
    joined.text, joined.starts = tidied.text.strip(), tidied.starts
    return removed


def _capital(word: str) -> str:
    """ "KATRINE'S" -> "Katrine's", "SELF-SURRENDER" -> "Self-Surrender", "MCDERMOTT" ->
    "McDermott", "O'BRIEN" -> "O'Brien"."""
    parts = []
    for part in word.split("-"):
        part = part[:1] + part[1:].lower()
        if re.match(r"Mc[a-z]{2}", part):
            part = "Mc" + part[2].upper() + part[3:]
        if re.match(r"[OD]['’][a-z]{2}", part):
            part = part[:2] + part[2].upper() + part[3:]
        parts.append(part)
    return "-".join(parts)


def uncap(text: str) -> str:
    """Words in capitals as a reader says them: "IT was" -> "It was", "GUESTS ARE WELCOME" ->
    "Guests Are Welcome". Short capitals standing alone (acronyms such as "FBI", the pronoun
    "I") and numerals made of I, V and X stay as written."""
    matches = list(_CAPS_WORD.finditer(text))
    spans = [m for m in matches if len(m.group(1).replace("'", "").replace("’", "")) >= 2]
    if not spans:
        return text
    in_run = set()
    for first, second in zip(spans, spans[1:], strict=False):
        if not text[first.end() : second.start()].strip(" ,;:-—"):
            in_run.update((first.start(), second.start()))
    out, position = [], 0
    for match in spans:
        word = match.group(1)
        opening = not re.search(r"[A-Za-z]", text[: match.start()])
        short = len(word) <= 3 and match.start() not in in_run and not opening
        if _ROMAN_ONLY.fullmatch(word) or short:
            continue
        out.append(text[position : match.start()] + _capital(word))
        position = match.end()
    out.append(text[position:])
    return "".join(out)


def title_case(text: str) -> str:
    """A heading in capitals as a title: "THE MEETING IN THE WOODS" -> "The Meeting in the
    Woods"; text that is not all capitals is returned as it is."""
    if not any(c.isupper() for c in text) or any(c.islower() for c in text):
        return text
    words = re.split(r"(\s+|--|—)", text)
    out = []
    first = True
    for word in words:
        bare = word.strip("\"'“”‘’()[].,;:!?")
        if not bare or not bare[0].isalpha():
            out.append(word)
            continue
        if _ROMAN_ONLY.fullmatch(bare) and len(bare) > 1:
            out.append(word)
        elif not first and bare.lower() in _SMALL_WORDS:
            out.append(word.lower())
        else:
            out.append(_CAPS_WORD.sub(lambda m: _capital(m.group(1)), word, count=1))
        first = False
    return "".join(out)
