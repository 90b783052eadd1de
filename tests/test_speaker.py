import importlib.util
import warnings
from dataclasses import replace

import numpy as np
import pytest
import soundfile

from verified_tts.errors import MissingExtra, UserError
from verified_tts.generators.base import SynthesisRequest
from verified_tts.generators.espeak import EspeakGenerator, EspeakOptions
from verifiers.base import Clip, ReferenceComparer
from verifiers.speaker import SpeakerOptions, load_speaker_verifier

TEXTS = (
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "These days a chicken leg is a rare dish.",
)
ECAPA_SKIP = (
    "speechbrain is not importable: it needs torchaudio, which loads beside torch 2.14 + "
    "torchaudio 2.11 (GPU installs), not beside the CPU torch 2.13 build"
)


def _speechbrain_imports() -> bool:
    if importlib.util.find_spec("speechbrain") is None:
        return False
    try:
        import speechbrain.inference.speaker  # noqa: F401
    except Exception:  # torchaudio built for another torch fails with OSError/ImportError
        return False
    return True


def voice(variant: str) -> list[Clip]:
    generator = EspeakGenerator(EspeakOptions(variants=(variant,)))
    requests = [SynthesisRequest("u", k, 100 + k, text) for k, text in enumerate(TEXTS)]
    return [
        Clip(c.audio, c.sample_rate, t)
        for c, t in zip(generator.sample(requests), TEXTS, strict=True)
    ]


@pytest.fixture(scope="module")
def verifier():
    return load_speaker_verifier()


@pytest.fixture(scope="module")
def male():
    return voice("m1")


@pytest.fixture(scope="module")
def female():
    return voice("f3")


def test_batched_embedding_equals_embed_utterance(verifier, male, female):
    clips = [male[0], male[2], female[0]]
    batched = verifier.embed(clips)
    assert batched.shape == (3, 256)
    # resemblyzer's own torch module, on its own preprocessing of the clip
    from resemblyzer import VoiceEncoder, preprocess_wav

    encoder = VoiceEncoder(device="cpu", verbose=False)
    for clip, embedding in zip(clips, batched, strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wav = preprocess_wav(clip.audio, source_sr=clip.sample_rate)
        expected = encoder.embed_utterance(wav)
        np.testing.assert_allclose(embedding, expected, atol=2e-3)
        wav = verifier._backend.prepare(clip.audio, clip.sample_rate)
        np.testing.assert_allclose(embedding, encoder.embed_utterance(wav), atol=1e-5)
        assert np.linalg.norm(embedding) == pytest.approx(1.0, abs=1e-5)


def test_a_clip_embeds_the_same_alone_or_beside_others(verifier, male, female):
    # A regenerated store entry is scored on its own; an uninterrupted render scored it beside
    # the other candidates. Both must give the same bits, or a resumed render differs. The
    # batches span more than one forward chunk (about 4 partials a clip).
    clips = [*male, *female, *male, *female]
    together = verifier.embed(clips)
    for index, clip in enumerate(clips[:3]):
        assert np.array_equal(verifier.embed([clip])[0], together[index])
    assert np.array_equal(verifier.embed(clips[2:])[0], together[2])


def test_same_voice_is_more_similar_than_another(verifier, male, female):
    reference = verifier.embed([male[0]])[0]
    candidates = [
        Clip(c.audio, c.sample_rate, c.text, speaker_reference=reference)
        for c in (male[1], male[2], female[1], female[2])
    ]
    scores = verifier.score(candidates)
    same = [s.metrics["speaker"] for s in scores[:2]]
    other = [s.metrics["speaker"] for s in scores[2:]]
    assert min(same) > max(other) + 0.1
    assert all(-1.0 <= value <= 1.0 for value in same + other)
    # the metric is the cosine of the returned embedding with the reference
    assert scores[0].metrics["speaker"] == pytest.approx(
        float(np.dot(scores[0].embedding, reference)), abs=1e-5
    )


def test_no_reference_no_metric_but_an_embedding(verifier, male):
    silent = Clip(np.zeros(16_000, np.float32), 16_000, "")
    scores = verifier.score([male[0], silent])
    assert scores[0].metrics == {} and len(scores[0].embedding) == 256
    assert np.linalg.norm(scores[0].embedding) == pytest.approx(1.0, abs=1e-5)
    assert all(np.isfinite(scores[1].embedding))  # silence: no NaN, whatever else
    with_reference = Clip(silent.audio, 16_000, "", speaker_reference=np.array(scores[0].embedding))
    assert np.isfinite(verifier.score([with_reference])[0].metrics["speaker"])
    assert verifier.score([]) == []
    identity = verifier.identity()
    assert identity["backend"] == "resemblyzer"
    assert identity["model"].startswith("pretrained.pt (resemblyzer 0.1")


def test_embed_file_matches_the_clip_and_reports_bad_files(verifier, male, tmp_path):
    clip = male[0]
    good = tmp_path / "voice.wav"
    stereo = np.stack([clip.audio, clip.audio], axis=1)
    soundfile.write(good, stereo, clip.sample_rate)
    embedding = verifier.embed_file(good)
    assert embedding.shape == (256,)
    assert float(np.dot(embedding, verifier.embed([clip])[0])) > 0.999

    cases = {
        "missing.wav": (None, "does not exist"),
        "notes.wav": (b"this is not audio", "cannot be read as audio"),
        "silent.wav": (np.zeros(3 * 16_000, np.float32), "is silent"),
        "short.wav": (clip.audio[: clip.sample_rate // 3], "only 0.3"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            soundfile.write(path, content, 16_000 if "silent" in name else clip.sample_rate)
        with pytest.raises(UserError, match=message) as error:
            verifier.embed_file(path)
        assert name in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(UserError, match="is a folder"):
        verifier.embed_file(tmp_path)


def test_option_errors():
    with pytest.raises(UserError, match="unknown speaker backend 'xvector'"):
        load_speaker_verifier(SpeakerOptions(backend="xvector"))
    with pytest.raises(UserError, match="does not exist"):
        load_speaker_verifier(SpeakerOptions(model="/no/such/weights.pt"))


@pytest.mark.skipif(_speechbrain_imports(), reason="speechbrain imports here")
def test_ecapa_without_speechbrain_names_the_extra():
    with pytest.raises(MissingExtra) as error:
        load_speaker_verifier(SpeakerOptions(backend="ecapa"))
    message = str(error.value)
    assert "verified-tts[ecapa]" in message and "speechbrain" in message
    assert "torchaudio" in message and "torch 2.14" in message
    assert error.value.extra == "ecapa"


@pytest.mark.skipif(not _speechbrain_imports(), reason=ECAPA_SKIP)
def test_ecapa_backend(male, female):
    try:
        verifier = load_speaker_verifier(SpeakerOptions(backend="ecapa"))
    except UserError as error:  # speechbrain present but the weights are not cached (offline)
        pytest.skip(f"ECAPA weights unavailable: {error}")
    embeddings = verifier.embed([*male[:2], *female[:2]])
    assert embeddings.shape[0] == 4
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)
    similarity = embeddings @ embeddings.T
    assert similarity[0, 1] > max(similarity[0, 2], similarity[0, 3])
    alone = verifier.embed([male[1]])[0]
    assert float(np.dot(alone, embeddings[1])) > 0.999


def test_a_short_clip_is_judged_against_short_takes_or_too_short_to_judge(verifier, male, female):
    from verifiers.speaker import TOO_SHORT

    rate = male[0].sample_rate
    long_reference = verifier.embed([male[0]])[0]
    short_male = Clip(male[1].audio[: int(0.6 * rate)], rate, "x", speaker_reference=long_reference)
    _, (seconds,) = verifier.embed_with_speech([short_male])
    assert 0 < seconds < verifier.options.short_speech_s
    alone = verifier.score([short_male])[0]
    assert "speaker" not in alone.metrics and alone.detail["speaker_note"] == TOO_SHORT
    assert alone.detail["speaker_speech_s"] == pytest.approx(seconds, abs=1e-3)
    # the same voice's other short takes as the reference: the same voice scores above another
    takes = [c.audio[: int(0.6 * rate)] for c in (male[0], male[2])]
    short_reference = verifier.embed([Clip(a, rate, "x") for a in takes]).mean(axis=0)
    short_reference /= np.linalg.norm(short_reference)
    cut = female[1].audio[: int(0.6 * rate)]
    short_female = Clip(cut, rate, "x", speaker_reference=long_reference)
    same, other = verifier.score(
        [replace(c, short_reference=short_reference) for c in (short_male, short_female)]
    )
    assert same.detail["speaker_against"] == "short takes"
    assert same.metrics["speaker"] > other.metrics["speaker"]
    # a long clip keeps the book's reference whatever short reference it carries
    full = verifier.score([Clip(male[1].audio, rate, "x", speaker_reference=long_reference,
                                short_reference=short_reference)])[0]  # fmt: skip
    assert "speaker_against" not in full.detail
    assert full.metrics["speaker"] == pytest.approx(float(np.dot(full.embedding, long_reference)),
                                                    abs=1e-5)  # fmt: skip
    assert verifier.identity()["short_speech_s"] == verifier.options.short_speech_s


def test_measured_without_references_then_compared_is_the_score(verifier, male, female):
    """A render scores the next window's first takes before their reference exists
    (verified_tts.selection.strategy.RenderContext.score_ahead): the two steps give score()'s
    values."""
    rate = male[0].sample_rate
    long_reference = verifier.embed([male[0]])[0]
    short_reference = verifier.embed([Clip(male[2].audio[: int(0.6 * rate)], rate, "x")])[0]
    clips = [
        replace(clip, speaker_reference=long_reference, short_reference=short_reference)
        for clip in (male[1], female[1], Clip(male[1].audio[: int(0.6 * rate)], rate, "x"))
    ]
    bare = [replace(clip, speaker_reference=None, short_reference=None) for clip in clips]
    assert verifier.compare(clips, verifier.measure(bare)) == verifier.score(clips)
    assert isinstance(verifier, ReferenceComparer)


@pytest.mark.parametrize("samples", [100, 401, 12_345, 48_000])
def test_mel_spectrogram_is_resemblyzers_without_librosa(samples):
    from resemblyzer.audio import wav_to_mel_spectrogram

    from verifiers.resemblyzer_mel import mel_spectrogram

    wav = (np.random.default_rng(samples).standard_normal(samples) * 0.1).astype(np.float32)
    ours = mel_spectrogram(wav)
    with warnings.catch_warnings():  # librosa warns of an input shorter than its window
        warnings.simplefilter("ignore")
        theirs = wav_to_mel_spectrogram(wav)
    assert ours.dtype == np.float32 and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6 * float(theirs.max()))
