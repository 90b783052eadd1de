"""A mixed book (espeak and an onnxruntime voice, hibari) rendered twice in one process gives the
same bytes: the candidates, the winners and the assembled book.

espeak-ng runs beside onnxruntime sessions here (the hibari voice, and Piper's phonemizer shares
espeak-ng's library), in the same process and one after the other, which is where its samples
were seen to differ between two renders.
"""

from __future__ import annotations

import hashlib
import json

BOOK = """# Mixed

The birch canoe slid on the smooth planks.

<!-- tts: voice=hibari:heart -->
Glue the sheet to the dark blue background.

<!-- tts: voice=espeak:en -->
It's easy to tell the depth of a well.
"""


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_mixed_book_renders_the_same_bytes_twice_in_one_process(tmp_path):
    from verified_tts.config import build_config
    from verified_tts.workflows.render import render

    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    config = build_config({}, candidates=2, adaptive=False, generator="espeak")
    outs = [tmp_path / "first", tmp_path / "second"]
    for out in outs:
        render(book, out, config)
    manifests = [json.loads((out / "manifest.json").read_text()) for out in outs]
    voices = {str(u.get("voice")) for u in manifests[0]["utterances"]}
    assert any("hibari" in v for v in voices), voices
    for first, second in zip(manifests[0]["utterances"], manifests[1]["utterances"], strict=True):
        assert first["winner"] == second["winner"], first["text"]
        for a, b in zip(first["candidates"], second["candidates"], strict=True):
            assert _digest(outs[0] / a["audio"]) == _digest(outs[1] / b["audio"]), first["text"]
    assert _digest(outs[0] / "book.wav") == _digest(outs[1] / "book.wav")
