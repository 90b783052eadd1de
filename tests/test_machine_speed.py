"""The machine-speed probe that real_books.py records beside a render's real-time factor."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import machine_speed  # noqa: E402


def test_the_probe_is_a_fixed_workload_and_reports_its_cost_per_audio_second():
    first, again = machine_speed.probe_requests(3), machine_speed.probe_requests(3)
    assert first == again and len(first) == 3 * machine_speed.TAKES
    assert len({r.text for r in first}) == 3 and len({r.seed for r in first}) == len(first)
    found = machine_speed.probe(2)
    assert found["takes"] == 2 * machine_speed.TAKES and found["audio_seconds"] > 0
    assert found["graph"] == "plain"  # the graph of every earlier probe, whatever the default
    assert 0 < found["wall_seconds_per_audio_second"] < 5
    assert 0 < found["cpu_seconds_per_audio_second"] < 5


def test_hour_free_divides_by_the_mean_plain_probe_and_leaves_out_the_rest():
    import hour_free

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
