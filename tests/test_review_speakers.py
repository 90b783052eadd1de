"""Who says each quote, in the review page in headless Chromium: a render with a cast lists the
quotes whose speaker guess fell below the cast's threshold first, least sure first, each with its
guess, reason and confidence; one click gives a quote to a character, its line is rendered again
in that character's voice, and a later render of the folder keeps it."""

from __future__ import annotations

import pytest
from review_kit import App, manifest_json
from test_review_browser import browser, open_review, press, wait  # noqa: F401

from verified_tts.review.decisions import DecisionLog

pytestmark = pytest.mark.browser

NARRATOR, ANNE, TOM = "espeak:en-us", "espeak:en-us+f3", "espeak:en-us+m3"
BOOK = """## One

Anne and Tom walked to the mill, and Anne carried the basket; she sang to herself.

"It is late," said Anne.

"Not yet," Tom answered.

"It rang an hour ago."

The wind rose over the mill.

"Who goes there?"

"Only the wind."
"""
CAST = f"""narrator = "{NARRATOR}"
dialogue = "{NARRATOR}"
threshold = 0.9
[characters.Anne]
voice = "{ANNE}"
[characters.Tom]
voice = "{TOM}"
"""


@pytest.fixture(scope="module")
def cast_render(tmp_path_factory, synthesizer_factory):
    """The book rendered with its cast (threshold 0.9), one take a line: the speaker list and
    the re-render in another voice need no choice between takes."""
    from verified_tts.workflows.render import render

    folder = tmp_path_factory.mktemp("cast-review")
    book = folder / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    (folder / "cast.toml").write_text(CAST, encoding="utf-8")
    synthesizer = synthesizer_factory(
        candidates=1, adaptive=False,
        production={"formats": "wav", "cast": str(folder / "cast.toml")},
    )  # fmt: skip
    render(book, folder / "out", synthesizer.config, synthesizer=synthesizer)
    return book, folder / "out", synthesizer


def _voices(out) -> dict:
    return {u["text"]: u["voice"] for u in manifest_json(out)["utterances"]}


def test_uncertain_speakers_come_first_and_one_click_gives_a_quote_its_voice(
    browser,  # noqa: F811
    cast_render,
):
    book, out, synthesizer = cast_render
    voices = _voices(out)
    # the render: tagged quotes in their character's voice, the unsure ones in the dialogue voice
    assert voices['"It is late,"'] == ANNE and voices['"Not yet,"'] == TOM
    unsure = ['"It rang an hour ago."', '"Who goes there?"', '"Only the wind."']
    assert [voices[line] for line in unsure] == [None, None, None]
    app = App(out)
    try:
        open_review(browser, app)
        wait(browser, "return !document.getElementById('speakers-button').hidden")
        assert "(3)" in browser.find_element("id", "speakers-button").text
        press(browser, "s")
        cards = wait(browser, "const c = document.querySelectorAll('#speakers .quote');"
                              "return c.length === 5 && [...c].map(e => e.innerText)")  # fmt: skip
        # no speaker first, least sure first (three turn-taking guesses below 0.9, the last line
        # the least sure), then the tags
        assert "Only the wind." in cards[0] and "guess: Anne" in cards[0]
        assert "confidence 0.61" in cards[0] and "turn-taking" in cards[0]
        assert "It rang an hour ago." in cards[1] and "confidence 0.64" in cards[1]
        assert "Who goes there?" in cards[2] and "guess: Tom" in cards[2]
        assert "confidence 0.72" in cards[2] and "spoken in the dialogue voice" in cards[2]
        assert "spoken by Anne" in cards[3] + cards[4] and "spoken by Tom" in cards[3] + cards[4]
        choices = browser.execute_script(
            "return [...document.querySelectorAll('#speakers .quote')[0]"
            ".querySelectorAll('.speaker-choice')].map(b => b.dataset.speaker)"
        )
        assert choices == ["Anne", "Tom", "the narrator", "dialogue"]
        browser.execute_script(
            "document.querySelectorAll('#speakers .quote')[0]"
            ".querySelector('[data-speaker=\"Tom\"]').click()"
        )
        app.wait_jobs("speaker")
        said = wait(browser, "const c = document.querySelector('#speakers .quote');"
                             "return c && c.innerText.includes('given to Tom in review') && "
                             "!c.innerText.includes('rendering') && c.innerText")  # fmt: skip
        assert "Only the wind." in said
    finally:
        app.stop()
    # recorded in the log, and the line rendered again in Tom's voice, not the guess's (Anne)
    with DecisionLog(out, create=False) as log:
        entries = log.entries()
    asked = [e for e in entries if e.kind == "speaker"]
    assert len(asked) == 1 and asked[0].data["speaker"] == "Tom" and asked[0].data["voice"] == TOM
    (result,) = [e for e in entries if e.kind == "result" and e.of == asked[0].seq]
    (item,) = result.data["records"]
    assert item["before"]["voice"] is None and item["after"]["voice"] == TOM
    assert item["after"]["speaker"]["name"] == "Tom"
    # a later render of the folder keeps the producer's choice
    from verified_tts.workflows.render import render

    render(book, out, synthesizer.config, synthesizer=synthesizer)
    voices = _voices(out)
    assert voices['"Only the wind."'] == TOM
    assert voices['"It is late,"'] == ANNE and voices['"Not yet,"'] == TOM
    assert voices['"It rang an hour ago."'] is None and voices['"Who goes there?"'] is None
