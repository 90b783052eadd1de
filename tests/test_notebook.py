"""notebooks/ab_compare.ipynb runs top to bottom (nbclient) on the ab.json of a small A/B run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verified_tts.config import build_config
from verified_tts.workflows.ab import ab
from verified_tts.workflows.judge import load_judge

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "ab_compare.ipynb"
BOOK = """Glue the sheet to the dark blue background.

It's easy to tell the depth of a well.

Rice is often served in round bowls.
"""


@pytest.fixture(scope="module")
def ab_json(tmp_path_factory, synthesizer_factory) -> Path:
    folder = tmp_path_factory.mktemp("notebook")
    book = folder / "book.md"
    book.write_text(BOOK, encoding="utf-8")
    config = build_config({}, candidates=2, adaptive=False, generator="espeak")
    result = ab(
        book,
        folder / "out",
        config,
        ns=(1, 2),
        judge_asr=load_judge("bundled:base"),
        synthesizer=synthesizer_factory(candidates=2, adaptive=False),
        oracle=False,  # the notebook reads the winners' judge WER only: judge just those
    )
    data = json.loads(result.ab_json.read_text(encoding="utf-8"))
    winners = {(row["key"], arm["winner"]) for row in data["utterances"]
               for arm in row["arms"].values()}  # fmt: skip
    assert data["judge"]["clips"] == len(winners)  # each distinct winner once, no other take
    return result.ab_json


def test_notebook_executes_and_reports(ab_json, monkeypatch):
    import nbclient
    import nbformat

    monkeypatch.setenv("VERIFIED_TTS_AB_JSON", str(ab_json))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "arms N=[1, 2]" in text and "judge: bundled:base" in text
    assert "biggest wins of N=2 over N=1" in text and "biggest losses" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1  # the quality-vs-N and cost-vs-N figure
