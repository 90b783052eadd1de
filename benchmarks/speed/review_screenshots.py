"""The screenshots in docs/review.md, taken with Debian's headless chromium: the review of the demo
book (examples/book.md) as a producer first sees it, worst line first, and the same view with a
lexicon entry being added for the marked word.

    python -m benchmarks.speed.review_screenshots [--out out/review-screenshots]

The demo is rendered there with the default settings first unless the folder already holds a
render; the review is started on a copy, so the render itself is left as it is.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from benchmarks.speed.review_benchmark import ROOT, Review, chromium, render_demo


def wait(driver, script: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not driver.execute_script(script):
        if time.monotonic() > deadline:
            raise SystemExit(f"the page never showed: {script}")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "review-screenshots")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    demo = args.out / "demo"
    render_demo(demo, None)
    copy = args.out / "review"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(demo, copy, ignore=shutil.ignore_patterns("review", "verified-tts.lock"))
    review = Review(copy)
    driver = chromium()
    try:
        driver.set_window_size(1400, 860)
        driver.get(review.url)
        wait(driver, "return document.body.dataset.ready === '1' && state.detail")
        time.sleep(0.3)
        driver.save_screenshot(str(args.docs / "review.png"))
        # the first line whose doubtful word is a word (not a punctuation mark)
        driver.execute_script(
            "const i = state.rows.findIndex(r => r.marked && /\\w/.test("
            "r.text.slice(r.marked[0], r.marked[1]))); return select(Math.max(0, i))"
        )
        wait(driver, "return state.detail && state.detail.word && /\\w/.test(state.detail.word)")
        driver.execute_script("openLexicon(state.detail.word)")
        driver.switch_to.active_element.send_keys("sir uh")
        wait(driver, "return document.getElementById('lex-count').textContent.length > 0")
        driver.set_window_size(1400, 1240)  # the line, its takes and the form in one view
        time.sleep(0.5)
        driver.save_screenshot(str(args.docs / "review-lexicon.png"))
    finally:
        driver.quit()
        review.stop()
    print(f"wrote {args.docs / 'review.png'} and {args.docs / 'review-lexicon.png'}")


if __name__ == "__main__":
    main()
