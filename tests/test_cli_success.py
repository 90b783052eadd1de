"""The success paths of the commands a user types, end to end in a subprocess with espeak: `ab`
writes its report, `rerender` puts one utterance back with more candidates, and `render` with a
valid `--voice-ref` scores every candidate against that reference."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser

import pytest
import soundfile as sf

CLI = [sys.executable, "-m", "verified_tts"]
ESPEAK = ["--generator", "espeak"]


def run(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    book = folder / "book.md"
    book.write_text(
        "# Two\n\nThe birch canoe slid on the smooth planks. Rice is often served in round "
        "bowls.\n",
        encoding="utf-8",
    )
    done = run("render", str(book), "--out", str(folder / "out"), *ESPEAK, "-n", "2")
    (folder / "render.stdout").write_text(done.stdout + done.stderr, encoding="utf-8")
    return book, folder / "out"


def test_render_summary_says_what_selection_changed_not_the_verifiers_own_wer(rendered):
    book, out = rendered
    printed = " ".join((out.parent / "render.stdout").read_text(encoding="utf-8").split())
    manifest = json.loads((out / "manifest.json").read_text())
    changed = sum(1 for u in manifest["utterances"] if u["winner"] != 0)
    assert manifest["stats"]["lines_take_changed"] == changed
    assert "lines whose kept take is not the" in printed and "mean WER" not in printed
    assert f"verified-tts ab {book} --n 1 --n 8 --judge-asr bundled:base" in printed
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "lines whose kept take is not the first" in report and "mean WER" not in report


@pytest.mark.slow
def test_rerender_puts_one_utterance_back_with_more_candidates(rendered):
    _, out = rendered
    before = json.loads((out / "manifest.json").read_text())
    target = next(u for u in before["utterances"] if u["kind"] != "heading")
    done = run("rerender", str(out), "-u", target["key"][:8], "-n", "4", *ESPEAK)
    after = json.loads((out / "manifest.json").read_text())
    again = next(u for u in after["utterances"] if u["key"] == target["key"])
    assert len(again["candidates"]) == 4
    assert [c["seed"] for c in again["candidates"][:2]] == [c["seed"] for c in target["candidates"]]
    others = [u for u in after["utterances"] if u["key"] != target["key"]]
    assert [(u["key"], u["winner"]) for u in others] == [
        (u["key"], u["winner"]) for u in before["utterances"] if u["key"] != target["key"]
    ]
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_ab_writes_its_report_with_both_arms(rendered, tmp_path):
    book, _ = rendered
    out = tmp_path / "ab"
    run("ab", str(book), "--n", "1", "--n", "2", "--out", str(out), *ESPEAK)
    report = json.loads((out / "ab.json").read_text())
    text = json.dumps(report)
    assert (out / "ab.html").is_file()
    assert '"n": 1' in text and '"n": 2' in text
    # ab.json: one fixed N=2 render (its manifest beside it), scored as two arms
    manifest = json.loads((out / report["manifest"]).read_text())
    assert report["ns"] == [1, 2] and report["n_max"] == 2
    assert [arm["n"] for arm in report["arms"]] == [1, 2]
    rows = {row["key"]: row for row in report["utterances"]}
    rendered_keys = [u["key"] for u in manifest["utterances"]]
    assert sorted(rows) == sorted(rendered_keys) and len(rows) == len(rendered_keys) >= 2
    for utterance in manifest["utterances"]:
        arms = rows[utterance["key"]]["arms"]
        assert arms["1"]["winner"] == 0  # N=1 is candidate 0
        assert arms["2"]["winner"] == utterance["winner"]  # N=2 is the render's own choice
        for n, arm in arms.items():
            chosen = utterance["candidates"][arm["winner"]]
            assert arm["audio"] == chosen["audio"] and (out / arm["audio"]).is_file(), n
            assert arm["scores"] == chosen["scores"]
    for arm in report["arms"]:
        n = str(arm["n"])
        assert arm["utterances"] == len(rows)
        winners_wer = [row["arms"][n]["scores"]["wer"] for row in rows.values()]
        assert arm["wer"] == pytest.approx(sum(winners_wer) / len(winners_wer), abs=1e-3)
    changed = sum(row["arms"]["1"]["winner"] != row["arms"]["2"]["winner"] for row in rows.values())
    assert report["arms"][1]["changed_from_n1"] == changed
    # ab.html: the same utterances, each row with both arms' winners playing
    page = _Table()
    page.feed((out / "ab.html").read_text(encoding="utf-8"))
    assert page.title == "A/B: N=1 vs N=2"
    assert len(page.rows) == len(rows)
    for players in page.rows:
        assert len(players) == 2 and all((out / src).is_file() for src in players)
    played = {tuple(players) for players in page.rows}
    assert played == {(r["arms"]["1"]["audio"], r["arms"]["2"]["audio"]) for r in rows.values()}


class _Table(HTMLParser):
    """ab.html's heading and, per row of the utterance table, the players' sources."""

    def __init__(self) -> None:
        super().__init__()
        self.title, self.rows = "", []
        self._in_h1 = self._in_table = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self._in_h1 = self._in_h1 or tag == "h1"
        if tag == "table" and values.get("id") == "utterance-table":
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag == "audio" and self.rows:
            self.rows[-1].append(values["src"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "h1":
            self._in_h1 = False
        if tag == "table":
            self._in_table = False
        if tag == "thead":
            self.rows = []  # the header row holds no players

    def handle_data(self, data: str) -> None:
        if self._in_h1:
            self.title += data


@pytest.mark.slow
def test_render_with_a_valid_voice_reference_scores_against_it(rendered, tmp_path):
    book, out = rendered
    reference = tmp_path / "reference.wav"
    audio, rate = sf.read(out / "book.wav")
    sf.write(reference, audio, rate)
    with_ref = tmp_path / "with-ref"
    run("render", str(book), "--out", str(with_ref), *ESPEAK, "-n", "2", "--voice-ref",
        str(reference))  # fmt: skip
    manifest = json.loads((with_ref / "manifest.json").read_text())
    assert manifest["voice_ref"] and manifest["voice_ref"].endswith("reference.wav")
    candidates = [c for u in manifest["utterances"] for c in u["candidates"]]
    # a take too short to judge the voice by (a heading) has no speaker score; the rest do
    speaker = [c["scores"]["speaker"] for c in candidates if "speaker" in c["scores"]]
    assert len(speaker) >= len(candidates) // 2 and all(0.0 < s <= 1.0 for s in speaker)
    # its own voice: the reference is the same espeak voice, so similarity is high
    assert sum(speaker) / len(speaker) > 0.6
