"""Generated blocks of the selection figures: ranking rules, the speaker term, adaptive rounds.

Each function renders one block of docs/*.md from its result files (see doc_blocks.py); the
``BLOCKS`` mapping names them. Labels (what a row is) are written here; every figure is read.
"""

from __future__ import annotations

from benchmarks.tables.doc_blocks import (
    Generated,
    better_worse,
    ci,
    gain,
    md_table,
    num,
    pct,
    result,
)

__all__ = ["BLOCKS"]


def selection_rules() -> str:
    names = {
        "candidate 0 (N=1)": "candidate 0 (N=1)",
        "policy: gates, then weighted score (default)": "the policy: gates, then weighted score",
        "highest asr_logprob alone": "highest reference log-probability alone",
        "lowest verifier WER alone": "lowest verifier WER alone",
    }
    rows = []
    for row in result("selection_rules")["rules"]:
        if row["rule"] not in names:
            continue
        first = row["rule"].startswith("candidate 0")
        paired = row["gain_over_candidate0"]
        rows.append(
            (
                names[row["rule"]],
                num(row["judge_wer"]),
                "" if first else pct(row["change_vs_candidate0"]),
                "" if first else gain(paired),
                "" if first else better_worse(paired),
            )
        )
    header = ("rule (8 candidates)", "judge WER", "change", "paired gain (95% interval)",
              "better / worse")  # fmt: skip
    return md_table(header, rows)


def _replays() -> dict:
    return result("judgement_replays")


def speaker_term() -> str:
    first = _replays()["speaker_term"][0]
    return (
        f"{first['winners_differ_without_speaker']} of {first['utterances']} winners differ "
        f"({first['winners_differ_without_speaker_and_min_logprob_weight']} when the "
        f"asr_min_logprob weight goes too), yet the judge's WER is {num(first['judge_wer_policy'])}"
        f" with the term and {num(first['judge_wer_without_speaker'])} without"
    )


def speaker_term_300() -> str:
    rows = []
    for entry in _replays()["speaker_term"]:
        rows.append(
            (
                entry["input"].rsplit("/", 1)[-1],
                entry["utterances"],
                entry["winners_differ_without_speaker"],
                entry["winners_differ_without_speaker_and_min_logprob_weight"],
                num(entry["judge_wer_policy"]),
                num(entry["judge_wer_without_speaker"]),
                gain(entry["gain_of_the_speaker_term"]),
            )
        )
    header = ("candidates", "sentences", "winners that change without the speaker term",
              "... and without the asr_min_logprob weight", "judge WER, policy",
              "judge WER, no speaker term", "judged gain of the term")  # fmt: skip
    return md_table(header, rows)


def _share(entry: dict) -> str:
    return f"{num(entry['candidates_per_utterance'], 2)} ({pct(entry['candidate_share'])})"


def adaptive_replay() -> str:
    data = result("adaptive_replay")
    pooled = data["cross_validated"]["any first round"]["pooled_held_out"]
    second = data["cross_validated"]["first round 2"]["pooled_held_out"]
    fixed = data["fixed_n"]
    rows = [
        ("fixed N=8", _share(fixed),
         f"{pct(fixed['kept'])} (gain {num(fixed['gain'])}, "
         f"interval {ci(data['fixed_n_paired'])})"),
        ("old default: rounds 2, 4, 8, stop on a pass with margin",
         _share(data["old_default_2_4_8_margin"]), pct(data["old_default_2_4_8_margin"]["kept"])),
        ("expected gain, default settings, all sentences (partly in-sample)",
         _share(data["shipped_default"]["all_sentences"]),
         pct(data["shipped_default"]["all_sentences"]["kept"])),
        ("expected gain, settings tuned on the other half, held out (pooled)", _share(pooled),
         pct(pooled["kept"])),
        ("same, first round 2, held out", _share(second), pct(second["kept"])),
    ]  # fmt: skip
    header = ("rule (N=8)", "candidates per sentence", "share of fixed N=8's judged gain kept")
    return md_table(header, rows)


def adaptive_held_out() -> str:
    pooled = result("adaptive_replay")["cross_validated"]["any first round"]["pooled_held_out"]
    return (
        f"the adaptive rule's own gain over candidate 0 is {num(pooled['gain'])} (interval "
        f"{ci(pooled['adaptive_gain_ci95'])}) at {pct(pooled['candidate_share'])} of the "
        f"candidates, and what fixed N=8 gains beyond it is "
        f"{ci(pooled['fixed_minus_adaptive_ci95'])}"
        f"; the share kept is too noisy to pin down (interval {ci(pooled['kept_ci95'], 2)})"
    )


def adaptive_frontier() -> str:
    frontier = result("adaptive_replay")["curve_in_sample"]["frontier"]
    rows = [(num(p["candidates_per_utterance"], 2), pct(p["kept"])) for p in frontier]
    return md_table(("candidates per sentence", "share of the gain kept"), rows)


def adaptive_101_300() -> str:
    held = _replays()["per_clip_default_on_101_300"]
    return (
        f"the per-clip default settings use {num(held['candidates_per_utterance'], 2)} candidates "
        f"and keep {pct(held['kept'])} of fixed N=8's judged gain ({num(held['gain'])} of "
        f"{num(held['fixed_gain'])}; what fixed N=8 gains beyond them is "
        f"{ci(held['fixed_minus_adaptive_ci95'])})"
    )


def all_rejected() -> str:
    found = _replays()["all_rejected"]
    cases = "; ".join(
        f'"{case["text"]}" fails {", ".join(sorted(case["failed_gates"]))}'
        for case in found["cases"]
    )
    return f"{found['every_candidate_rejected']} of the first 40 sentences ({cases})"


BLOCKS = {
    "selection-rules": Generated(("selection_rules",), selection_rules),
    "speaker-term": Generated(("judgement_replays",), speaker_term, labels=0),
    "speaker-term-runs": Generated(("judgement_replays",), speaker_term_300),
    "adaptive-replay": Generated(("adaptive_replay",), adaptive_replay),
    "adaptive-held-out": Generated(("adaptive_replay",), adaptive_held_out, labels=0),
    "adaptive-frontier": Generated(("adaptive_replay",), adaptive_frontier, labels=0),
    "adaptive-101-300": Generated(("judgement_replays",), adaptive_101_300, labels=0),
    "all-rejected": Generated(("judgement_replays",), all_rejected, labels=0),
}
