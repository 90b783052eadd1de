"""Generated blocks of the read-along figures: Whisper's word bounds against Piper's exact ones.

Each function renders one block of docs/read-along.md from benchmarks/results/word_alignment.json
(see doc_blocks.py); the ``BLOCKS`` mapping names them. Labels are written here, every figure is
read.
"""

from __future__ import annotations

from benchmarks.tables.doc_blocks import Generated, md_table, num, pct, result

__all__ = ["BLOCKS"]


def word_alignment() -> str:
    data = result("word_alignment")
    held, calibration = data["held_out"], data["calibration"]
    labels = {
        "shipped": f"as shipped (`lag_s` {num(calibration['shipped_lag_s'], 2)}, refined, "
        "sentences packed into shared windows)",
        "one_clip_a_window": "the same, each sentence in a window of its own",
        "calibrated_lag": f"calibrated `lag_s` {num(calibration['best_lag_s'], 2)}, refined",
        "raw_dtw": "raw cross-attention bounds",
    }
    rows = []
    for name, label in labels.items():
        if name not in held:
            continue
        errors = held[name]
        both, gaps = errors["boundary_error"], errors["gap_aware_boundary_error"]
        rows.append(
            (
                label,
                num(both["median_ms"], 1),
                num(both["p95_ms"], 1),
                pct(both["within_50ms"]),
                num(errors["start_error"]["median_ms"], 1),
                num(errors["end_error"]["median_ms"], 1),
                num(gaps["median_ms"], 1),
                num(gaps["p95_ms"], 1),
            )
        )
    header = ("word bounds", "median error (ms)", "95th percentile (ms)", "within 50 ms",
              "start, median (ms)", "end, median (ms)", "gap-aware median (ms)",
              "gap-aware 95th (ms)")  # fmt: skip
    return md_table(header, rows)


def word_alignment_sample() -> str:
    data = result("word_alignment")
    shipped = data["held_out"]["shipped"]
    return (
        f"{shipped['sentences']} held-out sentences, {shipped['words']} words "
        f"({shipped['words_interpolated']} interpolated by the aligner), compared in "
        f"{shipped['groups']} groups ({shipped['groups_of_joined_words']} of several written "
        "words that espeak-ng read as one)"
    )


def word_alignment_speed() -> str:
    seconds = result("word_alignment")["align_seconds"]
    return (
        f"{num(seconds['packed'], 1)} s packed against {num(seconds['one_clip_a_window'], 1)} s "
        "one sentence a window"
    )


# the runs of benchmarks/speed/readalong_cost.py, by the outputs each adds
_RUNS = {
    "flac": "FLAC chapters and timings.json only",
    "epub3_sentences": "+ read-along EPUB, SRT and VTT, sentence level",
    "epub3_words": "+ the same at word level (`--read-along words`)",
}


def readalong_cost() -> str:
    data = result("readalong_cost")
    rows = [
        (
            label,
            num(data["runs"][name]["assemble_s"], 2),
            num(data["runs"][name]["assemble_s_per_audio_hour"], 1),
        )
        for name, label in _RUNS.items()
    ]
    header = ("outputs", "assemble stage (s)", "seconds per hour of audio")
    return md_table(header, rows)


def readalong_cost_espeak() -> str:
    packed = result("readalong_cost_espeak")
    alone = result("readalong_cost_espeak_one_clip_a_window")
    rows = [
        (
            label,
            num(alone["runs"][name]["assemble_s"], 2),
            num(packed["runs"][name]["assemble_s"], 2),
            num(packed["runs"][name]["assemble_s_per_audio_hour"], 1),
        )
        for name, label in _RUNS.items()
    ]
    header = (
        "outputs (espeak)",
        "assemble stage, one sentence a window (s)",
        "assemble stage, shared windows (s)",
        "shared windows: seconds per hour of audio",
    )
    return md_table(header, rows)


BLOCKS = {
    "readalong-cost": Generated(("readalong_cost",), readalong_cost),
    "readalong-cost-espeak": Generated(
        ("readalong_cost_espeak", "readalong_cost_espeak_one_clip_a_window"), readalong_cost_espeak
    ),
    "word-alignment": Generated(("word_alignment",), word_alignment),
    "word-alignment-sample": Generated(("word_alignment",), word_alignment_sample, labels=0),
    "word-alignment-speed": Generated(("word_alignment",), word_alignment_speed, labels=0),
}
