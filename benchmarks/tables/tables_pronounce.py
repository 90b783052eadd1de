"""Generated blocks of the pronunciation figures: which reading the judge hears, and the render.

Each function renders one block of docs/pronounce.md from its result files (see doc_blocks.py);
the ``BLOCKS`` mapping names them. Labels (what a row is) are written here; every figure is read.
"""

from __future__ import annotations

import functools

from benchmarks.tables.doc_blocks import Generated, md_table, num, pct, result

__all__ = ["BLOCKS"]

_SOURCE = {"stress": "a stress variant"}  # a source's name in the result files, as a row says it


def pronounce_readings() -> str:
    found = result("pronounce_readings_dev")
    words = found["words"]
    half, share = found["words_heard_at_least_half"], found["judge_heard_share"]
    rows = [
        (label, f"{half[key]} of {words}", pct(share[key]))
        for label, key in (
            ("espeak-ng's own reading", "espeak_ng_own"),
            ("the line's mean log-probability chooses (margin 0.5)", "sentence_logprob@0.5"),
            ("the word's own log-probability chooses (margin 0.5)", "word_logprob@0.5"),
            ("heard, then the word's log-probability (the render's rule)",
             "heard_then_word_logprob@0.5"),
            ("the judge's own best reading (the ceiling)", "judges_best_reading"),
        )
    ]  # fmt: skip
    rows += [  # the source names are labels: the provenance check reads only the counts
        (
            f"the judge's best reading came from {_SOURCE.get(source, source)}",
            f"{count} of {words}",
            "",
        )
        for source, count in found["source_is_judges_best"].items()
    ]
    header = ("reading", "words heard in at least half their takes", "takes heard as the word")
    return md_table(header, rows)


def pronounce_render(stem: str) -> str:
    found = result(stem)
    words = found["words_to_check"]
    heard = found["words_heard_in_at_least_half_their_lines"]
    lines = found["judge_wer_lines_saying_a_word_to_check"]
    every = found["judge_wer_all_lines_difference"]
    one = found["one_way"]
    timing = found["timing"]
    rows = [
        ("words to check (decided in the second render)", str(words), ""),
        ("heard as the word in at least half their lines",
         f"{heard['before']} of {words}", f"{heard['after']} of {words}"),
        (f"judge WER of the {lines['lines']} lines that say one",
         num(lines["before"]), f"{num(lines['after'])} (difference {num(lines['difference'])}, "
         f"{num(lines['low'])}..{num(lines['high'])})"),
        (f"judge WER difference over all {every['lines']} lines", "",
         f"{num(every['difference'])} ({num(every['low'])}..{num(every['high'])})"),
        ("words read two ways in the book", "", str(len(one["words_read_two_ways"]))),
        ("lines whose winner already said the decided readings, kept", "",
         str(found["decisions"]["lines_that_kept_their_winner"])),
        ("real-time factor (wall time on a shared machine)",
         num(timing["before"]["real_time_factor"]),
         f"{num(timing['after']['real_time_factor'])} on top"),
    ]  # fmt: skip
    return md_table(("", "pronunciation off", "on"), rows)


BLOCKS = {
    "pronounce-readings": Generated(("pronounce_readings_dev",), pronounce_readings),
    "pronounce-render": Generated(
        ("pronounce_render_dev",), functools.partial(pronounce_render, "pronounce_render_dev")
    ),
    "pronounce-render-held-out": Generated(
        ("pronounce_render_held_out",),
        functools.partial(pronounce_render, "pronounce_render_held_out"),
    ),
}
