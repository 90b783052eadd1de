"""How fast `verified-tts review` is for a producer: opening a book, a choice reaching its chapter
file, and delivering the demo book after one change -> benchmarks/results/review.json.

1. The demo book (examples/book.md) is rendered with the default settings (or --generator) and
   every deliverable (WAV, FLAC, M4B, MP3), unless --out already holds that render.
2. Open: for 100, 1,000 and 10,000 lines, a manifest is made from the real render's records (each
   line a copy of one of the demo's, with its own key, so every line carries real candidates and
   scores), written as a render writes it. `verified-tts review` is started as a user starts it
   and timed to its printed address (process start, imports, opening the review index, folding
   the log, ordering), then headless chromium (started beforehand) is timed from opening that
   address to the page showing the worst line with its takes. Each size is opened twice over:
   "first" without a review index (a folder rendered before the index existed: the review builds
   it, reading the whole manifest once), "later" with the index in place (what a render, a dub or
   an earlier review leaves). Each is opened --repeats times; the medians are reported.
3. Choose, then deliver: on a copy of the demo render the app chooses another kept take of one
   line, then delivers; the delivery reports the seconds of each step, so "choose to chapter file"
   is the choice's request plus the delivery up to the rebuilt chapter, and "deliver" the choice
   plus the whole delivery (the changed chapter, the book files, M4B, MP3, the ACX check, the
   manifest and the report). Each repeat chooses a different take, so the chapter changes each
   time.

Timing figures: run it on idle cores (see the docstring's command in docs/review.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
RESULT = ROOT / "benchmarks" / "results" / "review.json"


def render_demo(out: Path, generator: str | None) -> None:
    from verified_tts.config import build_config
    from verified_tts.workflows.render import render

    if (out / "manifest.json").is_file():
        return
    overrides = {"generator": generator} if generator else {}
    config = build_config({}, production={"formats": "wav,flac,m4b,mp3"}, **overrides)
    render(ROOT / "examples" / "book.md", out, config)


def synthesise(demo: Path, size: int, into: Path) -> Path:
    """An output folder whose manifest has ``size`` lines copied from the demo's records, laid
    out as a render writes it, with no review index yet."""
    from verified_tts.storage.atomic import write_json_atomic

    manifest = json.loads((demo / "manifest.json").read_text(encoding="utf-8"))
    lines = manifest["utterances"]
    made = []
    for i in range(size):
        line = json.loads(json.dumps(lines[i % len(lines)]))
        line["key"] = f"{line['key']}-{i:06d}"
        line["line"] = i + 1
        made.append(line)
    manifest["utterances"] = made
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    write_json_atomic(into / "manifest.json", manifest)
    return into


class Review:
    """`verified-tts review FOLDER` in its own process, with the seconds until its address."""

    def __init__(self, folder: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "verified_tts", "review", str(folder), "--no-browser",
             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        )  # fmt: skip
        for line in self.process.stdout:
            if line.startswith("open http"):
                self.url = line.split("open ", 1)[1].strip()
                break
        else:
            raise SystemExit(f"the review of {folder} did not start")
        self.address_seconds = time.perf_counter() - started
        self.base = self.url.split("/?token=")[0]
        self.token = self.url.split("token=")[1]

    def api(self, path: str, body: dict | None = None) -> dict:
        import urllib.request

        headers = {"X-Review-Token": self.token, "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def chromium():
    os.environ.setdefault("SE_OFFLINE", "1")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--window-size=1400,900"):  # fmt: skip
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def page_seconds(driver, url: str) -> float:
    started = time.perf_counter()
    driver.get(url)
    while driver.execute_script(
        "return !(document.body.dataset.ready === '1' && state.detail && "
        "document.querySelectorAll('table.takes tbody tr').length > 0)"
    ):
        time.sleep(0.01)
    return time.perf_counter() - started


def open_once(driver, folder: Path) -> tuple[float, float]:
    """(seconds to the printed address, seconds from the address to the page) of one open."""
    review = Review(folder)
    try:
        return review.address_seconds, page_seconds(driver, review.url)
    finally:
        review.stop()


def summarise(samples: list[tuple[float, float]]) -> dict:
    median = lambda values: round(statistics.median(values), 3)  # noqa: E731
    return {
        "to_address_s": median([a for a, _ in samples]),
        "page_s": median([p for _, p in samples]),
        "open_s": median([a + p for a, p in samples]),
        "samples_open_s": [round(a + p, 3) for a, p in samples],
    }


def measure_open(demo: Path, work: Path, sizes: list[int], repeats: int) -> list[dict]:
    from verified_tts.review.index import INDEX_FILE

    driver = chromium()
    results = []
    try:
        for size in sizes:
            folder = synthesise(demo, size, work / f"open-{size}")
            first, later = [], []
            for _ in range(repeats):  # no index: this open builds it
                (folder / INDEX_FILE).unlink(missing_ok=True)
                first.append(open_once(driver, folder))
            if not (folder / INDEX_FILE).is_file():
                raise SystemExit(f"the review of {folder} wrote no index")
            for _ in range(repeats):  # the index the first open left
                later.append(open_once(driver, folder))
            results.append({
                "lines": size,
                "manifest_mb": round((folder / "manifest.json").stat().st_size / 1e6, 1),
                "index_mb": round((folder / INDEX_FILE).stat().st_size / 1e6, 1),
                "first": summarise(first),
                "later": summarise(later),
            })  # fmt: skip
            print(json.dumps(results[-1]), flush=True)
    finally:
        driver.quit()
    return results


def measure_choose(demo: Path, work: Path, repeats: int) -> dict:
    folder = work / "choose"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(demo, folder, ignore=shutil.ignore_patterns("review", "verified-tts.lock"))
    review = Review(folder)
    chapter_s, deliver_s, choose_s, stages = [], [], [], []
    try:
        rows = review.api("/api/lines?limit=1")["rows"]
        position = rows[0]["pos"]
        line = review.api(f"/api/line/{position}")
        takes = [c["index"] for c in line["candidates"] if c["audio"]]
        winner = line["winner"]
        for attempt in range(repeats):
            # never the take the book holds now, so the chapter changes every time
            others = [t for t in takes if t != winner]
            take = others[attempt % len(others)]
            winner = take
            started = time.perf_counter()
            review.api("/api/choose", {"pos": position, "candidate": take})
            chose = time.perf_counter() - started
            review.api("/api/deliver", {})
            while True:
                job = review.api("/api/jobs")["jobs"][-1]
                if job["state"] in ("done", "failed"):
                    break
                time.sleep(0.05)
            if job["state"] == "failed":
                raise SystemExit(f"delivery failed: {job['error']}")
            done = job["result"]
            choose_s.append(chose)
            chapter_s.append(chose + done["stages"]["read"] + done["stages"]["chapters"])
            deliver_s.append(chose + done["seconds"])
            stages.append(done["stages"])
            print(json.dumps({"choose_s": chose, **done}), flush=True)
    finally:
        review.stop()
    median = lambda values: round(statistics.median(values), 3)  # noqa: E731
    return {
        "line": position,
        "choose_request_s": median(choose_s),
        "choose_to_chapter_file_s": median(chapter_s),
        "deliver_after_one_change_s": median(deliver_s),
        "stages_s": {k: median([s[k] for s in stages]) for k in stages[0]},
        "samples_deliver_s": [round(t, 3) for t in deliver_s],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "review-benchmark")
    parser.add_argument("--generator", default=None, help="default: the project's default")
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--result", type=Path, default=RESULT)
    parser.add_argument("--open-only", action="store_true",
                        help="measure opening only (no choose and deliver)")  # fmt: skip
    args = parser.parse_args()
    demo = args.out / "demo"
    load_before = os.getloadavg()
    render_demo(demo, args.generator)
    manifest = json.loads((demo / "manifest.json").read_text(encoding="utf-8"))
    opened = measure_open(demo, args.out, [int(s) for s in args.sizes.split(",")], args.repeats)
    chose = None if args.open_only else measure_choose(demo, args.out, args.repeats)
    result = {
        "benchmark": "review",
        "command": " ".join(sys.argv),
        "demo": {"book": "examples/book.md", "generator": manifest["generator"],
                 "lines": len(manifest["utterances"]), "n": manifest["n"],
                 "formats": manifest["production"]["formats"],
                 "chapters": len(manifest["chapters"])},  # fmt: skip
        "open": opened,
        **({"choose_and_deliver": chose} if chose is not None else {}),
        "repeats": args.repeats,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},  # fmt: skip
    }
    args.result.parent.mkdir(parents=True, exist_ok=True)
    args.result.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.result}")


if __name__ == "__main__":
    main()
