"""Generated blocks of the dubbing-lines figures: flags on short cues, gates by clip length, recall.

Each function renders one block of docs/dubbing.md from its result files (see doc_blocks.py); the
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

_INPUTS = {"sintel": "Sintel (26 cues)", "short_lines": "held-out short lines"}
_RUNS = (("before", "dub_lines_before"), ("after", "dub_lines"))
_FAULTS = ("skip", "repeat", "truncate", "babble", "voice")
_NOT_GATES = ("candidates", "rejected_by_any_gate")


def _interval(pair: list | None, decimals: int = 3) -> str:
    if not pair or pair[0] is None:
        return "n/a"
    if pair[1] is None:
        return f"{pair[0]:.{decimals}f}.. (open above)"
    return ci(pair, decimals)


def _maybe(value: float | None, decimals: int = 3) -> str:
    return "n/a" if value is None else num(value, decimals)


def dub_lines() -> str:
    rows = []
    for name, label in _INPUTS.items():
        for run, stem in _RUNS:
            data = result(stem)["results"][name]
            against = data["flagged_against_passed"] or {}
            rows.append(
                (
                    f"{label}, {run}",
                    data["cues"],
                    data["flagged"],
                    data["flagged_judged_perfect"],
                    _maybe(data["judge_wer_flagged"]),
                    _maybe(data["judge_wer_passed"]),
                    f"{_maybe(against.get('difference'))} "
                    f"({_interval(against.get('difference_ci95'))})"
                    if against
                    else "n/a",
                    f"{_maybe(against.get('ratio'), 2)} ({_interval(against.get('ratio_ci95'), 2)})"
                    if against
                    else "n/a",
                )
            )
    header = ("input, code", "cues", "flagged", "flagged, heard perfectly by the judge",
              "judge WER, flagged", "judge WER, passed",
              "flagged minus passed (95% interval)", "ratio (95% interval)")  # fmt: skip
    return md_table(header, rows)


def dub_lines_paired() -> str:
    rows = []
    for name, data in result("dub_lines_paired")["results"].items():
        paired = data["winner_judge_wer_gain"]
        rows.append(
            (
                _INPUTS.get(name, name),
                data["flagged_before"],
                data["flagged_after"],
                data["flagged_in_both"],
                f"{data['heard_wrong_flagged_before']} of {data['heard_wrong_before']}",
                f"{data['heard_wrong_flagged_after']} of {data['heard_wrong_after']}",
                gain(paired, key="mean") if paired else "n/a",
                better_worse(paired) if paired else "n/a",
            )
        )
    header = ("input", "flagged before", "flagged after", "flagged in both",
              "winners the judge hears wrong, flagged before",
              "flagged after",
              "winner's judge WER, before minus after (95% interval)",
              "cues heard better / worse after")  # fmt: skip
    return md_table(header, rows)


def dub_gate_false_alarms() -> str:
    rows = []
    for name, label in _INPUTS.items():
        for run, stem in _RUNS:
            bins = result(stem)["results"][name]["gate_false_alarms_by_length"]
            for span, entry in bins.items():
                if not entry["candidates"]:
                    continue
                gates = {k: v for k, v in entry.items() if k not in _NOT_GATES}
                named = ", ".join(f"{k} {pct(v)}" for k, v in sorted(gates.items()) if v)
                rows.append(
                    (
                        f"{label}, {run}, {span}",
                        entry["candidates"],
                        pct(entry["rejected_by_any_gate"]),
                        named or "none",
                    )
                )
    header = ("input, code, winner length", "candidates the judge hears perfectly",
              "rejected by a gate", "by gate")  # fmt: skip
    return md_table(header, rows)


def dub_short_recall() -> str:
    dub = result("calibrate_dub_development")["short_lines"]
    held = result("calibrate_dub_held_out")["short_lines"]
    book = result("calibrate_piper_packed_greedy_120")
    book_recall = {f["kind"]: f["recall_at_target"] for f in book["faults"]}
    rows = [
        (
            "clean candidates rejected (false alarms)",
            "",
            pct(dub["false_alarm"], 1),
            pct(dub["false_alarm_recommended"], 1),
            "",
            pct(held["false_alarm"], 1),
            pct(book["clean"]["false_alarm_recommended"], 1),
        )
    ]
    for kind in _FAULTS:
        rows.append(
            (
                kind,
                dub["recall"][kind]["cases"],
                pct(dub["recall"][kind]["current"], 1),
                pct(dub["recall"][kind]["recommended"], 1),
                held["recall"][kind]["cases"],
                pct(held["recall"][kind]["current"], 1),
                pct(book_recall[kind], 1),
            )
        )
    header = ("short lines (up to 5 words)", "development: faulted cases", "book gates",
              "dub gates (in sample)", "held-out: faulted cases", "dub gates (shipped)",
              "book figure: Harvard sentences, recommended gates")  # fmt: skip
    return md_table(header, rows)


def speaker_length() -> str:
    data = result("speaker_length")["by_reference"]
    rows = []
    for book, short in zip(data["book"], data["short_reference"], strict=True):
        low, high = book["speech_s"]
        span = f"{low:g}-{high:g} s" if high < 100 else f"{low:g} s and up"
        rows.append(
            (
                span,
                book["clean"],
                pct(book["false_alarm_at_shipped_gate"]),
                pct(short["false_alarm_at_shipped_gate"]),
                num(book["auc_clean_vs_voice"], 3),
                num(short["auc_clean_vs_voice"], 3),
            )
        )
    header = ("speech in the clip", "clean takes", "false alarms, book reference",
              "false alarms, short takes' reference", "AUC clean vs wrong voice, book",
              "AUC, short takes")  # fmt: skip
    return md_table(header, rows)


def short_line_signals() -> str:
    runs = (result("short_line_signals"), result("short_line_signals_held_out"))
    rows = []
    for name in runs[0]["signals"]:
        cells: list = [name]
        for data in runs:
            entry = data["signals"][name]
            rule = entry["at_budget"]
            cells += [
                f"{entry['judge_hears_wrong']} of {entry['passed_winners']}",
                num(entry["auc_wrong_vs_right"], 2),
                f"{rule['added_judge_hears_wrong']} of {rule['added']}",
                pct(rule["share_of_passed_wrong_caught"], 1),
            ]
        rows.append(tuple(cells))
    header = (
        "signal of the winner",
        "development: passed winners heard wrong",
        "AUC wrong vs right",
        "cues added within 5% flagged: heard wrong",
        "wrong winners caught",
        "held-out: passed winners heard wrong",
        "AUC",
        "cues added: heard wrong",
        "wrong winners caught",
    )
    return md_table(header, rows)


BLOCKS = {
    "dub-lines": Generated(("dub_lines_before", "dub_lines"), dub_lines),
    "dub-lines-paired": Generated(("dub_lines_paired",), dub_lines_paired),
    "dub-gate-false-alarms": Generated(("dub_lines_before", "dub_lines"), dub_gate_false_alarms),
    "dub-short-recall": Generated(
        (
            "calibrate_dub_development",
            "calibrate_dub_held_out",
            "calibrate_piper_packed_greedy_120",
        ),
        dub_short_recall,
    ),
    "speaker-length": Generated(("speaker_length",), speaker_length),
    "short-line-signals": Generated(
        ("short_line_signals", "short_line_signals_held_out"), short_line_signals
    ),
}
