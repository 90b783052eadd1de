"""The configuration reference in docs/configuration.md, generated from the options types.

Every key a TOML config accepts is one :class:`OptionRow` (table, key, type, default, doc).
:func:`reference_markdown` turns a list of rows into the reference's Markdown; it does not care
where the rows come from. :func:`option_rows` lists them from the options dataclasses as they
are today: field names, annotations and defaults from :mod:`dataclasses`, and the doc of a field
from its trailing ``#`` comment or from a ````name``: ...`` line of its class docstring. When the
options live in one module that lists its own rows, ``option_rows`` is the only function to
replace.
"""

from __future__ import annotations

import inspect
import io
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
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


def _field_comments(cls: type) -> dict[str, str]:
    """Trailing ``#`` comments of the field lines in ``cls``'s own source."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    names = {f.name for f in fields(cls)}
    line_name: dict[int, str] = {}
    for number, line in enumerate(source.splitlines(), 1):
        match = re.match(r"\s+(\w+)\s*:", line)
        if match and match.group(1) in names:
            line_name[number] = match.group(1)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.start[0] in line_name:
            comments[line_name[token.start[0]]] = token.string.lstrip("#").strip()
    return comments


def _docstring_entries(cls: type) -> dict[str, str]:
    """````name``: text`` entries of the class docstring: the entry's first sentence."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    entries = {}
    for match in re.finditer(r"``(\w+)``:\s*(.+?)(?=\s*``\w+``:|\n\n|$)", doc, re.S):
        text = " ".join(match.group(2).split())
        first = re.split(r"(?<=[a-z)])\.\s+(?=[A-Z`])", text)[0]
        entries[match.group(1)] = first.rstrip(";,.").replace("``", "`")
    return entries


def _field_docs(cls: type) -> dict[str, str]:
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's comment wins over its base's
        if "__dataclass_fields__" in vars(klass):
            docs.update(_docstring_entries(klass))
            docs.update(_field_comments(klass))
    return docs


# Docs of keys whose options types carry none (no trailing comment, no docstring entry), keyed
# "table.key"; "codec_lm.key" serves the three codec-LM tables.
EXTRA_DOCS: Mapping[str, str] = {
    ".candidates": "N: candidates per utterance at most (`-n`)",
    ".seed": "base seed: candidate k of an utterance uses a seed derived from its content key "
    "and k",
    ".max_chars": "longest utterance, in spoken characters: a longer sentence is cut at clause "
    "boundaries, then commas, then words (codec LMs lower it to what they speak well)",
    ".adaptive": "sample in rounds and stop early (`--adaptive`/`--no-adaptive`); false: always N",
    "generator.name": "piper, espeak, orpheus, llasa or spark (`--generator`)",
    "generator.model": "piper: a VOICE.onnx (default: the bundled joe-medium); codec LMs: a model "
    "folder or hub id (`--model`)",
    "generator.codec": "codec LMs: the codec folder or hub id (`--codec`)",
    "generator.voice": "a Piper speaker, an Orpheus voice name, or for spark GENDER:PITCH:SPEED",
    "generator.espeak.language": "espeak-ng voice language",
    "codec_lm.temperature": "sampling temperature",
    "codec_lm.top_p": "nucleus sampling; 1.0 switches it off",
    "codec_lm.top_k": "top-k sampling; -1 switches it off",
    "codec_lm.repetition_penalty": "repetition penalty; 1.0 switches it off",
    "codec_lm.constrained": "constrained decoding: only the tokens valid at a position can be "
    "sampled",
    "codec_lm.slack_s": "seconds of audio added to the token budget",
    "codec_lm.max_tokens_min": "token budget, at least",
    "codec_lm.max_tokens_max": "token budget, at most",
    "codec_lm.max_speech_s": "longest speech an utterance may need before the planner splits it",
    "codec_lm.decode_workers": "codec decoding threads",
    "codec_lm.tokenizer": "tokenizer folder or id (default: the model folder's own)",
    "codec_lm.dtype": 'engine dtype ("bfloat16", "float16", ...)',
    "codec_lm.tensor_parallel_size": "GPUs per engine",
    "codec_lm.quantization": 'vLLM quantization, e.g. "fp8", "awq"',
    "codec_lm.enable_prefix_caching": "vLLM's prefix cache (vLLM's default when unset)",
    "codec_lm.engine_seed": "the engine's own seed (every request carries its candidate's seed)",
    "verifiers.signal.frame_ms": "frame length of the silence detection",
    "verifiers.signal.reading_rate_chars_per_s": "letters and digits a second a narrator reads: "
    "the expected duration behind duration_ratio",
    "verifiers.wer.device": '"cpu" or "cuda"',
    "verifiers.wer.beam_size": "transcript beam (default: 1 packed, 5 per clip)",
    "verifiers.wer.cpu_threads": "threads per Whisper worker (0: see workers)",
    "verifiers.wer.packing": "several short clips of different utterances share one 30 s "
    "window (docs/packed-verification.md); false: every clip in its own window",
    "verifiers.speaker.device": '"cpu" or "cuda"',
    "verifiers.emotion.device": '"cpu" or "cuda"',
    "verifiers.emotion.batch_size": "clips classified together, zero-padded to the longest",
    "verifiers.duration_fit.silence_threshold_dbfs": "frame level below this is silence (the "
    "assembly's trim)",
    "selection.first_round": "candidates in the first round",
    "selection.stop": '"expected_gain" or "margin" (stop once a candidate passes every gate '
    "with margin)",
    "selection.gates.asr_min_logprob": "the worst reference token's log-probability under the "
    "ASR model",
    "selection.gates.asr_insertions": "words heard beyond the text",
    "selection.gates.duration_ratio": "duration against what the reading rate expects of the text",
    "selection.gates.clipping": "share of samples at the clip level",
    "selection.gates.leading_silence_s": "seconds of silence before the speech",
    "selection.gates.trailing_silence_s": "seconds of silence after the speech",
    "selection.gates.max_internal_silence_s": "longest silence inside the speech",
    "selection.gates.dropped_frames": "codec frames dropped as malformed",
    "selection.gates.speaker": "similarity to the voice reference (or to earlier winners)",
    "selection.weights.asr_logprob": "mean log-probability of the reference text",
    "selection.weights.asr_min_logprob": "the worst reference token's log-probability",
    "selection.weights.speaker": "speaker similarity",
    "selection.weights.emotion": "probability of the target emotion",
    "selection.weights.duration_fit": "dubbing: how naturally the speech fits its slot",
    "assembly.sentence_pause": "seconds between sentences",
    "assembly.paragraph_pause": "seconds between paragraphs",
    "assembly.chapter_pause": "seconds between chapters in the book file",
    "assembly.peak_dbfs": "peak limit of each clip before mastering",
    "production.narrator": "narrator's name (tags, credits; `--narrator`)",
    "search.strategy": '"best-of-n" or "beam" (`--search`; docs/search.md)',
    "search.speaker_weight": "weight of speaker similarity in a beam's process score",
    "search.emotion_weight": "weight of the target emotion in a beam's process score",
    "ray.generator_num_gpus": "GPUs per generator actor",
    "ray.generator_num_cpus": "CPUs per generator actor",
    "ray.verifier_num_gpus": "GPUs per verifier actor",
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


def _type(annotation: Any) -> str:
    text = str(annotation).replace("typing.", "")
    optional = text.endswith(" | None")
    text = text.removesuffix(" | None")
    text = re.sub(r"^tuple\[(\w+), \.\.\.\]$", r"array of \1", text)
    text = re.sub(r"^tuple\[(\w+), \1\]$", r"[\1, \1]", text)
    text = re.sub(r"^Mapping\[str, (\w+)\]$", r"table of \1", text)
    return f"{text}, optional" if optional else text


def dataclass_rows(
    table: str,
    cls: type,
    *,
    skip: Iterable[str] = (),
    defaults: Mapping[str, str] | None = None,
) -> list[OptionRow]:
    """One row per field of ``cls`` (less ``skip``); ``defaults`` replaces a default's text."""
    docs, skipped, overrides = _field_docs(cls), set(skip), dict(defaults or {})
    rows = []
    for f in fields(cls):
        if f.name in skipped or f.name.startswith("_"):
            continue
        if f.default is not MISSING:
            value = f.default
        elif f.default_factory is not MISSING:
            value = f.default_factory()
        else:
            value = None
        default = overrides.get(f.name, _toml(value))
        own, extra = docs.get(f.name, ""), _extra_doc(table, f.name)
        doc = f"{extra} ({own})" if own and extra else own or extra
        rows.append(OptionRow(table, f.name, _type(f.type), default, doc))
    return rows


def _extra_doc(table: str, key: str) -> str:
    codec_lm = table in ("generator.orpheus", "generator.llasa", "generator.spark")
    found = EXTRA_DOCS.get(f"{table}.{key}")
    return found or (EXTRA_DOCS.get(f"codec_lm.{key}", "") if codec_lm else "")


def _gate_text(gate: Any) -> str:
    parts = [f"{name} = {getattr(gate, name)!r}" for name in ("min", "max")]
    parts = [p for p in parts if not p.endswith("None")]
    if gate.margin:
        parts.append(f"margin = {gate.margin!r}")
    return "{" + ", ".join(parts) + "}"


def option_rows() -> list[OptionRow]:
    """Every key of the TOML config, read from today's options dataclasses."""
    from verified_tts.config import (
        AssemblyOptions,
        DubOptions,
        ProductionOptions,
        RayOptions,
        RenderConfig,
    )
    from verified_tts.generators import GeneratorConfig
    from verified_tts.generators.espeak import EspeakOptions
    from verified_tts.generators.llasa import LlasaOptions
    from verified_tts.generators.orpheus import OrpheusOptions
    from verified_tts.generators.piper import PiperOptions
    from verified_tts.generators.spark import SparkOptions
    from verified_tts.search import SearchOptions
    from verified_tts.selection import DEFAULT_WEIGHTS, SelectionPolicy, default_policy
    from verifiers import VERIFIERS

    nested = ("generator", "verifiers", "selection", "assembly", "production", "ray", "dub")
    rows = dataclass_rows("", RenderConfig, skip=(*nested, "search"))
    rows += dataclass_rows("", SelectionPolicy, skip=_not_top_level(SelectionPolicy))
    rows += dataclass_rows("generator", GeneratorConfig, skip=("options",))
    for name, cls in (
        ("piper", PiperOptions),
        ("espeak", EspeakOptions),
        ("orpheus", OrpheusOptions),
        ("llasa", LlasaOptions),
        ("spark", SparkOptions),
    ):
        rows += dataclass_rows(f"generator.{name}", cls)
    for name, kind in VERIFIERS.items():
        enabled = OptionRow(
            f"verifiers.{name}", "enabled", "bool", "true", "false: this verifier does not run"
        )
        rows += [enabled, *dataclass_rows(f"verifiers.{name}", kind.options)]
    packed, per_clip = default_policy(True), default_policy(False)
    both = {
        f.name: _both(getattr(packed, f.name), getattr(per_clip, f.name))
        for f in fields(SelectionPolicy)
    }
    rows += dataclass_rows(
        "selection", SelectionPolicy, skip=("gates", "weights", "adaptive"), defaults=both
    )
    per_clip_gates = {gate.metric: gate for gate in per_clip.gates}
    for gate in packed.gates:
        text = _gate_text(gate)
        other = _gate_text(per_clip_gates[gate.metric])
        default = text if text == other else f"{text} (packing = false: {other})"
        doc = _extra_doc("selection.gates", gate.metric)
        rows.append(OptionRow("selection.gates", gate.metric, "table", default, doc))
    for metric, weight in DEFAULT_WEIGHTS.items():
        doc = _extra_doc("selection.weights", metric)
        rows.append(OptionRow("selection.weights", metric, "float", repr(weight), doc))
    rows += dataclass_rows("assembly", AssemblyOptions)
    rows += dataclass_rows("production", ProductionOptions)
    rows += dataclass_rows("search", SearchOptions)
    rows += dataclass_rows("dub", DubOptions)
    rows += dataclass_rows("ray", RayOptions)
    return rows


def _not_top_level(cls: type) -> list[str]:
    return [f.name for f in fields(cls) if f.name != "adaptive"]


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
