"""Bad input gets one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import CLI, ROOT


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def assert_clean_error(result: subprocess.CompletedProcess, *phrases: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr  # one line, at the end
    message = " ".join(result.stderr.split())
    for phrase in phrases:
        assert phrase in message, message


def test_missing_directory_empty_and_binary_books(tmp_path):
    assert_clean_error(run_cli("render", str(tmp_path / "nope.md")), "nope.md", "does not exist")
    assert_clean_error(run_cli("render", str(tmp_path)), "directory")
    empty = tmp_path / "empty.md"
    empty.write_text("")
    assert_clean_error(run_cli("render", str(empty)), "empty")
    binary = tmp_path / "book.md"
    binary.write_bytes(b"# Title\n\x00\x01\x02binary")
    assert_clean_error(run_cli("render", str(binary)), "book.md")
    unspeakable = tmp_path / "code.md"
    unspeakable.write_text("```\nprint('hi')\n```\n")
    assert_clean_error(run_cli("render", str(unspeakable)), "code.md")


def test_bad_output_folder_config_and_reference(small_book, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert_clean_error(run_cli("render", str(small_book), "--out", str(blocker)), "not a folder")
    assert_clean_error(
        run_cli("render", str(small_book), "--out", str(blocker / "sub")), "output folder"
    )
    config = tmp_path / "bad.toml"
    config.write_text("[verifiers.wer]\nmodel = '/no/such/whisper'\n")
    assert_clean_error(
        run_cli("render", str(small_book), "--config", str(config), "--out", str(tmp_path / "o")),
        "/no/such/whisper",
    )
    typo = tmp_path / "typo.toml"
    typo.write_text("candidatez = 3\n")
    assert_clean_error(run_cli("render", str(small_book), "--config", str(typo)), "candidatez")
    not_audio = tmp_path / "ref.wav"
    not_audio.write_text("not a wav")
    assert_clean_error(
        run_cli(
            "render", str(small_book), "--voice-ref", str(not_audio), "--out", str(tmp_path / "o2")
        ),
        "ref.wav",
    )


@pytest.mark.parametrize("seconds", [0.05])
def test_too_short_reference(small_book, tmp_path, seconds):
    short = tmp_path / "short.wav"
    sf.write(short, np.zeros(int(16000 * seconds), dtype=np.float32), 16000)
    assert_clean_error(
        run_cli("render", str(small_book), "--voice-ref", str(short), "--out", str(tmp_path / "o")),
        "short.wav",
    )
