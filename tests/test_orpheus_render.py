"""End to end: the real CLI renders a small book with Orpheus on vLLM and SNAC, in a subprocess.

The tiny random-weight model speaks noise, so the verifiers flag every utterance; what this
checks is the wiring: options reach the engine, candidates come back decoded at 24 kHz, the
manifest names the generator and the model folder, and every candidate records its frame counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from orpheus_fixtures import engine_test_options, tiny_models, vllm_skip_reason

VLLM_MISSING = vllm_skip_reason()

BOOK = """# Two Sentences

## One

The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.
"""


def _toml(options: dict[str, object]) -> str:
    lines = ["[generator.orpheus]"]
    for key, value in options.items():
        text = str(value).lower() if isinstance(value, bool) else json.dumps(value)
        lines.append(f"{key} = {text}")
    return "\n".join(lines) + "\n"


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
def test_render_book_with_orpheus(tmp_path: Path):
    models = tiny_models()
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    config = tmp_path / "orpheus.toml"
    config.write_text(_toml(engine_test_options()), encoding="utf-8")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "verified_tts", "render", str(book)]
    command += ["--generator", "orpheus", "--model", str(models.model)]
    command += ["--codec", str(models.codec), "--voice", "tara", "-n", "2"]
    command += ["--out", str(out), "--config", str(config)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["generator"] == "orpheus"
    assert manifest["model"] == str(models.model)
    assert manifest["sample_rate"] == 24_000
    texts = [u["text"] for u in manifest["utterances"]]  # headings are read too
    assert any("birch canoe" in t for t in texts) and any("dark blue" in t for t in texts)
    for utterance in manifest["utterances"]:
        assert 1 <= len(utterance["candidates"]) <= 2
        for candidate in utterance["candidates"]:
            info = candidate["info"]
            assert info["dropped_frames"] == 0  # constrained decoding is on by default
            assert info["frames"] >= 1 and info["tokens"] >= 7 * info["frames"]
            assert candidate["duration_s"] == pytest.approx(
                info["frames"] * 2048 / 24_000, abs=0.01
            )
        assert (out / utterance["audio"]).is_file()
