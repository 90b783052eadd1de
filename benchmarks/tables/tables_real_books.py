"""Generated blocks of the real-books figures: flags, what the judge says of them, the N=8 gain.

Each function renders one block of docs/real-prose.md from a ``real_books_*.json`` file written
by benchmarks/real_prose/real_books.py (see doc_blocks.py); the ``BLOCKS`` mapping names them. A
file has the render with today's verification (``after``) and, unless it was run with
``--skip-before``, the same audio scored as before real prose was looked at (``before``); a table
shows both where both are there. Labels (what a row is, a cause's name) are written here; every
figure is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.speed.hour_free import GOAL, PLANAR_UNSAID
from benchmarks.tables.doc_blocks import Generated, better_worse, gain, md_table, num, pct, result

__all__ = ["BLOCKS"]

NONE = "-"
RENDERS = (("after", "today"), ("before", "before real prose"))


# a file whose "before" render is the earlier stop setting (configs/stop_before_real_prose.toml)
STOP_RENDERS = (("after", "today's stop setting"), ("before", "the earlier stop setting"))
# a file whose "before" render is today's defaults without the word error gate
WER_GATE_RENDERS = (("after", "today"), ("before", "without the word error gate"))


def _renders(
    stem: str, renders: tuple[tuple[str, str], ...] = RENDERS
) -> list[tuple[str, dict[str, Any]]]:
    data = result(stem)
    return [(label, data[key]) for key, label in renders if key in data]


def _or_none(value: Any, show: Callable[[Any], str]) -> str:
    return NONE if value is None else show(value)


def _rows(figures: dict[str, Any]) -> list[str]:
    paired = figures["judge_gain_n8_over_candidate0"]
    ratio = figures["judge_wer_ratio_flagged_to_rest"]
    return [
        str(figures["utterances"]),
        f"{figures['flagged']} ({pct(figures['flagged_share'], 1)})",
        str(figures["flagged_judge_confirms"]),
        str(figures["flagged_judge_hears_perfectly"]),
        _or_none(figures["judge_wer_flagged_winners"], num),
        _or_none(figures["judge_wer_other_winners"], num),
        _or_none(ratio, lambda r: f"{num(r, 2)}x"),
        _or_none(figures["judge_wer_candidate0"], num),
        _or_none(figures["judge_wer_winners"], num),
        _or_none(paired, gain),
        _or_none(paired, better_worse),
        num(figures["candidates_per_utterance"], 2),
        str(figures["words_to_check_once"]),
    ]


LABELS = (
    "utterances",
    "flagged",
    "flagged, the judge hears an error in the kept take",
    "flagged, the judge hears the kept take word for word",
    "judge WER, flagged winners",
    "judge WER, the other winners",
    "flagged against the rest",
    "judge WER, candidate 0",
    "judge WER, N=8 winners",
    "judge's paired gain of the winners over candidate 0 (95% interval)",
    "utterances better / worse",
    "candidates per utterance",
    "words to check once (notes, not flags)",
)


def _figures(renders: list[tuple[str, dict[str, Any]]]) -> str:
    """Rows are figures, one column per (label, render figures)."""
    columns = [_rows(figures) for _, figures in renders]
    rows = [(label, *(column[i] for column in columns)) for i, label in enumerate(LABELS)]
    return md_table(("", *(label for label, _ in renders)), rows)


# a cause as a render made before cause_of named it recorded it (the failed gate's own name)
OLD_CAUSE_NAMES = {"wer": "words heard as other words", "speaker_take": "speaker"}


def _named(counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for cause, count in counts.items():
        name = OLD_CAUSE_NAMES.get(cause, cause)
        out[name] = out.get(name, 0) + count
    return out


def _causes(renders: list[tuple[str, dict[str, Any]]]) -> str:
    """Each cause of a failed gate (benchmarks/real_prose/real_books.py ``cause_of``): flagged
    utterances, of them heard word for word by the judge, and failed takes, per (label, render
    figures)."""
    fields = ("flagged_by_cause", "false_alarms_by_cause", "failed_takes_by_cause")
    renders = [(label, {**f, **{k: _named(f[k]) for k in fields}}) for label, f in renders]
    causes: dict[str, None] = {}
    for _, figures in renders:
        for field in ("flagged_by_cause", "failed_takes_by_cause"):
            causes.update(dict.fromkeys(figures[field]))
    rows = []
    for cause in causes:
        row = [cause.replace("|", "\\|")]
        for _, figures in renders:
            row += [
                str(figures["flagged_by_cause"].get(cause, 0)),
                str(figures["false_alarms_by_cause"].get(cause, 0)),
                str(figures["failed_takes_by_cause"].get(cause, 0)),
            ]
        rows.append(row)
    header = ["cause of the first failed gate"]
    for label, figures in renders:
        header += [
            f"{label}: flagged",
            f"{label}: flagged, heard word for word",
            f"{label}: failed takes (of {figures['takes']})",
        ]
    return md_table(header, rows)


def _after(stem: str) -> dict[str, Any]:
    """A render's ``after`` figures, or the figures of renders pooled by ``--analyse``."""
    data = result(stem)
    return data.get("after", data)


def _afters(columns: tuple[tuple[str, str], ...]) -> list[tuple[str, dict[str, Any]]]:
    return [(label, _after(stem)) for stem, label in columns]


def figures_table(stem: str) -> str:
    """Rows are figures, columns the renders of one result file."""
    return _figures(_renders(stem))


def stop_settings_table(stem: str) -> str:
    """:func:`figures_table` of a file whose "before" is the earlier stop setting."""
    return _figures(_renders(stem, STOP_RENDERS))


def wer_gate_table(stem: str) -> str:
    """:func:`figures_table` of a file whose "before" is today's defaults without the word error
    gate (configs/before_wer_gate.toml)."""
    return _figures(_renders(stem, WER_GATE_RENDERS))


def side_by_side(columns: tuple[tuple[str, str], ...]) -> str:
    """Rows are figures, columns the ``after`` render of each (result stem, label)."""
    return _figures(_afters(columns))


def causes_side_by_side(columns: tuple[tuple[str, str], ...]) -> str:
    """:func:`causes_table` for the ``after`` render of each (result stem, label)."""
    return _causes(_afters(columns))


DEV_COLUMNS = (
    ("real_books_dev", "main before this change"),
    ("real_books_dev_repaced", "the same takes, pace held to the voice"),
)


def causes_table(stem: str) -> str:
    """:func:`_causes` for the renders of one result file."""
    return _causes(_renders(stem))


# the goals of the real-books work on held-out real prose (what was asked, not what was measured)
MOST_FLAGGED = 0.03
LEAST_FLAGGED_TO_REST = 3.0
LEAST_UTTERANCES = 300
MOST_REAL_TIME_FACTOR = GOAL


def goals_table(stem: str) -> str:
    """The goals on held-out real prose against what today's render measured."""
    figures = result(stem)["after"]
    share, ratio = figures["flagged_share"], figures["judge_wer_ratio_flagged_to_rest"]
    paired, count = figures["judge_gain_n8_over_candidate0"], figures["utterances"]
    flagged_wer, other_wer = (
        figures["judge_wer_flagged_winners"],
        figures["judge_wer_other_winners"],
    )
    met = {True: "met", False: "not met"}
    rows = [
        (
            f"at most {pct(MOST_FLAGGED)} of utterances flagged",
            f"{pct(share, 1)} ({figures['flagged']} of {count})",
            met[share <= MOST_FLAGGED],
        ),
        (
            f"judge WER of flagged winners at least {LEAST_FLAGGED_TO_REST:g}x the rest's",
            NONE
            if ratio is None
            else f"{num(ratio, 2)}x ({num(flagged_wer)} against {num(other_wer)})",
            NONE if ratio is None else met[ratio >= LEAST_FLAGGED_TO_REST],
        ),
        (
            "few flagged winners the judge hears word for word",
            f"{figures['flagged_judge_hears_perfectly']} of {figures['flagged']}",
            NONE,
        ),
        (
            f"the N=8 gain over candidate 0 above 0 (paired 95% interval), on at least "
            f"{LEAST_UTTERANCES} held-out utterances",
            NONE if paired is None else f"{gain(paired)} on {count}",
            NONE if paired is None else met[paired["ci95"][0] > 0 and count >= LEAST_UTTERANCES],
        ),
    ]
    timing = figures.get("timing") or {}
    if timing.get("real_time_factor") is not None and not timing.get("seeded_from"):
        # only a render that made every take itself measures the speed of the goal
        rows.append(
            (
                f"real-time factor at N=8 adaptive at or below {MOST_REAL_TIME_FACTOR:g} "
                "(a fresh store)",
                f"{num(timing['real_time_factor'], 3)} (load average "
                f"{num(timing['load_average_at_end'][0], 2)} at the end)",
                met[timing["real_time_factor"] <= MOST_REAL_TIME_FACTOR],
            )
        )
    return md_table(("goal", "measured", ""), rows)


def _goal_cells(figures: dict[str, Any]) -> list[str]:
    """What one render (or pooled renders) measured against each goal, and whether it is met."""
    share, ratio = figures["flagged_share"], figures["judge_wer_ratio_flagged_to_rest"]
    paired, count = figures["judge_gain_n8_over_candidate0"], figures["utterances"]
    met = {True: "met", False: "not met"}
    cells = [
        f"{pct(share, 1)} ({figures['flagged']} of {count}): {met[share <= MOST_FLAGGED]}",
        NONE if ratio is None else f"{num(ratio, 2)}x ({num(figures['judge_wer_flagged_winners'])}"
        f" against {num(figures['judge_wer_other_winners'])}): "
        f"{met[ratio >= LEAST_FLAGGED_TO_REST]}",
        f"{figures['flagged_judge_hears_perfectly']} of {figures['flagged']}",
        NONE if paired is None else f"{gain(paired)} on {count}: "
        f"{met[paired['ci95'][0] > 0 and count >= LEAST_UTTERANCES]}",
    ]
    timing = figures.get("timing") or {}
    # only a render that made every take itself on idle cores measures the speed of the goal
    if (timing.get("real_time_factor") is not None and not timing.get("seeded_from")
            and not timing.get("shared_cores")):  # fmt: skip
        cells.append(
            f"{num(timing['real_time_factor'], 3)} (load average "
            f"{num(timing['load_average_at_end'][0], 2)} at the end): "
            f"{met[timing['real_time_factor'] <= MOST_REAL_TIME_FACTOR]}"
        )
    else:
        cells.append(NONE)
    return cells


def goals_by_render(columns: tuple[tuple[str, str], ...]) -> str:
    """The goals (rows) against each (result stem, label): a render's ``after`` figures, or the
    figures of renders pooled by ``real_books.py --analyse``."""
    goals = (
        f"at most {pct(MOST_FLAGGED)} of utterances flagged",
        f"judge WER of flagged winners at least {LEAST_FLAGGED_TO_REST:g}x the rest's",
        "few flagged winners the judge hears word for word",
        f"the N=8 gain over candidate 0 above 0 (paired 95% interval), on at least "
        f"{LEAST_UTTERANCES} held-out utterances",
        f"real-time factor at N=8 adaptive at or below {MOST_REAL_TIME_FACTOR:g} (a fresh store)",
    )
    cells = [_goal_cells(_after(stem)) for stem, _ in columns]
    rows = [(goal, *(column[i] for column in cells)) for i, goal in enumerate(goals)]
    return md_table(("goal", *(label for _, label in columns)), rows)


def flags_table(stem: str) -> str:
    """Every flagged line of today's render: its text, the cause of its kept take's first failed
    gate, the reasons the manifest gives, and what the judge hears in the kept take."""
    return md_table(FLAG_HEADER, _flag_rows(_after(stem)["flagged_utterances"]))


def flags_by_render(columns: tuple[tuple[str, str], ...]) -> str:
    """:func:`flags_table` of several renders, a first column naming the render."""
    rows = [
        (label, *row)
        for stem, label in columns
        for row in _flag_rows(_after(stem)["flagged_utterances"])
    ]
    return md_table(("render", *FLAG_HEADER), rows)


FLAG_HEADER = ("line", "cause", "reason given", "the judge hears")


def _flag_rows(flags: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for flagged in flags:
        text = " ".join(flagged["text"].split())
        text = text if len(text) <= 60 else text[:57] + "..."
        heard = (
            NONE
            if flagged["judge_wer"] is None
            else "word for word"
            if flagged["judge_wer"] == 0
            else f"'{flagged['judge_heard'].strip()}'"
        )
        cause = flagged.get("cause", NONE)
        cells = (text, OLD_CAUSE_NAMES.get(cause, cause), "; ".join(flagged["reasons"]), heard)
        rows.append([cell.replace("|", "\\|") for cell in cells])
    return rows


def speed_figure(stem: str) -> str:
    """The real-time factor sentence of docs/real-prose.md's speed section."""
    figures = result(stem)["after"]
    timing = figures["timing"]
    return (
        f"It is {num(timing['real_time_factor'], 3)} ({num(timing['wall_seconds'], 1)} s for "
        f"{num(timing['speech_seconds'], 1)} s of speech, "
        f"{num(figures['candidates_per_utterance'], 2)} candidates per utterance)"
    )


def machine_speed_figure(stem: str) -> str:
    """The machine's speed in the hour of a render (benchmarks/speed/machine_speed.py), probed
    before and after it: what a real-time factor of another hour is compared with, and which Piper
    graph the probe ran (a probe that does not say ran the plain graph, but for the renders in
    ``hour_free.PLANAR_UNSAID``)."""
    before, after = result(stem)["after"]["timing"]["machine_speed"]
    graph = before.get("graph", "planar" if stem in PLANAR_UNSAID else "plain")
    return (
        f"Piper's probe ({graph} graph) took {num(before['cpu_seconds_per_audio_second'], 3)} "
        "CPU seconds per "
        f"second of audio before the render and {num(after['cpu_seconds_per_audio_second'], 3)} "
        "after it"
    )


def hour_free_figure(stem: str) -> str:
    """A render's real-time factor over the mean of the machine-speed probes around it
    (benchmarks/speed/hour_free.py): its cost with the hour taken out, and the probe at the goal."""
    figures = result("hour_free")["renders"][stem]
    return (
        f"real-time factor {num(figures['real_time_factor'], 3)} at a mean probe of "
        f"{num(figures['probe_mean'], 4)}: {num(figures['seconds_per_probe_second'], 2)} seconds "
        f"of render per probe second, at the goal where the probe takes "
        f"{num(figures['probe_at_goal'], 3)} or less"
    )


def planar_figure(stem: str) -> str:
    """The planar graph's CPU time against the plain one's (benchmarks/speed/piper_planar.py)."""
    ratio = result(stem)["planar_over_plain_cpu"]
    return (
        f"planar/plain CPU per second of audio, median {num(ratio['median'], 3)} "
        f"({num(ratio['lowest'], 3)} to {num(ratio['highest'], 3)} over "
        f"{len(ratio['per_pair'])} pairs)"
    )


def paired_renders_figure(stem: str) -> str:
    """Side B over side A in whole renders of one sample, A B B A
    (benchmarks/speed/paired_renders.py): the medians over the rounds, and whether the two sides
    made the same choices."""
    data = result(stem)
    ratio, same = data["b_over_a_median"], data["choices"]["a_with_b"]
    rounds = data["b_over_a_by_round"]
    spread = [r["real_time_factor_per_probe_second"] for r in rounds]
    audio = "the same" if same["identical_chapter_audio"] else "different"
    return (
        f"over {len(rounds)} rounds of {data['sample']['utterances']} lines, B/A median "
        f"real-time factor {num(ratio['real_time_factor'], 3)}, CPU seconds "
        f"{num(ratio['cpu_seconds'], 3)}, real-time factor per probe second "
        f"{num(ratio['real_time_factor_per_probe_second'], 3)} ({num(min(spread), 3)} to "
        f"{num(max(spread), 3)} by round); {same['same_winner_and_takes']} of "
        f"{same['utterances']} lines with the same winner and takes, {audio} chapter audio"
    )


POOLED_LABELS = {
    "real_books_held_out_e": "fifth sample",
    "real_books_held_out_f": "sixth sample",
    "real_books_held_out_g": "seventh sample",
    "real_books_held_out_h_book_order": "eighth sample (the shipped code)",
}


def gain_pooled_table(stem: str) -> str:
    """Each sample's judged gain beside the pooled one, and how often a sample of its size would
    show an interval above 0 at the pooled gain (gain_pooled.py)."""
    data = result(stem)
    rows = [
        [
            POOLED_LABELS.get(row["stem"], row["stem"]),
            row["lines"],
            gain(row, 4),
            pct(row["chance_above_zero_at_pooled_gain"]),
        ]
        for row in data["samples"]
    ]
    rows.append([f"{len(data['samples'])} samples pooled", data["pooled"]["lines"],
                 gain(data["pooled"], 4), ""])  # fmt: skip
    header = ["sample", "lines", "judge's gain over candidate 0 (95% interval)",
              "chance of an interval above 0 at the pooled gain"]  # fmt: skip
    return md_table(header, rows)


def gain_power_figure(stem: str) -> str:
    """Whether the samples agree on one gain, and the lines a sample needs to show it."""
    data = result(stem)
    pooled = data["pooled"]
    sizes = ", ".join(
        f"{row['lines']} lines {pct(row['chance'])}" for row in data["chance_above_zero"]
    )
    needed = " and ".join(
        f"{row['lines']} for {pct(row['chance'])}" for row in data["lines_needed"]
    )
    return (
        f"Cochran's Q {num(pooled['cochran_q'], 2)} on {pooled['degrees_of_freedom']} degrees "
        f"of freedom (p {num(pooled['p_common_gain'], 2)}); a single sample shows an interval "
        f"above 0 at the pooled gain with {sizes}; lines needed: {needed}"
    )


def stop_replay_table(stem: str) -> str:
    """The render's adaptive stop setting, the chosen one, and every replayed setting that gains
    more than any with fewer takes (stop_replay.py): the trade-off's frontier."""
    data = result(stem)
    frontier, best = [], float("-inf")
    mean_gain = lambda r: r["judge_gain_over_candidate0"]["mean_gain"]  # noqa: E731
    for row in sorted(data["settings"], key=lambda r: (r["takes_per_utterance"], -mean_gain(r))):
        if mean_gain(row) > best:
            best = mean_gain(row)
            frontier.append(row)
    rows = []
    labelled = [("rendered (the earlier setting)", data["rendered"]), ("chosen", data["chosen"])]
    for label, row in [*labelled, *(("", r) for r in frontier)]:
        paired = row["judge_gain_over_candidate0"]
        rows.append((
            label,
            ", ".join(str(k) for k in [*row["rounds"], 8] if k <= 8),
            num(row["stop_gain"], 3),
            num(row["prior_spread"], 1),
            num(row["takes_per_utterance"], 2),
            str(row["flagged"]),
            gain(paired, 4),
            _or_none(row.get("share_of_rendered_gain"), pct),
            str(row["winners_changed"]),
        ))  # fmt: skip
    header = ("", "takes after each round", "stop gain", "prior spread", "takes per utterance",
              "flagged", "judge gain over candidate 0 (95% interval)", "of the render's gain",
              "winners changed")  # fmt: skip
    return md_table(header, rows)


def gate_replay_table(stem: str) -> str:
    """A gate's bounds replayed over the development render (gate_replay.py): what each flags,
    whether the judge agrees, and the gain it keeps."""
    data = result(stem)
    rows = []
    for name, row in data["variants"].items():
        paired = row["judge_gain_over_candidate0"]
        rows.append((
            f"{data['gate']['metric']} gate: {name}",
            num(row["takes_per_utterance"], 2),
            f"{row['flagged']} ({pct(row['flagged_share'], 1)})",
            str(row["flagged_judge_confirms"]),
            str(row["flagged_judge_hears_perfectly"]),
            _or_none(row["judge_wer_ratio_flagged_to_rest"], lambda r: f"{num(r, 2)}x"),
            gain(paired, 4),
        ))  # fmt: skip
    header = ("", "takes per utterance", "flagged", "the judge hears an error",
              "the judge hears it word for word", "flagged against the rest (judge WER)",
              "judge gain over candidate 0 (95% interval)")  # fmt: skip
    return md_table(header, rows)


def speaker_consensus_table(stem: str) -> str:
    """The speaker gate against a line's own takes (speaker_consensus.py): today's gate, the
    chosen setting, then the settings at the lowest and a higher ceiling, on clean lines and on
    wrong voices in one take and in every take of a line."""
    data = result(stem)
    chosen = (data["chosen"]["ceiling"], data["chosen"]["allowance"])
    ceilings = sorted({s["ceiling"] for s in data["settings"]})
    shown = [s for s in data["settings"][1:] if s["ceiling"] in (chosen[0], ceilings[-1])]
    rows = [_consensus_row("today (no allowance)", data["today"])] + [
        _consensus_row("chosen" if (r["ceiling"], r["allowance"]) == chosen else "", r)
        for r in shown
    ]
    return md_table(CONSENSUS_HEADER, rows)


def _consensus_row(label: str, row: dict[str, Any]) -> tuple[str, ...]:
    return (
        label,
        num(row["ceiling"], 2),
        num(row["allowance"], 2),
        str(row["clean_lines_flagged"]),
        f"{row['clean_takes_failed']} ({pct(row['clean_takes_failed_share'], 1)})",
        pct(row["one_take_wrong_voice_caught"], 1),
        pct(row["every_take_wrong_voice_caught"], 1),
    )


CONSENSUS_HEADER = (
    "", "ceiling", "allowance", "clean lines flagged", "clean takes failing it",
    "one take in another voice: caught", "every take in another voice: caught",
)  # fmt: skip


def speaker_consensus_renders(columns: tuple[tuple[str, str], ...]) -> str:
    """Today's plain speaker gate and the shipped setting on each (result stem, render label)."""
    rows = []
    for stem, label in columns:
        data = result(stem)
        plain = f"{label}, {data['lines']} lines: the plain gate"
        rows.append(_consensus_row(plain, data["today"]))
        rows.append(_consensus_row(f"{label}: shipped", data["shipped"]))
    return md_table(CONSENSUS_HEADER, rows)


def speaker_allowance_table(stem: str, *, ceiling: float = 0.81, most: float = 0.10) -> str:
    """The speaker gate at one ceiling, allowance by allowance up to ``most``: clean lines it
    flags, and the lines whose every take in another voice it lets through, by text."""
    data = result(stem)
    rows = []
    for row in data["settings"]:
        if row["ceiling"] != ceiling or row["allowance"] > most:
            continue
        through = row["wrong_voice_lines_let_through"]
        rows.append((
            *_consensus_row("", row)[1:],
            "; ".join(" ".join(text.split()) for text in through).replace("|", "\\|") or NONE,
        ))  # fmt: skip
    return md_table((*CONSENSUS_HEADER[1:], "lines in another voice let through"), rows)


def _over(
    render: Callable[[tuple[tuple[str, str], ...]], str],
    columns: tuple[tuple[str, str], ...],
    labels: int = 1,
) -> Generated:
    """A block rendered over several (result stem, label) columns."""
    return Generated(tuple(stem for stem, _ in columns), lambda: render(columns), labels=labels)


def _block(render: Callable[[str], str], stem: str, labels: int = 1) -> Generated:
    return Generated((stem,), lambda: render(stem), labels=labels)


def _hour_free(stem: str) -> Generated:
    """:func:`hour_free_figure` of a render, read from hour_free.json."""
    return Generated(("hour_free",), lambda: hour_free_figure(stem), labels=0)


def _held_out_sample(
    part: str, renders: tuple[tuple[str, str], ...], columns: tuple[tuple[str, str], ...]
) -> dict[str, Generated]:
    """A held-out sample's blocks: its figures beside ``columns``, its flagged lines, the goals,
    and the speed, machine-speed and hour-free figures of its first render."""
    stem = renders[0][0]
    return {
        f"real-books-held-out-{part}": _over(side_by_side, columns),
        f"real-books-held-out-{part}-flags": _over(flags_by_render, renders, labels=5),
        f"real-books-goals-{part}": _over(goals_by_render, columns),
        f"real-books-speed-{part}": _block(speed_figure, stem, labels=0),
        f"real-books-machine-{part}": _block(machine_speed_figure, stem, labels=0),
        f"real-books-hour-free-{part}": _hour_free(stem),
    }


CONSENSUS_RENDERS = (
    ("speaker_consensus_dev", "development"),
    ("speaker_consensus_held_out_c", "third held-out sample"),
)
# today's code on the held-out samples: each render, then the pooled figures
TODAY_RENDERS = (
    ("real_books_held_out_c", "third sample"),
    ("real_books_held_out_b_speaker_take", "second sample, again"),
    ("real_books_held_out_speaker_take", "first sample, again"),
)
TODAY_COLUMNS = (
    *TODAY_RENDERS,
    ("real_books_held_out_bc_pooled", "second and third pooled"),
    ("real_books_held_out_abc_pooled", "all three pooled"),
)
# the fourth sample, read once every setting of the third's render was fixed
FOURTH_RENDERS = (("real_books_held_out_d", "fourth sample"),)
FOURTH_COLUMNS = (
    *FOURTH_RENDERS,
    ("real_books_held_out_bcd_pooled", "second, third and fourth pooled"),
    ("real_books_held_out_abcd_pooled", "all four pooled"),
)
# the fifth sample, read once the stop setting for the real-time factor was fixed
FIFTH_RENDERS = (("real_books_held_out_e", "fifth sample (stop gain 0.08, spread 0.1)"),)
FIFTH_COLUMNS = (
    *FIFTH_RENDERS,
    ("real_books_held_out_d", "fourth sample (stop gain 0.05, spread 0.3)"),
)
# the sixth sample, read once the code that keeps both cores busy was fixed
SIXTH_RENDERS = (("real_books_held_out_f", "sixth sample (both cores busy)"),)
SIXTH_COLUMNS = (*SIXTH_RENDERS, ("real_books_held_out_e", "fifth sample (the code before)"))
SEVENTH_RENDERS = (("real_books_held_out_g", "seventh sample (planar convolutions)"),)
SEVENTH_COLUMNS = (*SEVENTH_RENDERS, ("real_books_held_out_f", "sixth sample (the code before)"))
# the same sample rendered again from an empty store, an hour later: the same takes, another time
SEVENTH_AGAIN = ("real_books_held_out_g_again", "seventh sample again (the time alone)")
SEVENTH_GOALS = (*SEVENTH_RENDERS, SEVENTH_AGAIN, SEVENTH_COLUMNS[-1])
# the eighth sample, read once the verifier threads and the fuller Whisper windows were fixed
# and again once the fuller windows were put back: the layout the fifth to seventh samples had
EIGHTH_RENDERS = (
    ("real_books_held_out_h", "eighth sample (verifiers at once, fuller windows)"),
    ("real_books_held_out_h_book_order", "eighth sample again (verifiers at once, book order)"),
)
EIGHTH_COLUMNS = (*EIGHTH_RENDERS, ("real_books_held_out_g", "seventh sample (the code before)"))
# the ninth sample, sized for the gain test (gain_pooled.py), beside the eighth's shipped render
NINTH_RENDERS = (("real_books_held_out_i", "ninth sample (1056 lines)"),)
NINTH_COLUMNS = (
    *NINTH_RENDERS,
    ("real_books_held_out_h_book_order", "eighth sample (the same code)"),
)
HELD_OUT_COLUMNS = (
    ("real_books_held_out_earlier", "before short-clip judging and the voice's pace"),
    ("real_books_held_out_before_stop", "before the stop setting of the real-prose replay"),
    ("real_books_held_out", "before the word error gate"),
    ("real_books_held_out_wer_0_3", "word error gate at 0.3"),
)
# the causes table has three columns a render: the last three renders keep it readable
HELD_OUT_CAUSE_COLUMNS = HELD_OUT_COLUMNS[1:]

BLOCKS = {
    "real-books-held-out": _over(side_by_side, HELD_OUT_COLUMNS),
    "real-books-held-out-causes": _over(causes_side_by_side, HELD_OUT_CAUSE_COLUMNS),
    "real-books-held-out-flags": _block(flags_table, "real_books_held_out_wer_0_3", labels=4),
    "real-books-held-out-b": _block(figures_table, "real_books_held_out_b"),
    "real-books-held-out-b-flags": _block(flags_table, "real_books_held_out_b", labels=4),
    "real-books-held-out-b-causes": _block(causes_table, "real_books_held_out_b"),
    "real-books-speed": _block(speed_figure, "real_books_held_out_b", labels=0),
    "real-books-speed-again": _block(
        speed_figure, "real_books_held_out_b_speaker_take", labels=0
    ),
    "real-books-speed-c": _block(speed_figure, "real_books_held_out_c", labels=0),
    "real-books-goals": _block(goals_table, "real_books_held_out_b"),
    "real-books-gate-replay-held-out": _block(gate_replay_table, "gate_replay_held_out"),
    "real-books-harvard-wer-gate": _block(wer_gate_table, "real_books_harvard_wer_gate"),
    "real-books-dev": _over(side_by_side, DEV_COLUMNS),
    "real-books-dev-causes": _over(causes_side_by_side, DEV_COLUMNS),
    "real-books-dev-flags": _block(flags_table, "real_books_dev", labels=4),
    "real-books-dev-repaced-flags": _block(flags_table, "real_books_dev_repaced", labels=4),
    "real-books-stop-replay-dev": _block(stop_replay_table, "stop_replay_dev"),
    "real-books-gate-replay-dev": _block(gate_replay_table, "gate_replay_dev"),
    "real-books-harvard-stop": _block(stop_settings_table, "real_books_harvard"),
    "real-books-speaker-consensus-dev": _block(speaker_consensus_table, "speaker_consensus_dev"),
    "real-books-dev-speaker-gain": Generated(
        ("gate_replay_dev_speaker",),
        lambda: gain(result("gate_replay_dev_speaker")["variants"]["without"][
            "judge_gain_over_candidate0"], 4),
        labels=0,
    ),
    "real-books-speaker-consensus-test": _over(speaker_consensus_renders, CONSENSUS_RENDERS),
    "real-books-held-out-c": _over(side_by_side, TODAY_COLUMNS),
    "real-books-held-out-c-flags": _over(flags_by_render, TODAY_RENDERS, labels=5),
    "real-books-goals-today": _over(goals_by_render, TODAY_COLUMNS),
    "real-books-held-out-d": _over(side_by_side, FOURTH_COLUMNS),
    "real-books-held-out-d-flags": _over(flags_by_render, FOURTH_RENDERS, labels=5),
    "real-books-goals-d": _over(goals_by_render, FOURTH_COLUMNS),
    "real-books-speaker-allowance-d": _block(
        speaker_allowance_table, "speaker_consensus_held_out_d", labels=0
    ),
    "real-books-speed-d": _block(speed_figure, "real_books_held_out_d", labels=0),
    "real-books-stop-replay-held-out-d": _block(stop_replay_table, "stop_replay_held_out_d"),
    "real-books-held-out-e": _over(side_by_side, FIFTH_COLUMNS),
    "real-books-held-out-e-flags": _over(flags_by_render, FIFTH_RENDERS, labels=5),
    "real-books-goals-e": _over(goals_by_render, FIFTH_COLUMNS),
    "real-books-speed-e": _block(speed_figure, "real_books_held_out_e", labels=0),
    "real-books-held-out-f": _over(side_by_side, SIXTH_COLUMNS),
    "real-books-held-out-f-flags": _over(flags_by_render, SIXTH_RENDERS, labels=5),
    "real-books-goals-f": _over(goals_by_render, SIXTH_COLUMNS),
    "real-books-speed-f": _block(speed_figure, "real_books_held_out_f", labels=0),
    "real-books-machine-f": _block(machine_speed_figure, "real_books_held_out_f", labels=0),
    "real-books-held-out-g": _over(side_by_side, SEVENTH_COLUMNS),
    "real-books-held-out-g-flags": _over(flags_by_render, SEVENTH_RENDERS, labels=5),
    "real-books-goals-g": _over(goals_by_render, SEVENTH_GOALS),
    "real-books-speed-g": _block(speed_figure, "real_books_held_out_g", labels=0),
    "real-books-speed-g-again": _block(speed_figure, "real_books_held_out_g_again", labels=0),
    "real-books-machine-g-again": _block(
        machine_speed_figure, "real_books_held_out_g_again", labels=0
    ),
    "real-books-machine-g": _block(machine_speed_figure, "real_books_held_out_g", labels=0),
    **_held_out_sample("h", EIGHTH_RENDERS, EIGHTH_COLUMNS),
    "real-books-speed-h-book-order": _block(
        speed_figure, "real_books_held_out_h_book_order", labels=0
    ),
    "real-books-machine-h-book-order": _block(
        machine_speed_figure, "real_books_held_out_h_book_order", labels=0
    ),
    "real-books-hour-free-h-book-order": _hour_free("real_books_held_out_h_book_order"),
    "real-books-hour-free-g-again": _hour_free("real_books_held_out_g_again"),
    "real-books-hour-free-f": _hour_free("real_books_held_out_f"),
    "piper-planar": _block(planar_figure, "piper_planar", labels=0),
    "paired-renders-verifier-threads": _block(
        paired_renders_figure, "paired_renders_verifier_threads", labels=0
    ),
    **_held_out_sample("i", NINTH_RENDERS, NINTH_COLUMNS),
    "gain-pooled-held-out": _block(gain_pooled_table, "gain_pooled_held_out"),
    "gain-power-held-out": _block(gain_power_figure, "gain_pooled_held_out", labels=0),
    "real-books-demo": _block(figures_table, "real_books_demo"),
    "real-books-demo-causes": _block(causes_table, "real_books_demo"),
}
