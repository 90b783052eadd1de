"""Generated blocks of the HTTP service's figures: load, batching and start-up (docs/service.md).

Rendered from benchmarks/results/serve_load.json (benchmarks/distributed/serve_load.py) and
benchmarks/results/serve_startup.json (benchmarks/distributed/serve_startup.py); labels are
written here, every figure is read. The runs' notes say the cores were shared, and the load
average they sampled is shown beside the figures.
"""

from __future__ import annotations

from benchmarks.tables.doc_blocks import Generated, md_table, num, pct, result

__all__ = ["BLOCKS"]


def serve_load() -> str:
    data = result("serve_load")
    service, render, checks = data["service"], data["render"], data["checks"]
    batching, ratio, start = data["batching"], data["ratio"], data["startup"]
    loads = [sample[0] for sample in data["load_average_samples"]] or [0.0]
    kept = "yes" if checks["no_request_lost_or_answered_twice"] else "no"
    met = "met" if ratio["goal_met"] else "not met"
    rows = [
        ("clients, seconds of load", f"{data['options']['clients']}, "
         f"{num(data['options']['duration_s'], 0)}"),
        ("requests answered / sent", f"{checks['answered_200']} / {checks['requests']}"),
        ("every request answered once, with its own input and seed", kept),
        ("latency p50 / p95, s", f"{num(service['latency_p50_s'], 1)} / "
         f"{num(service['latency_p95_s'], 1)}"),
        ("service: audio s per s", num(service["audio_s_per_s"], 2)),
        ("render of the same sentences: audio s per s (loading excluded)",
         num(render["audio_s_per_s_rendering"], 2)),
        ("service / render (goal: 80%)", f"{pct(ratio['service_over_render_rendering'])} "
         f"({met})"),
        ("candidates per sentence, service / render",
         f"{num(service['mean_candidates_per_answer'], 2)} / "
         f"{num(render['mean_candidates_per_utterance'], 2)}"),
        ("batches run, mean requests per batch",
         f"{batching['batches_run']}, {num(batching['mean_batch'], 1)}"),
        ("start to the address line, s (goal: under 30)",
         num(start["seconds_to_address_line"], 1)),
        ("load average (1 min) during the run, min / max", f"{num(min(loads), 2)} / "
         f"{num(max(loads), 2)}"),
    ]  # fmt: skip
    return md_table(("", "measured"), rows)


def serve_startup() -> str:
    data = result("serve_startup")
    summary, starts = data["summary"], data["starts"]
    loads = [start["load_average_1min_before"] for start in starts]
    met = "met" if summary["goal_met"] else "not met"
    rows = [
        ("starts, each in a fresh folder", str(len(starts))),
        ("start to the address line, median / max, s (goal: under 30)",
         f"{num(summary['median_s'], 1)} / {num(summary['max_s'], 1)} ({met})"),
        ("fastest start, s", num(summary["min_s"], 1)),
        ("one line, the address, at every start",
         "yes" if summary["one_line_every_start"] else "no"),
        ("the printed address answered with the token every time",
         "yes" if summary["every_address_answers"] else "no"),
        ("stop after SIGTERM, median, s", num(summary["median_stop_s"], 1)),
        ("load average (1 min) before the starts, min / max",
         f"{num(min(loads), 2)} / {num(max(loads), 2)}"),
    ]  # fmt: skip
    return md_table(("", "measured"), rows)


BLOCKS = {
    "serve-load": Generated(("serve_load",), serve_load),
    "serve-startup": Generated(("serve_startup",), serve_startup),
}
