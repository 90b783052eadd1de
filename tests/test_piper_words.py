"""Piper's exact word timings: the duration predictor's frames, exposed by the loaded graph, give
every spoken word's bounds in the candidate; joined words share their span; a render with the
default voice puts them in timings.json marked ``generator``, where the voice is."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from tests.piper_fixtures import build_tiny_voice
from verified_tts.config import build_config
from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.output.word_timing import INFO_KEY, exact_word_timings
from verified_tts.text.normalize import normalize_text

TEXT = "In the wood, in 1984, it began. She stopped and looked at the man who had come."


@pytest.fixture(scope="module")
def joe():
    return load_generator(GeneratorConfig(name="piper"))


def test_piper_word_bounds_cover_the_spoken_words_where_the_voice_is(joe):
    spoken = normalize_text(TEXT)
    (candidate,) = joe.sample([SynthesisRequest("u", 0, 5, spoken)])
    entries = candidate.info[INFO_KEY]
    # every spoken word its own entry, "In the" too, which espeak-ng reads as one word
    assert [e[0] for e in entries] == spoken.split()
    rate, audio = candidate.sample_rate, candidate.audio
    bounds = [(e[1], e[2]) for e in entries]
    assert all(0 <= a < b <= len(audio) / rate for a, b in bounds)
    assert all(p[1] <= q[0] for p, q in zip(bounds, bounds[1:], strict=False))
    # the two sentences are two graph runs joined by the exact-zero pause: no word lies in it
    ids = joe.phoneme_ids(spoken)
    first = len(joe.synthesize(ids[0], 5, 0, 0)) / rate
    pause = joe.options.sentence_pause
    began = [e for e in entries if e[0] == "began."][0]
    she = [e for e in entries if e[0] == "She"][0]
    assert first - 0.1 < began[2] <= first and first + pause <= she[1] < first + pause + 0.1
    assert not np.any(audio[round(first * rate) : round((first + pause) * rate)])
    for _, start, end in entries:  # every word's span is voiced
        piece = audio[round(start * rate) : round(end * rate)]
        assert 20 * np.log10(np.sqrt(np.mean(piece**2)) + 1e-12) > -35, (start, end)
    timings = exact_word_timings(candidate.info, TEXT)
    assert [t.word for t in timings] == TEXT.split()
    assert {t.source for t in timings} == {"generator"}
    assert timings[4].word == "1984," and timings[4].source == "generator"


def test_a_tiny_voice_of_the_real_architecture_times_its_words_too(tmp_path):
    path = build_tiny_voice(tmp_path)
    generator = load_generator(GeneratorConfig(name="piper", model=str(path)))
    assert generator.timed
    (candidate,) = generator.sample([SynthesisRequest("u", 0, 1, "the birch canoe")])
    entries = candidate.info[INFO_KEY]
    # a word the random voice gives no ids of its own shares its neighbour's entry
    assert " ".join(e[0] for e in entries) == "the birch canoe"
    assert entries[-1][2] <= candidate.duration_s + 1e-4


def test_a_piper_render_puts_the_exact_word_timings_in_the_timing_map(
    small_book, tmp_path, synthesizer_factory, joe
):
    from verified_tts.output.word_timing import TimedClip, load_aligner
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.render import render

    config = build_config({}, candidates=1, generator="piper",
                          production={"formats": "flac", "read_along": "words"})  # fmt: skip
    synthesizer = Synthesizer(joe, synthesizer_factory().verifiers, config)
    render(small_book, tmp_path / "out", config, synthesizer=synthesizer)
    timings = json.loads((tmp_path / "out" / "timings.json").read_text())
    aligner = load_aligner(synthesizer.verifiers)
    differences = []
    for chapter in timings["chapters"]:
        audio, rate = sf.read(tmp_path / "out" / chapter["audio"], dtype="float32")
        for sentence in chapter["sentences"]:
            words = sentence["words"]
            assert [w["word"] for w in words] == sentence["text"].split()
            assert {w["source"] for w in words} <= {"generator", "interpolated"}
            assert sum(w["source"] == "generator" for w in words) >= len(words) - 2
            assert all(sentence["start_s"] - 1e-4 <= w["start_s"] < w["end_s"]
                       <= sentence["end_s"] + 1e-4 for w in words)  # words: 0.1 ms  # fmt: skip
            # the same words force-aligned by Whisper on the chapter's own audio land close by
            piece = audio[sentence["start_sample"] : sentence["end_sample"]]
            (heard,) = aligner.align([TimedClip(sentence["text"], sentence["text"], piece, rate)])
            differences += [
                abs(h.start_s + sentence["start_s"] - w["start_s"])
                for h, w in zip(heard, words, strict=True)
            ]
    assert float(np.median(differences)) < 0.1, differences
