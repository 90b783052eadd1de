"""``pronounce``: decide the doubtful words of a book once and write them as a lexicon.

Reads the book as ``render`` does (the producer's ``--lexicon`` applied, so its words are never
decided), loads the default generator and WER verifier, decides every doubtful word
(:mod:`verified_tts.pronounce.decide`) and writes the producer's entries plus the decisions to
one lexicon file (:mod:`verified_tts.pronounce.lexicon_file`), ready for ``render --lexicon``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verified_tts.errors import UserError
from verified_tts.pronounce.decide import DecideOptions, Decision, decide, summary

__all__ = ["PronounceResult", "pronounce_book"]


@dataclass(frozen=True)
class PronounceResult:
    lexicon: Path
    evidence: Path
    decisions: tuple[Decision, ...]
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "lexicon": str(self.lexicon), "evidence": str(self.evidence),
            "seconds": round(self.seconds, 1), **summary(self.decisions),
            "decisions": [d.as_dict() for d in self.decisions],
        }  # fmt: skip


def pronounce_book(
    book: str | Path,
    out: str | Path,
    *,
    lexicon: str | Path | None = None,
    options: DecideOptions | None = None,
    force: bool = False,
) -> PronounceResult:
    """Decide ``book``'s doubtful words and write the lexicon to ``out`` (with ``out``.json);
    an existing ``out`` may hold a producer's edits, so it is replaced only with ``force``."""
    from verified_tts.generators import GeneratorConfig, load_generator
    from verified_tts.options import ProductionOptions
    from verified_tts.options.verifiers import WerOptions
    from verified_tts.pronounce.lexicon_file import write_decisions
    from verified_tts.pronounce.sources import available_sources
    from verified_tts.text.production import load_input
    from verifiers import load_wer_verifier

    options = options or DecideOptions()
    out = Path(out)
    if out.suffix.lower() != ".toml":
        raise UserError(f"--out {out}: the lexicon is a TOML file, e.g. --out book.lexicon.toml")
    if lexicon is not None and Path(lexicon).resolve() == out.resolve():
        raise UserError(f"--out {out} is the --lexicon file: write the decisions to a new file")
    if out.exists() and not force:
        raise UserError(
            f"{out} exists and may hold your edits: give another --out (with --lexicon {out} "
            "its words win), or --force to replace it"
        )
    if options.sources is None and not available_sources():
        raise UserError(
            "no pronunciation dictionaries are installed: pip install 'verified-tts[pronounce]'"
        )
    started = time.perf_counter()
    loaded = load_input(book, ProductionOptions(lexicon=str(lexicon) if lexicon else None))
    covered = [e.compiled() for e in (loaded.lexicon.entries if loaded.lexicon else ())]
    sentences = [s.spoken for s in loaded.book.segments]
    generator = load_generator(GeneratorConfig())
    verifier = load_wer_verifier(WerOptions())
    decisions = decide(sentences, generator, verifier, covered=covered, options=options)
    evidence = write_decisions(out, decisions, loaded.lexicon)
    return PronounceResult(out, evidence, tuple(decisions), time.perf_counter() - started)
