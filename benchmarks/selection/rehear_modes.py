"""Cheaper ways to hear the takes alone: what each keeps of the judged gain, and what it costs.

``[selection] rank = "heard_alone"`` (verified_tts/selection/rehear.py) hears every passing take
of a line with two or more passing takes once more, alone, with beam 5, and keeps the fewest word
errors. Four ways of doing that are replayed over the renders of ``judged_prose.py`` (the render
as a user runs it, today's defaults; every take heard by the judge, Whisper base, which no
ranking reads):

- beam 5 on every such line (what ``heard_alone`` does today);
- greedy decoding (beam 1) on every such line;
- beam 5 only on the lines whose passing takes the packed scoring heard as different words
  (:func:`verified_tts.selection.rehear.heard_differently`); where they were all heard alike the
  weighted score ranks, as it does without hearing alone;
- greedy on those lines only.

The replay is exact for a render's own takes: the stop rule does not read the ranking, and what a
take is heard as alone depends on its audio only. The rule the product applies is called for the
replay (:func:`~verified_tts.selection.rehear.contenders`, :func:`~verified_tts.selection.policy.
choose`), with the per-clip scores of the contenders (cached in the work folder). Per way and
sample: the judge WER of the winners with its paired gain over candidate 0 and over today's
packed ranking (95 % bootstrap intervals), the lines and takes heard alone, and the lines whose
winner differs from the full (beam 5, every line) way's; candidate 0 and the oracle (the take the
judge hears best among the render's takes) beside them.

Cost (``--cost``, on the development render): the WER verifier the render loads (packed, its
default threads and workers) scores the takes each way hears alone, and, for scale, packs all the
render's takes as its own scoring does (each beam hears the lines heard as different words, then
the other lines, once each: the full way is the two added up); each timed ``--repeats`` times
with ``time.process_time`` (CPU seconds of every thread of this process, which other work on the
machine barely changes) and the wall clock. Reported per second of audio heard and per second of
the book's speech (the winners' durations): the CPU seconds a render adds for each way, and the
wall seconds it would add on the machine as it was (the load average is recorded beside them).

The rule is chosen on the development render before the held-out one is read: the way with the
fewest CPU seconds among those that keep at least ``KEEP`` of the full way's development gain
over candidate 0 (the full way when none cheaper does). ``--rule`` names it for the held-out run.

``--in-render`` renders the development book again from a copy of its render's store, ranking by
score and then each way (:func:`in_render`): the replay's
winners checked against a render's, and the seconds each way adds to a render as it batches its
hearing (a round's lines at a time).

``--fresh NAME`` renders the development book from an empty store twice, by today's defaults
and with the way NAME (:func:`fresh_renders`): the real-time factor of a whole render with it.

Usage: python -m benchmarks.selection.rehear_modes --dev WORK [--cost] [--in-render]
       [--fresh NAME] [--held-out WORK --rule NAME] --output JSON
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.selection.rank_features import Line, add_clip_scores, load_lines
from benchmarks.selection.rank_replay import baseline, figures

KEEP = 0.8  # share of the full way's development gain a cheaper way must keep to be chosen


@dataclass(frozen=True)
class Way:
    """One way of hearing alone: the beam, and which lines (every line with two or more passing
    takes, or only those whose passing takes were heard as different words)."""

    name: str
    beam: int
    lines: str  # "all" or "differing"


WAYS = (
    Way("beam 5, every line (heard_alone today)", 5, "all"),
    Way("greedy, every line", 1, "all"),
    Way("beam 5, lines heard as different words", 5, "differing"),
    Way("greedy, lines heard as different words", 1, "differing"),
)
FULL = WAYS[0].name
SHIPPED = "today's packed ranking (rank = score)"


def _policies() -> tuple[Any, Any]:
    from verified_tts.selection.policy import default_policy

    base = replace(default_policy(), adaptive=False)
    return replace(base, rank="score"), replace(base, rank="heard_alone")


def heard_alone(way: Way, line: Line, policy: Any) -> list[int]:
    """The takes of ``line`` that ``way`` hears alone (the product's rule)."""
    from verified_tts.selection.consensus import judge_all
    from verified_tts.selection.rehear import contenders

    judgements = judge_all([(t.metrics, t.detail) for t in line.takes], policy)
    packed = [t.detail.get("transcript") for t in line.takes] if way.lines == "differing" else None
    return contenders(judgements, packed)


def pick(way: Way | None, line: Line, scores: dict[int, dict], policy: Any) -> tuple[int, bool]:
    """(winner, flagged) of ``line`` heard ``way`` (None: the packed score ranks)."""
    from verified_tts.selection.consensus import judge_all
    from verified_tts.selection.policy import HEARD_ALONE, choose

    takes = [(dict(t.metrics), t.detail) for t in line.takes]
    if way is not None:
        for i in heard_alone(way, line, policy):
            takes[i][0][HEARD_ALONE] = float(scores[way.beam][line.takes[i].key]["metrics"]["wer"])
    return choose(judge_all(takes, policy))


def clip_scores(work: Path, lines: Sequence[Line], policy: Any) -> dict[int, dict[str, Any]]:
    """Per-clip scores of every take some way hears alone, at beam 5 and 1 (cached in ``work``)."""
    wanted = {line.takes[i].key for line in lines for i in heard_alone(WAYS[0], line, policy)}
    out: dict[int, dict[str, Any]] = {}
    for beam, name in ((5, "clip_scores.json"), (1, "clip_scores_beam1.json")):
        scored = add_clip_scores(lines, work / name, beam=beam, only=wanted)
        out[beam] = {t.key: t.clip for line in scored for t in line.takes if t.clip}
    return out


def _seconds(line: Line, take: int) -> float:
    import soundfile as sf

    return float(sf.info(str(Path(line.folder) / line.takes[take].audio)).duration)


def evaluate(work: Path) -> tuple[dict[str, Any], dict[str, list[tuple[int, bool]]], list[Line]]:
    """Every way's figures over ``work``'s render (module docstring), its winners, and its lines."""
    score_policy, alone_policy = _policies()
    lines = load_lines(work, "render*", 1)
    scores = clip_scores(work, lines, alone_policy)
    won = {SHIPPED: [pick(None, line, {}, score_policy) for line in lines]}
    for way in WAYS:
        won[way.name] = [pick(way, line, scores, alone_policy) for line in lines]
    ways = {SHIPPED: figures(lines, won[SHIPPED], won[SHIPPED])}
    for way in WAYS:
        heard = [(line, heard_alone(way, line, alone_policy)) for line in lines]
        ways[way.name] = {
            **figures(lines, won[way.name], won[SHIPPED]),
            "lines_heard_alone": sum(bool(h) for _, h in heard),
            "takes_heard_alone": sum(len(h) for _, h in heard),
            "seconds_heard_alone": round(sum(_seconds(line, i) for line, h in heard for i in h), 2),
            "lines_winner_differs_from_full": sum(
                a != b for (a, _), (b, _) in zip(won[way.name], won[FULL], strict=True)
            ),
        }
    found = {
        **baseline(lines),
        "lines_with_two_or_more_passing": sum(
            bool(heard_alone(WAYS[0], line, alone_policy)) for line in lines
        ),
        "speech_seconds": round(
            sum(_seconds(line, w) for line, (w, _) in zip(lines, won[SHIPPED], strict=True)), 2
        ),
        "ways": ways,
    }
    return found, won, lines


def _clips(lines: Sequence[Line], wanted: Sequence[tuple[int, int]]) -> list[Any]:
    from verified_tts.audio import read_audio
    from verifiers import Clip

    out = []
    for n, i in wanted:
        line = lines[n]
        audio, rate = read_audio(Path(line.folder) / line.takes[i].audio, "take")
        out.append(Clip(audio=audio, sample_rate=rate, text=line.text, spoken=line.spoken))
    return out


def _timed(score: Any, clips: list[Any], repeats: int) -> dict[str, Any]:
    cpu, wall = [], []
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        score(clips)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    return {
        "cpu_seconds": round(statistics.median(cpu), 3),
        "wall_seconds": round(statistics.median(wall), 3),
        "cpu_seconds_each": [round(x, 3) for x in cpu],
        "wall_seconds_each": [round(x, 3) for x in wall],
    }


def cost(lines: Sequence[Line], speech_seconds: float, repeats: int) -> dict[str, Any]:
    """What each way costs the WER verifier a render loads (module docstring)."""
    from verified_tts.options.verifiers import WerOptions
    from verifiers.wer import load_wer_verifier

    _, alone_policy = _policies()
    verifier = load_wer_verifier(WerOptions())
    every = [(n, i) for n, line in enumerate(lines) for i in range(len(line.takes))]
    every_clips = _clips(lines, every)
    verifier.score(every_clips[:8])  # warm up: first calls load and allocate
    verifier.with_options(packing=False).score(every_clips[:4])
    load_before = os.getloadavg()
    packed = _timed(verifier.score, every_clips, repeats)
    audio = sum(c.duration_s for c in every_clips)
    out: dict[str, Any] = {
        "speech_seconds": round(speech_seconds, 2),
        "packed_scoring_of_every_take": {
            **packed,
            "takes": len(every_clips),
            "seconds_of_audio": round(audio, 2),
            "cpu_seconds_per_second_heard": round(packed["cpu_seconds"] / audio, 4),
            "cpu_seconds_per_second_of_speech": round(packed["cpu_seconds"] / speech_seconds, 4),
        },
        "ways": {},
    }
    # each beam times the lines heard as different words, then the other lines with two or more
    # passing takes: "every line" is the two parts added up, so no take is heard twice a beam
    parts: dict[tuple[int, str], dict[str, Any]] = {}
    for beam in sorted({way.beam for way in WAYS}, reverse=True):
        alone = verifier.with_options(packing=False, beam_size=beam)
        for part in ("differing", "alike"):
            wanted = [
                (n, i)
                for n, line in enumerate(lines)
                for i in heard_alone(WAYS[0], line, alone_policy)
                if (i in heard_alone(Way("", beam, "differing"), line, alone_policy))
                == (part == "differing")
            ]
            clips = _clips(lines, wanted)
            parts[beam, part] = {
                **_timed(alone.score, clips, repeats),
                "takes": len(clips),
                "seconds_of_audio": sum(c.duration_s for c in clips),
            }
    for way in WAYS:
        shares = [parts[way.beam, "differing"]]
        if way.lines == "all":
            shares.append(parts[way.beam, "alike"])
        cpu = sum(p["cpu_seconds"] for p in shares)
        wall = sum(p["wall_seconds"] for p in shares)
        heard = sum(p["seconds_of_audio"] for p in shares)
        out["ways"][way.name] = {
            "cpu_seconds": round(cpu, 3),
            "wall_seconds": round(wall, 3),
            "cpu_seconds_each_part": [p["cpu_seconds_each"] for p in shares],
            "takes": sum(p["takes"] for p in shares),
            "seconds_of_audio": round(heard, 2),
            "cpu_seconds_per_second_heard": round(cpu / heard, 4) if heard else None,
            "cpu_seconds_per_second_of_speech": round(cpu / speech_seconds, 4),
            "wall_seconds_per_second_of_speech": round(wall / speech_seconds, 4),
        }
    # for scale: the cheapest way without the forced decoding of the reference that the per-clip
    # path also does (only the transcript's word errors rank)
    cheapest = WAYS[-1]
    wanted = [
        (n, i) for n, line in enumerate(lines) for i in heard_alone(cheapest, line, alone_policy)
    ]
    timed = _timed(_transcribe_only(verifier.with_options(packing=False, beam_size=1)),
                   _clips(lines, wanted), repeats)  # fmt: skip
    out["transcript_only"] = {
        **timed,
        "way": cheapest.name,
        "cpu_seconds_per_second_of_speech": round(timed["cpu_seconds"] / speech_seconds, 4),
    }
    out["load_average_before_and_after"] = [
        [round(x, 2) for x in load_before],
        [round(x, 2) for x in os.getloadavg()],
    ]
    out["verifier"] = {
        "model": verifier.model_label,
        "workers_and_threads": list(_threads(verifier)),
        "cpus": os.cpu_count(),
    }
    return out


def in_render(
    work: Path,
    lines: Sequence[Line],
    won: dict[str, list[tuple[int, bool]]],
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Each way in a render: the development book rendered again from a copy of its render's store
    (the takes and their packed scores are reused, so what a render spends beyond that is the
    hearing alone, the decisions and the assembly), once ranking by score and once each way;
    the CPU and wall seconds of each, the seconds its hearing alone took by the render's own
    timer (wall, batched a round's lines at a time as a render does), and whether its winners are
    the replay's. The render ranked by score finds its decisions stored and reuses them, while a
    way decides every line again and so also reads or scores its takes again (``verify:wer`` in
    its manifest): ``cpu_seconds_beyond_rank_score`` is an upper bound on what the hearing adds,
    the render's own timer the measure of it. ``names``: only these ways (and the score)."""
    import shutil

    from benchmarks.common.judged_render import render_sample
    from verified_tts.output.manifest import read_manifest

    (source,) = [f for f in sorted(work.glob("render*")) if (f / "manifest.json").is_file()]
    book = work / Path(json.loads((source / "manifest.json").read_text("utf-8"))["input"]).name
    replayed = {line.key: n for n, line in enumerate(lines)}
    out: dict[str, Any] = {}
    settings = [(SHIPPED, "score", {"rank": "score"})] + [
        (way.name, f"beam{way.beam}-{way.lines}",
         {"rank": "heard_alone", "alone_beam": way.beam, "alone_lines": way.lines})
        for way in WAYS
        if names is None or way.name in names
    ]  # fmt: skip
    for name, slug, selection in settings:
        folder = work / f"again-{slug}"
        if not (folder / "store").exists():
            shutil.copytree(source / "store", folder / "store.partial")
            (folder / "store.partial").rename(folder / "store")
        timing = render_sample(book, folder, {"selection": selection})
        manifest = read_manifest(folder)
        same = sum(
            u.winner == won[name][replayed[u.key]][0]
            for u in manifest.utterances
            if u.key in replayed
        )
        attempt = timing["attempts"][-1]
        out[name] = {
            "selection": selection,
            **_attempt_figures(attempt),
            "candidates_generated": attempt["candidates_generated"],
            "hearing_alone_seconds": round(
                manifest.stats["seconds"].get("verify:wer_alone", 0.0), 2
            ),
            "lines_winner_as_replayed": same,
            "lines": len(manifest.utterances),
        }
    speech = sum(_seconds(line, w) for line, (w, _) in zip(lines, won[SHIPPED], strict=True))
    for way in (way for way in WAYS if way.name in out):
        extra = out[way.name]["cpu_seconds"] - out[SHIPPED]["cpu_seconds"]
        out[way.name]["cpu_seconds_beyond_rank_score"] = round(extra, 2)
        out[way.name]["cpu_seconds_beyond_rank_score_per_second_of_speech"] = round(
            extra / speech, 4
        )
        out[way.name]["hearing_alone_seconds_per_second_of_speech"] = round(
            out[way.name]["hearing_alone_seconds"] / speech, 4
        )
    return out


def _transcribe_only(alone: Any) -> Any:
    """Encode and transcribe each clip's window(s), as the per-clip path does, without aligning
    the reference."""
    from verified_tts.audio import resample
    from verifiers.wer_common import CPU_BATCH
    from verifiers.wer_windows import split_windows

    def run(clips: list[Any]) -> list[str]:
        windows = [
            window
            for clip in clips
            for window in split_windows(resample(clip.audio.reshape(-1), clip.sample_rate, 16000))
        ]
        return alone.map_batches(
            lambda rows: alone._transcribe([windows[r] for r in rows]),
            range(len(windows)),
            CPU_BATCH,
        )

    return run


def fresh_renders(work: Path, way: Way) -> dict[str, Any]:
    """The development book rendered from an empty store with today's defaults and with ``way``,
    one after the other: each render's real-time factor (wall and CPU seconds, the model load
    left out, per second of speech) on the machine as it was (load averages recorded)."""
    from benchmarks.common.judged_render import render_sample

    (source,) = [f for f in sorted(work.glob("render*")) if (f / "manifest.json").is_file()]
    book = work / Path(json.loads((source / "manifest.json").read_text("utf-8"))["input"]).name
    out: dict[str, Any] = {}
    settings = [
        (SHIPPED, "score", {"rank": "score"}),
        (way.name, f"beam{way.beam}-{way.lines}",
         {"rank": "heard_alone", "alone_beam": way.beam, "alone_lines": way.lines}),
    ]  # fmt: skip
    for name, slug, selection in settings:
        timing = render_sample(book, work / f"fresh-{slug}", {"selection": selection})
        out[name] = {
            "selection": selection,
            "real_time_factor": timing["real_time_factor"],
            "cpu_real_time_factor": timing["cpu_real_time_factor"],
            "speech_seconds": timing["speech_seconds"],
            **_attempt_figures(timing["attempts"][-1]),
            "attempts": len(timing["attempts"]),
        }
    return out


def _attempt_figures(attempt: dict[str, Any]) -> dict[str, Any]:
    """A render attempt's wall, load and CPU seconds and the machine's load at its end."""
    names = ("wall_seconds", "load_seconds", "cpu_seconds", "load_average_at_end")
    return {name: attempt[name] for name in names}


def _threads(verifier: Any) -> tuple[int, int]:
    from verifiers.wer import _workers_and_threads

    return _workers_and_threads(verifier.options)


def choose_rule(dev: dict[str, Any], spent: dict[str, Any]) -> dict[str, Any]:
    """The cheapest way keeping ``KEEP`` of the full way's development gain (module docstring)."""
    ways = dev["ways"]
    full = ways[FULL]["gain_over_candidate0"]["gain"]
    keeping = [
        way.name
        for way in WAYS
        if full > 0 and ways[way.name]["gain_over_candidate0"]["gain"] >= KEEP * full
    ]
    chosen = min(keeping or [FULL], key=lambda name: spent["ways"][name]["cpu_seconds"])
    return {
        "rule": f"the way with the fewest CPU seconds among those whose development gain over "
        f"candidate 0 is at least {KEEP:.0%} of the full way's (beam 5, every line)",
        "keeping": keeping,
        "chosen": chosen,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=Path, required=True)
    parser.add_argument("--held-out", type=Path, default=None)
    parser.add_argument("--cost", action="store_true", help="time each way on the dev render")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--in-render", action="store_true", help="render the dev book again each way"
    )
    parser.add_argument("--rule", default=None, help="the way chosen before the held-out read")
    parser.add_argument(
        "--fresh", default=None, help="render the dev book afresh by default and with this way"
    )
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()

    from verified_tts.storage.atomic import write_json_atomic

    previous = json.loads(args.output.read_text(encoding="utf-8")) if args.output.is_file() else {}
    dev, dev_won, dev_lines = evaluate(args.dev)
    data: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "benchmarks.selection.rehear_modes", *sys.argv[1:]]),
        "judge": "bundled:base (Whisper base; no way reads it)",
        "ways": [asdict(way) for way in WAYS],
        "development": dev,
    }
    if args.cost:
        data["cost"] = cost(dev_lines, dev["speech_seconds"], args.repeats)
    elif "cost" in previous:
        data["cost"] = previous["cost"]  # measured by an earlier run (--cost), kept
    if args.in_render:
        data["in_render"] = in_render(args.dev, dev_lines, dev_won)
    elif "in_render" in previous:
        data["in_render"] = previous["in_render"]
    if args.fresh:
        (way,) = [way for way in WAYS if way.name == args.fresh]
        data["fresh_renders"] = fresh_renders(args.dev, way)
    elif "fresh_renders" in previous:
        data["fresh_renders"] = previous["fresh_renders"]
    if "cost" in data:
        data["choice"] = choose_rule(dev, data["cost"])
    if args.rule:
        data["rule"] = args.rule
    if args.held_out:
        if not args.rule:
            raise SystemExit("--held-out needs --rule: the way chosen on the development render")
        data["held_out"], _, _ = evaluate(args.held_out)
    write_json_atomic(args.output, data)
    for part in ("development", "held_out"):
        if part not in data:
            continue
        found = data[part]
        print(part, found["lines"], "takes", found["takes_per_line"], "c0",
              found["judge_wer_candidate0"], "oracle", found["judge_wer_oracle"],
              file=sys.stderr)  # fmt: skip
        for name, f in found["ways"].items():
            g = f["gain_over_candidate0"]
            print(f"  {name:45s} {f['judge_wer']:.4f} gain {g['gain']:+.4f} {g['ci95']} "
                  f"heard {f.get('takes_heard_alone')}", file=sys.stderr)  # fmt: skip
    if "cost" in data:
        for name, c in data["cost"]["ways"].items():
            per = c["cpu_seconds_per_second_of_speech"]
            print(f"  cost {name:45s} cpu {c['cpu_seconds']:.2f} s {per:.4f} per s of speech",
                  file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    main()
