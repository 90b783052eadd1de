"""Generated blocks of the system figures: render speed, production, reliability, dubbing, engines.

Each function renders one block of README.md or docs/*.md from its result files (see
doc_blocks.py); the ``BLOCKS`` mapping names them. Speed figures come from runs on idle cores,
as their files record; labels are written here, every figure is read.
"""

from __future__ import annotations

from benchmarks.tables.doc_blocks import Generated, md_table, num, pct, result

__all__ = ["BLOCKS"]


def demo() -> str:
    data = result("render_benchmark")
    return (
        f"{num(data['demo_seconds'], 0)} s of wall time and {num(data['demo_cpu_seconds'], 0)} "
        f"CPU seconds on 2 idle cores for the {num(data['demo_book_seconds'], 0)} s book "
        f"({data['demo_utterances']} paragraphs, {num(data['demo_candidates_per_utterance'], 1)} "
        f"candidates each on average, {data['demo_flagged']} flagged)"
    )


def render_benchmark() -> str:
    labels = {"n1": "N=1", "n8-adaptive": "N=8 adaptive (default)", "n8-fixed": "N=8 fixed"}
    rows = []
    for s in result("render_benchmark")["settings"]:
        rows.append(
            (
                labels[s["setting"]],
                num(s["candidates_per_utterance"], 2),
                num(s["cpu_seconds"], 0),
                num(s["cpu_real_time_factor"], 2),
                num(s["wall_seconds"], 0),
                num(s["real_time_factor"], 2),
            )
        )
    header = ("setting", "candidates per sentence", "CPU s", "CPU s per s of speech", "wall s",
              "real-time factor (wall, less loading)")  # fmt: skip
    return md_table(header, rows)


def piper_noise() -> str:
    rows = []
    for s in result("piper_noise")["settings"]:
        paired = s["policy_gain_over_candidate0"]
        rows.append(
            (
                f"{s['noise_scale']} / {s['noise_w']}",
                num(s["judge_wer"]["candidate0"]),
                num(s["judge_wer"]["policy"]),
                f"{num(paired['mean'])} ({num(paired['ci95'][0])}..{num(paired['ci95'][1])})",
            )
        )
    header = ("noise_scale / noise_w", "judge WER, candidate 0", "judge WER, winner",
              "paired gain (95% interval)")  # fmt: skip
    return md_table(header, rows)


def piper_throughput() -> str:
    labels = {
        "sequential": "one run at a time, 1 thread",
        "threads": "one run at a time, 2 threads",
        "workers": "2 runs in parallel, 1 thread each",
        "batch": "a batch of 8 candidates, 2 threads",
    }
    rows = [
        (labels[name], num(layout["cpu_rtf_per_candidate"], 3))
        for name, layout in result("piper_throughput")["layouts"].items()
    ]
    return md_table(("layout", "CPU s per s of audio"), rows)


def piper_batch_difference() -> str:
    diff = result("piper_throughput")["layouts"]["batch"]["candidate0_max_abs_diff_vs_single"]
    return num(diff, 4)


def demo_acx() -> str:
    data = result("demo_acx")
    files = [*data["acx"]["files"], data["m4b"]["acx_check_of_the_m4b"]]
    rows = []
    for f in files:
        name = f["path"].rsplit("/", 1)[-1] if f["codec"] == "aac" else f["path"]
        rows.append(
            (
                f"`{name}`",
                num(f["rms_db"], 2),
                num(f["peak_db"], 2),
                num(f["noise_floor_db"], 2),
                num(f["head_s"], 2),
                num(f["tail_s"], 2),
                "pass" if f["passed"] else "fail",
            )
        )
    header = ("file", "RMS dB", "peak dB", "noise floor dB", "head s", "tail s", "ACX")
    return md_table(header, rows)


def demo_m4b() -> str:
    m4b = result("demo_acx")["m4b"]
    peaks = [f["peak_db"] for f in result("demo_acx")["acx"]["files"]]
    return (
        f"the demo's M4B (AAC) peaks at {num(m4b['acx_check_of_the_m4b']['peak_db'], 2)} dB and "
        f"its MP3s at {num(max(peaks), 2)} dB at most; its chapter starts read back from the M4B "
        f"are off the chapter files' offsets by {m4b['max_error_samples']} samples"
    )


def long_book() -> str:
    rows = []
    for run in result("long_book")["runs"]:
        rows.append(
            (
                num(run["audio_hours"], 2),
                run["chapters"],
                run["utterances"],
                num(run["peak_rss_mib"], 0),
                run["m4b_chapter_start_error_samples_max"],
                "pass" if run["acx_passed"] else "fail",
            )
        )
    header = ("audio hours", "chapters", "utterances", "peak RSS MiB",
              "M4B chapter start error (samples)", "ACX")  # fmt: skip
    return md_table(header, rows)


def _scoring(section: dict) -> str:
    # Runs that name their Whisper scoring say it; the ones before did not, and were made when
    # per-clip scoring was the default.
    return "espeak, Whisper scoring " + section.get(
        "wer_scoring", "per clip (the default when measured)"
    )


def reliability() -> str:
    data = result("reliability")
    crashes, damage, fuzz = data["crashes"], data["damage"], data["fuzz"]
    jobs, memory = data["jobs"], data["memory"]
    cases = damage["cases"]
    rows = [
        ("SIGKILLs of one render, each resumed", _scoring(crashes),
         f"{crashes['kills_landed']} of {crashes['kills_attempted']} landed, "
         f"{crashes['kills_survived']} resumed; {crashes['committed_candidates_recomputed']} "
         f"finished candidates generated again; {crashes['files_identical']} of "
         f"{crashes['files_compared']} output files byte-identical to an uninterrupted render; "
         f"{crashes['temporary_files_left_by_kills']} temporary files left"),
        ("damaged stores (truncated and missing FLACs, a deleted non-winner, a corrupt index)",
         _scoring(damage),
         f"{damage['entries_damaged']} entries damaged, all detected: "
         f"{'yes' if damage['all_detected'] else 'no'}; regenerated "
         f"{cases['truncated_flac']['regenerated']} + {cases['missing_audio']['regenerated']} + "
         f"{cases['corrupt_index']['regenerated']}; outputs identical after: "
         f"{'yes' if damage['all_identical_after'] else 'no'}; tracebacks {damage['tracebacks']}"),
        ("fuzzed inputs (files, paths, config, EPUB, lexicon, Markdown, subtitles)", "-",
         f"{fuzz['cases_total']} cases, {fuzz['tracebacks']} tracebacks"),
        (f"render and dub jobs from {jobs['processes']} processes at once", "-",
         f"{jobs['jobs_submitted']} submitted, {jobs['succeeded']} succeeded, {jobs['failed']} "
         f"failed, {jobs['lost']} lost, {jobs['run_twice']} run twice"),
        ("peak memory, 1,000 against 100 utterances", memory["verifiers"],
         f"{num(memory['peak_rss_ratio_1000_vs_100'], 2)}x "
         f"({num(memory['runs']['1000']['peak_rss_mib'], 0)} MiB against "
         f"{num(memory['runs']['100']['peak_rss_mib'], 0)} MiB)"),
    ]  # fmt: skip
    return md_table(("suite", "measured with", "result"), rows)


def dub_fit() -> str:
    data = result("dub_benchmark")
    labels = {"sintel": "the subtitles' own timing", "sintel-tight": "each cue cut to 60%"}
    rows = []
    for r in data["results"]:
        rows.append(
            (
                f"{labels[r['variant']]}, N={r['n']}",
                r["cues"],
                f"{r['fit_without_stretch']} ({pct(r['fit_without_stretch_share'])})",
                r["stretched"],
                num(r["max_stretch"], 2),
                r["overran_slot"],
                r["cut"],
                r["flagged"],
                num(r["candidates_per_cue"], 2),
            )
        )
    header = ("Sintel subtitles", "cues", "fit without stretch", "stretched", "largest stretch",
              "ran past the slot", "cut", "flagged", "candidates per cue")  # fmt: skip
    return md_table(header, rows)


def ray_benchmark() -> str:
    data = result("ray_benchmark")
    same = "the same winners" if data["same_winners"] else "different winners"
    return (
        f"rendered {data['book']['sentences']} Harvard sentences at N={data['book']['n']} in "
        f"process and on a loopback Ray cluster with {same}"
    )


def orpheus_logits() -> str:
    data = result("orpheus_throughput")["logits_processor_apply"]
    rows = []
    for requests, entry in data.items():
        rows.append(
            (
                requests,
                f"{num(entry['apply_ms_min'], 2)} / {num(entry['apply_ms_median'], 2)}",
                f"{num(entry['vocab_sort_ms_min'], 1)} / {num(entry['vocab_sort_ms_median'], 1)}",
            )
        )
    header = ("requests in the batch", "logits processor per step, ms (min / median)",
              "vLLM's CPU top-p sort of the same logits, ms (min / median)")  # fmt: skip
    return md_table(header, rows)


def orpheus_throughput() -> str:
    data = result("orpheus_throughput")
    tiny, big = data["tiny"], data["orpheus_3b_shape"]

    def pair(get) -> tuple[str, str]:
        return get(tiny), get(big)

    rows = [
        ("tokens/s, 8 candidates in flight",
         *pair(lambda m: num(m["engine_all_in_flight"]["tokens_per_s"], 1))),
        ("tokens/s, 8 in flight, unconstrained",
         *pair(lambda m: num(m["engine_all_in_flight_unconstrained"]["tokens_per_s"], 1))),
        ("tokens/s, one request at a time",
         *pair(lambda m: num(m["engine_one_at_a_time"]["tokens_per_s"], 1))),
        ("speed-up from batching",
         *pair(lambda m: f"{num(m['speedup_in_flight_vs_sequential'], 2)}x")),
        ("engine idle share of `sample()` wall time (2 utterances x 8)",
         *pair(lambda m: pct(m["sample"]["engine_idle_share"]))),
        ("SNAC decode beside the engine, s per audio s",
         *pair(lambda m: num(m["sample"]["decode_s_per_audio_s_under_load"], 2))),
        ("engine start (`load`), s", *pair(lambda m: num(m["load_s"], 0))),
    ]  # fmt: skip
    return md_table(("", tiny["model"], big["model"]), rows)


def snac_decode() -> str:
    snac = result("orpheus_throughput")["snac_decode"]
    return (
        f"{num(snac['single_s_per_audio_s'], 2)} s per second of audio for one clip "
        f"({num(snac['batch8_s_per_audio_s'], 2)} s batched 8 at a time)"
    )


def codec_lm_throughput() -> str:
    data = result("codec_lm_throughput")
    layouts = ("orpheus", "llasa", "spark")

    def row(label: str, get) -> tuple:
        return (label, *(get(data[name]) for name in layouts))

    rows = [
        row("tokens/s, 8 requests in flight",
            lambda m: num(m["engine_8_in_flight"]["tokens_per_s"], 1)),
        row("tokens/s, one at a time", lambda m: num(m["engine_one_at_a_time"]["tokens_per_s"], 1)),
        row("speed-up from the window", lambda m: f"{num(m['speedup_8_vs_1'], 2)}x"),
        row("engine idle share of `sample()` (2 utterances x 8)",
            lambda m: pct(m["sample_2x8"]["engine_idle_share"], 1)),
        row("codec decode on CPU, s per audio s, tiny codec",
            lambda m: num(m["codec_decode_cpu"]["tiny_codec"]["s_per_audio_s"], 3)),
        row("codec decode on CPU, s per audio s, published config",
            lambda m: num(m["codec_decode_cpu"]["published_config"]["s_per_audio_s"], 2)),
    ]  # fmt: skip
    return md_table(("tiny random weights", "Orpheus (SNAC)", "Llasa (X-codec2)",
                     "Spark-TTS (BiCodec)"), rows)  # fmt: skip


def driver_ceiling() -> str:
    data = result("driver_ceiling")
    rows = [("no Ray, stand-ins at 0 s", "", num(data["local"]["candidates_per_s"], 1), "", "",
             num(data["local"]["driver_cpu_ms_per_candidate"], 1)),
            ("Ray, stand-ins at 0 s", "", num(data["ray_overhead"]["candidates_per_s"], 1), "",
             "", num(data["ray_overhead"]["driver_cpu_ms_per_candidate"], 1))]  # fmt: skip
    for run in data["ray_replicas"]:
        rows.append((
            "Ray, fixed cost", run["replicas"], num(run["candidates_per_s"], 1),
            num(run["ideal_candidates_per_s"], 1), pct(run["efficiency"]),
            num(run["driver_cpu_ms_per_candidate"], 1),
        ))  # fmt: skip
    for name, run in data["ray_window"].items():
        rows.append((name, "", num(run["candidates_per_s"], 1), "", "",
                     num(run["driver_cpu_ms_per_candidate"], 1)))  # fmt: skip
    return md_table(("setting", "replicas", "candidates/s", "ideal", "of ideal",
                     "driver CPU ms per candidate"), rows)  # fmt: skip


def driver_derivation() -> str:
    c = result("driver_ceiling")["ceiling"]
    return (
        f"one driver spends a median {num(c['driver_cpu_ms_per_candidate_median'], 1)} ms of CPU "
        f"per candidate, so its own CPU would allow {num(c['driver_bound_candidates_per_s'], 0)} "
        f"candidates a second; with fixed-cost actors it saturated at "
        f"{num(c['saturated_candidates_per_s'], 0)} a second. A {c['node_cpus']}-core node with "
        f"the embedded voice and every verifier makes {num(c['piper_node_candidates_per_s'], 1)} "
        f"candidates a second, so one driver keeps about "
        f"{num(c['piper_nodes_per_driver_measured'], 0)} such nodes busy (about "
        f"{num(c['piper_nodes_per_driver'], 0)} if only its CPU bounded it). A "
        f"{c['catalogue_hours']}-hour catalogue at {num(c['candidates_per_speech_s'], 2)} "
        f"candidates per second of speech is about {c['catalogue_1000h_candidates']:,} "
        f"candidates: {num(c['catalogue_1000h_driver_hours_measured'], 0)} hours of one saturated "
        f"driver"
    )


def ray_warm() -> str:
    data = result("warm_verifiers")
    cold, warm = data["cold"], data["warm"]
    return (
        f"a two-sentence espeak job took {num(cold['wall_seconds_median'], 1)} s from submit to "
        f"done with `warm_idle_s = 0` and {num(warm['wall_seconds_median'], 1)} s with a warm set "
        f"(medians of {cold['jobs']} jobs each, alternating; the job's own load "
        f"{num(cold['load_seconds_median'], 1)} s against {num(warm['load_seconds_median'], 1)} s)"
    )


BLOCKS = {
    "demo": Generated(("render_benchmark",), demo, labels=0),
    "render-benchmark": Generated(("render_benchmark",), render_benchmark),
    "piper-noise": Generated(("piper_noise",), piper_noise, labels=0),
    "piper-throughput": Generated(("piper_throughput",), piper_throughput),
    "piper-batch-difference": Generated(("piper_throughput",), piper_batch_difference, labels=0),
    "demo-acx": Generated(("demo_acx",), demo_acx),
    "demo-m4b": Generated(("demo_acx",), demo_m4b, labels=0),
    "long-book": Generated(("long_book",), long_book, labels=0),
    "reliability": Generated(("reliability",), reliability, labels=2),
    "dub-fit": Generated(("dub_benchmark",), dub_fit),
    "ray-benchmark": Generated(("ray_benchmark",), ray_benchmark, labels=0),
    "ray-warm": Generated(("warm_verifiers",), ray_warm, labels=0),
    "orpheus-logits": Generated(("orpheus_throughput",), orpheus_logits),
    "orpheus-throughput": Generated(("orpheus_throughput",), orpheus_throughput),
    "snac-decode": Generated(("orpheus_throughput",), snac_decode, labels=0),
    "codec-lm-throughput": Generated(("codec_lm_throughput",), codec_lm_throughput),
    "driver-ceiling": Generated(("driver_ceiling",), driver_ceiling, labels=1),
    "driver-derivation": Generated(("driver_ceiling", "render_benchmark"), driver_derivation,
                                   labels=0),  # fmt: skip
}
