"""``report.html``: every render's report, one self-contained file that opens from disk.

The page (scaffolding in :mod:`~verified_tts.output.html`; the A/B page is
:mod:`~verified_tts.output.ab_report`) is read from the manifest's records. Audio players point at
the store's FLAC files by paths relative to the page (``store/audio/...``), exactly as the manifest
lists them, so the page and the manifest never disagree about which clip is which. Flagged
utterances come first (every candidate with a player, its scores, the gates it failed and what the
ASR heard), because a producer opens the report to hear why something was flagged.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from verified_tts.atomic import write_text_atomic
from verified_tts.output.html import escape, fmt, page, player
from verified_tts.output.manifest import Manifest, UtteranceRecord, as_manifest, read_manifest

__all__ = ["render_report_html", "write_render_report"]

# metrics shown in candidate tables, in this order, when present
_SHOWN = ("wer", "asr_logprob", "asr_min_logprob", "speaker", "emotion", "duration_ratio",
          "clipping", "max_internal_silence_s")  # fmt: skip


def _candidate_table(utterance: UtteranceRecord) -> str:
    candidates = utterance.candidates
    shown = [m for m in _SHOWN if any(m in c.scores for c in candidates)]
    head = "".join(f'<th class="num">{escape(m)}</th>' for m in shown)
    rows = []
    for c in candidates:
        is_winner = c.index == utterance.winner
        verdict = (
            '<span class="pass">passed</span>'
            if c.passed
            else '<span class="fail">failed: ' + escape(", ".join(c.failed_gates)) + "</span>"
        )
        cells = "".join(f'<td class="num">{fmt(c.scores.get(m))}</td>' for m in shown)
        heard = c.detail.get("transcript")
        rows.append(
            f'<tr class="{"winner" if is_winner else ""}">'
            f"<td>{c.index}{' &#9733;' if is_winner else ''}</td>"
            f"<td>{player(c.audio, 'candidate ' + str(c.index))}</td>"
            f'<td class="num">{fmt(c.duration_s, 2)}</td>{cells}'
            f'<td class="num">{fmt(c.score)}</td><td>{verdict}</td>'
            f"<td>{escape(heard) if heard is not None else '&ndash;'}</td></tr>"
        )
    return (
        '<div class="wide"><table class="candidates"><thead><tr><th>#</th><th>audio</th>'
        f'<th class="num">s</th>{head}<th class="num">score</th><th>gates</th>'
        f"<th>ASR heard</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _utterance_card(utterance: UtteranceRecord, out_hint: str) -> str:
    flagged = utterance.flagged
    command = (
        f"verified-tts rerender {out_hint} --utterance {utterance.key} -n "
        f"{max(16, 2 * len(utterance.candidates))}"
    )
    extra = ""
    if utterance.rerendered:
        extra = f' <span class="pill">re-rendered at N={utterance.rerendered.n}</span>'
    return (
        f'<section class="card {"flag" if flagged else "ok"}" id="u-{escape(utterance.key)}">'
        f"<h3>{escape(utterance.text)}</h3>"
        f'<div class="muted">chapter {utterance.chapter + 1} &middot; '
        + (f"voice <b>{escape(utterance.spoken_by)}</b> &middot; " if utterance.spoken_by else "")
        + "key "
        f"<code>{escape(utterance.key)}</code> &middot; winner {utterance.winner} of "
        f"{len(utterance.candidates)}{' &middot; <b class=fail>flagged</b>' if flagged else ''}"
        f"{extra}</div>{_candidate_table(utterance)}"
        f'<div class="muted">more candidates: <code>{escape(command)}</code></div></section>'
    )


def _render_summary(manifest: Manifest, flagged: int) -> str:
    stats = manifest.stats
    mode = "adaptive" if manifest.adaptive else "fixed"
    return (
        f"<table><tbody>"
        f"<tr><th>utterances</th><td>{len(manifest.utterances)}</td></tr>"
        f"<tr><th>flagged (no candidate passed the gates)</th><td>{flagged}</td></tr>"
        f"<tr><th>N</th><td>{manifest.n} ({mode})</td></tr>"
        f"<tr><th>mean WER, winners vs candidate 0</th><td>{fmt(stats.get('mean_wer_winners'))}"
        f" vs {fmt(stats.get('mean_wer_candidate0'))}</td></tr>"
        f"<tr><th>candidates generated / reused</th><td>{stats.get('candidates_generated')} / "
        f"{stats.get('candidates_reused')}</td></tr>"
        f"<tr><th>wall seconds</th><td>{fmt(stats.get('wall_seconds'), 1)}</td></tr>"
        f"</tbody></table>"
    )


def _voice_table(manifest: Manifest) -> str:
    """Each voice that spoke a line: generator, rate, lines, flagged, its speaker reference."""
    if not manifest.voices:
        return ""
    rows = "".join(
        f"<tr><td>{escape(name)}</td><td>{escape(v.get('generator'))}</td>"
        f"<td class='num'>{v.get('sample_rate')}</td><td class='num'>{v.get('lines')}</td>"
        f"<td class='num'>{v.get('flagged')}</td><td>{escape(v.get('reference'))}</td></tr>"
        for name, v in manifest.voices.items()
    )
    return (
        "<h2>Voices</h2><table><thead><tr><th>voice</th><th>generator</th>"
        "<th class='num'>Hz</th><th class='num'>lines</th><th class='num'>flagged</th>"
        f"<th>speaker reference</th></tr></thead><tbody>{rows}</tbody></table>"
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


def render_report_html(manifest: Manifest | Mapping[str, Any], out_hint: str = "OUT_DIR") -> str:
    """The render report as one HTML string (see the module docstring)."""
    manifest = as_manifest(manifest)
    flagged = [u for u in manifest.utterances if u.flagged]
    rest = [u for u in manifest.utterances if not u.flagged]
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
        f"<h2>Flagged utterances ({len(flagged)})</h2>"
        + (
            "".join(_utterance_card(u, out_hint) for u in flagged)
            or '<p class="muted">none: every utterance has a candidate that passed the gates</p>'
        )
        + _voice_table(manifest)
        + f"<h2>Chapters</h2>{_chapter_table(manifest)}"
        + _acx_section(manifest)
        + f"<h2>All other utterances ({len(rest)})</h2>"
        + "".join(
            f"<details><summary>{escape(u.text)}</summary>{_utterance_card(u, out_hint)}</details>"
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
