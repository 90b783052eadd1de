"""The configuration reference in docs/configuration.md, generated from the options types.

Every key a TOML config accepts is one :class:`OptionRow` (table, key, type, default, doc).
:func:`reference_markdown` turns a list of rows into the reference's Markdown; it does not care
where the rows come from. :func:`option_rows` lists them from the options leaf's reference
(:mod:`verified_tts.options`, where every field carries its one-line doc).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["OptionRow", "option_rows", "reference_markdown"]


@dataclass(frozen=True)
class OptionRow:
    """One key of the TOML config: ``table`` is "" for the top level, e.g. "verifiers.wer"."""

    table: str
    key: str
    type: str
    default: str
    doc: str


# what each metric a gate or a weight may name measures (the verifiers declare the names)
METRIC_DOCS: Mapping[str, str] = {
    "asr_min_logprob": "the worst reference token's log-probability under the ASR model",
    "asr_min_take_logprob": "the worst token, less the doubt a sentence's best take shares",
    "asr_logprob": "mean log-probability of the reference text",
    "asr_insertions": "words heard beyond the text",
    "wer": "share of the text's words heard otherwise or not at all (word error rate)",
    "duration_ratio": "duration against what the reading rate expects of the text",
    "pace_ratio": "duration against the voice's own length for the text, else a punctuated reading",
    "voice_pace_ratio": "pace_ratio, for a voice that predicts its own length (its own bounds)",
    "speech_ratio": "speech span against what the voice means to take",
    "clipping": "share of samples at the clip level",
    "leading_silence_s": "seconds of silence before the speech",
    "trailing_silence_s": "seconds of silence after the speech",
    "max_internal_silence_s": "longest silence inside the speech",
    "dropped_frames": "codec frames dropped as malformed",
    "speaker": "similarity to the voice reference (or to earlier winners)",
    "speaker_take": "speaker, less the distance a line's best take shares (at most 0.02)",
    "emotion": "probability of the target emotion",
    "duration_fit": "dubbing: how naturally the speech fits its slot",
    "stretch": "dubbing: how much a winner is sped up to fit its slot",
}


def _toml(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _gate_text(gate: Any) -> str:
    parts = [f"{name} = {getattr(gate, name)!r}" for name in ("min", "max")]
    parts = [p for p in parts if not p.endswith("None")]
    if gate.margin:
        parts.append(f"margin = {gate.margin!r}")
    return "{" + ", ".join(parts) + "}"


def _table_name(label: str) -> str:
    return "" if label == "config" else label.strip("[]")


def option_rows() -> list[OptionRow]:
    """Every key of the TOML config, from the options leaf's own reference
    (:func:`verified_tts.options.reference`); the selection's gates and weights are one row each,
    with the packed profile's value and the per-clip one where they differ."""
    from verified_tts.options import reference
    from verified_tts.selection.policy import default_policy

    packed, per_clip = default_policy(True), default_policy(False)
    rows: list[OptionRow] = []
    for doc in reference():
        table = _table_name(doc.table)
        if table == "selection" and doc.key in ("gates", "weights"):
            continue
        default = doc.default
        if table == "selection" and doc.key in {f.name for f in fields(packed)}:
            default = _both(getattr(packed, doc.key), getattr(per_clip, doc.key))
        else:
            default = _toml(default)
        rows.append(OptionRow(table, doc.key, doc.type, default, doc.doc))
    per_clip_gates = {gate.metric: gate for gate in per_clip.gates}
    for gate in packed.gates:
        text = _gate_text(gate)
        other = _gate_text(per_clip_gates[gate.metric]) if gate.metric in per_clip_gates else "off"
        default = text if text == other else f"{text} (packing = false: {other})"
        doc = METRIC_DOCS.get(gate.metric, gate.metric)
        rows.append(OptionRow("selection.gates", gate.metric, "table", default, doc))
    for metric, weight in packed.weights.items():
        doc = METRIC_DOCS.get(metric, metric)
        rows.append(OptionRow("selection.weights", metric, "float", repr(weight), doc))
    return rows


def _both(packed: Any, per_clip: Any) -> str:
    if packed == per_clip:
        return _toml(packed)
    return f"{_toml(packed)} (packing = false: {_toml(per_clip)})"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _merged(tables: dict[str, list[OptionRow]]) -> list[tuple[list[str], list[list[OptionRow]]]]:
    """Tables whose keys start with another's keys, in order (the codec-LM generators'), side by
    side: [(names, rows per name)], a missing key's row None."""
    groups: list[tuple[list[str], list[list[OptionRow]]]] = []
    for name, rows in tables.items():
        keys = [row.key for row in rows]
        for names, columns in groups:
            other = [row.key for row in columns[0]]
            shorter, longer = sorted((keys, other), key=len)
            if len(shorter) > 1 and longer[: len(shorter)] == shorter:
                names.append(name)
                columns.append(rows)
                break
        else:
            groups.append(([name], [rows]))
    return groups


def _doc(rows: Sequence[OptionRow], names: Sequence[str]) -> str:
    """One doc for a key of merged tables; where they differ, each with its tables' names."""
    by_doc: dict[str, list[str]] = {}
    for name, row in zip(names, rows, strict=True):
        by_doc.setdefault(row.doc, []).append(name.rsplit(".", 1)[-1])
    if len(by_doc) == 1:
        return next(iter(by_doc))
    return "; ".join(f"{', '.join(tables)}: {doc}" for doc, tables in by_doc.items() if doc)


def reference_markdown(rows: Sequence[OptionRow]) -> str:
    """The reference: one Markdown table per config table, in the order the rows come; tables
    with the same keys (the codec-LM generators') share one, with a default column each."""
    tables: dict[str, list[OptionRow]] = {}
    for row in rows:
        tables.setdefault(row.table, []).append(row)
    parts = []
    for names, columns in _merged(tables):
        headings = [f"[{name}]" if name else "top level" for name in names]
        parts.append(" ".join(f"**`{h}`**" for h in headings) + "\n")
        defaults = ["default"]
        if len(names) > 1:
            defaults = [f"default ({name.rsplit('.', 1)[-1]})" for name in names]
        parts.append("| " + " | ".join(["key", "type", *defaults, "what it does"]) + " |")
        parts.append("|" + " --- |" * (3 + len(defaults)))
        keys = list(dict.fromkeys(row.key for rows in columns for row in rows))
        for key in keys:
            same_key = [next((r for r in rows if r.key == key), None) for rows in columns]
            present = [(n, r) for n, r in zip(names, same_key, strict=True) if r is not None]
            first = present[0][1]
            cells = [f"`{key}`", first.type]
            cells += [f"`{r.default}`" if r else "-" for r in same_key]
            cells.append(_doc([r for _, r in present], [n for n, _ in present]))
            parts.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        parts.append("")
    return "\n".join(parts).rstrip("\n")
