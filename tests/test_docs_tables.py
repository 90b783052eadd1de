"""The docs' figures come from their result files, and the config reference from the options types.

Every generated block of README.md and docs/*.md must equal what benchmarks/tables/make_tables.py
renders from benchmarks/results/*.json today, every number it shows must be a value of those files,
and a figure written in a paragraph that cites a result file must be in that file. The configuration
reference must list every key of every options type, each with a description.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.selection import judgement_replays
from benchmarks.tables import (
    doc_blocks,
    make_tables,
    options_reference,
    tables_real_books,
    tables_review,
)

ROOT = Path(__file__).resolve().parent.parent


def test_every_generated_block_matches_its_files() -> None:
    assert make_tables.check() == []


def test_citing_an_archived_result_fails() -> None:
    archived = sorted((ROOT / "benchmarks" / "results" / "archive").glob("*.json"))
    assert archived
    text = f"An old step (`benchmarks/results/{archived[0].name}`).\n"
    problems = make_tables.archive_problems(ROOT / "docs" / "x.md", text)
    assert problems == [
        f"docs/x.md: cites {archived[0].name}, which is archived (cite a current result file)"
    ]


def test_a_figure_edited_by_hand_fails() -> None:
    path = ROOT / "README.md"
    text = path.read_text(encoding="utf-8")
    assert "<!-- figure: demo -->" in text
    edited = re.sub(r"(<!-- figure: demo -->)(\d+)", lambda m: m[1] + str(int(m[2]) + 1), text)
    assert edited != text
    problems = make_tables.block_problems(path, edited)
    assert any("'demo' differs" in p for p in problems)
    assert any("which is not in render_benchmark" in p for p in problems)


def _measured_memory_ratio() -> str:
    path = ROOT / "benchmarks" / "results" / "reliability.json"
    measured = json.loads(path.read_text(encoding="utf-8"))
    return f"{measured['memory']['peak_rss_ratio_1000_vs_100']:.2f}"


def test_a_figure_written_into_the_generator_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    hand_written = doc_blocks.Generated(("reliability",), lambda: "peak memory 1.36x", labels=0)
    monkeypatch.setitem(make_tables.REGISTRY, "memory-by-hand", hand_written)
    text = "<!-- figure: memory-by-hand -->peak memory 1.36x<!-- /figure -->"
    problems = make_tables.block_problems(ROOT / "docs" / "x.md", text)
    assert problems == ["docs/x.md: 'memory-by-hand' shows 1.36, which is not in reliability"]
    ratio = _measured_memory_ratio()
    from_the_file = doc_blocks.Generated(
        ("reliability",), lambda: f"peak memory {ratio}x", labels=0
    )
    monkeypatch.setitem(make_tables.REGISTRY, "memory-by-hand", from_the_file)
    text = f"<!-- figure: memory-by-hand -->peak memory {ratio}x<!-- /figure -->"
    assert make_tables.block_problems(ROOT / "docs" / "x.md", text) == []


def test_a_table_cell_not_in_its_file_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    body = doc_blocks.md_table(("N", "judge WER"), [("N=8", "0.048"), ("N=1", "0.065")])
    spec = doc_blocks.Generated(("ab_benchmark",), lambda: body)
    monkeypatch.setitem(make_tables.REGISTRY, "ab-by-hand", spec)
    text = f"<!-- table: ab-by-hand -->\n{body}\n<!-- /table -->"
    problems = make_tables.block_problems(ROOT / "docs" / "x.md", text)
    assert problems == ["docs/x.md: 'ab-by-hand' shows 0.065, which is not in ab_benchmark"]


def test_a_prose_figure_must_be_in_the_file_it_cites() -> None:
    path = ROOT / "docs" / "x.md"
    wrong = "Peak memory grew 1.36x (`benchmarks/results/reliability.json`).\n"
    assert make_tables.prose_problems(path, wrong) == [
        "docs/x.md: '1.36' is not in reliability.json"
    ]
    ratio = _measured_memory_ratio()
    right = f"Peak memory grew {ratio}x (benchmarks/results/reliability.json).\n"
    assert make_tables.prose_problems(path, right) == []
    shares = "AAC overshoots by 0.87 dB; 64% of clips pass (demo_acx.json, ab_benchmark.json)."
    assert [p.split(": ")[1] for p in make_tables.prose_problems(path, shares)] == [
        "'0.87' is not in demo_acx, ab_benchmark.json"
    ]
    uncited = "AAC overshoots by 0.87 dB.\n\nSee `demo_acx.json`.\n"
    assert make_tables.prose_problems(path, uncited) == []  # only paragraphs that cite a file


def test_an_unknown_block_fails() -> None:
    text = "<!-- table: no-such-table -->\n| a |\n<!-- /table -->"
    assert make_tables.block_problems(ROOT / "README.md", text) == [
        "README.md: no generated block named 'no-such-table'"
    ]


def test_the_replayed_judgements_are_todays() -> None:
    """judgement_replays.json (the speaker-term and held-out figures) is what today's selection
    code gives on the committed candidate scores."""
    committed = json.loads((doc_blocks.RESULTS / "judgement_replays.json").read_text())
    inputs = [doc_blocks.RESULTS / name for name in judgement_replays.INPUTS]
    assert committed["speaker_term"] == [judgement_replays.speaker_term(p) for p in inputs]
    assert committed["per_clip_default_on_101_300"] == json.loads(
        json.dumps(judgement_replays.per_clip_default_on_101_300())
    )
    rejected = judgement_replays.all_rejected(doc_blocks.RESULTS / "candidate_judgements.json")
    assert committed["all_rejected"] == rejected


def _real_books(
    share: float,
    ratio: float,
    low: float,
    utterances: int,
    rtf: float | None = None,
    seeded: bool = False,
) -> dict:
    paired = {"mean_gain": 0.01, "ci95": [low, 0.02], "better": 30, "worse": 10, "same": 260}
    figures = {
        "utterances": utterances,
        "flagged": round(share * utterances),
        "flagged_share": share,
        "flagged_judge_hears_perfectly": 1,
        "judge_wer_flagged_winners": 0.3,
        "judge_wer_other_winners": round(0.3 / ratio, 4),
        "judge_wer_ratio_flagged_to_rest": ratio,
        "judge_gain_n8_over_candidate0": paired,
    }
    if rtf is not None:  # a render's timing; one seeded from another's takes is not a speed
        figures["timing"] = {"real_time_factor": rtf, "load_average_at_end": [0.5, 0.4, 0.3]}
        if seeded:
            figures["timing"]["seeded_from"] = "/tmp/store"
    return {"after": figures}


@pytest.mark.parametrize(
    ("figures", "verdicts"),
    [
        (_real_books(0.02, 3.5, 0.001, 315), ["met", "met", "-", "met"]),
        (_real_books(0.067, 2.9, -0.001, 315), ["not met", "not met", "-", "not met"]),
        (_real_books(0.02, 3.5, 0.001, 299), ["met", "met", "-", "not met"]),
        (_real_books(0.02, 3.5, 0.001, 315, rtf=0.24), ["met", "met", "-", "met", "met"]),
        (_real_books(0.02, 3.5, 0.001, 315, rtf=0.33), ["met", "met", "-", "met", "not met"]),
        (_real_books(0.02, 3.5, 0.001, 315, rtf=0.2, seeded=True), ["met", "met", "-", "met"]),
    ],
)
def test_the_real_books_goals_are_read_from_the_file(
    monkeypatch: pytest.MonkeyPatch, figures: dict, verdicts: list[str]
) -> None:
    monkeypatch.setattr(tables_real_books, "result", lambda stem: figures)
    rows = tables_real_books.goals_table("real_books_held_out").splitlines()[2:]
    assert [row.strip("| ").rsplit(" | ", 1)[1] for row in rows] == verdicts
    share = figures["after"]["flagged_share"]
    assert f"{share * 100:.1f}%" in rows[0]


def _review(later: float, first: float) -> dict:
    """A review.json as review_benchmark.py writes it since the review index."""

    def opened(seconds: float) -> dict:
        return {"to_address_s": seconds - 0.2, "page_s": 0.2, "open_s": seconds,
                "samples_open_s": [seconds]}  # fmt: skip

    return {
        "open": [
            {"lines": n, "manifest_mb": 6.5 * n / 100, "index_mb": 0.1, "first": opened(first),
             "later": opened(later)}
            for n in (100, 10000)
        ],
        "machine": {"cpus": 16, "load_average_before": [0.1, 0.2, 0.3]},
    }  # fmt: skip


@pytest.mark.parametrize(("later", "verdict"), [(0.91, "under"), (2.31, "over")])
def test_the_review_open_times_and_goal_are_read_from_the_file(
    monkeypatch: pytest.MonkeyPatch, later: float, verdict: str
) -> None:
    monkeypatch.setattr(tables_review, "result", lambda stem: _review(later, 12.5))
    rows = tables_review.review_open().splitlines()
    assert "first open (s)" in rows[0] and "later open (s)" in rows[0]
    assert rows[3].startswith("| 10,000 | 650.0 | 0.1 | 12.50 | " + f"{later:.2f} |")
    goal = tables_review.review_open_goal()
    assert f"in {later:.2f} s with its index, {verdict} the 2 s goal" in goal
    assert "in 12.50 s the first time" in goal and "on 16 cores" in goal


def _options_types() -> dict[str, type]:
    from verified_tts.generators.espeak import EspeakOptions
    from verified_tts.generators.llasa import LlasaOptions
    from verified_tts.generators.orpheus import OrpheusOptions
    from verified_tts.generators.piper import PiperOptions
    from verified_tts.generators.spark import SparkOptions
    from verified_tts.options import AssemblyOptions, DubOptions, ProductionOptions, RayOptions
    from verified_tts.selection.search import SearchOptions
    from verifiers import VERIFIERS

    return {
        "assembly": AssemblyOptions,
        "production": ProductionOptions,
        "ray": RayOptions,
        "dub": DubOptions,
        "search": SearchOptions,
        "generator.piper": PiperOptions,
        "generator.espeak": EspeakOptions,
        "generator.orpheus": OrpheusOptions,
        "generator.llasa": LlasaOptions,
        "generator.spark": SparkOptions,
        **{f"verifiers.{name}": kind.options for name, kind in VERIFIERS.items()},
    }


def test_the_config_reference_lists_every_key_with_a_description() -> None:
    rows = options_reference.option_rows()
    keys = {(row.table, row.key) for row in rows}
    for table, cls in _options_types().items():
        for field in dataclasses.fields(cls):
            assert (table, field.name) in keys, f"[{table}] {field.name} is not in the reference"
    for key in ("candidates", "seed", "adaptive", "keep", "max_chars", "window", "prefetch"):
        assert ("", key) in keys
    undocumented = [f"[{row.table}] {row.key}" for row in rows if not row.doc.strip()]
    assert undocumented == []
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for table in ("[production]", "[assembly]", "[search]", "[ray]", "[dub]", "[selection]"):
        assert f"**`{table}`**" in reference
    assert "| `max_chars` |" in reference and "| `split_hours` |" in reference


def test_the_reference_renders_any_rows() -> None:
    rows = [
        options_reference.OptionRow("t", "a", "int", "1", "the a"),
        options_reference.OptionRow("t", "b", "str", '"x|y"', "the b"),
    ]
    assert options_reference.reference_markdown(rows) == (
        "**`[t]`**\n\n| key | type | default | what it does |\n| --- | --- | --- | --- |\n"
        '| `a` | int | `1` | the a |\n| `b` | str | `"x\\|y"` | the b |'
    )


def test_the_readme_stays_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert 100 < lines < 250


@pytest.mark.slow
def test_the_readme_python_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = re.search(r"## From Python\n\n```python\n(.*?)```", readme, re.S)
    assert example, "README has a Python example"
    # the example's code as printed, on the demo book cut to its first paragraph (the whole
    # demo book is rendered by tests/test_readalong_render.py)
    (tmp_path / "examples").mkdir()
    demo = (ROOT / "examples" / "book.md").read_text(encoding="utf-8")
    short = "\n\n".join(demo.split("\n\n")[:5])
    (tmp_path / "examples" / "book.md").write_text(short + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", example.group(1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.match(r"\d+ utterances, \d+ flagged\n", done.stdout)
    assert len(done.stdout.splitlines()) == 4
    assert (tmp_path / "out" / "api" / "manifest.json").is_file()
