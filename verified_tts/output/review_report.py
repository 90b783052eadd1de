"""report.html's review section: what the producer decided, and the takes in the book that failed.

After ``verified-tts review`` delivers, the manifest carries each reviewed line's ``review`` block
and, at the top, the review's summary with every live decision in words (``review.decided``; see
:func:`verified_tts.review.hook.review_summary`). This section lists them (line, decision, who,
when) and names apart the lines whose take in the book is one that failed the gates, chosen in
review over the verifiers' pick, so the report never says every line passed when one does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verified_tts.output.html import escape
from verified_tts.output.manifest import Manifest

__all__ = ["chosen_failed", "review_section"]


def chosen_failed(manifest: Manifest) -> list[Any]:
    """The lines whose take in the book failed the gates, put there in review."""
    return [u for u in manifest.utterances if (u.review or {}).get("take_failed")]


def _when(value: Any) -> str:
    return escape(str(value or "").replace("T", " ")[:19])


def review_section(manifest: Manifest) -> str:
    """The section (empty for a render nobody reviewed)."""
    summary: Mapping[str, Any] = manifest.review or {}
    decided = list(summary.get("decided") or ())
    if not summary:
        return ""
    failed = chosen_failed(manifest)
    rows = "".join(
        f"<tr><td>{escape(d.get('text'))}</td><td>{escape(d.get('what'))}"
        + (f' <span class="fail">(a take that failed the gates: '
           f"{escape(', '.join(d['take_failed']))})</span>" if d.get("take_failed") else "")
        + f"</td><td>{escape(d.get('by'))}</td><td>{_when(d.get('at'))}</td></tr>"
        for d in decided
    )  # fmt: skip
    warning = ""
    if failed:
        items = "".join(
            f"<li>{escape(u.text)}: take {int(u.winner) + 1} failed the gates "
            f"({escape(', '.join(u.review['take_failed']))}), chosen by "
            f"{escape(u.review.get('by'))}</li>"
            for u in failed
        )
        lines = f'{len(failed)} line{"s" if len(failed) != 1 else ""}'
        warning = (f'<p class="fail">{lines} hold a take that failed the gates, chosen in '
                   f"review:</p><ul>{items}</ul>")  # fmt: skip
    progress = (f"{summary.get('reviewed', 0)} of {summary.get('lines', 0)} lines reviewed, "
                f"{summary.get('flagged_left', 0)} flagged left")  # fmt: skip
    table = (
        "<table><thead><tr><th>line</th><th>decision</th><th>by</th><th>at</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>" if rows else '<p class="muted">no decisions</p>'
    )
    return (f'<h2 id="review">Review ({len(decided)} decision{"s" if len(decided) != 1 else ""})'
            f'</h2><p class="muted">{escape(progress)}</p>{warning}{table}')  # fmt: skip
