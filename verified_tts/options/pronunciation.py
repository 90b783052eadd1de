"""``[pronunciation]``: takes that read doubtful words and guessed text forms in other ways.

With ``candidates`` on, a render gives the lines holding a doubtful word (read by espeak-ng's
spelling rules or unlike the dictionaries, and rare; or doubted by the ASR model in every take)
takes that read the word in the dictionaries' and the other stresses' ways, decides each word's
reading once for the book from all its takes, and renders every line in the decided reading
(verified_tts.pronounce.book). With ``text_forms`` on, a line where the normaliser guessed ("St.",
a year or a number, a king's numeral) has takes of each spoken form, and the verifiers choose
per line. Both are off by default: a render with them off is the render without them, take for
take.
"""

from __future__ import annotations

from dataclasses import dataclass

from verified_tts.errors import UserError
from verified_tts.options.schema import option

__all__ = ["DICTIONARIES", "PronunciationOptions"]

DICTIONARIES = ("cmudict", "gruut", "misaki-gold", "misaki-silver")
_DIALECTS = ("en", "en-gb-x-rp", "en-029", "en-gb-scotland", "en-us-nyc")


@dataclass(frozen=True)
class PronunciationOptions:
    """``[pronunciation]``: pronunciation and text-form candidates in a render."""

    candidates: bool = option(
        False, "Takes read doubtful words in other ways; one reading per word for the book"
    )
    text_forms: bool = option(
        False, "Takes read guessed text forms (St., years, a king's numeral) in other ways"
    )
    max_readings: int = option(3, "Readings per doubtful word, espeak-ng's own included")
    max_forms: int = option(3, "Spoken forms per line, the normaliser's own included")
    max_zipf: float = option(3.0, "Words rarer than this Zipf frequency may be doubtful")
    sources: tuple[str, ...] = option(DICTIONARIES, "Dictionaries that propose readings")
    dialects: tuple[str, ...] = option((), "espeak-ng's other English dialects proposed")
    stresses: int = option(1, "Readings with espeak-ng's stress moved to another syllable")
    heard: bool = option(True, "Also doubt words the ASR model doubted in every take of a line")
    margin: float = option(
        0.5, "How much better another reading must score than espeak-ng's to be chosen"
    )

    def __post_init__(self) -> None:
        if self.max_readings < 1 or self.max_forms < 1:
            raise UserError(
                f"[pronunciation] max_readings and max_forms must be at least 1 "
                f"(got {self.max_readings} and {self.max_forms})"
            )
        unknown = [s for s in self.sources if s not in DICTIONARIES]
        if unknown:
            raise UserError(
                f"[pronunciation] sources names unknown dictionaries {unknown}: choose among "
                + ", ".join(DICTIONARIES)
            )
        dialects = [d for d in self.dialects if d not in _DIALECTS]
        if dialects:
            raise UserError(
                f"[pronunciation] dialects names unknown espeak-ng dialects {dialects}: choose "
                "among " + ", ".join(_DIALECTS)
            )

    @property
    def enabled(self) -> bool:
        return self.candidates or self.text_forms
