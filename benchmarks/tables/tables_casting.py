"""Generated blocks of who-speaks figures: the casting sieve against the PDNC annotations.

Each function renders one block of docs/casting.md from benchmarks/results/attribution_pdnc.json
(written by benchmarks/casting/attribution_accuracy.py) or voice_distinctness.json (written by
benchmarks/casting/voice_distinctness.py; see doc_blocks.py); the ``BLOCKS`` mapping names them.
Labels are written here, every figure is read.
"""

from __future__ import annotations

from benchmarks.tables.doc_blocks import Generated, md_table, pct, result

__all__ = ["BLOCKS"]

_GROUPS = (("development", "development"), ("held_out", "held out"))
_TYPES = (("Explicit", "tagged"), ("Anaphoric", "pronoun tag"), ("Implicit", "untagged"),
          ("all", "all"))  # fmt: skip


def casting_pdnc() -> str:
    """Accuracy and precision by group and PDNC quote type, the earlier rules beside the sieve."""
    data = result("attribution_pdnc")["results"]
    sieve, baseline = data["sieve"], data["baseline"]
    header = ("novels", "quotes", "kind", "earlier rules: right", "sieve: right",
              "sieve: right of those given a speaker", "sieve: given a speaker")  # fmt: skip
    rows = []
    for group, group_label in _GROUPS:
        for kind, kind_label in _TYPES:
            now, before = sieve[group][kind], baseline[group][kind]
            rows.append((
                group_label, f"{now['quotes']:,}", kind_label, pct(before["accuracy"], 1),
                pct(now["accuracy"], 1), pct(now["precision"], 1), pct(now["committed_share"], 1),
            ))  # fmt: skip
    return md_table(header, rows)


def casting_pdnc_novels() -> str:
    """Each novel: accuracy by quote type, the earlier rules beside the sieve."""
    data = result("attribution_pdnc")
    sieve, baseline = data["results"]["sieve"]["novels"], data["results"]["baseline"]["novels"]
    header = ("novel", "part", "quotes", *(f"{label}: earlier / sieve" for _, label in _TYPES),
              "sieve: right of those given a speaker")  # fmt: skip
    rows = []
    for part, novels in (("development", data["development"]), ("held out", data["held_out"])):
        for novel in novels:
            now, before = sieve[novel], baseline[novel]
            rows.append((
                novel, part, f"{now['all']['quotes']:,}",
                *(f"{pct(before[k]['accuracy'], 1)} / {pct(now[k]['accuracy'], 1)}"
                  for k, _ in _TYPES),
                pct(now["all"]["precision"], 1),
            ))  # fmt: skip
    return md_table(header, rows)


def casting_pdnc_threshold() -> str:
    """What the confidence threshold trades: right, precision and coverage at each threshold."""
    sieve = result("attribution_pdnc")["results"]["sieve"]
    header = ("threshold", *(f"{label}: {m}" for _, label in _GROUPS
              for m in ("right", "right of those given a speaker", "given a speaker")))  # fmt: skip
    rows = []
    for threshold in sieve["by_threshold"]["development"]:
        marked = " (cast's)" if float(threshold) == sieve["threshold"] else ""
        rows.append((
            f"{float(threshold):.1f}{marked}",
            *(pct(sieve["by_threshold"][g][threshold][m], 1) for g, _ in _GROUPS
              for m in ("accuracy", "precision", "committed_share")),
        ))  # fmt: skip
    return md_table(header, rows)


def casting_pdnc_speed() -> str:
    seconds = result("attribution_pdnc")["results"]["sieve"]["command_seconds"]
    slowest = max(seconds, key=seconds.get)
    return f"{seconds[slowest]:.1f} s ({slowest}), the slowest of the nine, start-up included"


def casting_pdnc_split() -> str:
    data = result("attribution_pdnc")
    return (
        f"development novels: {', '.join(data['development'])}; held out: "
        f"{', '.join(data['held_out'])}"
    )


def casting_voices() -> str:
    """Each measured voice: judged WER, the closest other voice, and whether a cast can use it."""
    data = result("voice_distinctness")
    worst, chosen = data["highest_clip_to_centroid"], set(data["told_apart_pairwise"])
    header = ("voice", "gender", "judged WER", "closest other voice (highest clip similarity)",
              "as clear as the default", "in the told-apart set")  # fmt: skip
    rows = []
    for name, wer in data["judge_wer"].items():
        others = {**worst[name], **{b: worst[b][name] for b in worst if name in worst[b]}}
        closest = max(others, key=lambda b: max(worst[name][b], worst[b][name]))
        highest = max(worst[name][closest], worst[closest][name])
        rows.append((
            f"`{name}`", data["gender"].get(name) or "", f"{wer:.3f}",
            f"`{closest}` ({highest:.3f})", "yes" if name in data["as_clear_as_default"] else "no",
            "yes" if name in chosen else "no",
        ))  # fmt: skip
    return md_table(header, rows)


def casting_voices_summary() -> str:
    data = result("voice_distinctness")
    return (
        f"{len(data['told_apart_pairwise'])} voices told apart pairwise and as clear as the "
        f"default (gate {data['gate']}, {data['sentences']} Harvard sentences, judged WER within "
        f"{data['wer_margin']} of the default voice's)"
    )


BLOCKS = {
    "casting-voices": Generated(("voice_distinctness",), casting_voices, labels=1),
    "casting-voices-summary": Generated(("voice_distinctness",), casting_voices_summary, labels=0),
    "casting-pdnc": Generated(("attribution_pdnc",), casting_pdnc, labels=3),
    "casting-pdnc-split": Generated(("attribution_pdnc",), casting_pdnc_split, labels=0),
    "casting-pdnc-novels": Generated(("attribution_pdnc",), casting_pdnc_novels, labels=2),
    "casting-pdnc-threshold": Generated(("attribution_pdnc",), casting_pdnc_threshold, labels=1),
    "casting-pdnc-speed": Generated(("attribution_pdnc",), casting_pdnc_speed, labels=0),
}
