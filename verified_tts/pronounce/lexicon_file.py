"""The book's decisions as a lexicon file a producer reads, edits and passes back (``--lexicon``).

The file is the producer's own lexicon (when one was given) with the decided words added after
it, so that one ``--lexicon`` carries both and the producer's entries always win: a word their
lexicon covers is never decided. Each decided word is one ``[words]`` entry with its phonemes,
preceded by a comment with the evidence (every reading, who proposed it, what the ASR heard);
a word whose espeak-ng reading was kept is a ``keep = true`` entry, so it stays as it is, is not
doubted again when the file is passed back, and the producer sees that it was checked. The full
evidence goes to a JSON file beside it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from verified_tts.pronounce.book_decision import ReadingEvidence, WordDecision
from verified_tts.pronounce.decide import Decision
from verified_tts.storage.atomic import write_json_atomic, write_text_atomic
from verified_tts.text.lexicon import Lexicon, LexiconEntry

__all__ = ["lexicon_text", "write_decisions"]


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string is a JSON string


def _entry_line(entry: LexiconEntry) -> str:
    fields = []
    if entry.say is not None:
        fields.append(f"say = {_quote(entry.say)}")
    if entry.phonemes:
        fields.append(f"phonemes = {_quote(entry.phonemes)}")
    if entry.case:
        fields.append("case = true")
    if entry.keep:
        fields.append("keep = true")
    return f"{_quote(entry.pattern)} = {{ {', '.join(fields)} }}"


def _evidence_comment(decision: Decision | WordDecision) -> list[str]:
    lines = [f'# {decision.word} ({decision.count}x, {decision.why}): "{decision.example[:80]}"']
    chosen = getattr(decision, "phonemes", decision.chosen)
    if chosen != decision.chosen:
        lines.append(f"# chosen in review (the verifiers chose {decision.chosen})")
    for reading in decision.readings:
        heard = "; ".join(h.strip()[:50] for h in reading.heard)
        mark = "*" if reading.phonemes == chosen else " "
        if isinstance(reading, ReadingEvidence):
            local = "-" if reading.word_logprob is None else f"{reading.word_logprob:.2f}"
            figures = (
                f"heard as the word in {reading.heard_word:.0%} of {reading.takes} takes "
                f"({reading.lines} lines, {reading.wins} won), word logprob {local}"
            )
        else:
            figures = f"logprob {reading.logprob:.3f}, WER {reading.wer:.2f}"
        sources = ", ".join(reading.sources)
        lines.append(f"# {mark} {reading.phonemes}  [{sources}]  {figures}, heard: {heard}")
    return lines


def lexicon_text(
    decisions: Sequence[Decision | WordDecision],
    producer: Lexicon | None = None,
    made_by: str = "verified-tts pronounce",
) -> str:
    """TOML text: the producer's entries as they load, then the decided words."""
    head = [f"# Pronunciations decided once for the whole book by `{made_by}`.",
            "# Edit any entry and pass this file back with --lexicon; '*' marks the reading",
            "# chosen. A word whose espeak-ng reading was kept is kept (keep = true)."]  # fmt: skip
    patterns = [e for e in (producer.entries if producer else ()) if e.regex and not e.source]
    words = [e for e in (producer.entries if producer else ()) if not e.regex and not e.source]
    out = [*head, ""]
    if patterns:
        out += ["[patterns]", *(_entry_line(e) for e in patterns), ""]
    out.append("[words]")
    if words:
        out += ["# the producer's own entries", *(_entry_line(e) for e in words), ""]
    for decision in decisions:
        out += _evidence_comment(decision)
        chosen = getattr(decision, "phonemes", decision.chosen)
        own = decision.readings[0].phonemes if decision.readings else None
        changed = decision.changed if chosen == decision.chosen else chosen != own
        value = f"phonemes = {_quote(chosen)}" if changed else "keep = true"
        out.append(f"{_quote(decision.word)} = {{ {value} }}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def write_decisions(
    path: str | Path,
    decisions: Sequence[Decision | WordDecision],
    producer: Lexicon | None = None,
    made_by: str = "verified-tts pronounce",
) -> Path:
    """Write the lexicon (atomically) and its evidence as ``PATH.json``; returns the JSON path."""
    path = Path(path)
    write_text_atomic(path, lexicon_text(decisions, producer, made_by))
    evidence = path.with_name(path.name + ".json")
    write_json_atomic(evidence, {"decisions": [d.as_dict() for d in decisions]})
    return evidence
