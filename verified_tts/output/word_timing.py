"""Where each written word of a winner is spoken: exact from the generator, else from Whisper.

A generator that knows its word timings (a duration predictor: Piper's, read by
:mod:`verified_tts.generators.piper_words`) leaves them in the candidate's ``info`` under
:data:`INFO_KEY`: ``[[word, start_s, end_s], ...]``, one entry per whitespace-separated word of the
*spoken* text, in seconds from the first sample of the candidate's audio. :func:`exact_word_timings`
maps those to the written words (a written word that normalises to several spoken ones, "1984",
spans them all), marked ``generator``; an entry may name several words that the generator joined
("in the"), which then share its span by characters and are marked ``interpolated``. For every other
generator :class:`WordAligner` force-aligns the written words to the audio with the
WER verifier's own Whisper model (the same model object, never a second copy): the clips share
30 s encoder windows as the verifier packs them (the encoder is the cost), each window is encoded
once, and CTranslate2's ``align`` runs dynamic time warping over the cross-attention of Whisper's
alignment heads, as faster-whisper's word timestamps do, giving each reference token the 20 ms
frame where it starts; a word runs from its first token's start to the next word's (a clip's
first word from the clip's start, its last no further than its end).
A word the model did not place (no frame of its own, or a token probability under
``min_probability``) and a clip longer than one Whisper window get interpolated bounds, shared by
characters between the neighbours that were placed, marked ``interpolated``. The cross-attention
instants run late, and they give one instant where a word meets the next, so the bounds are then
refined (:func:`snap_to_pauses`): every instant moves ``lag_s`` earlier, the first word starts no
earlier and the last ends no later than the voice does, and where a pause lies near a meeting
point the word before ends where the pause begins and the next starts where it ends. The errors
against Piper's exact timings, with and without the refinement, and the ``lag_s`` the first
halves of the books call for, are measured by ``benchmarks/real_prose/word_alignment.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from verified_tts.text.normalize import normalize_text

__all__ = [
    "ALIGNER_VERSION",
    "DEFAULT_LAG_S",
    "INFO_KEY",
    "TimedClip",
    "WordAligner",
    "WordTiming",
    "exact_word_timings",
    "interpolate",
    "load_aligner",
    "snap_to_pauses",
    "word_timings",
]

INFO_KEY = "word_timings"
WordSource = Literal["generator", "asr", "interpolated"]
_FRAME_S = 0.02  # Whisper's encoder frame: the resolution of its alignment
_MIN_WORD_S = 0.06  # the least an interpolated word is given, so a highlight can be seen
_WINDOW_S = 30.0
_ALIGN_TOKENS = 400  # text tokens a packed window aligns at most: Whisper's decoder holds 448
ALIGNER_VERSION = 2  # 2: refined at pauses; a cache of aligned words keys on it
# least median error on the books' first halves: benchmarks/real_prose/word_alignment.py
DEFAULT_LAG_S = 0.08
_QUIET_DBFS = -45.0  # a 10 ms frame under this is a pause (assembly trims at the same level)
_PAUSE_REACH_S = (0.12, 0.06)  # how far before and after a meeting point a pause is looked for


@dataclass(frozen=True)
class WordTiming:
    """A written word and where it is spoken, in seconds from the start of the clip."""

    word: str
    start_s: float
    end_s: float
    source: WordSource

    @property
    def interpolated(self) -> bool:
        return self.source == "interpolated"

    def shifted(self, seconds: float) -> WordTiming:
        return WordTiming(self.word, self.start_s + seconds, self.end_s + seconds, self.source)


@dataclass(frozen=True)
class TimedClip:
    """What word timing needs of a winner: its text, its generator's info and its audio."""

    text: str  # as written: the words a reader sees
    spoken: str  # as the generator was given it
    audio: np.ndarray | Callable[[], np.ndarray] = field(repr=False)
    sample_rate: int
    info: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def load(self) -> np.ndarray:
        return np.asarray(self.audio() if callable(self.audio) else self.audio, dtype=np.float32)


def _spoken_counts(words: Sequence[str]) -> list[int]:
    """How many spoken words each written word becomes."""
    return [len(normalize_text(word).split()) for word in words]


def _spoken_spans(given: Sequence[Any]) -> list[tuple[float, float, bool]] | None:
    """(start, end, exact) per spoken word; an entry naming several words ("in the", as
    espeak-ng joins them) shares its span among them by characters, those bounds not exact."""
    spans: list[tuple[float, float, bool]] = []
    for entry in given:
        words, start, end = str(entry[0]).split(), float(entry[1]), float(entry[2])
        if end < start or not words:
            return None
        if len(words) == 1:
            spans.append((start, end, True))
            continue
        weights = np.cumsum([len(w) + 1 for w in words], dtype=np.float64)
        edges = [start, *(float(x) for x in start + (end - start) * weights / weights[-1])]
        spans += [(edges[k], edges[k + 1], False) for k in range(len(words))]
    return spans


def exact_word_timings(info: Mapping[str, Any], text: str) -> list[WordTiming] | None:
    """The written words' timings from ``info[INFO_KEY]``; None when absent or when they do not
    match the words (then the alignment path is used)."""
    given = info.get(INFO_KEY)
    if not given:
        return None
    try:
        spans = _spoken_spans(given)
    except (TypeError, ValueError, IndexError):
        return None
    words = text.split()
    counts = _spoken_counts(words)
    if spans is None or sum(counts) != len(spans):
        return None
    timings, position = [], 0
    for word, count in zip(words, counts, strict=True):
        if count == 0:  # a written word that is not spoken ("&" alone, a dash): no time
            at = spans[position - 1][1] if position else spans[0][0]
            timings.append(WordTiming(word, at, at, "interpolated"))
            continue
        mine = spans[position : position + count]
        exact = mine[0][2] and mine[-1][2]
        timings.append(
            WordTiming(word, mine[0][0], mine[-1][1], "generator" if exact else "interpolated")
        )
        position += count
    return timings


def interpolate(
    words: Sequence[str], spans: Sequence[tuple[float, float] | None], start: float, end: float
) -> list[WordTiming]:
    """Timings for ``words`` where ``spans`` has the placed ones (None: missed). A run of
    missed words shares the time between its placed neighbours (``start``/``end`` at the clip's
    edges) by characters; when that is too short for them, the neighbours join the run."""
    bounds: list[tuple[float, float] | None] = list(spans)
    sources: list[WordSource] = ["asr" if span else "interpolated" for span in spans]
    count = len(words)
    index = 0
    while index < count:
        if bounds[index] is not None:
            index += 1
            continue
        first = last = index
        while True:
            while last + 1 < count and bounds[last + 1] is None:
                last += 1  # a run of missed words, up to the next placed one
            left = bounds[first - 1][1] if first > 0 else start  # type: ignore[index]
            right = bounds[last + 1][0] if last + 1 < count else end  # type: ignore[index]
            if right - left >= _MIN_WORD_S * (last - first + 1) or (first, last) == (0, count - 1):
                break
            first, last = max(0, first - 1), min(count - 1, last + 1)
        right = max(right, left)
        weights = np.array([len(words[k]) + 1 for k in range(first, last + 1)], dtype=np.float64)
        edges = left + (right - left) * np.concatenate([[0.0], np.cumsum(weights) / weights.sum()])
        for k in range(first, last + 1):
            bounds[k] = (float(edges[k - first]), float(edges[k - first + 1]))
            sources[k] = "interpolated"
        index = last + 1
    return [
        WordTiming(word, span[0], span[1], source)
        for word, span, source in zip(words, bounds, sources, strict=True)
        if span is not None
    ]


def _quiet_runs(audio: np.ndarray, rate: int) -> list[tuple[float, float]]:
    """(start, end) seconds of each run of 10 ms frames under -45 dBFS."""
    frame = max(1, rate // 100)
    count = len(audio) // frame
    if count == 0:
        return []
    frames = audio[: count * frame].reshape(count, frame).astype(np.float64)
    quiet = 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-10) < _QUIET_DBFS
    edges = np.flatnonzero(np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]])))
    return [
        (a * frame / rate, b * frame / rate) for a, b in zip(edges[::2], edges[1::2], strict=True)
    ]


def snap_to_pauses(
    timings: Sequence[WordTiming], audio: np.ndarray, rate: int, lag_s: float = 0.0
) -> list[WordTiming]:
    """Aligned bounds moved ``lag_s`` earlier, kept inside the voiced part of the clip, and
    split around the pause nearest each point where one word meets the next."""
    if not timings:
        return []
    seconds = len(audio) / rate
    starts = [max(0.0, t.start_s - lag_s) for t in timings]
    ends = [max(0.0, t.end_s - lag_s) for t in timings]
    quiet = _quiet_runs(audio, rate)
    voiced_from = quiet[0][1] if quiet and quiet[0][0] == 0.0 else 0.0
    voiced_to = quiet[-1][0] if quiet and quiet[-1][1] >= seconds - 0.01 else seconds
    starts[0] = min(max(starts[0], voiced_from), ends[0])
    ends[-1] = max(min(ends[-1], voiced_to), starts[-1])
    before, after = _PAUSE_REACH_S
    for k in range(len(timings) - 1):
        meet = ends[k]
        near = [(a, b) for a, b in quiet if b >= meet - before and a <= meet + after]
        near = [(a, b) for a, b in near if a > starts[k] and b < ends[k + 1]]
        if near:
            a, b = min(near, key=lambda run: max(run[0] - meet, meet - run[1], 0.0))
            ends[k], starts[k + 1] = a, b
    return [
        WordTiming(t.word, start, max(start, end), t.source)
        for t, start, end in zip(timings, starts, ends, strict=True)
    ]


class WordAligner:
    """Forced alignment of written words with a loaded Whisper (the WER verifier's model);
    ``refine`` and ``lag_s``: see :func:`snap_to_pauses`."""

    def __init__(
        self,
        verifier: Any,
        *,
        min_probability: float = 0.0,
        lag_s: float = DEFAULT_LAG_S,
        refine: bool = True,
        packed: bool = True,
    ) -> None:
        self._verifier = verifier  # a verifiers.wer.WerVerifier
        self.min_probability = min_probability
        self.lag_s = lag_s
        self.refine = refine
        # several clips share one 30 s encoder window, laid out as the WER verifier packs them
        # ([verifiers.wer] pack_seconds, pack_gap_s, pack_clips): the encoder is the cost
        self.packed = packed

    def identity(self) -> Mapping[str, Any]:
        return {
            "aligner": "whisper-dtw",
            "version": ALIGNER_VERSION,
            "model": self._verifier.model_label,
            "compute_type": self._verifier.options.compute_type,
            "min_probability": self.min_probability,
            "lag_s": self.lag_s if self.refine else 0.0,
            "refine": self.refine,
            "packed": self.packed,
        }

    def align(self, clips: Sequence[TimedClip]) -> list[list[WordTiming]]:
        """Timings of every clip's written words, the clips encoded in batches."""
        from verified_tts.audio import resample
        from verifiers.wer_common import SAMPLE_RATE

        results: list[list[WordTiming] | None] = [None] * len(clips)
        rows: list[tuple[int, np.ndarray, list[list[int]]]] = []
        tokenizer = self._verifier.tokenizer
        for number, clip in enumerate(clips):
            audio = resample(clip.load().reshape(-1), clip.sample_rate, SAMPLE_RATE)
            words = clip.text.split()
            seconds = audio.size / SAMPLE_RATE
            if not words:
                results[number] = []
            elif seconds > _WINDOW_S or seconds <= _FRAME_S:
                results[number] = interpolate(words, [None] * len(words), 0.0, seconds)
            else:
                rows.append((number, audio, [tokenizer.encode(" " + word) for word in words]))
        windows = self._windows(rows)
        for start in range(0, len(windows), self._verifier.batch_rows):
            batch = windows[start : start + self._verifier.batch_rows]
            for window, spans_of in zip(batch, self._align_windows(rows, batch), strict=True):
                for slot, spans in zip(window.slots, spans_of, strict=True):
                    number, audio, _ = rows[slot.clip]
                    words = clips[number].text.split()
                    timings = interpolate(words, spans, 0.0, audio.size / SAMPLE_RATE)
                    if self.refine:
                        timings = snap_to_pauses(timings, audio, SAMPLE_RATE, self.lag_s)
                    results[number] = timings
        return [timings or [] for timings in results]

    def _windows(self, rows: Sequence[tuple[int, np.ndarray, list[list[int]]]]) -> list[Any]:
        """The encoder windows: the rows packed as the WER verifier packs clips, or one each."""
        from verifiers.wer_common import SAMPLE_RATE
        from verifiers.wer_packing import PackedWindow, Slot, plan_windows

        sizes = [audio.size for _, audio, _ in rows]
        alone = list(range(len(rows)))
        windows: list[PackedWindow] = []
        if self.packed:
            options = self._verifier.options
            windows, alone = plan_windows(
                [str(k) for k in range(len(rows))],  # every row its own utterance
                sizes,
                [sum(len(word) for word in tokens) for _, _, tokens in rows],
                capacity=int(options.pack_seconds * SAMPLE_RATE),
                gap=int(options.pack_gap_s * SAMPLE_RATE),
                max_clips=options.pack_clips,
                max_tokens=_ALIGN_TOKENS,
            )
        windows += [PackedWindow((Slot(k, 0, sizes[k]),), sizes[k]) for k in alone]
        return sorted(windows, key=lambda window: window.slots[0].clip)

    def _align_windows(
        self, rows: Sequence[tuple[int, np.ndarray, list[list[int]]]], windows: Sequence[Any]
    ) -> list[list[list[tuple[float, float] | None]]]:
        """Each window's slots' word spans, in seconds from the start of each slot's clip."""
        import ctranslate2

        from verifiers.wer_common import HOP, SAMPLE_RATE, WINDOW_FRAMES
        from verifiers.wer_packing import assemble

        model, tokenizer = self._verifier.model, self._verifier.tokenizer
        audio = [row[1] for row in rows]
        features = self._verifier.log_mel([assemble(window, audio) for window in windows])
        encoded = model.encode(ctranslate2.StorageView.from_array(features))
        words_of = [[word for slot in w.slots for word in rows[slot.clip][2]] for w in windows]
        flat = [[token for word in words for token in word] for words in words_of]
        frames = [max(2, min(WINDOW_FRAMES, -(-w.samples // HOP))) for w in windows]
        aligned = model.align(encoded, tokenizer.sot_sequence, flat, frames, median_filter_width=7)
        out = []
        for window, words, result in zip(windows, words_of, aligned, strict=True):
            spans = self._spans(words, result)
            per_slot, first = [], 0
            for slot in window.slots:
                count = len(rows[slot.clip][2])
                offset, length = slot.start / SAMPLE_RATE, (slot.end - slot.start) / SAMPLE_RATE
                placed: list[tuple[float, float] | None] = []
                for k, span in enumerate(spans[first : first + count]):
                    if span is None:
                        placed.append(None)
                        continue
                    # a clip's first word starts where the clip does, as at a window's start (the
                    # path runs through the gap before it); its last runs no further than the clip
                    begin = 0.0 if k == 0 else span[0] - offset
                    end = min(span[1] - offset, length)
                    placed.append((begin, end) if 0.0 <= begin < end else None)
                per_slot.append(placed)
                first += count
            out.append(per_slot)
        return out

    def _spans(
        self, words: Sequence[Sequence[int]], result: Any
    ) -> list[tuple[float, float] | None]:
        """Each word's (start, end) in seconds of its window, from one ``align`` result."""
        pairs = np.asarray(result.alignments, dtype=np.int64).reshape(-1, 2)
        probabilities = np.asarray(result.text_token_probs, dtype=np.float64)
        # the first frame at which each token (and the end of text after them) is reached
        jumps = np.pad(np.diff(pairs[:, 0]), (1, 0), constant_values=1).astype(bool)
        starts = pairs[jumps, 1] * _FRAME_S
        bounds = np.concatenate([[0], np.cumsum([len(word) for word in words])])
        spans: list[tuple[float, float] | None] = []
        for k in range(len(words)):
            first, after = int(bounds[k]), int(bounds[k + 1])
            if after >= len(starts) or after == first:
                spans.append(None)
                continue
            begin, end = float(starts[first]), float(starts[after])
            heard = probabilities[first:after].min() if after <= probabilities.size else 0.0
            spans.append((begin, end) if end > begin and heard >= self.min_probability else None)
        return spans


def load_aligner(verifiers: Any = None, wer_options: Any = None) -> WordAligner:
    """An aligner on the loaded WER verifier's model when there is one in this process, else
    on a Whisper loaded here with ``wer_options`` (the render's ``[verifiers.wer]``)."""
    from verifiers.wer import WerOptions, WerVerifier, load_wer_verifier

    loaded = verifiers.get("wer") if verifiers is not None else None
    if not isinstance(loaded, WerVerifier):
        loaded = load_wer_verifier(wer_options or WerOptions())
    return WordAligner(loaded)


def word_timings(
    clips: Sequence[TimedClip], aligner: Callable[[], WordAligner] | None
) -> list[list[WordTiming]]:
    """Each clip's word timings: the generator's where its ``info`` has them, else aligned
    (``aligner`` is called only when some clip needs it; without one those clips get none)."""
    out: list[list[WordTiming] | None] = [exact_word_timings(c.info, c.text) for c in clips]
    missing = [k for k, timings in enumerate(out) if timings is None]
    if missing and aligner is not None:
        for k, timings in zip(missing, aligner().align([clips[k] for k in missing]), strict=True):
            out[k] = timings
    return [timings or [] for timings in out]
