"""The review's word list: each word the render decided once for the book, with every reading.

A render with pronunciation candidates (``[pronunciation] candidates``) records in the manifest's
``pronunciations`` block, per doubtful word, the reading it chose and the evidence of each
reading: who proposed it, how many takes said it and how often the ASR model heard the word, and
its best take (verified_tts.pronounce.book_decision). :func:`word_rows` is that list as the page
shows it, each reading with a player (its best take's audio, served by number like a take's) and
the lexicon entry that puts it in the book; an entry added in review for the word wins over the
render's decision, and the row says so. One click on another reading adds that entry (the review's
own lexicon action), which renders the word's lines again in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from verified_tts.review.decisions import Entry, lexicon_entry, live_changes

__all__ = ["reading_audio", "word_rows"]


def _decisions(extra: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    block = extra.get("pronunciations") or {}
    return list(block.get("decisions") or [])


def _review_choice(word: str, entries: Sequence[Entry]) -> str | None:
    """The phonemes the latest live lexicon entry of the review gives ``word``, if any."""
    chosen = None
    for entry in live_changes(entries):
        if entry.kind != "lexicon":
            continue
        lexicon = lexicon_entry(entry.data["entry"])
        if lexicon.phonemes and lexicon.compiled().fullmatch(word):
            chosen = lexicon.phonemes
    return chosen


def word_rows(extra: Mapping[str, Any], entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """The decided words as the page lists them (the manifest's ``extra`` and the review log)."""
    rows = []
    for number, decision in enumerate(_decisions(extra)):
        word = str(decision["word"])
        readings = list(decision.get("readings") or [])
        own = readings[0]["phonemes"] if readings else ""
        in_review = _review_choice(word, entries)  # the live log, not the last render's view
        chosen = in_review if in_review is not None else str(decision["chosen"])
        by = "review" if in_review is not None else "verifiers"
        rows.append({
            "index": number, "word": word, "count": decision.get("count"),
            "why": decision.get("why"), "example": decision.get("example"),
            "chosen": chosen, "by": by, "changed": chosen != own,
            "readings": [
                {
                    "index": k, "phonemes": r["phonemes"], "sources": list(r.get("sources") or ()),
                    "takes": r.get("takes", 0), "lines": r.get("lines", 0),
                    "heard_word": r.get("heard_word"), "wins": r.get("wins", 0),
                    "heard": list(r.get("heard") or ())[:1], "chosen": r["phonemes"] == chosen,
                    "audio": f"audio/word/{number}/{k}"
                    if (r.get("example") or {}).get("audio") else None,
                }
                for k, r in enumerate(readings)
            ],
        })  # fmt: skip
    return rows


def reading_audio(extra: Mapping[str, Any], word: int, reading: int) -> str | None:
    """The output-folder path of the best take of reading ``reading`` of word ``word``."""
    from verified_tts.storage.store import STORE_DIR

    decisions = _decisions(extra)
    if not 0 <= word < len(decisions):
        return None
    readings = decisions[word].get("readings") or []
    if not 0 <= reading < len(readings):
        return None
    audio = (readings[reading].get("example") or {}).get("audio")
    return f"{STORE_DIR}/{audio}" if audio else None
