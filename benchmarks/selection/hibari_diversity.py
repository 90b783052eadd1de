"""Does best-of-N find anything among hibari candidates, and how much seeded variation does it need?

For each setting of the hibari generator's variation (``SPEED/DURATION``: the spread of each
candidate's speed and of each phoneme's duration, both drawn from the candidate's seed; ``0/0`` is
seeds alone, which only move the signal stage's noise), renders one text set at a fixed N=8
through the real pipeline (default verifiers and selection policy) and measures how different the
candidates are: the spread of their durations (coefficient of variation within an utterance), of
the verifier's scores (the reference log-probability under Whisper tiny.en and its WER), how often
the policy picks another candidate than 0, and, for seeds alone, how much two candidates' samples
differ (energy of the difference against the signal's). The independent judge (Whisper base,
``bundled:base``, beam 5, never used for selection) then transcribes candidate 0, the winner and
the highest reference log-probability (with --oracle, every candidate: the best the pool holds);
reported are their mean judge WERs, the paired gain of the winner over candidate 0 with a seeded
bootstrap interval (verified_tts.paired), and the gain of the winner over the first setting's
candidate 0 (the render with no variation at all), which is what a producer compares against.

Text sets: ``harvard`` (the package's Harvard sentences, --first/--count), ``dev`` and ``heldout``
(--per-book sentences from each novel's development or held-out chapters,
benchmarks/real_prose/prose.py). Tune on harvard and dev; report heldout. Writes
benchmarks/results/hibari_diversity_<set>.json.

Usage: nice -n 10 python -m benchmarks.selection.hibari_diversity --set harvard [--first 101 --count
40]
       [--set dev --per-book 20] [--settings 0/0 0.03/0 0/0.1 0.03/0.1] [--oracle]
       [--work /tmp/hibari-diversity]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
from pathlib import Path

import numpy as np
import soundfile as sf

from benchmarks.common.harvard import harvard_book
from benchmarks.real_prose.prose import prose_book
from verified_tts.paired import paired_gain

ROOT = Path(__file__).resolve().parents[2]
N = 8


def render_setting(
    book: Path, out: Path, speed_jitter: float, duration_jitter: float, verifiers
) -> dict:
    """Render at fixed N with the given variation; the verifiers are loaded once for all."""
    from verified_tts.config import build_config
    from verified_tts.generators import load_generator
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.render import render

    options = {"speed_jitter": speed_jitter, "duration_jitter": duration_jitter}
    table = {"generator": {"hibari": options}}
    config = build_config(table, candidates=N, adaptive=False, generator="hibari")
    generator = load_generator(config.generator)
    render(book, out, config, synthesizer=Synthesizer(generator, verifiers, config))
    return json.loads((out / "manifest.json").read_text())


def _spread(values: list[float]) -> float:
    return statistics.pstdev(values) if len(values) > 1 else 0.0


def diversity(manifest: dict, out: Path, utterances: list[dict]) -> dict:
    """How different the candidates of each utterance are, by length, scores and samples."""
    cv, log_prob, wer, changed, difference = [], [], [], 0, []
    for u in utterances:
        durations = [c["duration_s"] for c in u["candidates"]]
        cv.append(_spread(durations) / statistics.fmean(durations))
        log_prob.append(_spread([c["scores"].get("asr_logprob", 0.0) for c in u["candidates"]]))
        wer.append(_spread([c["scores"].get("wer", 0.0) for c in u["candidates"]]))
        changed += int(u["winner"]) != 0
        if len(set(durations)) == 1:  # same length: compare the samples of candidates 0 and 1
            first, _ = sf.read(out / u["candidates"][0]["audio"], dtype="float64")
            second, _ = sf.read(out / u["candidates"][1]["audio"], dtype="float64")
            difference.append(float(np.sum((first - second) ** 2) / np.sum(first**2)))
    return {
        "duration_cv_mean": round(statistics.fmean(cv), 5),
        "utterances_all_one_length": sum(1 for c in cv if c == 0),
        "asr_logprob_sd_mean": round(statistics.fmean(log_prob), 5),
        "verifier_wer_sd_mean": round(statistics.fmean(wer), 5),
        "winner_not_candidate0": changed,
        "same_length_pairs": len(difference),
        "difference_energy_ratio_mean": (
            round(statistics.fmean(difference), 6) if difference else None
        ),
    }


def judge_setting(out: Path, utterances: list[dict], judge_model, oracle: bool) -> dict:
    """Judge WER of candidate 0, the winner, the best log-probability (all with ``oracle``)."""
    from verifiers import Clip

    def best_logprob(u: dict) -> int:
        scores = [c["scores"].get("asr_logprob", float("-inf")) for c in u["candidates"]]
        return max(range(N), key=lambda k: (scores[k], -k))

    rules = {"candidate0": lambda u: 0, "policy": lambda u: int(u["winner"])}
    rules["asr_logprob"] = best_logprob
    wanted = sorted(
        {(i, k) for i in range(len(utterances)) for k in range(N)}
        if oracle
        else {(i, rule(u)) for i, u in enumerate(utterances) for rule in rules.values()}
    )
    # the judge's WER of each candidate file, kept beside the render so a rerun judges only the new
    cache_path = out / "judged.json"
    cache = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    judged: dict[tuple[int, int], float] = {}
    todo = []
    for i, k in wanted:
        name = utterances[i]["candidates"][k]["audio"]
        if name in cache:
            judged[(i, k)] = cache[name]
        else:
            todo.append((i, k))
    for start in range(0, len(todo), 32):
        chunk = todo[start : start + 32]
        clips = []
        for i, k in chunk:
            audio, rate = sf.read(out / utterances[i]["candidates"][k]["audio"], dtype="float32")
            clips.append(Clip(audio=audio, sample_rate=rate, text=utterances[i]["text"]))
        for (i, k), (wer, _) in zip(chunk, judge_model.transcribe(clips), strict=True):
            judged[(i, k)] = cache[utterances[i]["candidates"][k]["audio"]] = wer
        cache_path.write_text(json.dumps(cache))
    picks = {
        name: [judged[(i, rule(u))] for i, u in enumerate(utterances)]
        for name, rule in rules.items()
    }
    means = {name: round(statistics.fmean(values), 4) for name, values in picks.items()}
    if oracle:
        best = [min(judged[(i, k)] for k in range(N)) for i in range(len(utterances))]
        means["oracle"] = round(statistics.fmean(best), 4)
    return {"clips_judged": len(wanted), "judge_wer": means, "_picks": picks}


def text_set(args: argparse.Namespace) -> tuple[Path, str, dict]:
    book = args.work / f"{args.set}.md"
    if args.set == "harvard":
        harvard_book(book, args.count, first=args.first - 1)
        return book, f"Harvard {args.first}-{args.first + args.count - 1}", {}
    _, chapters = prose_book(book, args.set, args.per_book)
    part = "development" if args.set == "dev" else "held-out"
    return book, f"{args.per_book} sentences from each book's {part} chapters", chapters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("harvard", "dev", "heldout"), default="harvard")
    parser.add_argument("--first", type=int, default=101)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--per-book", type=int, default=20)
    parser.add_argument("--settings", nargs="+", default=["0/0", "0.03/0", "0/0.1", "0.03/0.1"])
    parser.add_argument("--oracle", action="store_true", help="judge every candidate")
    parser.add_argument("--work", type=Path, default=Path("/tmp/hibari-diversity"))
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    import hibari

    from verified_tts.config import build_config
    from verified_tts.verification import load_verifiers
    from verified_tts.workflows.judge import load_judge

    book, described, chapters = text_set(args)
    # Render every setting first with one set of verifiers, then let them go before the judge
    # loads: the peak memory is one of the two, not both (the machine is shared).
    verifiers = load_verifiers(build_config({}, generator="hibari").verifiers)
    rendered = []
    for setting in args.settings:
        speed_jitter, duration_jitter = (float(x) for x in setting.split("/"))
        out = args.work / f"{args.set}-{speed_jitter}-{duration_jitter}"
        manifest = render_setting(book, out, speed_jitter, duration_jitter, verifiers)
        rendered.append((speed_jitter, duration_jitter, out, manifest))
    del verifiers
    gc.collect()
    judge_model = load_judge("bundled:base")
    results, baseline = [], None
    for speed_jitter, duration_jitter, out, manifest in rendered:
        utterances = [
            u
            for u in manifest["utterances"]
            if len(u["candidates"]) == N and u["kind"] != "heading"
        ]
        judged = judge_setting(out, utterances, judge_model, args.oracle)
        picks = judged.pop("_picks")
        if baseline is None:
            baseline = picks["candidate0"]
        cand0, policy = picks["candidate0"], picks["policy"]
        result = {
            "speed_jitter": speed_jitter,
            "duration_jitter": duration_jitter,
            "utterances": len(utterances),
            **diversity(manifest, out, utterances),
            **judged,
            "policy_gain_over_candidate0": paired_gain(
                [a - b for a, b in zip(cand0, policy, strict=True)]
            ).as_dict(),
            f"policy_gain_over_{args.settings[0]}_candidate0": paired_gain(
                [a - b for a, b in zip(baseline, policy, strict=True)]
            ).as_dict(),
            "flagged": sum(1 for u in utterances if u["flagged"]),
        }
        results.append(result)
        print(json.dumps(result), flush=True)

    output = args.output or ROOT / "benchmarks" / "results" / f"hibari_diversity_{args.set}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(
        json.dumps(
            {
                "voice": f"hibari:heart (hibari-tts {hibari.__version__})",
                "texts": described,
                "chapters": chapters,
                "n": N,
                "judge": "Whisper base (bundled:base), beam 5",
                "selection": "default policy (gates, then weighted score); tiny.en verifiers",
                "settings_are": "speed_jitter/duration_jitter (sd of the log), drawn per seed",
                "load_average_at_end": os.getloadavg(),
                "settings": results,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"-> {output}")


if __name__ == "__main__":
    main()
