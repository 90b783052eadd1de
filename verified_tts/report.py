"""HTML reports: ``report.html`` for every render and ``ab.html`` for an A/B run, both offline.

Both pages are one self-contained file each: inline CSS, inline SVG plots drawn here in Python,
a few lines of inline JavaScript (sorting, the blind ABX mode), and the data they need embedded as
JSON, so they open from disk with no network, no CDN and no server. Audio players point at the
store's FLAC files by paths relative to the page (``store/audio/...``), exactly as the manifest
lists them, so the page and the manifest never disagree about which clip is which. The render
report puts flagged utterances first (every candidate with a player, its scores, the gates it
failed and what the ASR heard), because a producer opens it to hear why something was flagged.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["render_ab_html", "render_report_html", "write_ab_report", "write_render_report"]

# metrics shown in candidate tables, in this order, when present
_SHOWN = ("wer", "asr_logprob", "asr_min_logprob", "speaker", "emotion", "duration_ratio",
          "clipping", "max_internal_silence_s")  # fmt: skip

_CSS = """
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


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "&ndash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return "&ndash;"
        return f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    return _e(value)


def _json_script(element_id: str, data: Any) -> str:
    # "</" cannot end the script element early once escaped; the JSON stays valid
    text = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _page(title: str, body: str, script: str = "") -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{body}</main>{script}</body></html>\n"
    )


def _player(src: str | None, label: str = "") -> str:
    if not src:
        return '<span class="muted">audio not kept</span>'
    title = f' title="{_e(label)}"' if label else ""
    return f'<audio controls preload="none" src="{_e(src)}"{title}></audio>'


def _write(path: Path, text: str) -> Path:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)  # a reader never sees half a page
    return path


# ------------------------------------------------------------------------------------------------
# render report


def _candidate_table(utterance: Mapping[str, Any]) -> str:
    candidates = utterance["candidates"]
    shown = [m for m in _SHOWN if any(m in c["scores"] for c in candidates)]
    head = "".join(f'<th class="num">{_e(m)}</th>' for m in shown)
    rows = []
    for c in candidates:
        is_winner = c["index"] == utterance["winner"]
        verdict = (
            '<span class="pass">passed</span>'
            if c["passed"]
            else '<span class="fail">failed: '
            + _e(", ".join(c.get("failed_gates", [])))
            + "</span>"
        )
        cells = "".join(f'<td class="num">{_fmt(c["scores"].get(m))}</td>' for m in shown)
        heard = c.get("detail", {}).get("transcript")
        rows.append(
            f'<tr class="{"winner" if is_winner else ""}">'
            f"<td>{c['index']}{' &#9733;' if is_winner else ''}</td>"
            f"<td>{_player(c.get('audio'), 'candidate ' + str(c['index']))}</td>"
            f'<td class="num">{_fmt(c.get("duration_s"), 2)}</td>{cells}'
            f'<td class="num">{_fmt(c.get("score"))}</td><td>{verdict}</td>'
            f"<td>{_e(heard) if heard is not None else '&ndash;'}</td></tr>"
        )
    return (
        '<div class="wide"><table class="candidates"><thead><tr><th>#</th><th>audio</th>'
        f'<th class="num">s</th>{head}<th class="num">score</th><th>gates</th>'
        f"<th>ASR heard</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _utterance_card(utterance: Mapping[str, Any], out_hint: str) -> str:
    flagged = utterance["flagged"]
    command = (
        f"verified-tts rerender {out_hint} --utterance {utterance['key']} -n "
        f"{max(16, 2 * len(utterance['candidates']))}"
    )
    extra = ""
    if utterance.get("rerendered"):
        extra = f' <span class="pill">re-rendered at N={utterance["rerendered"]["n"]}</span>'
    return (
        f'<section class="card {"flag" if flagged else "ok"}" id="u-{_e(utterance["key"])}">'
        f"<h3>{_e(utterance['text'])}</h3>"
        f'<div class="muted">chapter {utterance["chapter"] + 1} &middot; key '
        f"<code>{_e(utterance['key'])}</code> &middot; winner {utterance['winner']} of "
        f"{len(utterance['candidates'])}{' &middot; <b class=fail>flagged</b>' if flagged else ''}"
        f"{extra}</div>{_candidate_table(utterance)}"
        f'<div class="muted">more candidates: <code>{_e(command)}</code></div></section>'
    )


def _acx_section(manifest: Mapping[str, Any]) -> str:
    """Each checked file's ACX figures and verdict (from ``delivery.acx``), and the M4B parts."""
    delivery = manifest.get("delivery") or {}
    acx = delivery.get("acx")
    if not acx:
        return ""
    rows = "".join(
        f"<tr><td>{_e(f['path'])}</td><td class='num'>{_fmt(f['rms_db'], 1)}</td>"
        f"<td class='num'>{_fmt(f['peak_db'], 1)}</td>"
        f"<td class='num'>{_fmt(f['noise_floor_db'], 1)}</td>"
        f"<td class='num'>{_fmt(f['head_s'], 2)}</td><td class='num'>{_fmt(f['tail_s'], 2)}</td>"
        f"<td class='num'>{_fmt(f['duration_s'] / 60, 1)}</td>"
        f"<td>{'pass' if f['passed'] else 'FAIL: ' + _e('; '.join(f['failures']))}</td></tr>"
        for f in acx.get("files", [])
    )
    parts = "".join(
        f"<li>{_e(part['path'])}: {len(part['chapters'])} chapters, "
        f"{_fmt(part['duration_s'] / 60, 1)} min</li>"
        for part in delivery.get("m4b", [])
    )
    verdict = "every file passes" if acx.get("passed") else "some files fail"
    return (
        f"<h2>ACX check ({verdict})</h2>"
        "<p class='muted'>RMS -23..-18 dB, peak &le; -3 dB, noise floor &le; -60 dB, room tone "
        "0.5-1 s at the head and 1-5 s at the tail, at most 120 min; MP3 192 kbps CBR 44.1 kHz"
        "</p><table><thead><tr><th>file</th><th class='num'>RMS dB</th>"
        "<th class='num'>peak dB</th><th class='num'>floor dB</th><th class='num'>head s</th>"
        "<th class='num'>tail s</th><th class='num'>min</th><th>verdict</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>" + (f"<p>M4B:</p><ul>{parts}</ul>" if parts else "")
    )


def render_report_html(manifest: Mapping[str, Any], out_hint: str = "OUT_DIR") -> str:
    """The render report as one HTML string (see the module docstring)."""
    stats = manifest.get("stats", {})
    utterances = manifest["utterances"]
    flagged = [u for u in utterances if u["flagged"]]
    rest = [u for u in utterances if not u["flagged"]]
    status = manifest.get("verifiers", {})
    off = "".join(
        f"<li>{_e(name)}: {_e(s.get('reason'))}</li>"
        for name, s in status.items()
        if not s.get("available")
    )
    mode = "adaptive" if manifest.get("adaptive") else "fixed"
    summary = (
        f"<table><tbody>"
        f"<tr><th>utterances</th><td>{len(utterances)}</td></tr>"
        f"<tr><th>flagged (no candidate passed the gates)</th><td>{len(flagged)}</td></tr>"
        f"<tr><th>N</th><td>{manifest.get('n')} ({mode})</td></tr>"
        f"<tr><th>mean WER, winners vs candidate 0</th><td>{_fmt(stats.get('mean_wer_winners'))}"
        f" vs {_fmt(stats.get('mean_wer_candidate0'))}</td></tr>"
        f"<tr><th>candidates generated / reused</th><td>{stats.get('candidates_generated')} / "
        f"{stats.get('candidates_reused')}</td></tr>"
        f"<tr><th>wall seconds</th><td>{_fmt(stats.get('wall_seconds'), 1)}</td></tr>"
        f"</tbody></table>"
    )
    chapters = "".join(
        f"<tr><td>{c['index'] + 1}</td><td>{_e(c.get('title') or '')}</td>"
        f"<td>{_player(c.get('flac'))}</td><td class='num'>{_fmt(c.get('duration_s'), 1)}</td></tr>"
        for c in manifest.get("chapters", [])
    )
    book = manifest.get("book") or {}
    body = (
        f"<h1>{_e(manifest.get('title') or manifest.get('input') or 'render')}</h1>"
        f'<div class="muted">{_e(manifest.get("generator"))} &middot; '
        f"{_e(manifest.get('model'))} &middot; input {_e(manifest.get('input'))}</div>"
        f'<div class="card">{summary}'
        + (f'<p class="muted">verifiers that did not score:</p><ul>{off}</ul>' if off else "")
        + "</div>"
        f"<h2>Flagged utterances ({len(flagged)})</h2>"
        + (
            "".join(_utterance_card(u, out_hint) for u in flagged)
            or '<p class="muted">none: every utterance has a candidate that passed the gates</p>'
        )
        + "<h2>Chapters</h2><table><thead><tr><th>#</th><th>title</th><th>audio</th>"
        f'<th class="num">s</th></tr></thead><tbody>{chapters}'
        f"<tr><td></td><td>whole book</td><td>{_player(book.get('flac'))}</td>"
        f"<td class='num'>{_fmt(book.get('duration_s'), 1)}</td></tr></tbody></table>"
        + _acx_section(manifest)
        + f"<h2>All other utterances ({len(rest)})</h2>"
        + "".join(
            f"<details><summary>{_e(u['text'])}</summary>{_utterance_card(u, out_hint)}</details>"
            for u in rest
        )
    )
    return _page(f"report: {manifest.get('title') or manifest.get('input')}", body)


def write_render_report(out_dir: str | Path, manifest: Mapping[str, Any] | None = None) -> Path:
    """Write ``report.html`` beside ``manifest.json`` (read from disk when not given)."""
    out = Path(out_dir)
    if manifest is None:
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    return _write(out / "report.html", render_report_html(manifest, str(out)))


# ------------------------------------------------------------------------------------------------
# A/B report


def _tick(value: float) -> str:
    """An axis label short enough for the margin: 0.154, 12.5, 1,580."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _line_chart(
    title: str,
    series: Sequence[tuple[str, str, Sequence[tuple[float, float | None]]]],
    y_label: str,
    *,
    width: int = 460,
    height: int = 280,
) -> str:
    """An inline SVG line chart, x on a log2 scale (N doubles per step); series are (label,
    colour, points). Points with no value are skipped, so a missing judge draws no line."""
    left, right, top, bottom = 64, 16, 56, 44
    points = [(x, y) for _, _, pts in series for x, y in pts if y is not None]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">'
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-weight="600">{_e(title)}</text>'
    ]
    if not points:
        parts.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">no data</text>')
        return "".join(parts) + "</svg>"
    xs = sorted({x for x, _ in points})
    lx = [math.log2(x) for x in xs]
    x0, x1 = min(lx), max(lx)
    y_max = max(y for _, y in points)
    y_min = min(0.0, min(y for _, y in points))
    y_max = y_max * 1.1 if y_max > 0 else 1.0

    def sx(x: float) -> float:
        span = x1 - x0
        inner = width - left - right
        return left + (inner / 2 if span == 0 else (math.log2(x) - x0) / span * inner)

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
            f'font-size="11">{x:g}</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 8}" text-anchor="middle" '
        'font-size="12">N (candidates per utterance)</text>'
        f'<text x="14" y="{(top + height - bottom) / 2}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {(top + height - bottom) / 2})">{_e(y_label)}</text>'
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
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>' for x, y in drawn
            )
            # the legend sits in a row above the plot, where no line can cross it
            + f'<rect x="{legend_x}" y="32" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="41" font-size="12">{_e(label)}</text>'
        )
        legend_x += 24 + 7 * len(label)
    return "".join(parts) + "</svg>"


_AB_SCRIPT = r"""
<script>
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ab-data").textContent);

  // sortable per-utterance table: click a header, numbers sort numerically, blanks last
  var table = document.getElementById("utterance-table");
  var directions = {};
  function sortBy(column) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var down = directions[column] = !directions[column];
    rows.sort(function (a, b) {
      var x = a.cells[column].getAttribute("data-value");
      var y = b.cells[column].getAttribute("data-value");
      var nx = parseFloat(x), ny = parseFloat(y);
      if (isNaN(nx) && isNaN(ny)) { return String(x).localeCompare(String(y)); }
      if (isNaN(nx)) { return 1; }
      if (isNaN(ny)) { return -1; }
      return down ? ny - nx : nx - ny;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell, column) {
    if (cell.classList.contains("sortable")) {
      cell.addEventListener("click", function () { sortBy(column); });
    }
  });

  // blind ABX: A and B are the two winners in random order, X is one of them at random
  var trials = data.abx.map(function (pair) {
    var swap = Math.random() < 0.5;
    var a = swap ? pair.high : pair.low, b = swap ? pair.low : pair.high;
    return {key: pair.key, text: pair.text, a: a, b: b, x: Math.random() < 0.5 ? "A" : "B",
            answer: null, preference: null};
  });
  var current = 0;
  var box = document.getElementById("abx");
  function button(label, chosen, onClick) {
    var element = document.createElement("button");
    element.textContent = label;
    if (chosen) { element.className = "chosen"; }
    element.addEventListener("click", onClick);
    return element;
  }
  function player(name, clip) {
    var wrap = document.createElement("span");
    var label = document.createElement("b");
    label.textContent = name + " ";
    var audio = document.createElement("audio");
    audio.controls = true;
    audio.preload = "none";
    audio.src = clip.audio;
    wrap.appendChild(label);
    wrap.appendChild(audio);
    wrap.appendChild(document.createTextNode(" "));
    return wrap;
  }
  function show() {
    box.textContent = "";
    if (!trials.length) {
      box.textContent = "No pairs to compare: every utterance has the same winner at both N.";
      return;
    }
    var trial = trials[current];
    var head = document.createElement("p");
    head.textContent = "Trial " + (current + 1) + " of " + trials.length + ": " + trial.text;
    box.appendChild(head);
    var players = document.createElement("p");
    players.appendChild(player("A", trial.a));
    players.appendChild(player("B", trial.b));
    players.appendChild(player("X", trial.x === "A" ? trial.a : trial.b));
    box.appendChild(players);
    var ask = document.createElement("p");
    ask.appendChild(document.createTextNode("X is: "));
    ["A", "B"].forEach(function (side) {
      ask.appendChild(button(side, trial.answer === side, function () {
        trial.answer = side; show();
      }));
    });
    ask.appendChild(document.createTextNode("  Better: "));
    ["A", "B", "same"].forEach(function (side) {
      ask.appendChild(button(side, trial.preference === side, function () {
        trial.preference = side; show();
      }));
    });
    box.appendChild(ask);
    var nav = document.createElement("p");
    nav.appendChild(button("previous", false, function () {
      current = Math.max(0, current - 1); show();
    }));
    nav.appendChild(button("next", false, function () {
      current = Math.min(trials.length - 1, current + 1); show();
    }));
    nav.appendChild(button("download answers (JSON)", false, download));
    box.appendChild(nav);
  }
  function download() {
    var answers = trials.map(function (t) {
      var preferred = t.preference === "A" ? t.a.arm : t.preference === "B" ? t.b.arm : null;
      return {key: t.key, text: t.text, a: t.a.arm, b: t.b.arm, x: t.x, answer: t.answer,
              correct: t.answer === null ? null : t.answer === t.x, preference: t.preference,
              preferred_arm: preferred};
    });
    var blob = new Blob([JSON.stringify({format: "verified-tts abx 1", low: data.low,
      high: data.high, answered_at: new Date().toISOString(), answers: answers}, null, 2)],
      {type: "application/json"});
    var link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = "abx-answers.json";
    document.body.appendChild(link);
    link.click();
    link.remove();
  }
  document.getElementById("abx-start").addEventListener("click", function () {
    current = 0; show();
  });
  document.body.setAttribute("data-ready", "1");
})();
</script>
"""


def _delta_cell(value: float | None) -> str:
    if value is None:
        return '<td class="num" data-value="">&ndash;</td>'
    css = "better" if value > 0 else "worse" if value < 0 else ""
    return f'<td class="num {css}" data-value="{value}">{value:+.3f}</td>'


def render_ab_html(data: Mapping[str, Any]) -> str:
    """The A/B page as one HTML string (see the module docstring)."""
    arms = data["arms"]
    low, high = min(data["ns"]), max(data["ns"])
    judged = data.get("judge") is not None
    quality = _line_chart(
        "quality vs N (mean WER of winners, lower is better)",
        [
            ("verifier WER", "#1d4ed8", [(a["n"], a["wer"]) for a in arms]),
            ("judge WER", "#d92d20", [(a["n"], a.get("judge_wer")) for a in arms]),
        ],
        "mean WER",
    )
    cost = _line_chart(
        "cost vs N",
        [
            ("wall seconds (attributed)", "#7a5af8", [(a["n"], a["wall_seconds"]) for a in arms]),
            (
                "audio seconds generated",
                "#12b76a",
                [(a["n"], a["audio_seconds_generated"]) for a in arms],
            ),
        ],  # fmt: skip
        "seconds",
    )
    columns = [
        ("N", "n", 0), ("verifier WER", "wer", 3), ("median", "wer_median", 3),
        ("share WER=0", "share_wer_zero", 3), ("judge WER", "judge_wer", 3),
        ("judge median", "judge_wer_median", 3), ("asr logprob", "asr_logprob", 3),
        ("speaker", "speaker_similarity", 3), ("emotion", "emotion", 3),
        ("flagged", "flagged", 0), ("changed vs cand. 0", "changed_from_n1", 0),
        ("candidates", "candidates", 0), ("audio s generated", "audio_seconds_generated", 1),
        ("audio s verified", "audio_seconds_verified", 1), ("wall s", "wall_seconds", 1),
    ]  # fmt: skip
    columns = [c for c in columns if c[1] != "emotion" or any(a.get("emotion") for a in arms)]
    arm_head = "".join(f'<th class="num">{_e(label)}</th>' for label, _, _ in columns)
    arm_rows = "".join(
        "<tr>"
        + "".join(f'<td class="num">{_fmt(a.get(key), d)}</td>' for _, key, d in columns)
        + "</tr>"
        for a in arms
    )
    rows, pairs = [], []
    for u in data["utterances"]:
        first, last = u["arms"][str(low)], u["arms"][str(high)]
        rows.append(
            "<tr>"
            f'<td data-value="{_e(u["text"])}">{_e(u["text"])}</td>'
            f'<td class="num" data-value="{first["winner"]}">{first["winner"]}</td>'
            f'<td class="num" data-value="{last["winner"]}">{last["winner"]}</td>'
            f'<td class="num" data-value="{first["scores"].get("wer", "")}">'
            f"{_fmt(first['scores'].get('wer'))} &rarr; {_fmt(last['scores'].get('wer'))}</td>"
            + _delta_cell(u.get("gain_wer"))
            + (
                f'<td class="num" data-value="{first.get("judge_wer", "")}">'
                f"{_fmt(first.get('judge_wer'))} &rarr; {_fmt(last.get('judge_wer'))}</td>"
                + _delta_cell(u.get("gain_judge_wer"))
                if judged
                else ""
            )
            + f"<td>{_player(first.get('audio'), f'N={low} winner')}</td>"
            f"<td>{_player(last.get('audio'), f'N={high} winner')}</td></tr>"
        )
        if first["winner"] != last["winner"] and first.get("audio") and last.get("audio"):
            pairs.append(
                {
                    "key": u["key"],
                    "text": u["text"],
                    "low": {"arm": f"N={low}", "audio": first["audio"]},
                    "high": {"arm": f"N={high}", "audio": last["audio"]},
                }
            )
    judge_head = (
        '<th class="num sortable">judge WER</th><th class="num sortable">judge gain</th>'
        if judged
        else ""
    )
    judge = data.get("judge")
    judge_line = (
        f"judge: <b>{_e(judge['model'])}</b> (beam {judge['beam_size']}), {judge['clips']} "
        f"distinct winners re-transcribed in {_fmt(judge['seconds'], 1)} s"
        if judge
        else "no judge: pass <code>--judge-asr MODEL</code> to check the verifier's gain with an "
        "ASR model the selection never saw"
    )
    cost_info = data.get("cost", {})
    body = (
        f"<h1>A/B: N={low} vs N={high}</h1>"
        f'<div class="muted">{_e(data.get("input"))} &middot; {_e(data.get("generator"))} '
        f"&middot; arms {', '.join(f'N={n}' for n in data['ns'])} from one fixed N={high} run "
        f'&middot; <a href="{_e(data.get("report", "report.html"))}">render report</a></div>'
        f'<p class="card">{judge_line}</p>'
        f'<div class="charts">{quality}{cost}</div>'
        f'<h2>Arms</h2><div class="wide"><table><thead><tr>{arm_head}</tr></thead>'
        f"<tbody>{arm_rows}</tbody></table></div>"
        f'<p class="muted">cost: {_e(cost_info.get("attribution"))}; overhead (load, store, '
        f"assemble) {_fmt(cost_info.get('overhead_seconds'), 1)} s.</p>"
        + "".join(f'<p class="muted">{_e(note)}</p>' for note in data.get("notes", []))
        + f"<h2>Blind ABX: N={low} vs N={high}</h2>"
        f'<p class="muted">{len(pairs)} utterances whose winners differ. A and B are the two '
        "winners in random order, X is one of them; say which X is and which you prefer, then "
        'download the answers as JSON.</p><button id="abx-start">start blind ABX</button>'
        '<div id="abx" class="card"></div>'
        f"<h2>Per utterance (click a header to sort; gain = N={low} WER minus N={high} WER)</h2>"
        '<table id="utterance-table"><thead><tr><th class="sortable">text</th>'
        f'<th class="num sortable">winner N={low}</th><th class="num sortable">winner N={high}'
        '</th><th class="num sortable">verifier WER</th><th class="num sortable">gain</th>'
        f"{judge_head}<th>N={low}</th><th>N={high}</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
    embedded = {"low": f"N={low}", "high": f"N={high}", "abx": pairs}
    return _page(f"A/B N={low} vs N={high}", body, _json_script("ab-data", embedded) + _AB_SCRIPT)


def write_ab_report(out_dir: str | Path, data: Mapping[str, Any]) -> Path:
    """Write ``ab.html`` into the A/B output folder."""
    return _write(Path(out_dir) / "ab.html", render_ab_html(data))
