"""The machine-speed probe that real_books.py records beside a render's real-time factor."""

from __future__ import annotations

from pathlib import Path

from benchmarks.speed import machine_speed

ROOT = Path(__file__).resolve().parent.parent


def test_the_probe_is_a_fixed_workload_and_reports_its_cost_per_audio_second():
    first, again = machine_speed.probe_requests(3), machine_speed.probe_requests(3)
    assert first == again and len(first) == 3 * machine_speed.TAKES
    assert len({r.text for r in first}) == 3 and len({r.seed for r in first}) == len(first)
    found = machine_speed.probe(1)
    assert found["takes"] == machine_speed.TAKES and found["audio_seconds"] > 0
    assert found["graph"] == "plain"  # the graph of every earlier probe, whatever the default
    assert 0 < found["wall_seconds_per_audio_second"] < 5
    assert 0 < found["cpu_seconds_per_audio_second"] < 5


def test_hour_free_divides_by_the_mean_plain_probe_and_leaves_out_the_rest():
    from benchmarks.speed import hour_free

    def render(rtf, *probes):
        return {"after": {"timing": {"real_time_factor": rtf, "machine_speed": list(probes)}}}

    plain = [{"cpu_seconds_per_audio_second": 0.1}, {"cpu_seconds_per_audio_second": 0.15}]
    figures = hour_free.hour_free(render(0.3, *plain))
    assert figures == {
        "real_time_factor": 0.3,
        "probe_mean": 0.125,
        "seconds_per_probe_second": 2.4,
        "probe_at_goal": round(hour_free.GOAL / 2.4, 3),
    }
    planar = [{**p, "graph": "planar"} for p in plain]
    assert hour_free.hour_free(render(0.3, *planar)) is None
    assert hour_free.hour_free(render(0.3, plain[0])) is None
    assert hour_free.hour_free({"after": {}}) is None


def test_paired_renders_compare_b_with_a_by_round_and_their_choices():
    from benchmarks.speed import paired_renders

    def render(side, rtf, cpu, probe):
        timing = {"real_time_factor": rtf, "cpu_seconds": cpu}
        return {"side": side, "timing": timing, "probe": {"cpu_seconds_per_audio_second": probe}}

    # A B B A: each side's two renders are averaged before B is divided by A
    round_ = [render("a", 0.30, 100, 0.10), render("b", 0.24, 90, 0.12),
              render("b", 0.28, 70, 0.14), render("a", 0.34, 120, 0.10)]  # fmt: skip
    figures = paired_renders.ratios(round_)
    assert figures["real_time_factor"] == round(0.26 / 0.32, 4)
    assert figures["cpu_seconds"] == round(80 / 110, 4)
    assert figures["real_time_factor_per_probe_second"] == round(2.0 / 3.2, 4)

    a = {"choices": [["u1", 0, 2], ["u2", 3, 4]], "chapters": {"c1.flac": "x"}}
    b = {"choices": [["u1", 0, 2], ["u2", 1, 4]], "chapters": {"c1.flac": "y"}}
    assert paired_renders.compare(a, a) == {
        "utterances": 2, "same_winner_and_takes": 2, "same_utterances": True,
        "identical_chapter_audio": True,
    }  # fmt: skip
    assert paired_renders.compare(a, b)["same_winner_and_takes"] == 1
    assert not paired_renders.compare(a, b)["identical_chapter_audio"]


def test_paired_renders_name_the_working_tree_by_its_commit():
    from benchmarks.speed import paired_renders

    tree, commit = paired_renders.tree_of(".", ROOT / "benchmarks" / "work")
    assert tree == ROOT and len(commit.split()[0]) == 40
