"""Bad input gets one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
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


def test_inputs_a_new_user_tries_get_the_line_that_fixes_them(small_book, tmp_path):
    # a subtitle file is dubbed, not read aloud with its timestamps
    subtitles = tmp_path / "film.srt"
    subtitles.write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n", encoding="utf-8")
    assert_clean_error(run_cli("render", str(subtitles)), "subtitle file", "verified-tts dub")
    # a manuscript in a word processor's format is named, with the export that works
    manuscript = tmp_path / "novel.docx"
    manuscript.write_bytes(b"PK\x03\x04\x00\x00")
    assert_clean_error(run_cli("cast", str(manuscript)), "Word document", "plain text (.txt)")
    # an engine's bare name is not a speaker of the default voice
    assert_clean_error(run_cli("say", "Hello.", "--voice", "hibari"), "names an engine", "hibari:")
    # a folder, not a file, where a file is wanted; and the reverse
    assert_clean_error(run_cli("render", str(small_book), "--config", str(tmp_path)), "is a folder")
    assert_clean_error(run_cli("voices", "--voices-dir", str(small_book)), "is a file")
    assert_clean_error(
        run_cli("cast", str(small_book), "--out", str(tmp_path), "--force"), "is a folder"
    )
    # a reference that cannot serve stops calibrate as it stops render
    assert_clean_error(run_cli("calibrate", "--voice-ref", str(tmp_path / "missing.wav")),
                       "missing.wav")  # fmt: skip
    # the judge's own option is named, not the WER verifier's
    assert_clean_error(
        run_cli("ab", str(small_book), "--judge-asr", str(tmp_path / "no-such-whisper")),
        "--judge-asr",
    )
    # a port no socket can have is refused by the option itself
    refused = run_cli("review", str(tmp_path), "--port", "70000")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--port" in refused.stderr


def test_a_folder_that_holds_another_books_render_is_not_mixed_with_this_one(small_book, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    held = {"format": "verified-tts manifest 1", "input": "other.md",
            "source": {"path": str(tmp_path / "other.md"), "sha256": "0" * 64}}  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(held), encoding="utf-8")
    before = sorted(p.name for p in out.iterdir())
    assert_clean_error(
        run_cli("render", str(small_book), "--out", str(out)), "holds a render of other.md"
    )
    subtitles = tmp_path / "film.srt"
    subtitles.write_text("1\n00:00:01,000 --> 00:00:02,000\nHello.\n", encoding="utf-8")
    assert_clean_error(run_cli("dub", str(subtitles), "--out", str(out)), "holds a render")
    assert sorted(p.name for p in out.iterdir()) == before


def test_an_address_that_is_not_this_machines_names_the_host_not_the_port():
    from verified_tts.errors import UserError
    from verified_tts.review.server import _bind

    with pytest.raises(UserError, match="--host must be an address of this machine"):
        _bind("999.1.1.1", 0)
    with pytest.raises(UserError, match="--host must be an address of this machine"):
        _bind("192.0.2.1", 0)  # a documentation address no interface here has
