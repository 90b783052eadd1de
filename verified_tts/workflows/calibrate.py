"""``verified-tts calibrate``: what the verifiers catch, gates calibrated on injected faults.

The configured generator reads plain sentences (the shipped Harvard sentences, ``sentences``
sentences of a Markdown, plain-text or EPUB book, spread evenly over its chapters or the
``chapters`` of it that the options name, or the cues of a subtitle file: every cue at any length,
in the slot a dub gives it, scored with the dub's ``duration_fit`` and under the dub's gates,
:mod:`verified_tts.selection.dub_gates`) ``candidates`` times each with the render's seeds; then
every requested fault kind is made once per sentence from one of its clean candidates (text faults
are synthesised from the altered text with that candidate's seed and verified against the original
text; audio faults edit the clean audio; see :mod:`verified_tts.calibration.faults`). All clips are
scored by the configured verifiers in batches. The speaker reference is the centroid of the clean
candidates, as a render would settle on (a clip too short for it is held to the other utterances'
short clean takes, as in a render). From the scores: per fault kind and gate side the ROC AUC, the
bound at the target false-alarm rate and its recall; the recall of the current gates; recommended
gates (:mod:`verified_tts.calibration.gates`) with a two-fold held-out check; and best-of-N
selection simulated at fault rates 0.1/0.3/0.5 (:mod:`verified_tts.calibration.simulate`) under both
gate sets, and the recall on short lines apart, with the faults a line was too short to carry.
Writes ``calibrate.json``, ``gates.toml`` (a ``[selection.gates]`` table that ``--config`` accepts),
``calibrate.html`` and the audio of a few caught and missed cases.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.calibration.analysis import (
    CALIBRATED_SIDES,
    FIXED_SIDES,
    GOALS,
    CalibrateOptions,
    Case,
    analyse,
    reanalyse,
)
from verified_tts.calibration.as_rendered import fit_text_model, speaker_metric
from verified_tts.calibration.faults import (
    FAULT_KINDS,
    TEXT_FAULTS,
    audio_fault,
    content_words,
    text_fault,
)
from verified_tts.calibration.gates import gates_toml
from verified_tts.errors import UserError
from verified_tts.generators import SynthesisRequest, load_generator
from verified_tts.options import RenderConfig
from verified_tts.pipeline import plan_utterances
from verified_tts.selection.consensus import SPEAKER_TAKE_METRIC, TAKE_METRIC, with_take_metrics
from verified_tts.selection.dub_gates import dub_policy
from verified_tts.selection.scoring import score_clips
from verified_tts.storage.results import Utterance
from verified_tts.text.book import Segment, parse_book
from verified_tts.text.production import read_book, select_chapters
from verified_tts.verification import LoadedVerifiers, load_verifiers
from verifiers import DEFAULT_VERIFIERS, Clip

__all__ = [
    "CALIBRATED_SIDES",
    "FIXED_SIDES",
    "GOALS",
    "CalibrateOptions",
    "CalibrationResult",
    "builtin_sentences",
    "calibrate",
    "gates_toml",
    "reanalyse",
]

_CHUNK = 32  # clips per verifier call: big enough to batch, small enough to show progress
_CANNOT_CARRY = {
    "skip": "a line of one word (or without a content word) has no word to leave out",
    "repeat": "a line of one or two words has no phrase of two or more to say twice",
    "substitute": "a line without a content word has none to read as another",
}


@dataclass(frozen=True)
class CalibrationResult:
    out_dir: Path
    json_path: Path
    html_path: Path
    gates_path: Path
    data: Mapping[str, Any]


def builtin_sentences() -> list[str]:
    """The 720 Harvard sentences shipped with the package (IEEE 1969, public domain)."""
    text = (
        files("verified_tts.calibration")
        .joinpath("data/harvard-sentences.txt")
        .read_text(encoding="utf-8")
    )
    return [line.strip() for line in text.splitlines() if line.strip()]


def is_subtitles(path: Path | None) -> bool:
    """Whether calibration input is a subtitle file (SRT or WebVTT), by its suffix."""
    return path is not None and path.suffix.lower() in (".srt", ".vtt")


def _segments(
    book: Path | None, count: int, max_chars: int, chapters: str | None = None
) -> tuple[list[Segment], list[float | None]]:
    """The segments to calibrate on and, for subtitles, each cue's slot in seconds."""
    if is_subtitles(book):
        assert book is not None
        return _cue_segments(book, count)
    if book is None:
        source = "\n\n".join(builtin_sentences()[:count])
        segments = list(parse_book(source, max_chars=max_chars).segments)[:count]
        return segments, [None] * len(segments)
    read = select_chapters(read_book(book, max_chars=max_chars)[0], chapters)
    segments = [s for s in read.segments if s.kind != "heading"]
    segments = [s for s in segments if len(s.spoken.split()) >= 3]
    if len(segments) < 2:
        raise UserError(
            f"{book} has fewer than 2 sentences of 3 words or more to calibrate on: "
            "give a longer book, or leave BOOK out to use the built-in sentences"
        )
    if count < len(segments):
        # evenly over the book: one chapter's opening is not a sample of its prose
        segments = [segments[i * len(segments) // count] for i in range(count)]
    return segments, [None] * len(segments)


def _cue_segments(path: Path, count: int) -> tuple[list[Segment], list[float | None]]:
    """Every cue as the dub voices it (any length: short lines are the point) and its slot as
    the dub computes it with the default [dub] settings."""
    from verified_tts.options import DubOptions
    from verified_tts.output.dub_track import compute_slots
    from verified_tts.text.cues import cue_segments
    from verified_tts.text.subtitles import load_subtitles

    cues = list(load_subtitles(path).cues)[:count]
    if len(cues) < 2:
        raise UserError(f"{path} has fewer than 2 cues to calibrate on: give a longer file")
    options = DubOptions()
    slots = compute_slots(cues, options, cues[-1].end + options.tail_s)
    return cue_segments(cues, {}), [round(slot.seconds, 3) for slot in slots]


def calibrate(
    book: Path | None,
    out: Path,
    config: RenderConfig,
    options: CalibrateOptions | None = None,
    *,
    on_stage: Callable[[str], None] | None = None,
) -> CalibrationResult:
    """Run the whole calibration (see the module docstring) and write its files into ``out``."""
    options = options or CalibrateOptions()
    say = on_stage or (lambda _: None)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a folder: choose a folder path")
    started = time.perf_counter()
    seconds: dict[str, float] = {}
    segments, slots = _segments(book, options.sentences, config.max_chars, options.chapters)
    dubbing = is_subtitles(book)

    if config.generator.voice_ref:  # as a render does: a reference that cannot serve fails now
        from verifiers.speaker import check_reference_file

        check_reference_file(config.generator.voice_ref)
    say("loading generator and verifiers")
    mark = time.perf_counter()
    generator = load_generator(config.generator)
    order = (*DEFAULT_VERIFIERS, "duration_fit") if dubbing else DEFAULT_VERIFIERS
    verifiers = load_verifiers(config.verifiers, order=order)
    seconds["load"] = time.perf_counter() - mark
    utterances = plan_utterances(
        segments,
        generator,
        base_seed=config.seed,
        voice=config.generator.voice,
        target_durations=slots,
    )
    # subtitles are calibrated under the policy a dub applies (its gates, the stretch gate)
    packed = config.verifiers.wer.packing
    current = (
        dub_policy(config.selection, config.dub.speed_limit, packed_wer=packed)
        if dubbing
        else config.selection
    )

    say(f"generating {len(utterances)} x {options.candidates} clean candidates")
    mark = time.perf_counter()
    requests = [u.request(k) for u in utterances for k in range(options.candidates)]
    clean_audio = _sample(generator, requests)
    cases = [
        Case(
            i // options.candidates,
            "clean",
            i % options.candidates,
            "",
            c.audio,
            c.sample_rate,
            info=dict(c.info),
        )  # fmt: skip
        for i, c in enumerate(clean_audio)
    ]
    seconds["generate_clean"] = time.perf_counter() - mark

    say(f"injecting faults: {', '.join(options.kinds)}")
    mark = time.perf_counter()
    faulted, skipped = _inject(utterances, cases, options, generator, config.seed)
    cases.extend(faulted)
    seconds["inject"] = time.perf_counter() - mark

    say(f"scoring {len(cases)} clips")
    mark = time.perf_counter()
    cases, signal_details = _score(cases, utterances, verifiers, say)
    duration_model = fit_text_model(cases, signal_details, utterances)
    seconds["verify"] = time.perf_counter() - mark

    say("analysing")
    mark = time.perf_counter()
    words = [len(u.segment.spoken.split()) for u in utterances]
    data = analyse(cases, options, current, len(utterances), words=words)
    data["generator"] = {
        "name": config.generator.name,
        "voice": config.generator.voice,
        "identity": dict(generator.identity()),
    }
    data["verifiers"] = {k: dict(v) for k, v in verifiers.status.items()}
    data["utterances"] = len(utterances)
    data["candidates_per_utterance"] = options.candidates
    data["input"] = str(book) if book else "built-in Harvard sentences"
    data["input_kind"] = "subtitles" if dubbing else "text"
    data["duration_model"] = duration_model
    data["utterance_words"] = words
    data["skipped_faults"] = skipped
    data["short_lines"]["cannot_carry"] = {
        kind: {"lines": count, "why": _CANNOT_CARRY.get(kind, "too short for this fault")}
        for kind, count in skipped.items()
    }
    data["options"] = {k: list(v) if isinstance(v, tuple) else v
                       for k, v in asdict(options).items()}  # fmt: skip
    seconds["analyse"] = time.perf_counter() - mark

    from verified_tts.output.calibrate_report import write_calibration, write_examples

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(
            f"cannot create the output folder {out} ({error.strerror}): choose a writable --out"
        ) from error
    data["examples"] = write_examples(out, cases, utterances, data)
    data["cases"] = [
        {"utterance": c.utterance, "kind": c.kind, "source": c.source,
         "description": c.description, "metrics": c.metrics, "heard": c.transcript}
        for c in cases
    ]  # fmt: skip
    seconds["total"] = time.perf_counter() - started
    data["seconds"] = {k: round(v, 2) for k, v in seconds.items()}
    json_path, html_path, gates_path = write_calibration(out, data, gates_toml(data))
    return CalibrationResult(out, json_path, html_path, gates_path, data)


def _sample(generator: Any, requests: Sequence[SynthesisRequest]) -> list[Any]:
    out: list[Any] = []
    for start in range(0, len(requests), _CHUNK):  # an engine gets a chunk in flight at once
        out.extend(generator.sample(requests[start : start + _CHUNK]))
    return out


def _inject(
    utterances: Sequence[Any],
    clean: Sequence[Case],
    options: CalibrateOptions,
    generator: Any,
    seed: int,
) -> tuple[list[Case], dict[str, int]]:
    """One faulted copy of every kind per utterance, from a clean candidate that changes with
    the kind so that no single candidate carries every fault."""
    per = options.candidates
    pool_words: set[str] = set()
    for u in utterances:
        words = u.segment.spoken.split()
        pool_words.update(words[i].strip(".,;:!?\"'").lower() for i in content_words(words))
    pool = sorted(pool_words)
    faulted: list[Case] = []
    text_requests: list[tuple[Case, SynthesisRequest]] = []
    skipped: dict[str, int] = {}
    for i, utterance in enumerate(utterances):
        for kind_index, kind in enumerate(options.kinds):
            rng = np.random.default_rng([seed, i, FAULT_KINDS.index(kind)])
            source = (i + kind_index) % per
            base = clean[i * per + source]
            try:
                if kind in TEXT_FAULTS:
                    others = [w for w in pool if w not in utterance.segment.spoken.lower()]
                    fault = text_fault(kind, utterance.segment.spoken, rng, others)
                    # the clean candidate's seed, the altered text under its own key
                    request = replace(
                        utterance.request(source),
                        utterance_key=f"{utterance.key}:{kind}",
                        text=fault.text,
                    )
                    # scored against the clean text's expected length: the voice's info of
                    # the clean take, not of the altered text it read
                    case = Case(i, kind, source, fault.description, np.zeros(0, np.float32),
                                info=base.info)  # fmt: skip
                    text_requests.append((case, request))
                else:
                    other = clean[((i + 1) % len(utterances)) * per + source].audio
                    made = audio_fault(kind, base.audio, base.sample_rate, rng, other)
                    faulted.append(
                        Case(i, kind, source, made.description, made.audio, base.sample_rate,
                             info=base.info)
                    )  # fmt: skip
            except ValueError:  # a sentence too short for this fault
                skipped[kind] = skipped.get(kind, 0) + 1
    made = _sample(generator, [r for _, r in text_requests])
    for (case, _), candidate in zip(text_requests, made, strict=True):
        faulted.append(
            Case(
                case.utterance,
                case.kind,
                case.source,
                case.description,
                candidate.audio,
                candidate.sample_rate,
                info=case.info,
            )  # fmt: skip
        )
    faulted.sort(key=lambda c: (c.utterance, FAULT_KINDS.index(c.kind)))
    return faulted, skipped


def _score(
    cases: Sequence[Case],
    utterances: Sequence[Utterance],
    verifiers: LoadedVerifiers,
    say: Callable[[str], None],
) -> tuple[list[Case], list[dict[str, Any]]]:
    """Every verifier over every clip in chunks; the speaker metric against the reference."""
    scored: list[Case] = []
    embeddings: list[np.ndarray | None] = []
    speech: list[float | None] = []
    signal_details: list[dict[str, Any]] = []
    all_details: list[dict[str, Any]] = []
    for start in range(0, len(cases), _CHUNK):
        chunk = cases[start : start + _CHUNK]
        clips = [
            Clip(
                audio=c.audio,
                sample_rate=c.sample_rate,
                text=utterances[c.utterance].segment.text,
                spoken=utterances[c.utterance].segment.spoken,
                emotion=utterances[c.utterance].segment.emotion,
                target_duration_s=utterances[c.utterance].target_duration_s,
                info=c.info,
            )
            for c in chunk
        ]
        for case, scores in zip(chunk, score_clips(verifiers.active, clips), strict=True):
            scored.append(
                Case(
                    case.utterance,
                    case.kind,
                    case.source,
                    case.description,
                    case.audio,
                    case.sample_rate,
                    dict(scores.metrics),
                    scores.detail.get("transcript"),
                    case.info,
                )  # fmt: skip
            )
            embedding = scores.embedding
            embeddings.append(None if embedding is None else np.asarray(embedding, np.float64))
            speech.append(scores.detail.get("speaker_speech_s"))
            signal_details.append(
                {k: scores.detail[k] for k in ("expected_from", "speech_s") if k in scores.detail}
            )
            all_details.append(dict(scores.detail))
        say(f"scored {min(start + _CHUNK, len(cases))} of {len(cases)} clips")
    speaker_metric(scored, embeddings, speech, verifiers.get("speaker"))
    _add_take_metrics(scored, all_details)
    return scored, signal_details


def _add_take_metrics(cases: Sequence[Case], details: Sequence[Mapping[str, Any]]) -> None:
    """``asr_min_take_logprob`` and ``speaker_take`` of every case as a render would see them: a
    clean candidate among its sentence's clean candidates, a faulted one among them plus itself
    (:mod:`verified_tts.selection.consensus`)."""
    clean: dict[int, list[int]] = {}
    for position, case in enumerate(cases):
        if case.kind == "clean":
            clean.setdefault(case.utterance, []).append(position)
    for position, case in enumerate(cases):
        others = clean.get(case.utterance, [])
        group = others if case.kind == "clean" else [*others, position]
        compared = with_take_metrics(
            [cases[p].metrics for p in group], [details[p] for p in group]
        )[group.index(position)]
        for name in (TAKE_METRIC, SPEAKER_TAKE_METRIC):
            if name in compared:
                case.metrics[name] = compared[name]
