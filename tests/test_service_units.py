"""The service's parts without Ray: requests field by field, formats, the batching window, and
the engine's batch over one store (same bytes for a repeat, served without synthesis)."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from verified_tts.service.batcher import WindowBatcher
from verified_tts.service.errors import ApiError
from verified_tts.service.formats import encode
from verified_tts.service.request import parse_speech


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", None),
        (b'{"input": "", "voice": "default"}', "input"),
        (b'{"input": "hi", "voice": "default", "speed": 9}', "speed"),
        (b'{"input": "hi", "voice": "default", "response_format": "ogg"}', "response_format"),
        (b'{"input": "hi", "voice": "default", "colour": 1}', "colour"),
        (b'{"input": "hi", "voice": 3}', "voice"),
        (b'{"input": "hi", "model": "whisper-1"}', "model"),
        (b'{"input": "' + b"a" * 50 + b'"}', "input"),
    ],
)
def test_bad_requests_name_the_field(body, field):
    with pytest.raises(ApiError) as caught:
        parse_speech(body, max_input_chars=40)
    assert caught.value.status == 400
    assert caught.value.param == field
    assert "Traceback" not in caught.value.message


def test_formats_repeat_byte_for_byte():
    samples = (np.sin(np.arange(22050) / 9) * 0.3).astype(np.float32)
    magic = {"wav": b"RIFF", "flac": b"fLaC", "opus": b"OggS", "mp3": b"ID3"}
    for fmt in ("wav", "flac", "mp3", "opus", "aac", "pcm"):
        first = encode(samples, 22050, fmt)
        assert first == encode(samples, 22050, fmt)
        assert first.startswith(magic.get(fmt, b""))
    assert len(encode(samples, 22050, "pcm")) == 2 * 24000  # OpenAI's pcm: 24 kHz, 16-bit


def test_window_collects_concurrent_requests_and_drops_gone_callers():
    sizes = []

    def run(items):
        sizes.append(len(items))
        time.sleep(0.05)
        return [i * 2 for i in items]

    async def main():
        batcher = WindowBatcher(run, max_size=32, wait_s=0.05)
        answers = await asyncio.gather(*(batcher.submit(i) for i in range(20)))
        gone = asyncio.ensure_future(batcher.submit(99))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0.2)
        return answers, batcher.dropped

    answers, dropped = asyncio.run(main())
    assert answers == [i * 2 for i in range(20)]
    assert sizes == [20]
    assert dropped == 1


def test_engine_batch_and_repeat_from_store(tmp_path, synthesizer_factory):
    from verified_tts.config import build_config
    from verified_tts.service.engine import SpeechEngine

    config = build_config({}, candidates=2, generator="espeak")
    engine = SpeechEngine(config, tmp_path, synthesizer_factory())  # the session's models
    requests = [
        parse_speech(
            f'{{"input": "A small boat number {i}.", "seed": 3}}'.encode(), max_input_chars=99
        )
        for i in range(3)
    ]
    first = engine.speak(requests)
    assert all(r.batch == 3 and r.synthesized > 0 for r in first)
    again = engine.speak(requests[:1])[0]
    assert again.synthesized == 0 and again.id == first[0].id
    assert np.array_equal(again.audio, first[0].audio)
    record = engine.record(first[0].id)
    assert record["utterances"][0]["candidates"]
    with pytest.raises(ApiError) as caught:
        engine.record("../../etc/passwd")
    assert caught.value.status == 404
    bad = engine.speak([parse_speech(b'{"input": "hi", "voice": "nobody"}', max_input_chars=9)])
    assert isinstance(bad[0], ApiError) and bad[0].param == "voice"
