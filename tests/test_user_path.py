"""The README's render command for every generator, run as a user runs it: the installed
``verified-tts`` script in a subprocess, no ``--config`` and no option a user would not type.

The codec-LM generators (orpheus, llasa, spark) run on the tiny random-weight models the engine
tests build (tests/orpheus_fixtures.py); they speak noise, so these tests check that the command
starts with the product's own engine defaults (no ``max_model_len`` or ``kv_cache_gib`` from a
test) and runs to the end: the book, chapter and candidate audio exist at the generator's rate,
the manifest names the generator and holds every line with a valid winner, and the report,
timings and ACX files are written. One small book per run, N=2 (``--search beam`` keeps the
default width and expansions within a budget of 4, on a one-line book with no heading: every
beam runs to its budget, so a second line would double the search and test nothing more). Random
weights never stop speaking, so each tiny model declares a short context (128 positions, as a
small checkpoint may): the engine and the token budgets size themselves from it, the default
path, and a take or a beam that reaches it ends there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf
from orpheus_fixtures import tiny_models_with_context, vllm_skip_reason

VERIFIED_TTS = str(Path(sys.executable).with_name("verified-tts"))
BOOK = "# One\n\nThe birch canoe slid on the smooth planks.\n"
SHORT_BOOK = "The canoe slid.\n"
VLLM_MISSING = vllm_skip_reason()


def _render(tmp_path: Path, *args: str, text: str = BOOK) -> tuple[Path, dict]:
    book = tmp_path / "book.md"
    book.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)  # the installed package, as a user has it
    done = subprocess.run(
        [VERIFIED_TTS, "render", str(book), *args, "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    return out, manifest


def _check(out: Path, manifest: dict, generator: str, rate: int, n: int, text: str = BOOK) -> None:
    assert manifest["generator"] == generator and manifest["sample_rate"] == rate
    texts = [u["text"] for u in manifest["utterances"]]
    assert texts == [line.lstrip("# ") for line in text.splitlines() if line]
    for utterance in manifest["utterances"]:
        candidates = utterance["candidates"]
        assert 1 <= len(candidates) <= n
        assert 0 <= utterance["winner"] < len(candidates)
        assert (out / utterance["audio"]).is_file()
        for candidate in candidates:
            assert candidate["duration_s"] > 0 and (out / candidate["audio"]).is_file()
    audio, book_rate = sf.read(out / manifest["book"]["wav"])
    assert book_rate == rate and len(audio) > 0
    assert len(list((out / "chapters").glob("*.wav"))) == 1
    for name in ("report.html", "timings.json", "acx.json"):
        assert (out / name).stat().st_size > 0


@pytest.mark.parametrize(
    ("options", "generator", "model", "rate"),
    [
        ((), "piper", "en_US-joe-medium", 22_050),  # the README's plain command: the default
        (("--voice", "hibari:heart"), "hibari", "heart", 24_000),  # a voice names its generator
        (("--generator", "espeak"), "espeak", None, 22_050),
    ],
)
def test_render_with_an_embedded_generator(tmp_path, options, generator, model, rate):
    out, manifest = _render(tmp_path, *options, "-n", "2")
    _check(out, manifest, generator, rate, 2)
    if model:
        assert manifest["model"] == model
        # speech, not noise: Whisper tiny.en gets most words of the line
        spoken = [u for u in manifest["utterances"] if u["text"].startswith("The birch")]
        assert min(c["scores"]["wer"] for c in spoken[0]["candidates"]) < 0.5
    # hibari's takes differ only in noise unless varied on purpose: one a line, and it says so
    one_take = generator == "hibari"
    assert ("takes" in next(iter(manifest["voices"].values()))) == one_take
    if one_take:
        assert all(len(u["candidates"]) == 1 for u in manifest["utterances"])


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
@pytest.mark.parametrize("layout", ["orpheus", "llasa", "spark"])
def test_render_with_a_codec_lm_and_no_config_file(tmp_path, layout):
    """The README's codec-LM command with nothing else: the engine sizes itself (Orpheus once
    stopped here with a TypeError: its family had no default context)."""
    models = tiny_models_with_context(layout, 128)
    args = ["--generator", layout, "--model", str(models.model), "--codec", str(models.codec)]
    voice = {"orpheus": "tara", "spark": "male:low:moderate"}.get(layout)
    out, manifest = _render(tmp_path, *args, *(["--voice", voice] if voice else []), "-n", "2")
    rate = 24_000 if layout == "orpheus" else 16_000
    _check(out, manifest, layout, rate, 2)
    assert manifest["model"] == str(models.model)
    samples_per_frame = {"orpheus": 2048, "llasa": 320, "spark": 320}[layout]
    candidates = [c for u in manifest["utterances"] for c in u["candidates"]]
    for candidate in candidates:
        info = candidate["info"]
        assert info["dropped_frames"] == 0  # constrained decoding is on by default
        assert info["frames"] >= 1
        assert candidate["duration_s"] == pytest.approx(
            info["frames"] * samples_per_frame / rate, abs=0.01
        )
    if layout == "orpheus":
        assert all(c["info"]["tokens"] >= 7 * c["info"]["frames"] for c in candidates)
    if layout == "spark":
        # one created voice: every candidate of every utterance spoken with the same 32 globals
        assert {c["info"]["voice"] for c in candidates} == {"male:low:moderate"}
        speakers = {tuple(c["info"]["global_codes"]) for c in candidates}
        assert len(speakers) == 1
        [speaker] = speakers
        assert len(speaker) == 32 and all(0 <= code < 4096 for code in speaker)


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.skipif(VLLM_MISSING is not None, reason=VLLM_MISSING or "")
def test_beam_search_on_orpheus_with_no_config_file(tmp_path):
    # random weights never end their speech, so every beam runs to the token budget, which the
    # product sizes from the text and the model's context (a beam search once asked the engine
    # for a continuation past that context and stopped with an error)
    models = tiny_models_with_context("orpheus", 128)
    out, manifest = _render(
        tmp_path, "--generator", "orpheus", "--model", str(models.model),
        "--codec", str(models.codec), "--voice", "tara", "--search", "beam", "-n", "4",
        text=SHORT_BOOK,
    )  # fmt: skip
    _check(out, manifest, "orpheus", 24_000, 4, SHORT_BOOK)
    for utterance in manifest["utterances"]:
        assert all("search" in c["info"] for c in utterance["candidates"])
