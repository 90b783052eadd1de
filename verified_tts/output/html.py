"""The scaffolding both HTML reports share: one self-contained page, its CSS, escaping, numbers,
audio players and embedded JSON.

Pages are single files that open from disk with no network: CSS is inline, data travels as a JSON
script element (escaped so it cannot end the element early), and every value that came from a
user (text, paths, transcripts) is HTML-escaped on the way in.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

__all__ = ["CSS", "escape", "fmt", "json_script", "page", "player"]

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
code{background:#eef2f6;padding:0 4px;border-radius:4px}.wide{overflow-x:auto}
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
