"""What ``verified-tts cast BOOK --json`` prints: every quote of the decoded text with its
offsets, its speaker (or null), confidence and reason, and the characters who speak.

:func:`cast_report` scans the text (:mod:`verified_tts.casting.quotes`), runs the sieve
(:mod:`verified_tts.casting.sieve`) and keeps a guess as the quote's speaker when its confidence
reaches ``threshold``; below it the speaker is null (the dialogue voice) and the guess stays in
``guess`` for a producer to confirm. Characters are listed by how many quotes they speak, with
their aliases, gender, kind (named, described, narrator) and why they are who they are.
"""

from __future__ import annotations

from collections import Counter

from verified_tts.casting.quotes import headings, quote_bounds, scan_text
from verified_tts.casting.sieve import OWN_TAG, attribute
from verified_tts.text.attribution import Attribution

__all__ = ["THRESHOLD", "attribute_paragraphs", "cast_report", "check_threshold"]

THRESHOLD = 0.5  # a guess below this goes to the dialogue voice


def check_threshold(value: object, where: str) -> float:
    """``value`` as a confidence threshold (a number from 0 to 1), else a one-line error that
    names ``where`` it was given."""
    from verified_tts.errors import UserError

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise UserError(
            f"{where} must be a number from 0 to 1 (a speaker guess less confident than it goes "
            f"to the dialogue voice), not {value!r}: try {THRESHOLD}"
        )
    return float(value)


def cast_report(text: str, *, threshold: float = THRESHOLD) -> dict:
    """The quotes and characters of ``text`` (a book's decoded text) as JSON-ready data."""
    chapters = scan_text(text)
    paragraphs = [[(p.text, p.quotes) for p in chapter] for chapter in chapters]
    guesses, people = attribute(paragraphs, headings(text))
    quotes = []
    spoken: Counter[str] = Counter()
    for number, (chapter, found) in enumerate(zip(chapters, guesses, strict=True)):
        for paragraph, guess in zip(chapter, found, strict=True):
            if guess is None:
                continue
            own = {index: (who, why) for index, who, why in guess.own}
            for index, span in enumerate(paragraph.quotes.spans):
                if not span.dialogue:
                    continue
                start, end = quote_bounds(paragraph, index)
                # a quote a tag of its own gives to another ('... asked Gilbert. "...,"
                # explained Anne') is theirs, as sure as a tag
                speaker, why, confidence = guess.speaker, guess.reason, guess.confidence
                if index in own:
                    speaker, why, confidence = *own[index], OWN_TAG
                sure = speaker is not None and confidence >= threshold
                quote = {
                    "start": start,
                    "end": end,
                    "text": text[start:end],
                    "chapter": number,
                    "speaker": speaker if sure else None,
                    "confidence": round(confidence, 2),
                    "why": why,
                }
                if speaker and not sure:
                    quote["guess"] = speaker
                if guess.addressees:
                    quote["addressees"] = list(guess.addressees)
                quotes.append(quote)
                if sure:
                    spoken[speaker] += 1
    characters = []
    for name, count in spoken.most_common():
        kind = (
            "narrator"
            if name == "the narrator"
            else ("described" if name in people.described else "named")
        )
        character = people.character(name, kind)
        characters.append({
            "name": name, "aliases": list(character.aliases), "gender": character.gender,
            "kind": kind, "quotes": count, "why": character.why,
        })  # fmt: skip
    return {"quotes": quotes, "characters": characters, "threshold": threshold}


def attribute_paragraphs(
    chapters: list, headings: list[str] | tuple[str, ...] = (), *, threshold: float = THRESHOLD
) -> list:
    """The sieve's guesses as the book reader's per-paragraph :class:`Attribution` s (None for
    paragraphs without dialogue): a guess below ``threshold`` has no speaker, its reason says
    whom it would have been. ``headings`` are the book's chapter headings, as ``cast`` reads
    them too, so the reader and ``cast`` know the same characters."""
    guesses, people = attribute(chapters, headings)
    result = []
    for found in guesses:
        row = []
        for guess in found:
            if guess is None:
                row.append(None)
            elif guess.speaker and guess.confidence >= threshold:
                reason = f"{guess.reason} (confidence {guess.confidence:.2f})"
                row.append(
                    Attribution(
                        guess.speaker, reason, people.gender(guess.speaker), guess.confidence
                    )
                )
            else:
                unsure = (
                    f"; perhaps {guess.speaker}, {guess.confidence:.2f}" if guess.speaker else ""
                )
                row.append(
                    Attribution(None, guess.reason + unsure, None, guess.confidence, guess.speaker)
                )
        result.append(row)
    return result
