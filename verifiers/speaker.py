"""Speaker verifier: an embedding per clip and its cosine similarity to the voice's reference.

Two backends behind one class. ``resemblyzer`` (the offline default; its wheel carries the weights)
follows resemblyzer's own recipe (16 kHz, level-normalise, trim long silences with its VAD, cut the
utterance into 1.6 s partials, embed each, average, L2-normalise) without torch
(:mod:`verifiers.voice_encoder`) and stacks the partials of every clip in the batch into ONE forward
pass, which gives the vector of resemblyzer's one-clip ``embed_utterance``. ``ecapa`` is
speechbrain's spkrec-ecapa-voxceleb (a local folder or hub id; the field's standard), an optional
extra because speechbrain needs torchaudio, which loads beside the GPU torch builds but not beside
the CPU torch build; it pads the batch and passes relative lengths. Metric ``speaker`` = cosine
similarity with ``clip.speaker_reference`` (higher is better; omitted when the clip has no
reference), and every score carries the unit-norm ``embedding`` so the pipeline can keep a running
centroid of accepted winners. An embedding of a short clip sits far from a book's centroid even when
the voice is right (Resemblyzer pads a clip shorter than its 1.6 s partial;
benchmarks/flags/speaker_length.py: clean takes under 1.1 s of speech fall below the shipped gate
far more often than longer ones, while a wrong voice stays far below either), so a clip with less
than ``short_speech_s`` of speech is compared with ``clip.short_reference``, the centroid of the
same voice's other short takes, which keeps clean and wrong voices apart at every length measured;
without one it gets no ``speaker`` metric, and its detail says "too short to judge the voice" rather
than failing it. Every score's detail gives the speech seconds the encoder saw
(``speaker_speech_s``). :meth:`SpeakerVerifier.embed_file` embeds a user's reference WAV
(``--voice-ref``) with one-line errors for a missing, unreadable, too short or silent file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from verified_tts.audio import read_audio, resample
from verified_tts.errors import MissingExtra, UserError
from verified_tts.options.verifiers import SpeakerOptions
from verifiers.base import Clip, Score

__all__ = [
    "METRICS",
    "ECAPA_DEFAULT_MODEL",
    "MIN_REFERENCE_SPEECH_S",
    "check_reference_file",
    "TOO_SHORT",
    "SpeakerOptions",
    "SpeakerVerifier",
    "load_speaker_verifier",
    "speech_is_short",
]

METRICS = ("speaker",)  # cosine similarity to the reference, once there is one

ECAPA_DEFAULT_MODEL = "speechbrain/spkrec-ecapa-voxceleb"
MIN_REFERENCE_SPEECH_S = 1.0  # below this a reference embedding is mostly noise
TOO_SHORT = "too short to judge the voice"
_SAMPLE_RATE = 16_000  # both backends embed 16 kHz audio
_SILENT_PEAK = 10.0 ** (-60.0 / 20.0)  # a reference quieter than -60 dBFS peak holds no voice
_ECAPA_HINT = (
    "needs torchaudio, which loads beside torch 2.14 + torchaudio 2.11 (GPU installs), "
    "not beside the CPU torch 2.13 build"
)


_CHUNK = 16  # partials per forward pass of the encoder; see _Resemblyzer._forward_chunk


class _Resemblyzer:
    """Resemblyzer's voice encoder (:mod:`verifiers.voice_encoder`, without torch) with its
    partials batched across clips; it runs on the CPU whatever ``device`` says."""

    label = "resemblyzer"

    def __init__(self, weights: str | None) -> None:
        from verifiers.voice_encoder import VoiceEncoderSession, bundled_weights_path

        if weights is not None and not os.path.isfile(os.path.expanduser(weights)):
            raise UserError(
                f"resemblyzer weights file '{weights}' does not exist: leave [verifiers.speaker] "
                "model unset to use the weights in the resemblyzer wheel"
            )
        self.weights = None if weights is None else os.path.abspath(os.path.expanduser(weights))
        self.encoder = VoiceEncoderSession(self.weights or bundled_weights_path())
        if self.weights is None:
            from importlib.metadata import version

            self.model = f"pretrained.pt (resemblyzer {version('resemblyzer')})"
        else:
            self.model = self.weights

    @staticmethod
    def prepare(audio: np.ndarray, sample_rate: int) -> np.ndarray:
        """Resemblyzer's preprocessing: 16 kHz, level up to -30 dBFS, long silences trimmed.

        Its ``preprocess_wav`` does the same but resamples with librosa, whose first call costs
        seconds of lazy imports; the polyphase resampler used everywhere else here does not.
        """
        from verifiers.voice_encoder import normalize_volume, trim_long_silences

        wav = resample(np.asarray(audio, dtype=np.float32).reshape(-1), sample_rate, _SAMPLE_RATE)
        if wav.size == 0 or not np.any(wav):
            return np.zeros(0, dtype=np.float32)  # its level normaliser divides by the RMS
        return np.asarray(trim_long_silences(normalize_volume(wav)), dtype=np.float32)

    def embed(self, wavs: Sequence[np.ndarray]) -> np.ndarray:
        """Unit-norm embeddings [len(wavs), 256] of prepared 16 kHz waves, one forward pass."""
        from verifiers.resemblyzer_mel import mel_spectrogram
        from verifiers.voice_encoder import partial_slices

        partials: list[np.ndarray] = []
        owners: list[int] = []
        for index, wav in enumerate(wavs):
            # Same slicing and zero-padding as VoiceEncoder.embed_utterance (rate 1.3 partials
            # per second, a last partial kept when it covers at least 75 %).
            mel_slices = partial_slices(wav.size)
            stop = (mel_slices[-1].stop) * (_SAMPLE_RATE // 100)
            padded = np.pad(wav, (0, max(0, stop - wav.size)))
            mel = mel_spectrogram(padded)  # resemblyzer's, without librosa's start-up
            partials.extend(mel[s] for s in mel_slices)
            owners.extend([index] * len(mel_slices))
        stacked = np.stack(partials)
        embeds = np.concatenate(
            [
                self._forward_chunk(stacked[start : start + _CHUNK])
                for start in range(0, len(stacked), _CHUNK)
            ]
        )
        # A silent partial makes the encoder divide 0 by 0: count it as no voice at all, so a
        # silent clip gets the zero vector and a similarity of 0 with any reference.
        embeds = np.nan_to_num(embeds, nan=0.0)
        owner_ids = np.asarray(owners)
        sums = np.zeros((len(wavs), embeds.shape[1]), dtype=np.float64)
        np.add.at(sums, owner_ids, embeds)
        means = sums / np.bincount(owner_ids, minlength=len(wavs))[:, None]
        return _unit(means)

    def _forward_chunk(self, partials: np.ndarray) -> np.ndarray:
        """Embeddings of up to ``_CHUNK`` partials, always computed as a batch of ``_CHUNK``.

        The LSTM's matrix products round differently for different batch sizes (up to 2e-7 on
        one clip), so a clip scored beside other clips would get another score than the same clip
        scored alone, e.g. when a damaged store entry is regenerated on its own, and a resumed
        render would not reproduce an uninterrupted one. A fixed batch size, the tail filled
        with copies of the first partial, makes every partial's embedding independent of its
        neighbours (bit for bit; tests/test_speaker.py).
        """
        count = len(partials)
        if count < _CHUNK:
            filler = np.broadcast_to(partials[:1], (_CHUNK - count, *partials.shape[1:]))
            partials = np.concatenate([partials, filler])
        return self.encoder(partials)[:count]


class _Ecapa:
    """speechbrain's ECAPA-TDNN speaker encoder (spkrec-ecapa-voxceleb)."""

    label = "ecapa"

    def __init__(self, model: str | None, device: str) -> None:
        try:
            from speechbrain.inference.speaker import EncoderClassifier
        except (ImportError, OSError, RuntimeError, AttributeError) as error:
            # not installed (speechbrain >= 1.0 has this module), or torchaudio installed but
            # built for another torch, which fails in any of these ways
            raise MissingExtra(
                "the ecapa speaker backend", "ecapa", "speechbrain", hint=_ECAPA_HINT
            ) from error
        source = model or ECAPA_DEFAULT_MODEL
        expanded = os.path.expanduser(source)
        local = os.path.isdir(expanded)
        if not local and source.startswith(("/", ".", "~")):
            raise UserError(f"ECAPA model folder '{source}' does not exist")
        self.model = os.path.abspath(expanded) if local else source
        # A local folder is used in place. For a hub id speechbrain links the files from the HF
        # cache into `savedir`, which would default to ./pretrained_models in the working folder.
        savedir = (
            self.model
            if local
            else os.path.join(
                os.path.expanduser("~/.cache/verified-tts/speechbrain"), source.replace("/", "--")
            )
        )
        try:
            self.encoder = EncoderClassifier.from_hparams(
                source=self.model, savedir=savedir, run_opts={"device": device}
            )
        except Exception as error:
            raise UserError(
                f"cannot load the ECAPA model '{source}' ({type(error).__name__}: {error}): give "
                "a local folder holding hyperparams.yaml and embedding_model.ckpt, or download "
                f"it on a connected machine (`hf download {ECAPA_DEFAULT_MODEL}`)"
            ) from error
        self.encoder.eval()

    @staticmethod
    def prepare(audio: np.ndarray, sample_rate: int) -> np.ndarray:
        return resample(np.asarray(audio, dtype=np.float32).reshape(-1), sample_rate, _SAMPLE_RATE)

    def embed(self, wavs: Sequence[np.ndarray]) -> np.ndarray:
        import torch

        longest = max(1, max(w.size for w in wavs))
        batch = np.zeros((len(wavs), longest), dtype=np.float32)
        for row, wav in enumerate(wavs):
            batch[row, : wav.size] = wav
        lengths = np.array([max(w.size, 1) / longest for w in wavs], dtype=np.float32)
        with torch.no_grad():
            out = self.encoder.encode_batch(torch.from_numpy(batch), torch.from_numpy(lengths))
        return _unit(out.reshape(len(wavs), -1).cpu().numpy().astype(np.float64))


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)


class SpeakerVerifier:
    """Embeds clips and compares them with their reference; build with
    :func:`load_speaker_verifier`."""

    name = "speaker"

    def __init__(self, backend: _Resemblyzer | _Ecapa, options: SpeakerOptions) -> None:
        self._backend = backend
        self.options = options

    def identity(self) -> Mapping[str, Any]:
        # the device changes speed, not scores: left out of the cache key; 2: short clips
        # 3: the resemblyzer encoder on onnxruntime (embeddings within 5e-7 of torch's)
        return {"verifier": self.name, "version": 3, "backend": self._backend.label,
                "model": self._backend.model,
                "short_speech_s": self.options.short_speech_s}  # fmt: skip

    def embed(self, clips: Sequence[Clip]) -> np.ndarray:
        """Unit-norm embeddings of the clips, [len(clips), dim], in one forward pass."""
        return self.embed_with_speech(clips)[0]

    def embed_with_speech(self, clips: Sequence[Clip]) -> tuple[np.ndarray, list[float]]:
        """:meth:`embed`, and the seconds of speech the encoder saw in each clip."""
        if not clips:
            return np.zeros((0, 0), dtype=np.float32), []
        wavs = [self._backend.prepare(clip.audio, clip.sample_rate) for clip in clips]
        return self._backend.embed(wavs), [wav.size / _SAMPLE_RATE for wav in wavs]

    def is_short(self, speech_s: float) -> bool:
        """Whether a clip of ``speech_s`` seconds of speech is judged against short takes."""
        return speech_is_short(speech_s, self.options)

    def score(self, clips: Sequence[Clip]) -> list[Score]:
        return self.compare(clips, self.measure(clips))

    def measure(self, clips: Sequence[Clip]) -> list[tuple[np.ndarray, float]]:
        """Each clip's embedding and seconds of speech: all of :meth:`score` but the comparison
        with the references (:class:`~verifiers.base.ReferenceComparer`)."""
        embeddings, speech = self.embed_with_speech(clips)
        return list(zip(embeddings, speech, strict=True))

    def compare(
        self, clips: Sequence[Clip], measured: Sequence[tuple[np.ndarray, float]]
    ) -> list[Score]:
        """The scores of ``clips`` against their references, from :meth:`measure` of them."""
        scores = []
        for clip, (embedding, seconds) in zip(clips, measured, strict=True):
            metrics: dict[str, float] = {}
            detail: dict[str, Any] = {"speaker_speech_s": round(seconds, 3)}
            reference = clip.speaker_reference
            if reference is not None and self.is_short(seconds):
                reference = clip.short_reference
                if reference is None:
                    detail["speaker_note"] = TOO_SHORT
                else:
                    detail["speaker_against"] = "short takes"
            if reference is not None:
                metrics["speaker"] = self._similarity(reference, embedding)
            scores.append(
                Score(metrics=metrics, detail=detail, embedding=tuple(float(x) for x in embedding))
            )
        return scores

    def _similarity(self, reference: np.ndarray, embedding: np.ndarray) -> float:
        reference = np.asarray(reference, dtype=np.float64).reshape(-1)
        if reference.shape != embedding.shape:
            raise ValueError(
                f"speaker reference has {reference.size} dimensions, the "
                f"{self._backend.label} embedding {embedding.size}: was it made by "
                "another backend?"
            )
        # both are unit vectors, so the dot product is the cosine
        return float(np.dot(reference, embedding))

    def embed_file(self, path: str | os.PathLike[str]) -> np.ndarray:
        """Unit-norm embedding of a reference recording (``--voice-ref``); a one-line UserError
        for a file that cannot be read (:func:`~verified_tts.audio.read_audio`), is silent or
        holds too little speech."""
        audio, sample_rate = check_reference_file(path)
        wav = self._backend.prepare(audio, int(sample_rate))
        speech_s = wav.size / _SAMPLE_RATE  # after resemblyzer's silence trimming: speech only
        if speech_s < MIN_REFERENCE_SPEECH_S:
            raise _too_little_speech(path, speech_s)
        return self._backend.embed([wav])[0]


def check_reference_file(path: str | os.PathLike[str]) -> tuple[np.ndarray, int]:
    """The samples and rate of a reference recording (``--voice-ref``), or a one-line UserError
    for a file that cannot be read, is silent or is shorter than the speech a reference needs.
    It needs no model, so a render checks the file before it loads any."""
    audio, sample_rate = read_audio(path, "--voice-ref")
    if float(np.max(np.abs(audio))) < _SILENT_PEAK:
        raise UserError(
            f"--voice-ref {os.fspath(path)} is silent (peak below -60 dBFS): record the voice again"
        )
    if len(audio) / sample_rate < MIN_REFERENCE_SPEECH_S:
        raise _too_little_speech(path, len(audio) / sample_rate)
    return audio, int(sample_rate)


def _too_little_speech(path: str | os.PathLike[str], speech_s: float) -> UserError:
    return UserError(
        f"--voice-ref {os.fspath(path)} has only {speech_s:.2f} s of speech: give at least "
        f"{MIN_REFERENCE_SPEECH_S:.0f} s (5-30 s of clean speech works best)"
    )


def speech_is_short(speech_s: float, options: SpeakerOptions) -> bool:
    """Whether a clip of ``speech_s`` seconds of speech is judged against short takes under these
    options (a clip without speech is not short: it is no voice, and the book reference says so).
    A proxy of the verifier in another process applies the same rule to the options it was
    built with."""
    return 0.0 < speech_s < options.short_speech_s


def load_speaker_verifier(options: SpeakerOptions | None = None) -> SpeakerVerifier:
    """Load the chosen backend's encoder once."""
    options = options or SpeakerOptions()
    if options.backend == "resemblyzer":
        backend: _Resemblyzer | _Ecapa = _Resemblyzer(options.model)
    elif options.backend == "ecapa":
        backend = _Ecapa(options.model, options.device)
    else:
        raise UserError(
            f"unknown speaker backend '{options.backend}': choose 'resemblyzer' or 'ecapa'"
        )
    return SpeakerVerifier(backend, options)
