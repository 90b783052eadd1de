"""The review page in a real browser (Debian's chromium, headless, driven by Selenium through
Debian's chromedriver; nothing is downloaded): a producer plays a take to its end, chooses another
with the keyboard, edits a line, adds a lexicon entry and delivers, and the files then hold what
they chose; a restart shows the same decisions, and a dub's output folder opens too."""

from __future__ import annotations

import hashlib
import os
import shutil
import time

import numpy as np
import pytest
import soundfile as sf
from review_kit import (
    App,
    copy_render,
    correlation,
    expected_chapter,
    m4b_audio,
    m4b_region,
    manifest_json,
    take_offset,
    upsampled,
)

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def _need_browser() -> tuple[str, str]:
    if CHROMIUM and CHROMEDRIVER:
        return CHROMIUM, CHROMEDRIVER
    if os.environ.get("VTTS_SKIP_CHROMIUM"):
        pytest.skip("VTTS_SKIP_CHROMIUM is set: the review's browser tests are skipped")
    pytest.fail(
        "chromium or chromedriver is missing: apt-get install -y chromium chromium-driver "
        "(.ci/run does), or set VTTS_SKIP_CHROMIUM=1 to skip the browser tests"
    )


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium, chromedriver = _need_browser()
    os.environ.setdefault("SE_OFFLINE", "1")  # Selenium Manager must not fetch anything
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--window-size=1400,900",
                 "--autoplay-policy=no-user-gesture-required",
                 f"--user-data-dir={tmp_path_factory.mktemp('profile')}"):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


def wait(driver, script, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"never true: {script}")


def press(driver, *keys):
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def go_to(driver, text):
    """Search for a line and select it, as a producer would (/, type, Enter)."""
    press(driver, "/")
    box = driver.switch_to.active_element
    box.clear()
    box.send_keys(text)
    wait(driver, f"return state.detail && state.detail.text === {text!r} && "
                 "document.activeElement.id === 'search'")  # fmt: skip
    press(driver, "\ue007")  # Enter leaves the search box
    return driver.execute_script("return state.detail")


def open_review(driver, app):
    # A page of an earlier, stopped review may still have had requests in flight; their
    # errors belong to that review, not to this one.
    driver.get("about:blank")
    driver.get_log("browser")
    driver.get(app.url)
    wait(driver, "return document.body.dataset.ready === '1'")
    assert "token=" not in driver.current_url  # the token moved into a cookie


def console_errors(driver):
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def finish_jobs(driver, app, kind):
    """Wait for the review's work, then for the page to have seen it finish."""
    jobs = app.wait_jobs(kind)
    said = driver.execute_script("return document.getElementById('toast').textContent")
    assert jobs and jobs[-1]["kind"] == kind and jobs[-1]["state"] == "done", (jobs, said)
    return wait(driver, "const j = document.getElementById('jobs');"
                        "return j.dataset.state === 'done' && j.textContent")  # fmt: skip


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_producer_reviews_and_delivers(browser, review_render, tmp_path):
    book, out = copy_render(review_render, tmp_path / "out")
    before = manifest_json(out)
    untouched = before["chapters"][2]
    kept = (digest(out / untouched["flac"]), digest(out / untouched["wav"]))
    old_book = sf.read(out / "book.flac", dtype="int16")[0]
    app = App(out)
    try:
        open_review(browser, app)
        rows = browser.execute_script("return state.rows")
        assert len(rows) == len(before["utterances"])
        flagged = [r["flagged"] for r in rows]
        assert flagged == sorted(flagged, reverse=True)  # flagged lines first
        # play the take in the book: it loads and plays to its end
        press(browser, "p")
        wait(browser, "const a = document.getElementById('winner-audio');"
                      "return a && a.readyState >= 2 && a.ended", 60)  # fmt: skip
        # choose another kept take with the keyboard
        line = go_to(browser, "It's easy to tell the depth of a well.")
        other = next(c["index"] for c in line["candidates"] if c["index"] != line["winner"])
        press(browser, str(other + 1))
        wait(browser, f"return state.detail.winner === {other} && "
                      "document.getElementById('decision').textContent === 'chosen'")  # fmt: skip
        chosen_pos = line["pos"]
        chosen_take = line["candidates"][other]["audio"].split("/")
        take = before["utterances"][chosen_pos]["candidates"][int(chosen_take[-1])]["audio"]
        # edit a line's spoken text (only it is rendered again)
        go_to(browser, "The Tortoise never stopped.")
        press(browser, "e")
        area = browser.switch_to.active_element
        area.clear()
        area.send_keys("The Tortoise never once stopped.")
        from selenium.webdriver.common.keys import Keys

        area.send_keys(Keys.CONTROL, Keys.ENTER)
        assert "done" in finish_jobs(browser, app, "edit")
        wait(browser, "return state.detail.spoken === 'The Tortoise never once stopped.'")
        # a lexicon entry from a word of a line: click the word, say how to read it
        go_to(browser, "The birch canoe slid on the smooth planks.")
        browser.execute_script("[...document.querySelectorAll('#line-text span.word')]"
                               ".find(s => s.textContent === 'canoe').click()")  # fmt: skip
        browser.switch_to.active_element.send_keys("kuh noo")
        wait(browser, "return document.getElementById('lex-count').textContent"
                      ".includes('renders 1 line')")  # fmt: skip
        browser.switch_to.active_element.send_keys(Keys.ENTER)
        assert "done" in finish_jobs(browser, app, "lexicon")
        wait(browser, "return state.detail.spoken.includes('kuh noo')")
        # deliver, and watch it finish
        press(browser, Keys.SHIFT, "D")
        wait(browser, "return document.getElementById('ask').open", 10)  # it asks first
        press(browser, Keys.ENTER)
        done = wait(browser, "const d = document.getElementById('delivered');"
                             "return d && d.textContent", 600)  # fmt: skip
        assert "chapter(s) rebuilt" in done and "1 kept" in done
        progress = browser.find_element("id", "progress").text
        assert progress.startswith("1 of ") and "flagged left" in progress
        browser.save_screenshot(str(tmp_path / "review.png"))
        assert console_errors(browser) == []
    finally:
        app.stop()
    after = manifest_json(out)
    # the chapter with the chosen take holds it, sample-exact, where assembly puts it
    chapter = after["utterances"][chosen_pos]["chapter"]
    held = sf.read(out / after["chapters"][chapter]["flac"], dtype="int16")[0]
    assert after["utterances"][chosen_pos]["audio"] == take
    assert np.array_equal(held, expected_chapter(out, chapter, {chosen_pos: take}, tmp_path / "x"))
    wav = sf.read(out / after["chapters"][chapter]["wav"], dtype="int16")[0]
    assert np.array_equal(wav, held)
    # ... and so does the M4B, at the chapter's offset in the book
    start, length = take_offset(out, chapter, chosen_pos, {})
    at = sum(sf.info(str(out / c["flac"])).frames for c in after["chapters"][:chapter]) + start
    book_audio = sf.read(out / "book.flac", dtype="int16")[0] / 32768.0
    heard = m4b_region(m4b_audio(out / "book.m4b"), book_audio, at, length)
    assert correlation(heard, upsampled(book_audio, at, length)) > 0.95
    assert correlation(heard, upsampled(old_book / 32768.0, at, length)) < 0.8
    # the chapter nothing touched is byte-identical
    assert (digest(out / untouched["flac"]), digest(out / untouched["wav"])) == kept
    # the manifest records every decision
    reviews = {u["text"]: u.get("review") for u in after["utterances"]}
    assert reviews["It's easy to tell the depth of a well."]["decision"] == "choose"
    assert reviews["The Tortoise never stopped."]["decision"] == "edit"
    assert reviews["The Tortoise never stopped."]["changes"][0]["spoken"] == (
        "The Tortoise never once stopped."
    )
    assert reviews["The birch canoe slid on the smooth planks."]["decision"] == "lexicon"
    assert all(r["by"] == "ann" and r["at"] for r in reviews.values() if r)
    assert after["review"]["lexicon"][0]["match"] == "canoe"

    # a restart shows the same decisions
    again = App(out)
    try:
        open_review(browser, again)
        assert "1 of " in browser.find_element("id", "progress").text
        line = go_to(browser, "It's easy to tell the depth of a well.")
        assert (line["winner"], line["decision"]) == (other, "chosen")
        assert [h["kind"] for h in line["history"]] == ["choose"]
        canoe = next(u for u, r in enumerate(after["utterances"]) if "canoe" in r["text"])
        press(browser, "u")  # undo takes back the last decision: the lexicon entry
        wait(browser, "return document.getElementById('undo').title.includes('edited')")
        assert "kuh noo" not in again.api(f"/api/line/{canoe}")["spoken"]
        press(browser, "u", "u")  # then the edit, then the choice
        wait(browser, "return state.detail.decision === null && state.detail.winner === "
                      f"{line['selected']}")  # fmt: skip
    finally:
        again.stop()


def test_a_dub_output_folder_opens(browser, review_render, tmp_path):
    from verified_tts.workflows.dub import dub

    subtitles = tmp_path / "dub.srt"
    subtitles.write_text("1\n00:00:00,500 --> 00:00:03,000\nThe birch canoe slid on the "
                         "smooth planks.\n\n2\n00:00:03,500 --> 00:00:06,000\nGlue the sheet "
                         "to the dark blue background.\n", encoding="utf-8")  # fmt: skip
    synthesizer = review_render[2]
    dub(subtitles, tmp_path / "dubbed", synthesizer.config, synthesizer=synthesizer.variant())
    app = App(tmp_path / "dubbed")
    try:
        open_review(browser, app)
        cue = wait(browser, "const c = document.getElementById('cue'); return c && c.textContent")
        assert "cue 0.50–3.00 s" in cue or "cue 3.50–6.00 s" in cue
        assert "the take sits at" in cue
        assert len(browser.execute_script("return state.rows")) == 2
        assert console_errors(browser) == []
    finally:
        app.stop()
