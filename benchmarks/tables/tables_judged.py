"""Generated blocks of the A/B and packed-verification figures: judged gains, speed, agreement.

Each function renders one block of docs/*.md from its result files (see doc_blocks.py); the
``BLOCKS`` mapping names them. Labels (what a row is) are written here; every figure is read.
"""

from __future__ import annotations

from benchmarks.tables.doc_blocks import (
    Generated,
    better_worse,
    ci,
    gain,
    md_table,
    num,
    pct,
    result,
)

__all__ = ["BLOCKS"]


def ab_summary() -> str:
    data = result("ab_benchmark")
    verdict, first = data["verdict"], data["arms"][0]
    return (
        f"the verifier sees {pct(verdict['verifier_wer_change'])} WER from N=1 to N=8 and the "
        f"judge {pct(verdict['judge_wer_change'])}; the judge hears "
        f"{pct(first['judge_share_wer_zero'])} of candidate 0s word for word"
    )


def ab_cost() -> str:
    data = result("ab_benchmark")
    rates = data["cost"]["rates"]
    return (
        f"{num(data['wall_seconds_total'], 0)} s of wall time and "
        f"{num(data['cpu_seconds_total'], 0)} s of CPU time for the run and "
        f"{data['judge']['clips']} judged clips; generation cost "
        f"{num(rates['generate_seconds_per_audio_second'], 3)} s and verification "
        f"{num(rates['verify_seconds_per_audio_second'], 3)} s per second of audio"
    )


def ab_benchmark() -> str:
    data = result("ab_benchmark")
    paired = data["verdict"]["judge_paired_per_arm_vs_smallest"]
    rows = []
    for arm in data["arms"]:
        vs_one = paired.get(str(arm["n"]))
        rows.append(
            (
                arm["n"],
                num(arm["wer"]),
                num(arm["judge_wer"]),
                gain(vs_one) if vs_one else "",
                better_worse(vs_one) if vs_one else "",
                arm["flagged"],
                arm["candidates"],
                num(arm["audio_seconds_generated"], 0),
                num(arm["wall_seconds"], 0),
            )
        )
    header = ("N", "verifier WER", "judge WER", "judge's paired gain over N=1 (95% interval)",
              "better / worse", "flagged", "candidates", "audio s generated",
              "wall s (attributed)")  # fmt: skip
    return md_table(header, rows)


def ab_300() -> str:
    rows = []
    for label, stem in (("per clip", "ab_benchmark_per_clip_300"),
                        ("packed", "ab_benchmark_packed_300")):  # fmt: skip
        data = result(stem)
        arms = " / ".join(num(arm["judge_wer"]) for arm in data["arms"])
        eight = data["verdict"]["judge_paired_per_arm_vs_smallest"]["8"]
        rows.append((label, arms, gain(eight), better_worse(eight)))
    header = ("verifier scoring", "judge WER at N = 1 / 2 / 4 / 8",
              "paired gain at N=8 (95% interval)", "better / worse")  # fmt: skip
    return md_table(header, rows)


def verify_speed() -> str:
    data, rerun = result("verify_speed_piper"), result("verify_speed_piper_packed_stop")

    def row(label: str, name: str, speed: bool = True, source: dict = data) -> tuple:
        s = {x["setting"]: x for x in source["settings"]}[name]
        agree = source["winner_agreement_vs_baseline"].get(name)
        judged = source["judge"]["settings"][name]["n8_adaptive_rounds"]
        noise = s.get("score_noise_vs_baseline")
        over = judged.get("gain_over_baseline")
        return (
            label,
            num(s["clips_per_second"], 1) if speed else "",
            num(s["clips_per_cpu_second"], 1) if speed else "",
            num(s["whisper_seconds"]["encode"], 0) if speed else "",
            num(noise["within_utterance_sd"], 2) if noise else "-",
            f"{pct(agree['n8'])} ({pct(agree['n8_adaptive_rounds'])})" if agree else "-",
            f"{num(judged['gain_over_candidate0']['mean'])} "
            f"({ci(judged['gain_over_candidate0']['ci95'])})",
            f"{num(over['mean'])} ({ci(over['ci95'])})" if over else "-",
        )

    rows = [
        row("per clip, beam 5", "baseline"),
        row("per clip, float32 (control)", "baseline-float32"),
        row("per clip, each clip after 1 s of silence (control)", "baseline-shifted", False),
        row("packed, beam 5, per-clip stop settings", "packed"),
        row("packed, beam 1, per-clip stop settings", "packed-greedy"),
        row("packed, beam 1, its own rounds and stop settings (rerun)", "packed-greedy",
            source=rerun),
    ]  # fmt: skip
    header = ("WER verifier", "clips/s", "clips per CPU s", "encoder s",
              "score noise against per clip (SD)",
              "same N=8 winner as per clip (N=8 adaptive, in rounds)",
              "judge gain of N=8 adaptive in rounds over candidate 0",
              "... over per clip's")  # fmt: skip
    return md_table(header, rows)


def packed_noise() -> str:
    settings = {s["setting"]: s for s in result("verify_speed_piper")["settings"]}
    packed = settings["packed-greedy"]
    alone, rounds = packed["scored_alone"], packed["adaptive_rounds"]["score_change_vs_fixed_call"]
    spread = packed["score_noise_vs_baseline"]["baseline_within_utterance_spread"]
    return (
        f"a sentence's candidates spread by {num(spread, 2)} score points; scored alone, a packed "
        f"clip scores {num(-alone['score_change']['mean'], 2)} lower on average and "
        f"{alone['rejected']['alone']} of {alone['clips']} clean candidates are rejected "
        f"instead of {alone['rejected']['fixed_call']}; a later round's candidate moves by a "
        f"standard deviation of {num(rounds['sd'], 2)} against the fixed-N call"
    )


def adaptive_judged() -> str:
    runs = (
        ("per clip, beam 5, one Whisper worker on both cores", "adaptive_judged_per_clip"),
        ("packed, beam 1, rounds 2, 4, 8, one Whisper worker", "adaptive_judged_packed"),
        ("packed, beam 1, one candidate a round, same stop settings",
         "adaptive_judged_packed_one_a_round"),
        ("per clip, beam 5, a single-threaded Whisper worker per core",
         "adaptive_judged_per_clip_workers"),
        ("**packed, beam 1, rounds 2, 4, 8, a worker per core (the earlier defaults)**",
         "adaptive_judged_packed_workers"),
    )  # fmt: skip
    rows = []
    for label, stem in runs:
        data = result(stem)
        timed = "one_a_round" not in stem  # run while other work shared the cores
        rows.append(
            (
                f"{label} (`{stem}.json`)",
                num(data["candidates_per_utterance"], 2),
                num(data["real_time_factor"], 2) if timed else "",
                num(data["cpu_real_time_factor"], 2) if timed else "",
                gain(data["adaptive_gain_over_candidate0"]),
                pct(data["kept"]),
            )
        )
    header = ("N=8 adaptive, Harvard 1-300", "candidates", "RTF (wall)", "CPU s per speech s",
              "judge gain over candidate 0", "share of fixed N=8's gain")  # fmt: skip
    return md_table(header, rows)


def packed_against_per_clip() -> str:
    against = result("adaptive_judged_packed")["against"]["judge_wer_lower_here"]
    return (
        f"{num(-against['mean_gain'])} higher ({ci([-against['ci95'][1], -against['ci95'][0]])}; "
        f"{against['better']} better, {against['worse']} worse, {against['same']} the same)"
    )


def whisper_workers() -> str:
    data = result("whisper_workers")["layouts"]
    rows = [(name, num(e["clips_per_second"], 1), num(e["clips_per_cpu_second"], 1))
            for name, e in data.items()]  # fmt: skip
    return md_table(("Whisper layout, 256 clips", "clips/s", "clips per CPU s"), rows)


BLOCKS = {
    "ab-benchmark": Generated(("ab_benchmark",), ab_benchmark, labels=0),
    "ab-summary": Generated(("ab_benchmark",), ab_summary, labels=0),
    "ab-cost": Generated(("ab_benchmark",), ab_cost, labels=0),
    "ab-300": Generated(("ab_benchmark_per_clip_300", "ab_benchmark_packed_300"), ab_300),
    "verify-speed": Generated(
        ("verify_speed_piper", "verify_speed_piper_packed_stop"), verify_speed
    ),  # fmt: skip
    "packed-noise": Generated(("verify_speed_piper",), packed_noise, labels=0),
    "adaptive-judged": Generated(
        (
            "adaptive_judged_per_clip",
            "adaptive_judged_packed",
            "adaptive_judged_packed_one_a_round",
            "adaptive_judged_per_clip_workers",
            "adaptive_judged_packed_workers",
        ),
        adaptive_judged,
    ),
    "packed-against-per-clip": Generated(
        ("adaptive_judged_packed",), packed_against_per_clip, labels=0
    ),
    "whisper-workers": Generated(("whisper_workers",), whisper_workers),
}
