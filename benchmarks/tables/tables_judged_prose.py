"""Generated blocks of the judged real-prose figures: how different takes are, and what selection
buys to the judge's ear against what the candidates hold (the oracle).

Each function renders one block of docs/*.md from its result files (see doc_blocks.py); the
``BLOCKS`` mapping names them. Labels (what a row is) are written here; every figure is read.
"""

from __future__ import annotations

from typing import Any

from benchmarks.tables.doc_blocks import Generated, ci, md_table, num, result

__all__ = ["BLOCKS"]

# (result stem, column label) of the judged real-prose renders, in the order shown
JUDGED = (
    ("judged_prose_dev_180", "development, 180 lines, today"),
    ("judged_prose_dev_today", "development, 45 lines, before hearing alone"),
    ("judged_prose_dev_prosody", "development, 45 lines, own prosody, before hearing alone"),
    ("judged_prose_held_out_k_before", "tenth held-out sample, before hearing alone"),
)
STEMS = tuple(stem for stem, _ in JUDGED)


def take_diversity() -> str:
    rows = []
    for s in result("take_diversity_dev")["settings"]:
        rows.append(
            (
                s["setting"],
                num(s["length_cv"], 4),
                num(s["median_f0_sd"], 3),
                num(s["f0_range_sd"], 3),
                num(s["pause_count_sd"], 3),
                num(s["pause_seconds_sd"], 4),
                num(s["pause_place_distance"], 4),
            )
        )
    header = ("length / duration / pause jitter", "length, coefficient of variation",
              "median F0, sd (semitones)", "F0 range, sd (semitones)", "pauses a take, sd",
              "pause seconds, sd",
              "two takes pausing at different places (Jaccard distance)")  # fmt: skip
    return md_table(header, rows)


def _paired(figures: dict[str, Any] | None) -> str:
    if not figures:
        return "-"
    return f"{num(figures['gain'], 4)} ({ci(figures['ci95'], 4)})"


def _relative(figures: dict[str, Any] | None) -> str:
    if not figures or figures.get("relative_reduction") is None:
        return "-"
    low, high = figures["relative_ci95"]
    return f"{num(figures['relative_reduction'], 4)} ({num(low, 4)}..{num(high, 4)})"


def judged_prose() -> str:
    columns = [(stem, label) for stem, label in JUDGED]
    data = {stem: result(stem) for stem, _ in columns}
    pool = {stem: next((k for k in d["judge_wer"] if k.startswith("oracle_of_")), None)
            for stem, d in data.items()}  # fmt: skip

    def row(label: str, cell: Any) -> tuple[str, ...]:
        return (label, *(cell(data[stem], stem) for stem, _ in columns))

    rows = [
        row("lines judged", lambda d, _: str(d["judged"])),
        row("chunks rendered", lambda d, _: f"{d['chunks']['finished']} of {d['chunks']['of']}"),
        row("takes a line", lambda d, _: num(d["takes_per_line"], 2)),
        row("judge WER, candidate 0", lambda d, _: num(d["judge_wer"]["candidate0"], 4)),
        row("judge WER, the verifier's winner", lambda d, _: num(d["judge_wer"]["winner"], 4)),
        row("judge WER, the judge's best of the render's takes",
            lambda d, _: num(d["judge_wer"]["oracle"], 4)),
        row("judge WER, the judge's best of 8 takes",
            lambda d, s: num(d["judge_wer"][pool[s]], 4) if pool[s] else "-"),
        row("winner's gain over candidate 0 (95% interval)",
            lambda d, _: _paired(d["winner_vs_candidate0"])),
        row("winner's reduction of candidate 0's judge WER (95% interval)",
            lambda d, _: _relative(d["winner_vs_candidate0"])),
        row("reduction by the judge's best of the render's takes",
            lambda d, _: _relative(d["oracle_vs_candidate0"])),
        row("reduction by the judge's best of 8 takes",
            lambda d, s: _relative(d.get(f"{pool[s]}_vs_candidate0")) if pool[s] else "-"),
        row("lines whose take changed", lambda d, _: str(d["lines_whose_take_changed"])),
        row("flagged", lambda d, _: str(d["flagged"])),
        row("flagged winners' judge WER against the rest's",
            lambda d, _: (f"{num(d['judge_wer_ratio_flagged_to_rest'], 2)}x"
                          if d["judge_wer_ratio_flagged_to_rest"] is not None else "-")),
        row("DNSMOS overall, winner minus candidate 0 (95% interval)",
            lambda d, _: (f"{num(d['dnsmos_overall']['winner_minus_candidate0']['difference'], 4)}"
                          f" ({ci(d['dnsmos_overall']['winner_minus_candidate0']['ci95'], 4)})"
                          if d.get("dnsmos_overall") else "-")),
        row("real-time factor (load average at the end)",
            lambda d, _: (f"{num(d['timing']['real_time_factor'], 3)} "
                          f"({num(max(d['timing']['load_average_at_ends']), 2)})")),
    ]  # fmt: skip
    return md_table(("", *(label for _, label in columns)), rows)


def doubt_replay() -> str:
    rows = []
    for rule in result("doubt_replay_dev")["rules"]:
        if rule["rule"].startswith("doubt") and "shared_stop=False" in rule["rule"]:
            continue  # the shared-doubt stop changes nothing here; its rows are in the file
        paired = rule["gain_over_candidate0"]
        rows.append(
            (rule["rule"], num(rule["takes_per_line"], 2), num(rule["judge_wer_winner"], 4),
             f"{num(paired['gain'], 4)} ({ci(paired['ci95'], 4)})", rule["flagged"])
        )  # fmt: skip
    header = ("stop rule", "takes a line", "judge WER, winner",
              "gain over candidate 0 (95% interval)", "flagged")  # fmt: skip
    return md_table(header, rows)


def doubt_signals() -> str:
    rows = []
    for signal, split in result("doubt_replay_dev")["gain_of_8_over_2_by_signal_after_2"].items():
        high, low = split["above_median"], split["at_or_below"]
        rows.append(
            (signal, high["lines"], num(high["gain"], 4) if high["gain"] is not None else "-",
             low["lines"], num(low["gain"], 4) if low["gain"] is not None else "-")
        )  # fmt: skip
    header = ("signal after 2 takes", "lines with more of it", "judge's gain of 8 takes over 2",
              "lines with less", "judge's gain of 8 takes over 2")  # fmt: skip
    return md_table(header, rows)


def rank_replay() -> str:
    data = result("rank_replay")
    columns = [(part, setting) for part in ("development", "held_out")
               for setting in ("render", "N=8")]  # fmt: skip
    found = [data[part]["settings"][setting] for part, setting in columns]
    rows = [
        ("candidate 0", *(num(f["judge_wer_candidate0"], 4) for f in found)),
        ("the judge's best take (oracle)", *(num(f["judge_wer_oracle"], 4) for f in found)),
    ]
    for name in found[0]["rules"]:
        cells = []
        for f in found:
            rule = f["rules"][name]
            gain = rule["gain_over_candidate0"]
            cells.append(f"{num(rule['judge_wer'], 4)} ({num(gain['gain'], 4)}, "
                         f"{ci(gain['ci95'], 4)})")  # fmt: skip
        rows.append((name + (" (chosen)" if name == data.get("rule") else ""), *cells))
    label = {"development": "development", "held_out": "held out", "render": "the render's takes",
             "N=8": "8 takes"}  # fmt: skip
    header = ("ranking of the takes that pass", *(
        f"{label[part]}, {label[setting]} ({f['lines']} lines, {num(f['takes_per_line'], 2)} "
        "takes)" for (part, setting), f in zip(columns, found, strict=True)))  # fmt: skip
    return md_table(header, rows)


def rehear_modes() -> str:
    data = result("rehear_modes")
    parts = [data[part] for part in ("development", "held_out")]
    shipped = "today's packed ranking (rank = score)"

    def judged(found: dict[str, Any], name: str) -> str:
        way = found["ways"][name]
        gain = way["gain_over_candidate0"]
        return f"{num(way['judge_wer'], 4)} ({num(gain['gain'], 4)}, {ci(gain['ci95'], 4)})"

    rows = [
        ("candidate 0", *(num(f["judge_wer_candidate0"], 4) for f in parts), "-", "-", "-"),
        ("the judge's best take (oracle)", *(num(f["judge_wer_oracle"], 4) for f in parts),
         "-", "-", "-"),
        (shipped, *(judged(f, shipped) for f in parts), "0 / 0", "-", "-"),
    ]  # fmt: skip
    for way in data["ways"]:
        name = way["name"]
        cost = data["cost"]["ways"][name]
        again = data.get("in_render", {}).get(name)
        rows.append((
            name
            + (" (named before the held-out read)" if name == data.get("rule") else "")
            + (" (the choice rule's)" if name == data.get("choice", {}).get("chosen") else ""),
            *(judged(f, name) for f in parts),
            " / ".join(str(f["ways"][name]["takes_heard_alone"]) for f in parts),
            num(cost["cpu_seconds_per_second_of_speech"], 4),
            num(again["hearing_alone_seconds_per_second_of_speech"], 4) if again else "-",
        ))  # fmt: skip
    header = (
        "way of hearing alone",
        f"development ({parts[0]['lines']} lines, {num(parts[0]['takes_per_line'], 2)} takes)",
        f"held out ({parts[1]['lines']} lines, {num(parts[1]['takes_per_line'], 2)} takes)",
        "takes heard alone, development / held out",
        "CPU s per s of speech, timed alone",
        "s hearing alone per s of speech, in a render",
    )
    return md_table(header, rows)


def rehear_rtf() -> str:
    rows = [
        (name, found["selection"].get("alone_lines", "-"), num(found["speech_seconds"], 2),
         num(found["wall_seconds"], 2), num(found["load_seconds"], 2),
         num(found["real_time_factor"], 4), num(found["cpu_real_time_factor"], 4))
        for name, found in result("rehear_modes")["fresh_renders"].items()
    ]  # fmt: skip
    header = ("development book rendered afresh", "alone_lines", "speech (s)", "wall (s)",
              "model load (s)", "real-time factor", "CPU s per s of speech")  # fmt: skip
    return md_table(header, rows)


BLOCKS = {
    "rank-replay": Generated(("rank_replay",), rank_replay, labels=1),
    "rehear-rtf": Generated(("rehear_modes",), rehear_rtf, labels=2),
    "rehear-modes": Generated(("rehear_modes",), rehear_modes, labels=1),
    "doubt-replay": Generated(("doubt_replay_dev",), doubt_replay, labels=1),
    "doubt-signals": Generated(("doubt_replay_dev",), doubt_signals, labels=1),
    "take-diversity": Generated(("take_diversity_dev",), take_diversity, labels=1),
    "judged-prose": Generated(STEMS, judged_prose, labels=1),
}
