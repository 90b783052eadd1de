"""Generated blocks of the calibration figures: what the gates catch on injected faults.

Each function renders one block of docs/*.md from its result files (see doc_blocks.py); the
``BLOCKS`` mapping names them. Labels (what a row is) are written here; every figure is read.
"""

from __future__ import annotations

from benchmarks.tables.doc_blocks import Generated, md_table, num, pct, result

__all__ = ["BLOCKS"]


def _fault_rows(data: dict) -> dict[str, float]:
    return {fault["kind"]: fault["recall"] for fault in data["faults"]}


def _faulted(data: dict, gates: str, p: float = 0.3, n: int = 4) -> float:
    return next(
        s["faulted_winners"]
        for s in data["selection"]
        if s["p"] == p and s["n"] == n and s["gates"] == gates
    )


def calibration() -> str:
    espeak, piper = result("calibrate_espeak"), result("calibrate_piper")
    hand_e = espeak["hand_set_gates_on_the_same_cases"]
    hand_p = piper["hand_set_gates_on_the_same_cases"]
    labels = {
        "skip": "skip (content word left out)",
        "repeat": "repeat (2-4 words twice)",
        "substitute": "substitute",
        "truncate": "truncate (25-50% cut)",
        "babble": "babble",
        "silence": "silence (1.5-2.5 s)",
        "voice": "voice (4-7 semitones)",
        "clip": "clip",
    }
    rows = [
        ("clean candidates rejected", pct(hand_e["clean_false_alarm"], 1),
         pct(espeak["clean"]["false_alarm"], 1), pct(hand_p["clean_false_alarm"], 1),
         pct(piper["clean"]["false_alarm"], 1), ""),
    ]  # fmt: skip
    shipped_e, shipped_p = _fault_rows(espeak), _fault_rows(piper)
    best = {fault["kind"]: fault for fault in piper["faults"]}
    for kind, label in labels.items():
        metric = best[kind]["best_metric"].split(" ")[0]
        rows.append(
            (
                label,
                pct(hand_e["recall"][kind], 1),
                pct(shipped_e[kind], 1),
                pct(hand_p["recall"][kind], 1),
                pct(shipped_p[kind], 1),
                f"{metric} ({num(best[kind]['auc'])})",
            )
        )
    rows.append(
        (
            "winner faulted, p=0.3, N=4",
            pct(_faulted(hand_e, "current"), 1),
            pct(_faulted(espeak, "current"), 1),
            pct(_faulted(hand_p, "current"), 1),
            pct(_faulted(piper, "current"), 1),
            "",
        )
    )
    header = ("fault", "espeak: hand-set gates", "espeak: shipped", "Piper: hand-set",
              "Piper: shipped", "Piper, best single metric (AUC)")  # fmt: skip
    return md_table(header, rows)


def calibration_held_out() -> str:
    espeak, piper = result("calibrate_espeak"), result("calibrate_piper")
    return (
        f"held out, espeak's shipped gates reject {pct(espeak['clean']['held_out_false_alarm'])}"
        f" of clean candidates, and Piper's own recommended gates, fitted on half the sentences "
        f"and measured on the other half, rejected {pct(piper['clean']['held_out_false_alarm'])}"
    )


def calibration_cost() -> str:
    per_clip, packed = result("calibrate_piper"), result("calibrate_piper_packed_greedy")
    return (
        f"{num(per_clip['wall_seconds'], 0)} s of wall time "
        f"({num(per_clip['cpu_seconds'], 0)} CPU s) per clip and "
        f"{num(packed['wall_seconds'], 0)} s ({num(packed['cpu_seconds'], 0)} CPU s) packed"
    )


def calibration_packed() -> str:
    files = (
        ("per clip, 40 sentences", "calibrate_piper"),
        ("packed, 40 sentences", "calibrate_piper_packed_greedy"),
        ("per clip, 120 sentences", "calibrate_piper_per_clip_120"),
        ("packed, 120 sentences", "calibrate_piper_packed_greedy_120"),
    )
    rows = []
    for label, stem in files:
        data = result(stem)
        recall = _fault_rows(data)
        auc = {fault["kind"]: fault["auc"] for fault in data["faults"]}
        rows.append(
            (
                label,
                pct(data["clean"]["false_alarm"], 1),
                pct(recall["skip"], 1),
                pct(recall["repeat"], 1),
                pct(recall["substitute"], 1),
                f"{num(auc['skip'])} / {num(auc['repeat'])} / {num(auc['substitute'])}",
            )
        )
    header = ("Piper, Whisper tiny.en", "clean rejected", "skip caught", "repeat caught",
              "substitute caught", "AUC skip / repeat / substitute")  # fmt: skip
    return md_table(header, rows)


def compare_calibrations() -> str:
    data = result("compare_calibrations")["by_kind"]
    rows = []
    for kind, entry in data.items():
        rows.append(
            (
                kind,
                entry["cases"],
                pct(entry["rejected_a"], 2),
                pct(entry["rejected_b"], 2),
                f"{pct(entry['difference_b_minus_a'], 2)} ({pct(entry['interval_95'][0], 2)}.."
                f"{pct(entry['interval_95'][1], 2)})",
            )
        )
    header = ("case (120 sentences)", "cases", "rejected, per clip", "rejected, packed",
              "packed minus per clip (95% interval)")  # fmt: skip
    return md_table(header, rows)


BLOCKS = {
    "calibration": Generated(("calibrate_espeak", "calibrate_piper"), calibration),
    "calibration-held-out": Generated(
        ("calibrate_espeak", "calibrate_piper"), calibration_held_out, labels=0
    ),
    "calibration-cost": Generated(
        ("calibrate_piper", "calibrate_piper_packed_greedy"), calibration_cost, labels=0
    ),
    "calibration-packed": Generated(
        (
            "calibrate_piper",
            "calibrate_piper_packed_greedy",
            "calibrate_piper_per_clip_120",
            "calibrate_piper_packed_greedy_120",
        ),
        calibration_packed,
    ),
    "compare-calibrations": Generated(("compare_calibrations",), compare_calibrations),
}
