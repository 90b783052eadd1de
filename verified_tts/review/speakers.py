"""Who says each quote, least sure first: the review's list of speakers for a producer to settle.

A render with a cast file keeps, on every dialogue line, who the attribution found to say it
(the record's ``speaker`` block: the name, or None where the guess fell below the cast's
threshold, the guess, its confidence and why). :func:`speaker_rows` groups a paragraph's lines
into one quote (printers give a paragraph to one speaker, and so does the attribution) and lists
the quotes with no speaker first, then the rest, each lowest confidence first; each row says what
a producer chose for it in review, if anything. The choices are the cast's characters, the
narrator and the dialogue voice (:func:`speaker_choices`); :func:`voice_for` is the voice a choice
speaks in, as :func:`verified_tts.cast.apply_cast` gives it (None: the render's own voice, which
is the narrator's). A choice is a request like an edit: the quote's lines are rendered again in
that voice (:meth:`verified_tts.review.actions.Reviewer.speaker`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from verified_tts.casting.characters import NARRATOR
from verified_tts.errors import UserError

if TYPE_CHECKING:
    from verified_tts.cast import Cast
    from verified_tts.review.decisions import Entry

__all__ = ["DIALOGUE", "NARRATOR", "quote_lines", "speaker_choices", "speaker_rows",
           "uncertain_count", "voice_for"]  # fmt: skip

DIALOGUE = "dialogue"  # the choice of nobody in particular: the cast's dialogue voice


def speaker_choices(cast: Cast) -> list[str]:
    """What a quote can be given to: the cast's characters, the narrator, the dialogue voice."""
    named = [name for name in cast.characters if name != NARRATOR]
    return [*named, NARRATOR, DIALOGUE]


def voice_for(cast: Cast, choice: str) -> str | None:
    """The voice ``choice`` speaks in (None: the render's own, the narrator's)."""
    if choice not in speaker_choices(cast):
        raise UserError(
            f"'{choice}' is not in the cast: give the quote to one of "
            f"{', '.join(speaker_choices(cast))} (add a character to cast.toml to have more)"
        )
    if choice == NARRATOR:
        return None
    voice = cast.dialogue if choice == DIALOGUE else cast.characters[choice]
    return None if voice == cast.narrator else voice


def _groups(
    blocks: Mapping[int, Mapping[str, Any]], places: Sequence[Sequence[Any]]
) -> dict[tuple[int, int], list[int]]:
    groups: dict[tuple[int, int], list[int]] = {}
    for position in sorted(blocks):
        chapter, paragraph = places[position][0], places[position][1]
        groups.setdefault((chapter, paragraph), []).append(position)
    return groups


def quote_lines(
    blocks: Mapping[int, Mapping[str, Any]], places: Sequence[Sequence[Any]], position: int
) -> list[int]:
    """The positions of the quote (its paragraph's dialogue lines) that ``position`` is in."""
    if position not in blocks:
        raise UserError(f"line {position} is not a quote with a speaker to choose")
    place = (places[position][0], places[position][1])
    return _groups(blocks, places)[place]


def _chosen(entries: Sequence[Entry]) -> tuple[dict[str, str], set[str]]:
    """(line -> the speaker chosen last, lines whose choice is still being rendered)."""
    undone = {e.of for e in entries if e.kind == "undo"}
    answered = {e.of for e in entries if e.kind in ("result", "failed")}
    chosen: dict[str, str] = {}
    working: set[str] = set()
    for entry in entries:
        if entry.kind != "speaker" or entry.seq in undone:
            continue
        for line in entry.data.get("lines", ()):
            chosen[line] = str(entry.data["speaker"])
            if entry.seq in answered:
                working.discard(line)
            else:
                working.add(line)
    return chosen, working


def uncertain_count(
    blocks: Mapping[int, Mapping[str, Any]], places: Sequence[Sequence[Any]]
) -> int:
    """How many quotes the render gave no speaker (their guess fell below the threshold)."""
    return sum(blocks[group[0]].get("name") is None for group in _groups(blocks, places).values())


def speaker_rows(
    blocks: Mapping[int, Mapping[str, Any]],
    places: Sequence[Sequence[Any]],
    texts: Sequence[str],
    ids: Sequence[str],
    entries: Sequence[Entry],
    *,
    offset: int = 0,
    limit: int = 100,
) -> dict[str, Any]:
    """The quotes, no speaker first, then lowest confidence first (see the module docstring)."""
    chosen, working = _chosen(entries)
    rows = []
    for (chapter, _), positions in _groups(blocks, places).items():
        block = blocks[positions[0]]
        line = ids[positions[0]]
        rows.append({
            "pos": positions[0],
            "chapter": chapter,
            "text": " ".join(texts[p] for p in positions),
            "speaker": block.get("name"),
            "guess": block.get("name") or block.get("guess"),
            "confidence": block.get("confidence"),
            "why": block.get("why"),
            "uncertain": block.get("name") is None,
            "chosen": chosen.get(line),
            "working": line in working,
        })  # fmt: skip
    rows.sort(key=lambda r: (not r["uncertain"], r["confidence"] or 0.0, r["pos"]))
    start = max(0, offset)
    return {
        "total": len(rows),
        "uncertain": sum(r["uncertain"] for r in rows),
        "quotes": rows[start : start + limit],
    }
