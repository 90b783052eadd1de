"""``report.html``: every render's report, one self-contained file that opens from disk.

The page (scaffolding in :mod:`~verified_tts.output.html`; the A/B page is
:mod:`~verified_tts.output.ab_report`) is read from the manifest's records. Audio players point at
the store's FLAC files by paths relative to the page (``store/audio/...``), exactly as the manifest
lists them, so the page and the manifest never disagree about which clip is which. Flagged
utterances come first, one row each: what is wrong in a listener's words (the manifest's
``reasons``, :mod:`verified_tts.selection.reasons`), the text with the doubtful word marked, and the
kept take's player, with every other take (player, verdict, what the ASR model heard, scores) a
click away; then the words the ASR model doubts in every take, to check once. The tables keep to the
page's width (fixed column layout, long words wrap), because a producer opens the report to hear why
something was flagged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from verified_tts.output.html import escape, fmt, page, player
from verified_tts.output.manifest import (
    CandidateRecord,
    Manifest,
    UtteranceRecord,
    as_manifest,
    read_manifest,
)
from verified_tts.output.review_report import chosen_failed, review_section
from verified_tts.output.run_manifest import judged_comparison_hint, selection_lines
from verified_tts.selection.consensus import take_views
from verified_tts.selection.reasons import Reason, candidate_reasons, utterance_reasons
from verified_tts.storage.atomic import write_text_atomic

__all__ = ["render_report_html", "write_render_report"]

# metrics shown in a take's scores, in this order, when present
_SHOWN = ("wer", "asr_logprob", "asr_min_logprob", "asr_min_take_logprob", "speaker", "emotion",
          "duration_ratio", "clipping", "max_internal_silence_s")  # fmt: skip


def _reasons(utterance: UtteranceRecord) -> list[Reason]:
    """The manifest's reasons, or (a manifest written before there were any) the same reasons
    made from its takes."""
    if not utterance.reasons and utterance.flagged:
        takes = [(c.scores, c.detail, c.failed_gates) for c in utterance.candidates]
        return utterance_reasons(takes, utterance.winner, True, text=utterance.text)
    return [
        Reason(r["kind"], r["text"], r.get("word"), r.get("flag", True)) for r in utterance.reasons
    ]


def _marked(text: str, words: Sequence[str]) -> str:
    """The utterance's text, escaped, with the first occurrence of each doubtful word marked."""
    spans = []
    for word in words:
        match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE)
        if match and not any(a < match.end() and match.start() < b for a, b in spans):
            spans.append((match.start(), match.end()))
    out, position = [], 0
    for start, end in sorted(spans):
        out.append(escape(text[position:start]) + f"<mark>{escape(text[start:end])}</mark>")
        position = end
    return "".join(out) + escape(text[position:])


def _verdict(
    candidate: CandidateRecord, text: str, bounds: Mapping[str, Any], take_worst: int | None
) -> str:
    if candidate.passed:
        return '<span class="pass">passed</span>'
    said = candidate_reasons(candidate.scores, candidate.detail, candidate.failed_gates,
                             text=text, bounds=bounds, take_worst=take_worst)  # fmt: skip
    words = "; ".join(r.text for r in said) or ", ".join(candidate.failed_gates)
    return f'<span class="fail">{escape(words)}</span>'


def _scores_table(utterance: UtteranceRecord) -> str:
    candidates = utterance.candidates
    shown = [m for m in _SHOWN if any(m in c.scores for c in candidates)]
    head = "".join(f'<th class="num">{escape(m)}</th>' for m in shown)
    rows = "".join(
        f"<tr><td>{c.index}</td><td class='num'>{fmt(c.duration_s, 2)}</td>"
        + "".join(f'<td class="num">{fmt(c.scores.get(m))}</td>' for m in shown)
        + f'<td class="num">{fmt(c.score)}</td><td>{escape(", ".join(c.failed_gates))}</td></tr>'
        for c in candidates
    )
    return (
        '<details><summary class="muted">scores</summary><div class="wide"><table class="scores">'
        f'<thead><tr><th>#</th><th class="num">s</th>{head}<th class="num">score</th>'
        f"<th>failed gates</th></tr></thead><tbody>{rows}</tbody></table></div></details>"
    )


def _takes(utterance: UtteranceRecord, bounds: Mapping[str, Any], *, skip_winner: bool) -> str:
    """Every take (the kept one too unless it has its player elsewhere): player, verdict in
    words, what the ASR model heard; then the scores."""
    rows = []
    views = take_views([c.detail for c in utterance.candidates])
    for c, view in zip(utterance.candidates, views, strict=True):
        is_winner = c.index == utterance.winner
        heard = c.detail.get("transcript")
        audio = "kept (player beside)" if is_winner and skip_winner else player(
            c.audio, "take " + str(c.index))  # fmt: skip
        rows.append(
            f'<tr class="{"winner" if is_winner else ""}">'
            f"<td>{c.index}{' &#9733;' if is_winner else ''}</td><td>{audio}</td>"
            f"<td>{_verdict(c, utterance.text, bounds, view.worst_index if view else None)}</td>"
            f"<td>{escape(heard) if heard is not None else '&ndash;'}</td></tr>"
        )
    return (
        '<table class="takes"><colgroup><col class="n"><col class="audio"><col><col></colgroup>'
        "<thead><tr><th>#</th><th>audio</th><th>verdict</th><th>ASR heard</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{_scores_table(utterance)}"
    )


def _meta(utterance: UtteranceRecord, out_hint: str) -> str:
    command = (
        f"verified-tts rerender {out_hint} --utterance {utterance.key} -n "
        f"{max(16, 2 * len(utterance.candidates))}"
    )
    extra = ""
    if utterance.rerendered:
        extra = f' <span class="pill">re-rendered at N={utterance.rerendered.n}</span>'
    line = f" &middot; line {utterance.line}" if utterance.line else ""
    if utterance.spoken_by:
        line += f" &middot; voice <b>{escape(utterance.spoken_by)}</b>"
    return (
        f'<div class="muted">chapter {utterance.chapter + 1}{line} &middot; kept take '
        f"{utterance.winner} of {len(utterance.candidates)}{extra}</div>"
        f'<div class="muted">more takes: <code>{escape(command)}</code></div>'
    )


def _flagged_table(
    flagged: Sequence[UtteranceRecord], out_hint: str, bounds: Mapping, chosen_failed: int = 0
) -> str:
    if not flagged and chosen_failed:
        return (f'<p class="fail">none flagged, but {chosen_failed} line(s) hold a take chosen in '
                'review that failed the gates (see <a href="#review">Review</a>)</p>')  # fmt: skip
    if not flagged:
        return '<p class="muted">none: every utterance has a take that passed the gates</p>'
    rows = []
    for u in flagged:
        reasons = _reasons(u)
        gates = ", ".join(u.winner_candidate.failed_gates)
        said = [r for r in reasons if r.flag] or [Reason("other", f"failed: {gates}")]
        notes = [r for r in reasons if not r.flag]
        words = [r.word for r in reasons if r.word]
        rows.append(
            f'<tr id="u-{escape(u.key)}"><td><ul class="reasons">'
            + "".join(f"<li>{escape(r.text)}</li>" for r in said)
            + "".join(f'<li class="muted">{escape(r.text)}</li>' for r in notes)
            + f'</ul></td><td><p class="text">{_marked(u.text, words)}</p>{_meta(u, out_hint)}'
            f"<details><summary>all {len(u.candidates)} takes</summary>"
            f"{_takes(u, bounds, skip_winner=True)}</details></td>"
            f"<td>{player(u.winner_candidate.audio, 'kept take')}</td></tr>"
        )
    return (
        '<table class="flagged"><colgroup><col class="reason"><col class="text"><col class="audio">'
        "</colgroup><thead><tr><th>what is wrong</th><th>text</th><th>kept take</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _check_once(utterances: Sequence[UtteranceRecord]) -> str:
    """Words the ASR model doubts in every take: one line per word, with where it occurs."""
    seen: dict[str, list[UtteranceRecord]] = {}
    for u in utterances:
        for r in _reasons(u):
            if r.kind == "check_pronunciation" and r.word:
                seen.setdefault(r.word, []).append(u)
    if not seen:
        return ""
    items = "".join(
        f"<li><b>{escape(word)}</b> &middot; {len(where)} sentence{'s' if len(where) > 1 else ''}"
        f', e.g. <a href="#u-{escape(where[0].key)}">{_marked(where[0].text, [word])}</a></li>'
        for word, where in sorted(seen.items(), key=lambda item: -len(item[1]))
    )
    return (
        f"<h2>Words to check once ({len(seen)})</h2><p class='muted'>The ASR model doubts these "
        "in every take alike, so more takes will not change them: listen once, and add a lexicon "
        f"entry (--lexicon) where the pronunciation is wrong.</p><ul>{items}</ul>"
    )


def _listen_once(utterances: Sequence[UtteranceRecord]) -> str:
    """Lines that passed the speaker gate only on what all their takes share: one line each."""
    lines = [u for u in utterances if any(r.kind == "check_voice" for r in _reasons(u))]
    if not lines:
        return ""
    items = "".join(
        f'<li><a href="#u-{escape(u.key)}">{escape(u.text)}</a> {player(u.winner_candidate.audio)}'
        "</li>"
        for u in lines
    )
    return (
        f"<h2>Lines to listen to once ({len(lines)})</h2><p class='muted'>Every take of these "
        "sounds a little unlike the narrator's voice, as an exclamation or a question read on its "
        "own often does; more takes will not change it. Listen once, and re-render a line if it "
        f"is not the narrator.</p><ul>{items}</ul>"
    )


def _utterance_card(utterance: UtteranceRecord, out_hint: str, bounds: Mapping) -> str:
    words = [r.word for r in _reasons(utterance) if r.word]
    notes = "".join(f"<li>{escape(r.text)}</li>" for r in _reasons(utterance))
    return (
        f'<section class="card {"flag" if utterance.flagged else "ok"}" '
        f'id="u-{escape(utterance.key)}"><p class="text">{_marked(utterance.text, words)}</p>'
        + (f'<ul class="reasons muted">{notes}</ul>' if notes else "")
        + f"{_meta(utterance, out_hint)}{_takes(utterance, bounds, skip_winner=False)}</section>"
    )


def _render_summary(manifest: Manifest, flagged: int) -> str:
    stats = manifest.stats
    mode = "adaptive" if manifest.adaptive else "fixed"
    return (
        f"<table><tbody>"
        f"<tr><th>utterances</th><td>{len(manifest.utterances)}</td></tr>"
        f"<tr><th>flagged (no candidate passed the gates)</th><td>{flagged}</td></tr>"
        f"<tr><th>N</th><td>{manifest.n} ({mode})</td></tr>"
        + "".join(
            f"<tr><th>{escape(label)}</th><td>{escape(value)}</td></tr>"
            for label, value in selection_lines(stats)
        )
        + f"<tr><th>candidates generated / reused</th><td>{stats.get('candidates_generated')} / "
        f"{stats.get('candidates_reused')}</td></tr>"
        f"<tr><th>wall seconds</th><td>{fmt(stats.get('wall_seconds'), 1)}</td></tr>"
        f"</tbody></table><p class='muted'>"
        f"{escape(judged_comparison_hint(Path(manifest.input).name))}</p>"
    )


def _chapter_table(manifest: Manifest) -> str:
    chapters = "".join(
        f"<tr><td>{c.index + 1}</td><td>{escape(c.title or '')}</td>"
        f"<td>{player(c.flac)}</td><td class='num'>{fmt(c.duration_s, 1)}</td></tr>"
        for c in manifest.chapters
    )
    book = manifest.book
    return (
        "<table><thead><tr><th>#</th><th>title</th><th>audio</th>"
        f'<th class="num">s</th></tr></thead><tbody>{chapters}'
        f"<tr><td></td><td>whole book</td><td>{player(book.flac)}</td>"
        f"<td class='num'>{fmt(book.duration_s, 1)}</td></tr></tbody></table>"
    )


def _acx_section(manifest: Manifest) -> str:
    """Each checked file's ACX figures and verdict (from ``delivery.acx``), and the M4B parts."""
    delivery = manifest.delivery or {}
    acx = delivery.get("acx")
    if not acx:
        return ""
    rows = "".join(
        f"<tr><td>{escape(f['path'])}</td><td class='num'>{fmt(f['rms_db'], 1)}</td>"
        f"<td class='num'>{fmt(f['peak_db'], 1)}</td>"
        f"<td class='num'>{fmt(f['noise_floor_db'], 1)}</td>"
        f"<td class='num'>{fmt(f['head_s'], 2)}</td><td class='num'>{fmt(f['tail_s'], 2)}</td>"
        f"<td class='num'>{fmt(f['duration_s'] / 60, 1)}</td>"
        f"<td>{'pass' if f['passed'] else 'FAIL: ' + escape('; '.join(f['failures']))}</td></tr>"
        for f in acx.get("files", [])
    )
    parts = "".join(
        f"<li>{escape(part['path'])}: {len(part['chapters'])} chapters, "
        f"{fmt(part['duration_s'] / 60, 1)} min</li>"
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


def _voice_table(manifest: Manifest) -> str:
    """Each voice that spoke a line: generator, rate, lines, flagged, its speaker reference."""
    if not manifest.voices:
        return ""
    rows = "".join(
        f"<tr><td>{escape(name)}</td><td>{escape(v.get('generator'))}</td>"
        f"<td class='num'>{v.get('sample_rate')}</td><td class='num'>{v.get('lines')}</td>"
        f"<td class='num'>{v.get('flagged')}</td><td>{escape(v.get('reference'))}</td>"
        f"<td>{'its own' if v.get('selection') else 'the book' + chr(39) + 's'}</td></tr>"
        for name, v in manifest.voices.items()
    )
    return (
        "<h2>Voices</h2><table><thead><tr><th>voice</th><th>generator</th>"
        "<th class='num'>Hz</th><th class='num'>lines</th><th class='num'>flagged</th>"
        f"<th>speaker reference</th><th>gates</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def render_report_html(manifest: Manifest | Mapping[str, Any], out_hint: str = "OUT_DIR") -> str:
    """The render report as one HTML string (see the module docstring)."""
    manifest = as_manifest(manifest)
    flagged = [u for u in manifest.utterances if u.flagged]
    rest = [u for u in manifest.utterances if not u.flagged]
    bounds = {g["metric"]: g for g in manifest.selection.get("gates", []) if "metric" in g}
    off = "".join(
        f"<li>{escape(name)}: {escape(s.get('reason'))}</li>"
        for name, s in manifest.verifiers.items()
        if not s.get("available")
    )
    body = (
        f"<h1>{escape(manifest.title or manifest.input or 'render')}</h1>"
        f'<div class="muted">{escape(manifest.generator)} &middot; '
        f"{escape(manifest.model)} &middot; input {escape(manifest.input)}</div>"
        f'<div class="card">{_render_summary(manifest, len(flagged))}'
        + (f'<p class="muted">verifiers that did not score:</p><ul>{off}</ul>' if off else "")
        + "</div>"
        + review_section(manifest)
        + f"<h2>Flagged utterances ({len(flagged)})</h2>"
        + _flagged_table(flagged, out_hint, bounds, len(chosen_failed(manifest)))
        + _check_once(manifest.utterances)
        + _listen_once(manifest.utterances)
        + _voice_table(manifest)
        + f"<h2>Chapters</h2>{_chapter_table(manifest)}"
        + _acx_section(manifest)
        + f"<h2>All other utterances ({len(rest)})</h2>"
        + "".join(
            f"<details><summary>{escape(u.text)}</summary>"
            f"{_utterance_card(u, out_hint, bounds)}</details>"
            for u in rest
        )
    )
    return page(f"report: {manifest.title or manifest.input}", body)


def write_render_report(
    out_dir: str | Path, manifest: Manifest | Mapping[str, Any] | None = None
) -> Path:
    """Write ``report.html`` beside ``manifest.json`` (read from disk when not given)."""
    out = Path(out_dir)
    loaded = read_manifest(out) if manifest is None else as_manifest(manifest)
    path = out / "report.html"
    write_text_atomic(path, render_report_html(loaded, str(out)))
    return path
