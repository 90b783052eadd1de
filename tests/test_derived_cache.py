"""The derived-files cache (verified_tts/storage/derived.py): Piper's rewritten graph and the
speaker encoder's ONNX graph are made once and read after, by a process that then needs neither
the ``onnx`` package nor the rewrite, and speaks and scores exactly as the process that made them.
A folder half made by a killed process is made again, an unwritable cache costs only time, and
old folders do not pile up."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.piper_fixtures import build_tiny_voice
from verified_tts.storage import derived
from verified_tts.storage.derived import derived_folder

# a default-voice take and a speaker embedding, with whether the process imported onnx
_PROCESS = """
import hashlib, json, sys
import numpy as np
from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verifiers.base import Clip
from verifiers.speaker import load_speaker_verifier
generator = load_generator(GeneratorConfig(name="piper"))
[take] = generator.sample([SynthesisRequest("u", 0, 11, "The birch canoe slid on the planks.")])
embedding = load_speaker_verifier().embed([Clip(take.audio, take.sample_rate, "x")])[0]
print(json.dumps({
    "audio": hashlib.sha256(np.ascontiguousarray(take.audio).tobytes()).hexdigest(),
    "timing": take.info.get("timing") is not None,
    "embedding": hashlib.sha256(embedding.tobytes()).hexdigest(),
    "onnx": "onnx" in sys.modules,
}))
"""


def _run(cache: Path) -> dict:
    env = {**os.environ, "VERIFIED_TTS_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _PROCESS], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two processes, one of them rewriting both graphs
def test_a_second_process_reads_the_rewrites_and_sounds_and_scores_the_same(tmp_path):
    made = _run(tmp_path / "cache")
    assert made["onnx"] and made["timing"]  # the first process rewrote the graphs
    kinds = sorted(p.name for p in (tmp_path / "cache" / "derived").iterdir())
    assert kinds == ["piper", "voice-encoder"]
    read = _run(tmp_path / "cache")
    assert not read["onnx"]  # neither rewrite ran again
    assert read == {**made, "onnx": False}


def test_without_a_cache_to_write_to_the_files_are_made_each_time(tmp_path, monkeypatch):
    unwritable = tmp_path / "a-file"
    unwritable.write_text("not a folder")
    monkeypatch.setenv("VERIFIED_TTS_CACHE", str(unwritable))
    made = []

    def make(into: Path) -> None:
        made.append(into)
        (into / "graph.onnx").write_bytes(b"graph")

    first = derived_folder("kind", "key", make)
    second = derived_folder("kind", "key", make)
    assert made == [first, second] and first != second
    assert (second / "graph.onnx").read_bytes() == b"graph"


def test_a_voice_is_rewritten_once_and_a_changed_rewrite_is_made_again(tmp_path, monkeypatch):
    from verified_tts.generators import piper_voice

    monkeypatch.setenv("VERIFIED_TTS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "voice").mkdir()
    voice_file = build_tiny_voice(tmp_path / "voice")
    monkeypatch.setattr(piper_voice, "_LOADED", {})
    first = piper_voice.load_voice(str(voice_file), threads=1)
    [folder] = (tmp_path / "cache" / "derived" / "piper").iterdir()
    meta = json.loads((folder / "rewritten.json").read_text(encoding="utf-8"))
    assert [site["input"] for site in meta["sites"]] == [site.input for site in first.sites]
    monkeypatch.setattr(piper_voice, "_LOADED", {})
    again = piper_voice.load_voice(str(voice_file), threads=1)
    assert again is not first and again.sites == first.sites and again.hop == first.hop
    assert len(list(folder.parent.iterdir())) == 1  # read, not made again
    # another version of the rewriting code is another folder
    monkeypatch.setattr(derived, "recipe_digest", lambda *modules: "another-version")
    monkeypatch.setattr(piper_voice, "_LOADED", {})
    piper_voice.load_voice(str(voice_file), threads=1)
    assert len(list(folder.parent.iterdir())) == 2


def test_a_folder_a_killed_process_left_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFIED_TTS_CACHE", str(tmp_path))

    def dies(into: Path) -> None:
        (into / "half.bin").write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        derived_folder("kind", "key", dies)
    assert list((tmp_path / "derived" / "kind").iterdir()) == []  # nothing half made is left
    # a folder without its completion mark (a process killed between the rename and the mark
    # cannot leave one, but a copy from elsewhere can) is not read
    stale = tmp_path / "derived" / "kind" / "key"
    stale.mkdir()
    (stale / "file.bin").write_bytes(b"stale")
    folder = derived_folder("kind", "key", lambda into: (into / "file.bin").write_bytes(b"whole"))
    assert folder == stale and (folder / "file.bin").read_bytes() == b"whole"
    calls = []
    derived_folder("kind", "key", calls.append)
    assert calls == []  # made: read from now on


def test_only_the_latest_folders_of_a_kind_are_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFIED_TTS_CACHE", str(tmp_path))
    now = time.time()
    for number in range(11):
        folder = derived_folder("kind", f"key{number}", lambda into: None)
        made_at = now - 3 * 86_400 + number  # made one after the other, days ago
        os.utime(folder / ".complete", (made_at, made_at))
    derived_folder("kind", "today", lambda into: None)
    kept = sorted(p.name for p in (tmp_path / "derived" / "kind").iterdir())
    assert kept == sorted(["today", *(f"key{number}" for number in range(4, 11))])
    # folders made today are kept, however many (another process may be reading one); the
    # old ones go as the new ones push them out of the last eight
    for number in range(10):
        derived_folder("kind", f"now{number}", lambda into: None)
    kept = sorted(p.name for p in (tmp_path / "derived" / "kind").iterdir())
    assert kept == sorted(["today", *(f"now{number}" for number in range(10))])
