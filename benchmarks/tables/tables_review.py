"""Generated blocks of the review's figures: how long a book takes to open, and a delivery.

Each function renders one block of docs/review.md from benchmarks/results/review.json (written by
review_benchmark.py; see doc_blocks.py); the ``BLOCKS`` mapping names them. A result file from
before the review index (one open time a size) and one with the first and later opens are both
rendered as they are. Labels are written here, every figure is read.
"""

from __future__ import annotations

from benchmarks.tables.doc_blocks import Generated, md_table, num, result

__all__ = ["BLOCKS", "GOAL_S"]

GOAL_S = 2.0  # the goal: a 10-hour book (10,000+ lines) opens in under 2 seconds


def _indexed(opened: list[dict]) -> bool:
    return all("first" in row for row in opened)


def review_open() -> str:
    opened = result("review")["open"]
    if _indexed(opened):
        header = ("lines", "manifest (MB)", "index (MB)", "first open (s)",
                  "later open (s)", "later: to the address (s)", "later: the page (s)")  # fmt: skip
        rows = [
            (f"{row['lines']:,}", num(row["manifest_mb"], 1), num(row["index_mb"], 1),
             num(row["first"]["open_s"], 2), num(row["later"]["open_s"], 2),
             num(row["later"]["to_address_s"], 2), num(row["later"]["page_s"], 2))
            for row in opened
        ]  # fmt: skip
    else:
        header = ("lines", "manifest (MB)", "open (s)", "to the address (s)", "the page (s)")
        rows = [
            (f"{row['lines']:,}", num(row["manifest_mb"], 1), num(row["open_s"], 2),
             num(row["to_address_s"], 2), num(row["page_s"], 2))
            for row in opened
        ]  # fmt: skip
    return md_table(header, rows)


def review_open_goal() -> str:
    data = result("review")
    opened = data["open"]
    largest = max(opened, key=lambda row: row["lines"])
    load = data["machine"]["load_average_before"][0]
    where = f"on {data['machine']['cpus']} cores (load average {num(load, 2)} before the run)"
    if _indexed(opened):
        later, first = largest["later"]["open_s"], largest["first"]["open_s"]
        verdict = "under" if later < GOAL_S else "over"
        return (
            f"a {largest['lines']:,}-line book opened in {num(later, 2)} s with its index, "
            f"{verdict} the {GOAL_S:g} s goal, and in {num(first, 2)} s the first time, when the "
            f"review builds the index, {where}"
        )
    total = largest["open_s"]
    verdict = "under" if total < GOAL_S else "over"
    return (
        f"a {largest['lines']:,}-line book opened in {num(total, 2)} s, {verdict} the "
        f"{GOAL_S:g} s goal, before the review index, {where}"
    )


def review_deliver() -> str:
    chose = result("review").get("choose_and_deliver")
    if chose is None:
        return "the delivery was not measured in this run"
    chapter, deliver = chose["choose_to_chapter_file_s"], chose["deliver_after_one_change_s"]
    return (
        f"a choice reached its rebuilt chapter file in {num(chapter, 2)} s, and the delivery "
        f"after that one change took {num(deliver, 2)} s"
    )


BLOCKS = {
    "review-open": Generated(("review",), review_open),
    "review-open-goal": Generated(("review",), review_open_goal, labels=0),
    "review-deliver": Generated(("review",), review_deliver, labels=0),
}
