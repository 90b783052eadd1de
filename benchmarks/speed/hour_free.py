"""The real-time factor of the real-prose renders with the machine's hour taken out.

The two cores these renders run on change speed from hour to hour by more than the changes being
measured, so each render since the sixth held-out sample probes the machine before and after it
(benchmarks/speed/machine_speed.py: Piper's plain graph on a fixed workload, CPU seconds per second
of audio). This divides each render's real-time factor by the mean of its two probes, which gives
what the render costs per probe second, comparable across hours, and the probe at which its
real-time factor would be at the goal of 0.25. Renders whose probes ran another graph are left
out.

Usage: python -m benchmarks.speed.hour_free [--output benchmarks/results/hour_free.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
GOAL = 0.25  # the real-time factor goal on real prose, for the tables too
# the seventh render's probes loaded the default voice, planar by then, and do not say so
PLANAR_UNSAID = frozenset({"real_books_held_out_g"})


def hour_free(result: dict) -> dict | None:
    """The render's cost per probe second, or None without two plain-graph probes."""
    timing = result.get("after", {}).get("timing", {})
    probes = timing.get("machine_speed") or []
    if len(probes) != 2 or any(p.get("graph", "plain") != "plain" for p in probes):
        return None
    probe = statistics.fmean(p["cpu_seconds_per_audio_second"] for p in probes)
    ratio = timing["real_time_factor"] / probe
    return {
        "real_time_factor": timing["real_time_factor"],
        "probe_mean": round(probe, 4),
        "seconds_per_probe_second": round(ratio, 2),
        "probe_at_goal": round(GOAL / ratio, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=RESULTS / "hour_free.json")
    args = parser.parse_args()
    renders = {}
    for path in sorted(RESULTS.glob("real_books_held_out_*.json")):
        if path.stem in PLANAR_UNSAID:
            continue
        figures = hour_free(json.loads(path.read_text()))
        if figures is not None:
            renders[path.stem] = figures
    out = {"command": "python -m benchmarks.speed.hour_free", "goal": GOAL, "renders": renders}
    args.output.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
