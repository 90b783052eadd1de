"""``ab.html``: the A/B page of an ``ab`` run, one self-contained file like ``report.html``.

Quality and cost against N are drawn as inline SVG line charts (x on a log2 scale), the arms are
one table, every utterance is a sortable row with both arms' winners and players, and a blind ABX
mode (a few lines of inline JavaScript) plays the two winners of each utterance whose winner
changed in random order and lets the listener download the answers as JSON. The page reads only
``ab.json``'s data, embedded, and the store's audio by relative paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from verified_tts.output.html import escape, fmt, json_script, line_chart, page, player
from verified_tts.storage.atomic import write_text_atomic

__all__ = ["interval_text", "render_ab_html", "write_ab_report"]


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


_ARM_COLUMNS = [
    ("N", "n", 0), ("verifier WER", "wer", 3), ("median", "wer_median", 3),
    ("share WER=0", "share_wer_zero", 3), ("judge WER", "judge_wer", 3),
    ("judge median", "judge_wer_median", 3),
    ("judge WER, the judge's best take (oracle)", "judge_wer_oracle", 3),
    ("asr logprob", "asr_logprob", 3),
    ("speaker", "speaker_similarity", 3), ("emotion", "emotion", 3),
    ("flagged", "flagged", 0), ("changed vs cand. 0", "changed_from_n1", 0),
    ("candidates", "candidates", 0), ("audio s generated", "audio_seconds_generated", 1),
    ("audio s verified", "audio_seconds_verified", 1), ("wall s", "wall_seconds", 1),
]  # fmt: skip


def _ab_charts(arms: Sequence[Mapping[str, Any]]) -> str:
    """Quality and cost against N, side by side."""
    quality = line_chart(
        "quality vs N (mean WER of winners, lower is better)",
        [
            ("verifier WER", "#1d4ed8", [(a["n"], a["wer"]) for a in arms]),
            ("judge WER", "#d92d20", [(a["n"], a.get("judge_wer")) for a in arms]),
        ],
        "mean WER",
    )
    cost = line_chart(
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
    return f'<div class="charts">{quality}{cost}</div>'


def interval_text(interval: Sequence[float] | None) -> str:
    """``+0.012 [-0.004, +0.030]``: a paired difference and its 95 % interval, or a dash."""
    if not interval:
        return "-"
    mean, low, high = interval
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def _arm_table(arms: Sequence[Mapping[str, Any]]) -> str:
    """One row per arm; the emotion column only when the emotion verifier scored, the paired
    interval against the first arm only when the judge ran."""
    columns = [
        c
        for c in _ARM_COLUMNS
        if c[1] not in ("emotion", "judge_wer_oracle") or any(a.get(c[1]) for a in arms)
    ]
    paired = any(a.get("judge_wer_vs_first") for a in arms)
    head = "".join(f'<th class="num">{escape(label)}</th>' for label, _, _ in columns)
    if paired:
        head += '<th class="num">judge WER vs first (95 % paired)</th>'
    rows = "".join(
        "<tr>"
        + "".join(f'<td class="num">{fmt(a.get(key), d)}</td>' for _, key, d in columns)
        + (
            f'<td class="num">{escape(interval_text(a.get("judge_wer_vs_first")))}</td>'
            if paired
            else ""
        )
        + "</tr>"
        for a in arms
    )
    return (
        f'<div class="wide"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def _utterance_row(u: Mapping[str, Any], low: int, high: int, judged: bool) -> str:
    """One sortable row: both arms' winners, their WERs, the gain and both players."""
    first, last = u["arms"][str(low)], u["arms"][str(high)]
    return (
        "<tr>"
        f'<td data-value="{escape(u["text"])}">{escape(u["text"])}</td>'
        f'<td class="num" data-value="{first["winner"]}">{first["winner"]}</td>'
        f'<td class="num" data-value="{last["winner"]}">{last["winner"]}</td>'
        f'<td class="num" data-value="{first["scores"].get("wer", "")}">'
        f"{fmt(first['scores'].get('wer'))} &rarr; {fmt(last['scores'].get('wer'))}</td>"
        + _delta_cell(u.get("gain_wer"))
        + (
            f'<td class="num" data-value="{first.get("judge_wer", "")}">'
            f"{fmt(first.get('judge_wer'))} &rarr; {fmt(last.get('judge_wer'))}</td>"
            + _delta_cell(u.get("gain_judge_wer"))
            if judged
            else ""
        )
        + f"<td>{player(first.get('audio'), f'N={low} winner')}</td>"
        f"<td>{player(last.get('audio'), f'N={high} winner')}</td></tr>"
    )


def _abx_pairs(utterances: Sequence[Mapping[str, Any]], low: int, high: int) -> list[dict]:
    """The utterances whose two winners differ and both have audio: the blind ABX trials."""
    pairs = []
    for u in utterances:
        first, last = u["arms"][str(low)], u["arms"][str(high)]
        if first["winner"] != last["winner"] and first.get("audio") and last.get("audio"):
            pairs.append(
                {
                    "key": u["key"],
                    "text": u["text"],
                    "low": {"arm": f"N={low}", "audio": first["audio"]},
                    "high": {"arm": f"N={high}", "audio": last["audio"]},
                }
            )
    return pairs


def _judge_line(judge: Mapping[str, Any] | None) -> str:
    if judge:
        return (
            f"judge: <b>{escape(judge['model'])}</b> (beam {judge['beam_size']}), {judge['clips']} "
            f"distinct winners re-transcribed in {fmt(judge['seconds'], 1)} s"
        )
    return (
        "no judge: pass <code>--judge-asr MODEL</code> to check the verifier's gain with an "
        "ASR model the selection never saw"
    )


def render_ab_html(data: Mapping[str, Any]) -> str:
    """The A/B page as one HTML string (see the module docstring)."""
    arms = data["arms"]
    low, high = min(data["ns"]), max(data["ns"])
    judged = data.get("judge") is not None
    rows = "".join(_utterance_row(u, low, high, judged) for u in data["utterances"])
    pairs = _abx_pairs(data["utterances"], low, high)
    judge_head = (
        '<th class="num sortable">judge WER</th><th class="num sortable">judge gain</th>'
        if judged
        else ""
    )
    cost_info = data.get("cost", {})
    body = (
        f"<h1>A/B: N={low} vs N={high}</h1>"
        f'<div class="muted">{escape(data.get("input"))} &middot; {escape(data.get("generator"))} '
        f"&middot; arms {', '.join(f'N={n}' for n in data['ns'])} from one fixed N={high} run "
        f'&middot; <a href="{escape(data.get("report", "report.html"))}">render report</a></div>'
        f'<p class="card">{_judge_line(data.get("judge"))}</p>'
        f"{_ab_charts(arms)}"
        f"<h2>Arms</h2>{_arm_table(arms)}"
        f'<p class="muted">cost: {escape(cost_info.get("attribution"))}; overhead (load, store, '
        f"assemble) {fmt(cost_info.get('overhead_seconds'), 1)} s.</p>"
        + "".join(f'<p class="muted">{escape(note)}</p>' for note in data.get("notes", []))
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
        f"<tbody>{rows}</tbody></table>"
    )
    embedded = {"low": f"N={low}", "high": f"N={high}", "abx": pairs}
    return page(f"A/B N={low} vs N={high}", body, json_script("ab-data", embedded) + _AB_SCRIPT)


def write_ab_report(out_dir: str | Path, data: Mapping[str, Any]) -> Path:
    """Write ``ab.html`` into the A/B output folder."""
    path = Path(out_dir) / "ab.html"
    write_text_atomic(path, render_ab_html(data))
    return path
