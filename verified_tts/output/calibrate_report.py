"""``calibrate.html`` and the files beside it: what the verifiers catch, as a producer reads it.

One self-contained page in the style of the render report (its CSS and inline SVG charts): the
goals and whether they are met, recall and false alarms per fault kind under the current and the
recommended gates, per-metric AUC and recall at the target false-alarm rate, ROC curves of the
best metrics per fault kind, the faulted-winner-vs-N curves of the selection simulation, the two
gate sets side by side, and players for a caught and a missed case of every kind next to the
clean candidate it was made from (FLAC files under ``audio/``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verified_tts.options import Gate
from verified_tts.output.html import escape, fmt, json_script, line_chart, page, player
from verified_tts.storage.atomic import write_audio_atomic, write_json_atomic, write_text_atomic

__all__ = ["render_calibrate_html", "write_calibration", "write_examples"]

_COLOURS = ("#1d4ed8", "#d92d20", "#12b76a", "#7a5af8", "#f79009")


def write_examples(
    out: Path, cases: Sequence[Any], utterances: Sequence[Any], data: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Write FLACs of one caught and one missed case per kind (recommended gates), each with its
    clean source, and describe them for the page."""
    gates = [Gate(**g) for g in data["gates"]["recommended"]]
    per_kind = int(data.get("options", {}).get("examples", 1))
    audio_dir = out / "audio"
    audio_dir.mkdir(exist_ok=True)
    clean = {(c.utterance, c.source): c for c in cases if c.kind == "clean"}
    examples = []
    for kind in dict.fromkeys(c.kind for c in cases if c.kind != "clean"):
        group = [c for c in cases if c.kind == kind]
        for caught in (True, False):
            chosen = [c for c in group if _rejected(c.metrics, gates) == caught][:per_kind]
            for case in chosen:
                stem = f"{kind}-{case.utterance:03d}-{case.source}"
                source = clean[(case.utterance, case.source)]
                for path, clip in ((f"{stem}.flac", case), (f"{stem}-clean.flac", source)):
                    audio = np.asarray(clip.audio, dtype=np.float32)
                    write_audio_atomic(audio_dir / path, audio, clip.sample_rate, format="FLAC")
                examples.append(
                    {
                        "kind": kind,
                        "caught": caught,
                        "text": utterances[case.utterance].segment.text,
                        "description": case.description,
                        "heard": case.transcript,
                        "failed": [g.metric for g in gates if _fails(g, case.metrics)],
                        "audio": f"audio/{stem}.flac",
                        "clean_audio": f"audio/{stem}-clean.flac",
                    }
                )
    return examples


def _fails(gate: Gate, metrics: Mapping[str, float]) -> bool:
    verdict = gate.check(metrics)
    return verdict is not None and not verdict[0]


def _rejected(metrics: Mapping[str, float], gates: Sequence[Gate]) -> bool:
    return any(_fails(g, metrics) for g in gates)


def write_calibration(out: Path, data: Mapping[str, Any], toml: str) -> tuple[Path, Path, Path]:
    """Write calibrate.json, calibrate.html and gates.toml atomically; return their paths."""
    gates, json_path, html = out / "gates.toml", out / "calibrate.json", out / "calibrate.html"
    write_text_atomic(gates, toml)
    write_json_atomic(json_path, _plain(data))
    write_text_atomic(html, render_calibrate_html(data, toml))
    return json_path, html, gates


def _plain(value: Any) -> Any:
    """JSON has no NaN or infinity: they become null."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _pct(value: float | None) -> str:
    return "&ndash;" if value is None or value != value else f"{100 * value:.0f}%"


def _goal_rows(goals: Mapping[str, Any]) -> str:
    rows = []
    for name, goal in goals.items():
        css = "pass" if goal["met"] else "fail"
        is_max = name.startswith(("false_alarm", "faulted"))
        rows.append(
            f"<tr><td>{escape(name)}</td><td class='num'>{'&le;' if is_max else '&ge;'} "
            f"{_pct(goal['goal'])}</td><td class='num {css}'>{100 * goal['value']:.1f}%</td>"
            f"<td class='{css}'>{'met' if goal['met'] else 'not met'}</td></tr>"
        )
    return (
        "<table><thead><tr><th>goal</th><th class='num'>target</th><th class='num'>measured</th>"
        f"<th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _fault_table(data: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{escape(f['kind'])}</td><td class='num'>{f['cases']}</td>"
        f"<td class='num'>{_pct(f['recall'])}</td><td class='num'>{_pct(f['recall_at_target'])}"
        f"</td><td class='num'>{_pct(f.get('held_out_recall'))}</td>"
        f"<td class='num'>{_pct(f.get('goal'))}</td><td class='num'>{fmt(f['auc'])}</td>"
        f"<td>{escape(f['best_metric'])}</td></tr>"
        for f in data["faults"]
    )
    clean = data["clean"]
    rows += (
        f"<tr><td><b>clean (false alarms)</b></td><td class='num'>{clean['cases']}</td>"
        f"<td class='num'>{_pct(clean['false_alarm'])}</td>"
        f"<td class='num'>{_pct(clean['false_alarm_recommended'])}</td>"
        f"<td class='num'>{_pct(clean.get('held_out_false_alarm'))}</td>"
        f"<td class='num'>&le; {_pct(data['false_alarm_target'])}</td><td></td><td></td></tr>"
    )
    return (
        "<table><thead><tr><th>fault</th><th class='num'>cases</th>"
        "<th class='num'>recall, current gates</th><th class='num'>recall, recommended</th>"
        "<th class='num'>held out</th><th class='num'>goal</th><th class='num'>best AUC</th>"
        f"<th>best metric</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _metric_table(data: Mapping[str, Any]) -> str:
    kinds = [f["kind"] for f in data["faults"]]
    head = "".join(f"<th class='num'>{escape(k)}</th>" for k in kinds)
    rows = []
    for row in data["metrics"]:
        cells = []
        for f in data["faults"]:
            m = next(
                x
                for x in f["metrics"]
                if x["metric"] == row["metric"] and x["bound"] == row["bound"]
            )
            current = (
                "" if m["recall_current_gate"] is None else f" / {_pct(m['recall_current_gate'])}"
            )
            cells.append(
                f"<td class='num'>{_pct(m['recall_at_threshold'])}{current}"
                f"<br><span class='muted'>AUC {fmt(m['auc'], 2)}</span></td>"
            )
        gate = "&ndash;" if row["current_gate"] is None else fmt(row["current_gate"])
        rows.append(
            f"<tr><td>{escape(row['label'])}</td><td class='num'>{gate} "
            f"({_pct(row['false_alarm_current'])})</td>"
            f"<td class='num'>{fmt(row['threshold_at_target'])}</td>{''.join(cells)}</tr>"
        )
    return (
        "<div class='wide'><table><thead><tr><th>metric</th><th class='num'>current gate "
        "(false alarms)</th><th class='num'>bound at target</th>"
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _roc_charts(data: Mapping[str, Any]) -> str:
    charts = []
    for kind, curves in data.get("roc", {}).items():
        series = [
            (c["label"], _COLOURS[i % len(_COLOURS)], [tuple(p) for p in c["points"]])
            for i, c in enumerate(curves)
        ]
        series.append(("chance", "#98a2b3", [(0.0, 0.0), (1.0, 1.0)]))
        charts.append(
            line_chart(f"ROC: {kind}", series, "recall on faulted", x_label="false alarms on "
                        "clean candidates", x_log=False, markers=False, width=560, height=300)
        )  # fmt: skip
    return f"<div class='charts'>{''.join(charts)}</div>"


def _selection_charts(data: Mapping[str, Any]) -> str:
    charts = []
    rates = sorted({s["p"] for s in data["selection"]})
    for p in rates:
        series = []
        for i, name in enumerate(("current", "recommended")):
            points = [
                (s["n"], s["faulted_winners"])
                for s in data["selection"]
                if s["p"] == p and s["gates"] == name
            ]
            series.append((f"{name} gates", _COLOURS[i], sorted(points)))
        charts.append(line_chart(f"fault rate p = {p:g}", series, "share of winners faulted"))
    rows = "".join(
        f"<tr><td class='num'>{s['p']:g}</td><td class='num'>{s['n']}</td><td>{s['gates']}</td>"
        f"<td class='num'>{100 * s['faulted_winners']:.2f}%</td>"
        f"<td class='num'>{100 * s['flagged']:.1f}%</td><td class='num'>{s['trials']}</td></tr>"
        for s in data["selection"]
    )
    return (
        f"<div class='charts'>{''.join(charts)}</div><details><summary>table</summary><table>"
        "<thead><tr><th class='num'>p</th><th class='num'>N</th><th>gates</th>"
        "<th class='num'>faulted winners</th><th class='num'>flagged</th>"
        f"<th class='num'>trials</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )


def _gate_table(data: Mapping[str, Any]) -> str:
    def describe(gate: Mapping[str, Any] | None) -> str:
        if gate is None:
            return "<span class='muted'>off</span>"
        parts = []
        if gate["min"] is not None:
            parts.append(f"&ge; {fmt(gate['min'], 4)}")
        if gate["max"] is not None:
            parts.append(f"&le; {fmt(gate['max'], 4)}")
        margin = f" <span class='muted'>(margin {fmt(gate['margin'], 3)})</span>"
        return " and ".join(parts) + (margin if gate["margin"] else "")

    current = {g["metric"]: g for g in data["gates"]["current"]}
    recommended = {g["metric"]: g for g in data["gates"]["recommended"]}
    rows = "".join(
        f"<tr><td>{escape(m)}</td><td>{describe(current.get(m))}</td>"
        f"<td>{describe(recommended.get(m))}</td></tr>"
        for m in dict.fromkeys([*current, *recommended])
    )
    return (
        "<table><thead><tr><th>metric</th><th>current gate</th><th>recommended gate</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
    )


def _examples(data: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{escape(x['kind'])}</td><td class='{'pass' if x['caught'] else 'fail'}'>"
        f"{'caught' if x['caught'] else 'missed'}</td><td>{escape(x['text'])}<br>"
        f"<span class='muted'>{escape(x['description'])}</span></td>"
        f"<td>{player(x['audio'], 'faulted')}</td><td>{player(x['clean_audio'], 'clean')}</td>"
        f"<td>{escape(', '.join(x['failed']) or '-')}</td>"
        f"<td>{escape(x.get('heard') or '')}</td></tr>"
        for x in data.get("examples", [])
    )
    return (
        "<div class='wide'><table><thead><tr><th>fault</th><th></th><th>text / what was done"
        "</th><th>faulted</th><th>clean source</th><th>gates failed</th><th>ASR heard</th>"
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _short_lines(data: Mapping[str, Any]) -> str:
    """Recall on lines of few words, and the faults such a line cannot carry."""
    short = data.get("short_lines") or {}
    if not short.get("utterances"):
        return ""
    rows = "".join(
        f"<tr><td>{escape(kind)}</td><td class='num'>{entry['cases']}</td>"
        f"<td class='num'>{_pct(entry['current'])}</td>"
        f"<td class='num'>{_pct(entry['recommended'])}</td></tr>"
        for kind, entry in short["recall"].items()
    )
    rows += (
        f"<tr><td><b>clean (false alarms)</b></td><td class='num'>{short['clean_cases']}</td>"
        f"<td class='num'>{_pct(short['false_alarm'])}</td>"
        f"<td class='num'>{_pct(short['false_alarm_recommended'])}</td></tr>"
    )
    missing = "".join(
        f"<li>{escape(kind)}: not made on {why['lines']} line(s): {escape(why['why'])}</li>"
        for kind, why in (short.get("cannot_carry") or {}).items()
    )
    return (
        f"<h2>Short lines (up to {short['max_words']} words: {short['utterances']} utterances)</h2>"
        "<div class='card'><table><thead><tr><th>fault</th><th class='num'>cases</th>"
        "<th class='num'>recall, current gates</th><th class='num'>recall, recommended</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
        + (f"<ul>{missing}</ul>" if missing else "")
        + "</div>"
    )


def render_calibrate_html(data: Mapping[str, Any], toml: str = "") -> str:
    """The calibration page as one HTML string (see the module docstring)."""
    generator = data.get("generator", {})
    seconds = data.get("seconds", {})
    body = (
        "<h1>Calibration: what the verifiers catch</h1>"
        f"<div class='muted'>generator {escape(generator.get('name'))}"
        f"{' &middot; voice ' + escape(generator.get('voice')) if generator.get('voice') else ''}"
        f" &middot; {data.get('utterances')} utterances of {escape(data.get('input'))} &middot; "
        f"{data['clean']['cases']} clean candidates &middot; target false alarms "
        f"{_pct(data['false_alarm_target'])} &middot; {fmt(seconds.get('total'), 1)} s</div>"
        f"<h2>Goals (recommended gates)</h2><div class='card'>{_goal_rows(data['goals'])}</div>"
        f"<h2>Per fault kind</h2><div class='card'>{_fault_table(data)}"
        "<p class='muted'>Recall = share of faulted copies the gates reject. Recommended gates "
        "are fitted on these cases; <i>held out</i> fits them on half the utterances and "
        "measures on the other half (two folds), the figure to expect on new text.</p></div>"
        f"{_short_lines(data)}"
        "<h2>Per metric: recall at the bound that flags the target share of clean candidates "
        "(/ at the current gate)</h2>"
        f"<div class='card'>{_metric_table(data)}</div>"
        f"<h2>ROC curves (best three metrics per fault)</h2>{_roc_charts(data)}"
        "<h2>Best-of-N: share of utterances whose winner is faulted</h2>"
        "<p class='muted'>Each of N candidates is faulted with probability p (a faulted copy of "
        "the utterance, else one of its clean candidates); the selection policy picks the winner "
        f"as a fixed-N render does.</p>{_selection_charts(data)}"
        f"<h2>Gates</h2><div class='card'>{_gate_table(data)}"
        f"<p>gates.toml (use with <code>--config gates.toml</code>):</p><pre>{escape(toml)}</pre>"
        "</div>"
        f"<h2>Caught and missed cases</h2>{_examples(data)}"
    )
    return page("calibration", body, json_script("calibrate-data", {"goals": data["goals"]}))
