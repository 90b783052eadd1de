"""``rerender``: one utterance gets more candidates (new seeds after the old ones) and goes back
into the chapter files, the manifest and the report; the other utterances stay as they were."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from verified_tts.cli import app
from verified_tts.errors import UserError
from verified_tts.pipeline import Synthesizer
from verified_tts.selection.policy import choose, judge
from verified_tts.storage.keys import candidate_seed
from verified_tts.storage.store import STORE_DIR, Store
from verified_tts.workflows.render import render
from verified_tts.workflows.rerender import find_utterance, rerender, scored_per_clip

BOOK = """# One

The birch canoe slid on the smooth planks.

Glue the sheet to the dark blue background.
"""


@pytest.fixture(scope="module")
def synthesizer(synthesizer_factory) -> Synthesizer:
    return synthesizer_factory(candidates=2, adaptive=False)  # models loaded once per session


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, synthesizer):
    folder = tmp_path_factory.mktemp("rerender")
    book = folder / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    render(book, folder / "out", synthesizer.config, synthesizer=synthesizer)
    before = json.loads((folder / "out" / "manifest.json").read_text(encoding="utf-8"))
    return folder / "out", before


@pytest.fixture(scope="module")
def first(rendered, synthesizer):
    out, before = rendered
    key = before["utterances"][1]["key"]
    result = rerender(out, key[:10], n=4, synthesizer=synthesizer)
    after = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return key, result, after


def test_new_candidates_continue_after_the_old_ones(rendered, first, synthesizer):
    out, before = rendered
    key, result, after = first
    old = next(u for u in before["utterances"] if u["key"] == key)
    new = next(u for u in after["utterances"] if u["key"] == key)
    assert [c["index"] for c in new["candidates"]] == [0, 1, 2, 3]
    assert [c["seed"] for c in new["candidates"]] == [candidate_seed(key, k) for k in range(4)]
    assert [c["seed"] for c in new["candidates"][:2]] == [c["seed"] for c in old["candidates"]]
    assert [c["audio"] for c in new["candidates"][:2]] == [c["audio"] for c in old["candidates"]]
    assert (result.candidates_generated, result.candidates_reused) == (2, 2)
    assert result.key == key and result.n == 4 and result.previous_winner == old["winner"]
    winner, flagged = choose([judge(c["scores"], scored_per_clip(synthesizer).policy)
                              for c in new["candidates"]])  # fmt: skip
    assert (new["winner"], new["flagged"]) == (winner, flagged) == (result.winner, result.flagged)
    assert new["audio"] == new["candidates"][winner]["audio"]
    assert (out / new["audio"]).is_file()
    assert new["rerendered"] == {"n": 4, "previous_winner": old["winner"],
                                 "previous_flagged": old["flagged"]}  # fmt: skip


def test_other_utterances_and_files_are_kept(rendered, first):
    out, before = rendered
    key, _, after = first
    assert after["n"] == before["n"] == 2
    for old, new in zip(before["utterances"], after["utterances"], strict=True):
        if old["key"] == key:
            continue
        assert (new["winner"], len(new["candidates"])) == (old["winner"], 2)
        assert "rerendered" not in new
    for chapter in after["chapters"]:
        assert (out / chapter["wav"]).is_file() and (out / chapter["flac"]).is_file()
    assert (out / after["book"]["wav"]).is_file()
    assert after["stats"]["candidates_generated"] == 2
    assert "re-rendered at N=4" in (out / "report.html").read_text(encoding="utf-8")


def test_decisions_are_kept_per_n(rendered, first, synthesizer):
    out, _ = rendered
    key, result, _ = first
    with Store(out / STORE_DIR) as store:
        old = store.get_decision(key, synthesizer.policy_id(2))
        new = store.get_decision(key, scored_per_clip(synthesizer).policy_id(4))
    assert old is not None and len(old.record["candidates"]) == 2
    assert new is not None and new.winner == result.winner


def test_with_packing_the_rerendered_utterance_is_scored_per_clip(synthesizer, tmp_path):
    # a packed render heard its candidates beside the other sentences, which raises their
    # scores; a rerender has one sentence, so it scores all of that sentence's candidates alone
    from verified_tts.config import build_config

    config = build_config({"verifiers": {"wer": {"packing": True}}}, candidates=2,
                          generator="espeak", adaptive=False)  # fmt: skip
    packed_wer = synthesizer.verifiers.get("wer").with_options(packing=True)
    packed = Synthesizer(synthesizer.generator, synthesizer.verifiers.with_verifier(packed_wer),
                         config)  # fmt: skip
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    render(book, tmp_path / "out", config, synthesizer=packed)
    before = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    key = before["utterances"][1]["key"]
    rerender(tmp_path / "out", key, n=4, synthesizer=packed)
    after = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    old = before["utterances"][1]["candidates"]
    assert all("packed" in c["detail"] for c in old)
    for utterance in after["utterances"]:
        alone = utterance["key"] == key
        assert all(("packed" in c["detail"]) != alone for c in utterance["candidates"])
    assert after["utterances"][1]["candidates"][0]["scores"] != old[0]["scores"]
    gates = {g.metric: g.min for g in scored_per_clip(packed).policy.gates}
    assert gates["asr_min_take_logprob"] == -8.212  # the per-clip bound, not the packed one
    assert {g.metric: g.min for g in packed.policy.gates}["asr_min_take_logprob"] == -7.011


def test_a_second_rerender_keeps_the_first(rendered, first, synthesizer):
    out, before = rendered
    key, _, _ = first
    other = before["utterances"][2]["key"]
    rerender(out, other, n=3, synthesizer=synthesizer)
    after = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    counts = {u["key"]: len(u["candidates"]) for u in after["utterances"]}
    assert counts[key] == 4 and counts[other] == 3
    assert after["utterances"][1]["rerendered"]["n"] == 4


def test_errors_are_one_line(rendered, synthesizer, tmp_path):
    out, before = rendered
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    with pytest.raises(UserError, match="no utterance with key"):
        find_utterance(manifest, "zzzz")
    with pytest.raises(UserError, match="already has"):
        rerender(out, before["utterances"][0]["key"], n=2, synthesizer=synthesizer)
    with pytest.raises(UserError, match="no manifest.json"):
        rerender(tmp_path, "abc", n=4, synthesizer=synthesizer)
    outcome = CliRunner().invoke(app, ["rerender", str(tmp_path), "--utterance", "abc"])
    assert isinstance(outcome.exception, UserError)
    assert "no manifest.json" in str(outcome.exception)
    # another generator is named before any model loads, and before the count of candidates
    key = before["utterances"][0]["key"]
    outcome = CliRunner().invoke(app, ["rerender", str(out), "-u", key, "-n", "2",
                                       "--generator", "piper"])  # fmt: skip
    assert isinstance(outcome.exception, UserError)
    assert "this render used the espeak generator, not piper" in str(outcome.exception)


def test_rerender_rebuilds_the_renders_whole_config_from_its_manifest(synthesizer, tmp_path):
    from verified_tts.config import build_config
    from verified_tts.output.manifest import read_manifest
    from verified_tts.workflows.rerender import config_from_manifest

    lexicon = tmp_path / "words.toml"
    lexicon.write_text('[words]\nbirch = "burch"\n', encoding="utf-8")
    table = {
        "assembly": {"sentence_pause": 0.6, "lead_in": 0.5},
        "production": {"lexicon": str(lexicon)},
        "selection": {"gates": {"wer": {"max": 0.95}, "speaker": {}}},
    }
    config = build_config(table, candidates=2, generator="espeak", adaptive=False)
    book = tmp_path / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    own = Synthesizer(synthesizer.generator, synthesizer.verifiers, config)
    render(book, tmp_path / "out", config, synthesizer=own)
    manifest = read_manifest(tmp_path / "out")
    assert config_from_manifest(manifest) == config  # everything, not a chosen few settings
    assert manifest.config["assembly"]["sentence_pause"] == 0.6
    assert manifest.config["production"]["lexicon"] == str(lexicon)  # paths as given

    key = manifest.utterances[1].key
    outcome = CliRunner().invoke(
        app, ["rerender", str(tmp_path / "out"), "--utterance", key, "-n", "3"]
    )
    assert outcome.exit_code == 0, outcome.output
    after = read_manifest(tmp_path / "out")
    assert after.config == manifest.config  # the rerender ran with exactly those settings
    assert after.utterance(key).rerendered is not None
    assert after.utterances[1].lexicon  # the lexicon was read again
    gates = {g["metric"]: g for g in after.selection["gates"]}
    assert gates["wer"]["max"] == 0.95 and "speaker" not in gates
    chapter = after.chapters[0]
    assert chapter.duration_s == pytest.approx(manifest.chapters[0].duration_s, abs=0.5)


def test_an_older_manifest_without_the_config_gives_its_recorded_settings(rendered):
    from verified_tts.workflows.rerender import config_from_manifest

    out, before = rendered
    older = {k: v for k, v in before.items() if k != "config"}
    config = config_from_manifest(older, voice="m3")
    assert config.generator.name == before["generator"] and config.seed == before["seed"]
    assert config.generator.voice == "m3"  # an override wins
    assert config.production.formats == tuple(before["production"]["formats"])
