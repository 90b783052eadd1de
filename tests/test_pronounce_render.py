"""Pronunciation and text-form candidates in a render with the default Piper voice: the takes of a
doubtful line read its words in turn, each word gets one reading for the whole book, the written
lexicon renders the same book again without a new take, a rerender plans a line as the render
read it, and the review's word list plays each
reading and overrules the decision in one click, which a delivery writes into the lexicon file
(headless Chromium)."""

from __future__ import annotations

import json
import shutil

import pytest
from review_kit import App, manifest_json
from test_review_browser import browser, console_errors, open_review, press, wait  # noqa: F401

from verified_tts.text.lexicon import load_lexicon

BOOK = """# Words

## One

The salmon was good withal, said Thorneycroft.

Thorneycroft met the schoolmaster at St. Patrick in 1847.

There was sootiness on every wall.

## Two

It was Thorneycroft who spoke withal.

The sootiness of the lamp was plain.
"""
TABLE = {"pronunciation": {"candidates": True, "text_forms": True}}


@pytest.fixture(scope="module")
def piper(synthesizer_factory):
    """Piper joe-medium with the session's verifiers, making the config it is given."""
    from verified_tts.config import build_config
    from verified_tts.generators import GeneratorConfig, load_generator
    from verified_tts.pipeline import Synthesizer

    generator = load_generator(GeneratorConfig(name="piper"))
    verifiers = synthesizer_factory().verifiers

    def make(table, **overrides):
        config = build_config(table, candidates=3, adaptive=False, generator="piper",
                              **overrides)  # fmt: skip
        return Synthesizer(generator, verifiers, config)

    return make


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, piper):
    from verified_tts.workflows.render import render

    folder = tmp_path_factory.mktemp("pronounce")
    book = folder / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    synthesizer = piper(TABLE)
    render(book, folder / "out", synthesizer.config, synthesizer=synthesizer)
    return book, folder / "out"


def _says(text: str, word: str) -> bool:
    return word.lower() in text.lower()


def test_each_doubtful_word_is_read_one_way_in_the_whole_book(rendered):
    _, out = rendered
    manifest = manifest_json(out)
    block = manifest["pronunciations"]
    decided = {d["word"]: d for d in block["decisions"]}
    assert {"withal", "Thorneycroft"} <= set(decided)
    for word, decision in decided.items():
        readings = decision["readings"]
        assert readings[0]["sources"][0] == "espeak-ng en-us" and len(readings) >= 2
        assert all(r["takes"] >= 1 and r["example"]["audio"] for r in readings)
        # every line that says the word says it the decided way, in every take it kept
        lines = [u for u in manifest["utterances"] if _says(u["spoken"], word)]
        assert len(lines) >= 2
        for line in lines:
            pairs = {w.lower(): p for w, p in line.get("phonemes", ())}
            assert pairs.get(word.lower()) == (decision["chosen"] if decision["changed"] else None)
            for take in line["candidates"]:
                said = (take["info"].get("reading") or {}).get("words") or {}
                assert word not in said  # no take of the book's lines reads it another way
    # the guessed text forms are the takes' readings, and the record says which one won
    line = next(u for u in manifest["utterances"] if "St. Patrick" in u["text"])
    forms = [c["info"]["reading"]["forms"] for c in line["candidates"]]
    assert {f[0]["said"] for f in forms} == {"Saint", "Street"}
    assert {f[1]["said"] for f in forms} >= {"eighteen forty-seven"}
    assert block["text_forms"]["lines"] == 1
    # the lexicon file holds every decided word (a kept reading kept), and loads back
    lexicon = {e.pattern: e for e in load_lexicon(out / "lexicon.toml").entries}
    assert set(lexicon) == set(decided)
    for word, decision in decided.items():
        entry = lexicon[word]
        assert (entry.phonemes, entry.keep) == (
            (decision["chosen"], False) if decision["changed"] else (None, True))  # fmt: skip
    evidence = json.loads((out / "lexicon.toml.json").read_text(encoding="utf-8"))
    assert {d["word"] for d in evidence["decisions"]} == set(decided)


def test_a_line_whose_winner_said_the_decided_readings_keeps_it(rendered):
    """The last pass keeps such a line's winner among its takes of that reading, renumbered,
    instead of sampling N takes of it again; every other line gets all N (fixed N=3)."""
    manifest = manifest_json(rendered[1])
    kept = [u for u in manifest["utterances"] if len(u["candidates"]) < 3]
    assert kept and manifest["pronunciations"]["lines_that_kept_their_winner"] == len(kept)
    for line in kept:
        takes = line["candidates"]
        # the reading's own takes 0, 1, ... (stored under the line's key), the winner among them
        assert [(c["index"], c["audio"].rsplit("/", 1)[1].split(".")[0]) for c in takes] == [
            (k, f"{line['key']}-{k:03d}") for k in range(len(takes))]  # fmt: skip
        assert not line["flagged"] and takes[line["winner"]]["passed"]


def test_the_written_lexicon_renders_the_same_book_without_a_new_take(rendered, piper, tmp_path):
    from verified_tts.workflows.render import render

    book, rendered_out = rendered
    out = tmp_path / "out"
    shutil.copytree(rendered_out, out)
    before = manifest_json(out)
    lexicon = tmp_path / "mine.toml"
    shutil.copy(out / "lexicon.toml", lexicon)
    synthesizer = piper(TABLE, production={"lexicon": str(lexicon)})
    summary = render(book, out, synthesizer.config, synthesizer=synthesizer)
    assert summary.candidates_generated == 0
    after = manifest_json(out)
    assert [u["key"] for u in after["utterances"]] == [u["key"] for u in before["utterances"]]
    assert [u["audio"] for u in after["utterances"]] == [u["audio"] for u in before["utterances"]]
    assert after["pronunciations"]["words"] == 0  # the producer's lexicon covers them now


def test_rerender_plans_a_line_as_the_render_read_it(rendered, piper, tmp_path):
    """A line with text forms and a decided word keeps its key when re-rendered with more takes,
    and the manifest keeps the book's decisions."""
    from verified_tts.workflows.rerender import rerender

    _, rendered_out = rendered
    out = tmp_path / "out"
    shutil.copytree(rendered_out, out)
    line = next(u for u in manifest_json(out)["utterances"] if "St. Patrick" in u["text"])
    done = rerender(out, line["key"], 4, synthesizer=piper(TABLE))
    assert done.key == line["key"] and done.candidates_generated == 1
    after = manifest_json(out)
    again = next(u for u in after["utterances"] if u["key"] == line["key"])
    assert len(again["candidates"]) == 4
    assert all(c["info"]["reading"]["forms"] for c in again["candidates"])
    assert after["pronunciations"]["decisions"] == manifest_json(rendered_out)[
        "pronunciations"]["decisions"]  # fmt: skip


@pytest.mark.browser
def test_the_word_list_plays_each_reading_and_one_click_overrules(browser, rendered, tmp_path):  # noqa: F811
    _, rendered_out = rendered
    out = tmp_path / "out"
    shutil.copytree(rendered_out, out)
    decided = {d["word"]: d for d in manifest_json(out)["pronunciations"]["decisions"]}
    word = decided["withal"]
    other = next(k for k, r in enumerate(word["readings"]) if r["phonemes"] != word["chosen"])
    app = App(out)
    try:
        open_review(browser, app)
        press(browser, "w")
        wait(browser, "return document.querySelectorAll('#words .word').length === "
                      f"{len(decided)}")  # fmt: skip
        card = "document.querySelector('#words .word[data-word=\"withal\"]')"
        # every reading has a player that loads its take
        players = browser.execute_script(f"return {card}.querySelectorAll('audio').length")
        assert players == len(word["readings"])
        browser.execute_script(f"{card}.querySelectorAll('audio')[{other}].play()")
        wait(browser, f"const a = {card}.querySelectorAll('audio')[{other}];"
                      "return a.readyState >= 2 && a.currentTime > 0", 60)  # fmt: skip
        # one click on another reading (and yes to the question) puts it in the book
        browser.execute_script(f"{card}.querySelector('tr[data-reading=\"{other}\"] "
                               "button.use-reading').click()")  # fmt: skip
        wait(browser, "return document.getElementById('ask').open", 10)
        press(browser, "\ue007")
        app.wait_jobs("lexicon")
        wait(browser, f"const c = {card}; return c && c.querySelector('.decided').textContent"
                      ".includes('review') && c.querySelector('tr.chosen').dataset.reading === "
                      f"'{other}'")  # fmt: skip
        assert console_errors(browser) == []
        # a delivery writes the producer's choice into the lexicon they pass back
        app.api("/api/deliver", {})
        assert app.wait_jobs("deliver")[-1]["state"] == "done"
    finally:
        app.stop()
    from verified_tts.review.decisions import DecisionLog

    entries = {e.pattern: e for e in load_lexicon(out / "lexicon.toml").entries}
    if other:  # another reading than espeak-ng's own: its phonemes
        assert entries["withal"].phonemes == word["readings"][other]["phonemes"]
    else:  # espeak-ng's own: kept as the generator reads it
        assert entries["withal"].keep and entries["withal"].phonemes is None
    assert "chosen in review" in (out / "lexicon.toml").read_text(encoding="utf-8")

    wanted = word["readings"][other]["phonemes"]
    with DecisionLog(out, create=False) as log:
        entries = log.entries()
    (entry,) = [e for e in entries if e.kind == "lexicon"]
    assert entry.data["entry"]["phonemes"] == wanted
    # the lines with the word were rendered again saying it that way, and that way only
    (result,) = [e for e in entries if e.kind == "result" and e.of == entry.seq]
    records = [item["after"] for item in result.data["records"]]
    assert len(records) == 2
    for record in records:
        pairs = [p for w, p in record["phonemes"] if w.lower() == "withal"]
        assert pairs == [wanted]
