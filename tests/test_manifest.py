"""``manifest.json`` through the typed records: real manifests of a render, a rerender and a dub
read with ``Manifest.from_json`` and written with ``to_json`` come back byte for byte, and the
records read what the file holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verified_tts.output.manifest import (
    MANIFEST_FORMAT,
    CandidateRecord,
    Manifest,
    RerenderMark,
    UtteranceRecord,
    read_manifest,
    write_manifest,
)
from verified_tts.workflows.dub import dub
from verified_tts.workflows.render import render
from verified_tts.workflows.rerender import rerender

BOOK = """# One

The birch canoe slid on the smooth planks.

## Two

Glue the sheet to the dark blue background.
"""

SUBTITLES = """1
00:00:00,500 --> 00:00:02,500
The birch canoe slid on the smooth planks.

2
00:00:03,000 --> 00:00:05,000
ANN: Glue the sheet to the dark blue background.
"""


def written(data: dict) -> str:
    """JSON exactly as the output writer formats it."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, synthesizer_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("manifest")
    book = folder / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    subtitles = folder / "lines.srt"
    subtitles.write_text(SUBTITLES, encoding="utf-8")
    synthesizer = synthesizer_factory(candidates=2, adaptive=False)
    render(book, folder / "render", synthesizer.config, synthesizer=synthesizer)
    render(book, folder / "rerender", synthesizer.config, synthesizer=synthesizer)
    first = read_manifest(folder / "rerender").utterances[1].key
    rerender(folder / "rerender", first, n=3, synthesizer=synthesizer)
    dub(subtitles, folder / "dub", synthesizer.config, synthesizer=synthesizer, voices={})
    return {name: folder / name for name in ("render", "rerender", "dub")}


@pytest.mark.parametrize("run", ["render", "rerender", "dub"])
def test_a_real_manifest_round_trips_exactly(runs, run):
    text = (runs[run] / "manifest.json").read_text(encoding="utf-8")
    data = json.loads(text)
    manifest = Manifest.from_json(data)
    assert written(manifest.to_json()) == text  # same keys, same order, same values
    assert Manifest.from_json(manifest.to_json()) == manifest
    for utterance, raw in zip(manifest.utterances, data["utterances"], strict=True):
        assert written(utterance.to_json()) == written(raw)
        assert UtteranceRecord.from_json(raw) == utterance
        for candidate, raw_candidate in zip(utterance.candidates, raw["candidates"], strict=True):
            assert candidate.to_json() == raw_candidate or written(candidate.to_json()) == written(
                raw_candidate
            )  # NaN scores compare unequal as floats, equal as text
            assert CandidateRecord.from_json(raw_candidate).to_json().keys() == raw_candidate.keys()


def test_the_records_read_what_the_file_holds(runs):
    render_manifest = read_manifest(runs["render"])
    raw = json.loads((runs["render"] / "manifest.json").read_text(encoding="utf-8"))
    assert render_manifest.format == MANIFEST_FORMAT == raw["format"]
    assert render_manifest.generator == raw["generator"] == "espeak"
    assert render_manifest.n == 2 and render_manifest.adaptive is False
    assert [c.index for c in render_manifest.chapters] == [c["index"] for c in raw["chapters"]]
    assert render_manifest.book.flac == raw["book"]["flac"]
    assert render_manifest.dub is None and "dub" not in render_manifest.to_json()
    first = render_manifest.utterances[0]
    assert first.text == raw["utterances"][0]["text"]
    assert first.winner_candidate.audio == first.audio and first.audio.startswith("store/")
    assert (runs["render"] / first.audio).is_file()
    assert first.winner_candidate.scores == raw["utterances"][0]["candidates"][first.winner][
        "scores"
    ]  # fmt: skip
    assert first.rerendered is None and "rerendered" not in first.to_json()

    rerendered = read_manifest(runs["rerender"])
    marks = [u.rerendered for u in rerendered.utterances]
    assert marks[0] is None and isinstance(marks[1], RerenderMark) and marks[1].n == 3
    assert len(rerendered.utterances[1].candidates) == 3

    dubbed = read_manifest(runs["dub"])
    assert dubbed.dub == "dub.json" and dubbed.chapters == ()
    assert dubbed.book.wav == "track.wav"


def test_keys_a_record_does_not_know_are_kept(runs, tmp_path):
    data = json.loads((runs["render"] / "manifest.json").read_text(encoding="utf-8"))
    data["added_later"] = {"x": 1}
    data["utterances"][0]["note"] = "kept"
    data["utterances"][0]["candidates"][0]["extra_metric_source"] = "v2"
    manifest = Manifest.from_json(data)
    assert manifest.extra == {"added_later": {"x": 1}}
    write_manifest(tmp_path, manifest)
    assert (tmp_path / "manifest.json").read_text(encoding="utf-8") == written(data)


@pytest.mark.parametrize("run", ["render", "rerender", "dub"])
def test_the_manifest_records_the_whole_config_and_older_ones_still_read(runs, run):
    from verified_tts.options import RenderConfig, from_table

    data = json.loads((runs[run] / "manifest.json").read_text(encoding="utf-8"))
    assert list(data)[-1] == "config"  # an addition after every key older readers know
    config = from_table(RenderConfig, data["config"])
    assert config.candidates == data["n"] and config.seed == data["seed"]
    assert config.generator.name == data["generator"]
    older = {k: v for k, v in data.items() if k != "config"}
    assert Manifest.from_json(older).config is None
    assert Manifest.from_json(older).to_json() == older
