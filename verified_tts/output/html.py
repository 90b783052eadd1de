"""The scaffolding the HTML reports share: one self-contained page, its CSS, escaping, numbers,
audio players, embedded JSON and inline SVG line charts.

Pages are single files that open from disk with no network: CSS is inline, data travels as a JSON
script element (escaped so it cannot end the element early), and every value that came from a
user (text, paths, transcripts) is HTML-escaped on the way in.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["CSS", "escape", "fmt", "json_script", "line_chart", "page", "player"]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2430;
background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:20px 24px 60px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px}
h3{font-size:15px;margin:0 0 6px}
.muted{color:#667085}.card{background:#fff;border:1px solid #e3e6eb;border-radius:8px;
padding:12px 14px;margin:10px 0}
.flag{border-left:4px solid #d92d20}.ok{border-left:4px solid #12b76a}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #eceef2;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600;white-space:nowrap}
th.sortable{cursor:pointer}th.sortable:after{content:" \\2195";color:#98a2b3}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.winner td{background:#ecfdf3}.fail{color:#d92d20}.pass{color:#067647}
.better{color:#067647;font-weight:600}.worse{color:#d92d20;font-weight:600}
audio{height:30px;width:220px;vertical-align:middle}
.charts{display:flex;flex-wrap:wrap;gap:16px}.charts svg{background:#fff;border:1px solid #e3e6eb;
border-radius:8px}
.pill{display:inline-block;padding:0 6px;border-radius:9px;background:#eef2f6;font-size:12px}
button{font:inherit;padding:4px 10px;margin:2px;border:1px solid #c9ced6;border-radius:6px;
background:#fff;cursor:pointer}button.chosen{background:#1d4ed8;color:#fff}
code{background:#eef2f6;padding:0 4px;border-radius:4px;overflow-wrap:anywhere}
.wide{overflow-x:auto;max-width:100%}
td,th,p,li,summary{overflow-wrap:anywhere}
table.flagged,table.takes{table-layout:fixed}
table.flagged col.reason{width:28%}table.flagged col.audio{width:236px}
table.takes col.n{width:3em}table.takes col.audio{width:236px}
mark{background:#fde68a;padding:0 2px;border-radius:3px}
ul.reasons{margin:0;padding-left:18px}p.text{margin:0 0 4px;font-size:15px}
"""


def escape(value: Any) -> str:
    """Text for HTML, ``None`` as empty."""
    return html.escape("" if value is None else str(value), quote=True)


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell: a dash for missing or NaN, yes/no for booleans."""
    if value is None:
        return "&ndash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return "&ndash;"
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    return escape(value)


def json_script(element_id: str, data: Any) -> str:
    # "</" cannot end the script element early once escaped; the JSON stays valid
    text = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def page(title: str, body: str, script: str = "") -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main>{script}</body></html>\n"
    )


def player(src: str | None, label: str = "") -> str:
    if not src:
        return '<span class="muted">audio not kept</span>'
    title = f' title="{escape(label)}"' if label else ""
    return f'<audio controls preload="none" src="{escape(src)}"{title}></audio>'


def _tick(value: float) -> str:
    """An axis label short enough for the margin: 0.154, 12.5, 1,580."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def line_chart(
    title: str,
    series: Sequence[tuple[str, str, Sequence[tuple[float, float | None]]]],
    y_label: str,
    *,
    width: int = 460,
    height: int = 280,
    x_label: str = "N (candidates per utterance)",
    x_log: bool = True,
    markers: bool = True,
) -> str:
    """An inline SVG line chart, x on a log2 scale (N doubles per step) or, with ``x_log=False``,
    a linear one (ROC curves); series are (label, colour, points). Points with no value are
    skipped, so a missing judge draws no line."""
    left, right, top, bottom = 64, 16, 56, 44
    points = [(x, y) for _, _, pts in series for x, y in pts if y is not None]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-weight="600">'
        f"{escape(title)}</text>"
    ]
    if not points:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">no data</text>')
        return "".join(parts) + "</svg>"
    xs = sorted({x for x, _ in points})
    scale = math.log2 if x_log else float
    lx = [scale(x) for x in xs]
    x0, x1 = min(lx), max(lx)
    if not x_log:  # a few even ticks, not one per point
        xs = [x0 + (x1 - x0) * i / 4 for i in range(5)] if x1 > x0 else [x0]
    y_max = max(y for _, y in points)
    y_min = min(0.0, min(y for _, y in points))
    y_max = y_max * 1.1 if y_max > 0 else 1.0

    def sx(x: float) -> float:
        span = x1 - x0
        inner = width - left - right
        return left + (inner / 2 if span == 0 else (scale(x) - x0) / span * inner)

    def sy(y: float) -> float:
        return top + (1 - (y - y_min) / (y_max - y_min)) * (height - top - bottom)

    parts.append(
        f'<line x1="{left}" y1="{sy(y_min)}" x2="{width - right}" y2="{sy(y_min)}" '
        'stroke="#98a2b3"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{sy(y_min)}" stroke="#98a2b3"/>'
    )
    for tick in range(5):
        value = y_min + (y_max - y_min) * tick / 4
        parts.append(
            f'<text x="{left - 6}" y="{sy(value) + 4}" text-anchor="end" font-size="11">'
            f"{_tick(value)}</text>"
            f'<line x1="{left}" y1="{sy(value)}" x2="{width - right}" y2="{sy(value)}" '
            'stroke="#eceef2"/>'
        )
    for x in xs:
        parts.append(
            f'<text x="{sx(x)}" y="{height - bottom + 16}" text-anchor="middle" '
            f'font-size="11">{_tick(x)}</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 8}" text-anchor="middle" '
        f'font-size="12">{escape(x_label)}</text>'
        f'<text x="14" y="{(top + height - bottom) / 2}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {(top + height - bottom) / 2})">{escape(y_label)}</text>'
    )
    legend_x = left
    for label, colour, pts in series:
        drawn = [(sx(x), sy(y)) for x, y in pts if y is not None]
        if not drawn:
            continue
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in drawn)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>'
            + "".join(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>'
                for x, y in (drawn if markers else [])
            )
            # the legend sits in a row above the plot, where no line can cross it
            + f'<rect x="{legend_x}" y="32" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="41" font-size="12">{escape(label)}</text>'
        )
        legend_x += 24 + 7 * len(label)
    return "".join(parts) + "</svg>"
