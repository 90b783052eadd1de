"""Dubbing lines before and after, cue by cue: did the dub's own gates cost the winners anything?

Reads two runs of benchmarks/dubbing/dub_lines.py on the same inputs (``--before``, the checkout
before the dub gates, and ``--after``) and pairs their cues by index. Per input: cues flagged in
each run, cues flagged in both, in only one, how many of the cues whose winner the judge hears with
an error each run flags, and the paired gain in the winner's judge WER (before
minus after, positive = the after winner is heard better; verified_tts.paired's seeded
bootstrap over cues), since the gates take part in choosing the winner as well as in flagging it.
Writes benchmarks/results/dub_lines_paired.json.

Usage: python -m benchmarks.dubbing.dub_lines_paired [--before FILE] [--after FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from verified_tts.paired import paired_gain

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def pair(before: dict, after: dict) -> dict:
    """The paired comparison of one input's cues in two runs."""
    old = {c["index"]: c for c in before["cue_list"]}
    new = {c["index"]: c for c in after["cue_list"]}
    if set(old) != set(new):
        raise SystemExit("the two runs dubbed different cues: run both on the same inputs")
    keys = sorted(old)
    judged = [k for k in keys if None not in (old[k]["judge_wer"], new[k]["judge_wer"])]
    gains = [old[k]["judge_wer"] - new[k]["judge_wer"] for k in judged]
    return {
        "cues": len(keys),
        "flagged_before": sum(old[k]["flagged"] for k in keys),
        "flagged_after": sum(new[k]["flagged"] for k in keys),
        "flagged_in_both": sum(old[k]["flagged"] and new[k]["flagged"] for k in keys),
        "flagged_only_before": sum(old[k]["flagged"] and not new[k]["flagged"] for k in keys),
        "flagged_only_after": sum(new[k]["flagged"] and not old[k]["flagged"] for k in keys),
        # cues whose winner the judge hears with an error, and how many of them are flagged
        "heard_wrong_before": sum(bool(old[k]["judge_wer"]) for k in keys),
        "heard_wrong_flagged_before": sum(
            bool(old[k]["judge_wer"]) and old[k]["flagged"] for k in keys
        ),
        "heard_wrong_after": sum(bool(new[k]["judge_wer"]) for k in keys),
        "heard_wrong_flagged_after": sum(
            bool(new[k]["judge_wer"]) and new[k]["flagged"] for k in keys
        ),
        "winner_judge_wer_gain": paired_gain(gains).as_dict() if gains else None,
        "judged_cues": len(judged),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=RESULTS / "dub_lines_before.json")
    parser.add_argument("--after", type=Path, default=RESULTS / "dub_lines.json")
    parser.add_argument("--out", type=Path, default=RESULTS / "dub_lines_paired.json")
    args = parser.parse_args()
    before = json.loads(args.before.read_text(encoding="utf-8"))
    after = json.loads(args.after.read_text(encoding="utf-8"))
    shared = [name for name in after["results"] if name in before["results"]]
    record = {
        "benchmark": "dub_lines_paired",
        "before": str(args.before.relative_to(ROOT)),
        "after": str(args.after.relative_to(ROOT)),
        "gain": "winner judge WER before minus after (positive = after heard better)",
        "results": {name: pair(before["results"][name], after["results"][name]) for name in shared},
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(record["results"], indent=2))


if __name__ == "__main__":
    main()
