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
        "shipped": f"as shipped (`lag_s` {num(calibration['shipped_lag_s'], 2)}, refined)",
        "calibrated_lag": f"calibrated `lag_s` {num(calibration['best_lag_s'], 2)}, refined",
        "raw_dtw": "raw cross-attention bounds",
    }
    rows = []
    for name, label in labels.items():
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


def readalong_cost() -> str:
    data = result("readalong_cost")
    labels = {
        "flac": "FLAC chapters and timings.json only",
        "epub3_sentences": "+ read-along EPUB, SRT and VTT, sentence level",
        "epub3_words": "+ the same at word level (`--read-along words`)",
    }
    rows = [
        (
            label,
            num(data["runs"][name]["assemble_s"], 2),
            num(data["runs"][name]["assemble_s_per_audio_hour"], 1),
        )
        for name, label in labels.items()
    ]
    header = ("outputs", "assemble stage (s)", "seconds per hour of audio")
    return md_table(header, rows)


BLOCKS = {
    "readalong-cost": Generated(("readalong_cost",), readalong_cost),
    "word-alignment": Generated(("word_alignment",), word_alignment),
    "word-alignment-sample": Generated(("word_alignment",), word_alignment_sample, labels=0),
}
