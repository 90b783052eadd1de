"""Packed scoring for the Whisper WER verifier: several short clips share one encoder window.

:func:`score_packed` is what :meth:`verifiers.wer.WerVerifier.score` runs when ``packing`` is on
(the default). The layout (which clips share a window, where each sits) comes from
:mod:`verifiers.wer_packing`; each batch of windows is encoded once, transcribed with timestamps
(each clip gets the transcript words heard in its stretch of the window; clips a decode stopped
before are transcribed again in a window that starts with them) and force-decoded: the references
of a window's clips in layout order, so each clip's ``asr_logprob`` is the likelihood of its own
text given the audio and the texts of the clips before it, which are the same texts for every
candidate of its utterance. The batches of windows are shared among the verifier's workers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from verified_tts.audio import resample
from verified_tts.options.verifiers import WerOptions
from verifiers.base import Clip, Score
from verifiers.wer_common import (
    HOP,
    MAX_DECODER_TOKENS,
    PACKED_CPU_BATCH,
    SAMPLE_RATE,
    WINDOW_FRAMES,
    token_metrics,
    transcript_metrics,
)
from verifiers.wer_packing import (
    assemble,
    assign_segments,
    assign_words,
    plan_windows,
    tail,
    tidy,
    timestamped_segments,
    word_times,
)

__all__ = ["PackingVerifier", "score_packed"]

T = TypeVar("T")
R = TypeVar("R")


class PackingVerifier(Protocol):
    """What packed scoring needs of the Whisper verifier (:class:`verifiers.wer.WerVerifier`):
    its loaded model and tokenizer, its features, its per-clip path and its workers. Declared
    here so this module does not import the verifier that imports it."""

    options: WerOptions

    @property
    def model(self) -> Any: ...

    @property
    def tokenizer(self) -> Any: ...

    def reference_text(self, text: str) -> str: ...

    def log_mel(self, windows: list[np.ndarray]) -> np.ndarray: ...

    def score_alone(self, clips: Sequence[Clip]) -> list[Score]: ...

    def map_batches(
        self, run: Callable[[Sequence[T]], list[R]], items: Sequence[T], largest: int
    ) -> list[R]: ...


def score_packed(verifier: PackingVerifier, clips: Sequence[Clip]) -> list[Score]:
    """Clips of different utterances share windows (layout: :mod:`verifiers.wer_packing`);
    an utterance too long to pack is scored alone."""
    audio = [
        resample(np.asarray(clip.audio).reshape(-1), clip.sample_rate, SAMPLE_RATE)
        for clip in clips
    ]
    texts = [verifier.reference_text(c.text) for c in clips]
    references = [verifier.tokenizer.encode(" " + t) if t.strip() else [] for t in texts]
    windows, alone = plan_windows(
        [clip.text for clip in clips],
        [a.size for a in audio],
        [len(r) for r in references],
        capacity=int(verifier.options.pack_seconds * SAMPLE_RATE),
        gap=int(verifier.options.pack_gap_s * SAMPLE_RATE),
        max_clips=verifier.options.pack_clips,
        # room for the timestamped transcript of the same words in the decoder's 448
        max_tokens=(MAX_DECODER_TOKENS - 8) // 2,
    )
    scores: list[Score | None] = [None] * len(clips)
    for index, score in zip(alone, verifier.score_alone([clips[i] for i in alone]), strict=True):
        scores[index] = score
    largest = PACKED_CPU_BATCH if verifier.options.device == "cpu" else 16
    runs = verifier.map_batches(
        lambda batch: _run(verifier, batch, clips, audio, references), windows, largest
    )
    for index, score in runs:
        scores[index] = score
    return [score for score in scores if score is not None]


def _run(
    verifier: PackingVerifier,
    windows: Sequence[Any],
    clips: Sequence[Clip],
    audio: Sequence[np.ndarray],
    references: Sequence[list[int]],
) -> list[tuple[int, Score]]:
    """Encode packed windows once; transcribe them with timestamps (transcript words go to
    the clip whose stretch of the window they were heard in) and force-decode every
    window's references in layout order (each clip's tokens are scored after the text of
    the clips before it, which is the same text for every candidate of its utterance)."""
    tokenizer = verifier.tokenizer
    encoded, generated, transcripts = _transcribe(verifier, windows, audio)
    frames = [_frames(w.samples) for w in windows]
    placeholder = tokenizer.encode(" .")
    sequences = [[t for s in w.slots for t in references[s.clip]] for w in windows]
    aligned = verifier.model.align(
        encoded, tokenizer.sot_sequence, [s or placeholder for s in sequences], frames
    )
    out: list[tuple[int, Score]] = []
    for row, window in enumerate(windows):
        probs = np.asarray(aligned[row].text_token_probs, dtype=np.float64)
        position = 0
        for slot, transcript in zip(window.slots, transcripts[row], strict=True):
            tokens = references[slot.clip]
            mine = probs[position : position + len(tokens)] if sequences[row] else probs[:0]
            position += len(tokens)
            score = _score(
                verifier, clips[slot.clip], transcript, tokens, mine, generated[row],
                len(window.slots),
            )  # fmt: skip
            out.append((slot.clip, score))
    return out


def _transcribe(
    verifier: PackingVerifier, windows: Sequence[Any], audio: Sequence[np.ndarray], depth: int = 0
) -> tuple[Any, Any, list[list[str]]]:
    """(encoder output, generate results, transcript per slot) of packed windows.

    Whisper decoding with timestamps sometimes ends before the window's last clips (it takes
    them for the start of a next window, as in long-form transcription); those clips are
    transcribed again in a window of their own that starts with them, as Whisper's own
    long-form loop would seek there."""
    import ctranslate2

    tokenizer = verifier.tokenizer
    packed = [assemble(window, audio) for window in windows]
    encoded = verifier.model.encode(ctranslate2.StorageView.from_array(verifier.log_mel(packed)))
    generated = verifier.model.generate(
        encoded,
        [list(tokenizer.sot_sequence)] * len(windows),  # no <|notimestamps|>: timestamps on
        beam_size=verifier.options.beam,
        max_length=MAX_DECODER_TOKENS,
        return_scores=True,
        return_no_speech_prob=True,
        suppress_blank=True,
        suppress_tokens=[-1],
    )
    transcripts: list[list[str]] = []
    unheard: list[tuple[int, int]] = []  # (row, first slot the decode never reached)
    for row, (window, result) in enumerate(zip(windows, generated, strict=True)):
        bounds = [(s.start / SAMPLE_RATE, s.end / SAMPLE_RATE) for s in window.slots]
        tokens = [t for t in result.sequences_ids[0] if t < tokenizer.eot or
                  t >= tokenizer.timestamp_begin]  # fmt: skip
        segments = timestamped_segments(tokens, tokenizer.timestamp_begin)
        per_slot, clean = assign_segments(segments, bounds)
        if clean:
            texts = [tidy(tokenizer.decode(t)) for t in per_slot]
        else:
            # A segment ran over a gap: split the transcript by word times. One row per
            # call, because align() pads a batch to its longest text and the padding
            # would enter the shorter rows' attention alignment.
            spoken = [t for t in tokens if t < tokenizer.eot]
            alignment = verifier.model.align(
                _encoder_row(encoded, row), tokenizer.sot_sequence, [spoken],
                [_frames(window.samples)],
            )[0]  # fmt: skip
            words = word_times(
                spoken, alignment.alignments, tokenizer.split_to_word_tokens, tokenizer.eot
            )
            texts = assign_words(words, bounds)
        transcripts.append(texts)
        # the clips after the last one with words: the decode stopped before them
        first = len(texts)
        while first > 0 and not texts[first - 1]:
            first -= 1
        if 0 < first < len(texts) and depth < 2:
            unheard.append((row, first))
    if unheard:
        rest = [tail(windows[row], first) for row, first in unheard]
        _, _, again = _transcribe(verifier, rest, audio, depth + 1)
        for (row, first), texts in zip(unheard, again, strict=True):
            transcripts[row][first:] = texts
    return encoded, generated, transcripts


def _score(
    verifier: PackingVerifier,
    clip: Clip,
    transcript: str,
    tokens: list[int],
    probs: np.ndarray,
    generated: Any,
    packed: int,
) -> Score:
    reference = verifier.reference_text(clip.text)
    metrics = transcript_metrics(reference, transcript)
    detail: dict[str, Any] = {
        "transcript": transcript,
        "reference": reference,
        # the window's, shared by the clips packed in it
        "transcript_logprob": round(float(generated.scores[0]), 4) if generated.scores else 0.0,
        "no_speech_prob": round(float(generated.no_speech_prob), 4),
        "packed": packed,
    }
    metrics.update(token_metrics(verifier.tokenizer, tokens, probs, detail))
    return Score(metrics=metrics, detail=detail)


def _frames(samples: int) -> int:
    """Mel frames that hold audio (what align() may attend to), within Whisper's 3000."""
    return max(2, min(WINDOW_FRAMES, -(-samples // HOP)))


def _encoder_row(encoded: Any, row: int) -> Any:
    """One row of a batch of encoder outputs, as a batch of one."""
    import ctranslate2

    on_cpu = encoded.device == "cpu"
    array = np.asarray(encoded if on_cpu else encoded.to_device(ctranslate2.Device.cpu))
    single = ctranslate2.StorageView.from_array(np.ascontiguousarray(array[row : row + 1]))
    return single if on_cpu else single.to_device(ctranslate2.Device.cuda)
