"""A book spoken by several voices of several generators, each verified on its own reference.

The narrator is Piper joe (22,050 Hz); lines marked ``voice=hibari:heart`` (24,000 Hz) and
``voice=espeak:en-us+f3`` are spoken by those generators in the same render. Each line is keyed
under its own voice's generator, scored by the speaker verifier against its own voice's
reference, listed in the manifest and the report with the voice that spoke it, and mixed into the
chapters at the book's rate.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from verified_tts.config import build_config
from verified_tts.errors import UserError
from verified_tts.pipeline import Synthesizer
from verified_tts.selection.scoring import unit_centroid
from verified_tts.text.book import parse_book
from verified_tts.workflows.render import render
from verifiers import Clip

BOOK = """# One

The narrator opens the first chapter of the story.

<!-- tts: voice=hibari:heart -->
Where are we going tonight, and who will come with us?

<!-- tts: voice=espeak:en-us+f3 -->
Over the hill and far away, to the old mill by the river.

<!-- tts: voice=None -->
The narrator closes the first chapter with a long sigh.

# Two

<!-- tts: voice=hibari:heart -->
I know the way, so follow me and keep close.

<!-- tts: voice=None -->
And so they went along the river until the night fell.
"""

NARRATOR_ONLY = """# One

The narrator opens the first chapter of the story.

The narrator closes the first chapter with a long sigh.
"""

VERIFIERS = {"wer": {"enabled": False}, "emotion": {"enabled": False}}


@pytest.fixture(scope="module")
def loaded():
    """Piper joe and the speaker and signal verifiers, loaded once for the module."""
    return Synthesizer.load(build_config({"verifiers": VERIFIERS}, candidates=2))


def _synthesizer(loaded: Synthesizer, **overrides) -> Synthesizer:
    config = build_config({"verifiers": VERIFIERS}, candidates=2, adaptive=False, **overrides)
    return Synthesizer(loaded.generator, loaded.verifiers, config)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, loaded):
    folder = tmp_path_factory.mktemp("cast")
    (folder / "book.md").write_text(BOOK, encoding="utf-8")
    synthesizer = _synthesizer(loaded)
    config = synthesizer.config
    summary = render(folder / "book.md", folder / "out", config, synthesizer=synthesizer)
    manifest = json.loads((folder / "out" / "manifest.json").read_text())
    return folder, summary, manifest, synthesizer


def test_each_line_is_spoken_by_its_voice_and_mixed_at_the_books_rate(rendered):
    folder, summary, manifest, _ = rendered
    joe, heart, f3 = "piper:en_US-joe-medium", "hibari:heart", "espeak:en-us+f3"
    lines = [u for u in manifest["utterances"] if u["kind"] != "heading"]
    assert [u["spoken_by"] for u in lines] == [joe, heart, f3, joe, heart, joe]
    voices = manifest["voices"]
    assert voices[joe]["generator"] == "piper" and voices[joe]["sample_rate"] == 22050
    assert voices[heart]["generator"] == "hibari" and voices[heart]["sample_rate"] == 24000
    assert voices[f3]["generator"] == "espeak"
    assert voices[heart]["lines"] == 2 and voices[heart]["reference"] == "its own winners"
    assert manifest["sample_rate"] == 22050
    for u in lines:  # each candidate was stored at its own voice's rate
        for c in u["candidates"]:
            info = sf.info(folder / "out" / c["audio"])
            assert info.samplerate == voices[u["spoken_by"]]["sample_rate"]
    for chapter in manifest["chapters"]:
        assert sf.info(folder / "out" / chapter["wav"]).samplerate == 22050
    report = (folder / "out" / "report.html").read_text()
    assert "<h2>Voices</h2>" in report and f"voice <b>{heart}</b>" in report
    assert summary.utterances == len(manifest["utterances"])


def test_each_voice_is_scored_against_its_own_reference(rendered, loaded):
    """A line's speaker score is the cosine with its own voice's centroid (the first window's
    candidate 0 of that voice's lines), not with the narrator's."""
    folder, _, manifest, synthesizer = rendered
    speaker = loaded.verifiers.get("speaker")
    lines = [u for u in manifest["utterances"] if u["kind"] != "heading"]

    def embed(paths):
        clips = []
        for path in paths:
            audio, rate = sf.read(folder / "out" / path, dtype="float32")
            clips.append(Clip(audio=audio, sample_rate=rate, text=""))
        return [np.asarray(e, dtype=np.float32) for e in speaker.embed(clips)]

    # every utterance of the book lies in one window, so each voice's reference is its bootstrap
    assert len(manifest["utterances"]) <= synthesizer.config.window
    by_voice = {}
    for u in manifest["utterances"]:
        by_voice.setdefault(u["spoken_by"], []).append(u["candidates"][0]["audio"])
    centroids = {voice: unit_centroid(embed(paths)) for voice, paths in by_voice.items()}
    narrator = centroids["piper:en_US-joe-medium"]
    for u in lines:
        embeddings = embed([c["audio"] for c in u["candidates"]])
        own = centroids[u["spoken_by"]]
        for c, e in zip(u["candidates"], embeddings, strict=True):
            assert c["scores"]["speaker"] == pytest.approx(float(np.dot(own, e)), abs=1e-3)
            if u["spoken_by"] == "hibari:heart":  # a female voice, far from the narrator's
                assert c["scores"]["speaker"] > float(np.dot(narrator, e)) + 0.05


def test_rerun_reuses_every_line_and_the_narrators_keys_do_not_change(rendered, loaded):
    folder, _, manifest, synthesizer = rendered
    again = _synthesizer(loaded)
    summary = render(folder / "book.md", folder / "out", again.config, synthesizer=again)
    assert summary.candidates_generated == 0
    narrator_only = _synthesizer(loaded).plan(parse_book(NARRATOR_ONLY).segments)
    keys = {u["text"]: u["key"] for u in manifest["utterances"]}
    for utterance in narrator_only:
        assert keys[utterance.text] == utterance.key


def test_the_users_reference_is_the_narrators_only(tmp_path, rendered, loaded):
    """With --voice-ref, the narrator's lines are scored against it and the other voices against
    their own lines."""
    folder, _, manifest, _ = rendered
    narrator_take = next(
        u for u in manifest["utterances"] if u["spoken_by"] == "piper:en_US-joe-medium"
    )
    reference = tmp_path / "narrator.wav"
    audio, rate = sf.read(folder / "out" / narrator_take["candidates"][0]["audio"])
    sf.write(reference, np.concatenate([audio, audio, audio]), rate)
    (tmp_path / "book.md").write_text(BOOK, encoding="utf-8")
    config = build_config(
        {"verifiers": VERIFIERS}, candidates=2, adaptive=False, voice_ref=str(reference)
    )
    synthesizer = Synthesizer(
        loaded.generator,
        loaded.verifiers,
        config,
        voice_reference=loaded.verifiers.embed_reference(str(reference)),
    )
    render(tmp_path / "book.md", tmp_path / "out", config, synthesizer=synthesizer)
    with_reference = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert with_reference["voices"]["piper:en_US-joe-medium"]["reference"] == str(reference)
    assert with_reference["voices"]["hibari:heart"]["reference"] == "its own winners"
    plain = {u["key"]: u for u in manifest["utterances"]}
    compared: list[str] = []
    for u in with_reference["utterances"]:
        if any("speaker" not in c["scores"] for c in u["candidates"]):
            continue  # a heading too short to judge the voice by has no speaker score
        compared.append(u["spoken_by"])
        scores = [c["scores"]["speaker"] for c in u["candidates"]]
        before = [c["scores"]["speaker"] for c in plain[u["key"]]["candidates"]]
        if u["spoken_by"] == "piper:en_US-joe-medium":  # scored against the user's reference
            assert scores != pytest.approx(before, abs=1e-4)
        elif u["spoken_by"] == "hibari:heart":  # the same reference as without --voice-ref
            # (espeak's samples can differ between two renders in one process when other
            # threads run beside it, so its scores are not compared across renders)
            assert scores == pytest.approx(before, abs=1e-4)
    assert {"piper:en_US-joe-medium", "hibari:heart"} <= set(compared)


@pytest.mark.parametrize(
    ("markup", "message"),
    [
        ("hibari:nobody", "unknown voice 'hibari:nobody'"),
        ("piper:nobody", "unknown voice 'piper:nobody'"),
        ("espeak:xx-nowhere", "espeak"),
    ],
)
def test_a_voice_that_cannot_be_found_fails_when_planned(loaded, markup, message):
    book = parse_book(f"First.\n\n<!-- tts: voice={markup} -->\n\nSecond.\n")
    with pytest.raises(UserError, match=message):
        _synthesizer(loaded).plan(book.segments)


def test_beam_search_with_another_generators_voice_is_one_line(loaded):
    book = parse_book("First.\n\n<!-- tts: voice=hibari:heart -->\n\nSecond.\n")
    with pytest.raises(UserError, match="runs on the render's one generator"):
        _synthesizer(loaded, search="beam").plan(book.segments)


def _render_with(tmp_path, loaded, table: dict, generator=None, **overrides) -> dict:
    config = build_config({"verifiers": VERIFIERS, **table}, candidates=4, **overrides)
    synthesizer = Synthesizer(generator or loaded.generator, loaded.verifiers, config)
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "book.md").write_text(BOOK, encoding="utf-8")
    render(tmp_path / "book.md", tmp_path / "out", config, synthesizer=synthesizer)
    return json.loads((tmp_path / "out" / "manifest.json").read_text())


def test_a_voice_gated_by_its_own_gates(tmp_path, loaded):
    """hibari's own duration gate fails every hibari take; the narrator's lines are decided
    exactly as under the book's policy alone."""
    heart = {"gates": {"duration_ratio": {"max": 0.01}}}
    table = {"selection": {"voices": {"hibari:heart": heart}}}
    gated = _render_with(tmp_path / "gated", loaded, table, adaptive=False)
    plain = _render_with(tmp_path / "plain", loaded, {}, adaptive=False)
    assert gated["voices"]["hibari:heart"]["flagged"] == 2
    # hibari's takes without seeded variation differ only in noise: one a line, and it says so
    for u in plain["utterances"]:
        assert len(u["candidates"]) == (1 if u["spoken_by"] == "hibari:heart" else 4)
    assert "noise" in plain["voices"]["hibari:heart"]["takes"]
    assert "takes" not in plain["voices"]["piper:en_US-joe-medium"]
    # an A/B of such a run keeps the one take in every arm (it stopped on the missing takes)
    from verified_tts.workflows.ab import build_arms

    arms, rows = build_arms(plain, (1, 4), build_config({"verifiers": VERIFIERS}).selection)
    assert [arm.n for arm in arms] == [1, 4] and len(rows) == len(plain["utterances"])
    gates = gated["voices"]["hibari:heart"]["selection"]["gates"]
    assert {"metric": "duration_ratio", "max": 0.01, "margin": 0.0} in gates
    assert "selection" not in gated["voices"]["piper:en_US-joe-medium"]
    for mine, theirs in zip(gated["utterances"], plain["utterances"], strict=True):
        if mine["spoken_by"] == "hibari:heart":
            assert mine["flagged"] and all(
                "duration_ratio" in c["failed_gates"] for c in mine["candidates"]
            )
        else:
            assert (mine["winner"], mine["flagged"]) == (theirs["winner"], theirs["flagged"])


def test_a_voice_sampled_in_its_own_rounds(tmp_path, loaded):
    """The book samples all four candidates at once; hibari's lines (with seeded variation, so
    that its takes differ) stop after their first round when a take passes with margin (its own
    adaptive schedule; its own gates are wide, so the first take's margin does not depend on its
    length)."""
    from verified_tts.generators.voice_set import CastGenerator, VoiceSet, speaking_generator

    varied = {"hibari": {"speed_jitter": 0.04, "duration_jitter": 0.1}}
    piper = speaking_generator(loaded.generator, None)
    generator = CastGenerator(piper, VoiceSet(loaded.config.generator, options=varied))
    heart = {
        "rounds": [1, 2],
        "stop": "margin",
        "gates": {
            "duration_ratio": {"min": 0.4, "max": 2.0},
            "pace_ratio": {"min": 0.4, "max": 2.0},
            "voice_pace_ratio": {"min": 0.4, "max": 2.0},
        },
    }
    table = {"selection": {"rounds": [4], "voices": {"hibari:heart": heart}}}
    manifest = _render_with(tmp_path, loaded, table, generator=generator, adaptive=True)
    for u in manifest["utterances"]:
        if u["spoken_by"] == "hibari:heart":
            assert len(u["candidates"]) == 1 and not u["flagged"]
        else:
            assert len(u["candidates"]) == 4
    assert "takes" not in manifest["voices"]["hibari:heart"]  # varied takes: as many as asked


def test_an_unknown_metric_in_a_voices_gates_is_one_line():
    table = {"selection": {"voices": {"hibari:heart": {"gates": {"speeker": {"min": 0.5}}}}}}
    with pytest.raises(UserError, match="speeker: no verifier reports such a metric"):
        build_config(table)
