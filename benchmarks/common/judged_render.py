"""Render a sample, judge it, write the result: the harness of the judged real-prose benchmarks.

A benchmark gives a book (a sample written as a ``.txt``), a work folder and a config table (a
TOML of options, as ``--config`` takes). :func:`render_sample` renders it as a user would (N=8
adaptive unless the table says otherwise, every take kept), timing each attempt: a killed run is
started again and the render resumes from its store, the attempts' times added up.
:func:`fill_pool` makes every line's first ``pool`` takes (a fixed-N render from a copy of the
store, so the render's own takes are reused and the rest are the takes an N=``pool`` render
would make), for the oracle at N. :func:`judge_takes` has the judge (Whisper base,
``bundled:base``, never used for selection) transcribe the takes asked for, a chunk at a time into
a cache file that a rerun reads back; :func:`dnsmos_takes` does the same with DNSMOS P.835
(the ``speechmos`` wheel's ONNX models), whose overall score says whether what selection chose
sounds worse. :func:`summarise` turns it all into one result: the judge WER of candidate 0, of the
verifier's winner and of the oracle (the take the judge itself hears best among the line's takes)
with paired bootstrap 95 % intervals (absolute and relative to candidate 0), the flag rate and
the flagged winners' judge WER against the rest's, the takes a line, the lines whose take changed,
DNSMOS overall of the winners against candidate 0, and the real-time factor.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from verified_tts.paired import bootstrap_draws, paired_gain, percentile_interval

__all__ = [
    "chapter_chunks",
    "add_timings",
    "dnsmos_scorer",
    "dnsmos_takes",
    "fill_pool",
    "judge_takes",
    "render_sample",
    "relative_gain",
    "summarise",
    "take_key",
]

JUDGE = "bundled:base"
DNSMOS_RATE = 16000
CHUNK = 64  # takes judged between two writes of the cache


def take_key(utterance: Any, index: int) -> str:
    """A take's store key: the same audio in two renders is the same key."""
    return utterance.candidates[index].extra.get("key") or f"{utterance.key}:{index}"


def _config(table: Mapping[str, Any], n: int, adaptive: bool | None, chapters: str | None) -> Any:
    from verified_tts.config import build_config

    overrides: dict[str, Any] = {"candidates": n, "keep": "all"}
    if adaptive is not None:
        overrides["adaptive"] = adaptive
    if chapters is not None:
        overrides["production"] = {**dict(table.get("production", {})), "chapters": chapters}
    return build_config(dict(table), **overrides)


def chapter_chunks(book: Path, chunks: int) -> list[str]:
    """``--chapters`` selections that cut ``book`` into ``chunks`` parts, each taking every
    ``chunks``-th chapter, so a part is spread over the whole book as the sample is."""
    from verified_tts.text.plaintext import load_plaintext

    count = len(load_plaintext(book).book.chapters)
    parts = [list(range(start, count + 1, chunks)) for start in range(1, min(chunks, count) + 1)]
    return [",".join(str(number) for number in part) for part in parts]


def render_sample(
    book: Path,
    out: Path,
    table: Mapping[str, Any],
    *,
    n: int = 8,
    adaptive: bool | None = None,
    chapters: str | None = None,
) -> dict[str, Any]:
    """Render ``book`` (its ``chapters`` only, if given) into ``out``, resuming from its store,
    and add this attempt's time to ``out/attempts.json``; returns the timing of all attempts."""
    from verified_tts.output.manifest import read_manifest
    from verified_tts.storage.atomic import write_json_atomic
    from verified_tts.workflows.render import render

    log = out / "attempts.json"
    attempts = json.loads(log.read_text(encoding="utf-8")) if log.is_file() else []
    manifest_path = out / "manifest.json"
    if not (attempts and attempts[-1].get("finished") and manifest_path.is_file()):
        config = _config(table, n, adaptive, chapters)
        started, cpu_started = time.perf_counter(), time.process_time()
        out.mkdir(parents=True, exist_ok=True)
        render(book, out, config)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        stats = read_manifest(out).stats
        attempts.append({
            "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "load_seconds": round(stats["seconds"].get("load", 0.0), 2),
            "candidates_generated": stats.get("candidates_generated"),
            "candidates_reused": stats.get("candidates_reused"),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()], "finished": True,
        })  # fmt: skip
        write_json_atomic(log, attempts)
    rows = read_manifest(out).utterances
    speech = sum(u.winner_candidate.duration_s or 0.0 for u in rows)
    busy = sum(a["wall_seconds"] - a["load_seconds"] for a in attempts)
    cpu = sum(a["cpu_seconds"] for a in attempts)
    return {
        "attempts": attempts,
        "speech_seconds": round(speech, 2),
        "real_time_factor": round(busy / speech, 4) if speech else None,
        "cpu_real_time_factor": round(cpu / speech, 4) if speech else None,
        "note": "a resumed render adds up its attempts' times (what a killed attempt had in "
        "flight is made again); the seconds grow with other work on the machine",
    }


def fill_pool(
    book: Path,
    render_out: Path,
    pool_out: Path,
    table: Mapping[str, Any],
    pool: int,
    chapters: str | None = None,
) -> Path:
    """Every line's first ``pool`` takes: a fixed-N render into ``pool_out`` starting from a copy
    of ``render_out``'s store (the takes already made are reused, take k has the same seed)."""
    if not (pool_out / "store").exists():
        shutil.copytree(render_out / "store", pool_out / "store.partial")
        (pool_out / "store.partial").rename(pool_out / "store")
    render_sample(book, pool_out, table, n=pool, adaptive=False, chapters=chapters)
    return pool_out


def judge_takes(
    out: Path, takes: Iterable[tuple[Any, int]], cache: Path, judge: str = JUDGE
) -> dict[str, tuple[float, str]]:
    """(judge WER, transcript) of each (utterance record, take index) of the render in ``out``,
    by take key, judging what ``cache`` does not hold yet a chunk at a time."""
    from benchmarks.real_prose.real_books import JudgeCache

    judges = JudgeCache(cache, judge)
    takes = _distinct(takes)
    missing = [
        (u, i) for u, i in takes if take_key(u, i) not in judges.known and u.candidates[i].audio
    ]
    for start in range(0, len(missing), CHUNK):
        judges.judge(out, missing[start : start + CHUNK])
    return {
        key: (stored[0], stored[1])
        for u, i in takes
        if (stored := judges.known.get(key := take_key(u, i))) is not None
    }


def dnsmos_takes(out: Path, takes: Iterable[tuple[Any, int]], cache: Path) -> dict[str, float]:
    """DNSMOS P.835 overall score of each (utterance record, take index), by take key, kept in
    ``cache`` (written a chunk at a time)."""
    from verified_tts.storage.atomic import write_json_atomic

    known: dict[str, float] = (
        json.loads(cache.read_text(encoding="utf-8")) if cache.is_file() else {}
    )
    missing = [
        (u, i) for u, i in _distinct(takes) if take_key(u, i) not in known and u.candidates[i].audio
    ]
    if missing:
        score = dnsmos_scorer()
        for start in range(0, len(missing), CHUNK):
            for u, i in missing[start : start + CHUNK]:
                known[take_key(u, i)] = score(out / u.candidates[i].audio)
            write_json_atomic(cache, known)
    return known


def _distinct(takes: Iterable[tuple[Any, int]]) -> list[tuple[Any, int]]:
    """Each (utterance record, take index) once, in order (records are not hashable)."""
    return list({(u.key, i): (u, i) for u, i in takes}.values())


def dnsmos_scorer() -> Any:
    """DNSMOS P.835 overall score of an audio file (path -> float), the `speechmos` wheel."""
    try:
        import librosa
        import soundfile as sf
        from speechmos import dnsmos
    except ImportError as error:
        raise SystemExit(
            f"DNSMOS needs the '{error.name}' package: pip install -e '.[dev]'"
        ) from error

    def score(path: Path) -> float:
        audio, rate = sf.read(path, dtype="float32", always_2d=False)
        audio = librosa.resample(audio, orig_sr=rate, target_sr=DNSMOS_RATE)
        audio = audio.clip(-1.0, 1.0)
        return round(float(dnsmos.run(audio, DNSMOS_RATE, return_df=False)["ovrl_mos"]), 4)

    return score


def relative_gain(before: Sequence[float], after: Sequence[float]) -> dict[str, Any]:
    """1 - mean(after) / mean(before) over paired lines, with a 95 % bootstrap interval
    (the same draws for both means)."""
    total = sum(before)
    if not before or total == 0:
        return {"reduction": None, "ci95": None}
    ratios = []
    for draw in bootstrap_draws(len(before)):
        b = sum(before[i] for i in draw)
        ratios.append(1.0 - sum(after[i] for i in draw) / b if b else 0.0)
    return {
        "reduction": round(1.0 - sum(after) / total, 4),
        "ci95": list(percentile_interval(ratios)),
    }


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def _compare(before: Sequence[float], after: Sequence[float]) -> dict[str, Any]:
    gains = [b - a for b, a in zip(before, after, strict=True)]
    return {
        **paired_gain(gains).as_dict("gain"),
        **{f"relative_{k}": v for k, v in relative_gain(before, after).items()},
    }


def oracle_index(utterance: Any, judged: Mapping[str, tuple[float, str]], takes: int) -> int | None:
    """The take among the first ``takes`` that the judge hears best (the lowest index on a tie),
    or None where one of them is not judged."""
    wers = []
    for index in range(min(takes, len(utterance.candidates))):
        found = judged.get(take_key(utterance, index))
        if found is None:
            return None
        wers.append(found[0])
    return min(range(len(wers)), key=lambda i: (wers[i], i)) if wers else None


def add_timings(timings: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The timing of several renders (the chunks of one sample) together."""
    attempts = [a for t in timings for a in t["attempts"]]
    speech = sum(t["speech_seconds"] for t in timings)
    busy = sum(a["wall_seconds"] - a["load_seconds"] for a in attempts)
    cpu = sum(a["cpu_seconds"] for a in attempts)
    return {
        "renders": len(timings),
        "attempts": len(attempts),
        "wall_seconds": round(sum(a["wall_seconds"] for a in attempts), 2),
        "load_seconds": round(sum(a["load_seconds"] for a in attempts), 2),
        "cpu_seconds": round(cpu, 2),
        "speech_seconds": round(speech, 2),
        "real_time_factor": round(busy / speech, 4) if speech else None,
        "cpu_real_time_factor": round(cpu / speech, 4) if speech else None,
        "load_average_at_ends": [a["load_average_at_end"][0] for a in attempts],
        "note": timings[0]["note"] if timings else "",
    }


def summarise(
    rows: Sequence[Any],
    judged: Mapping[str, tuple[float, str]],
    *,
    pool_rows: Sequence[Any] | None = None,
    dnsmos: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The judged figures of a render's utterance records (module docstring); ``pool_rows``: the
    same lines with their first N takes, for the oracle at N."""
    pool = {u.key: u for u in pool_rows or ()}
    c0, winner, oracle, oracle_pool, flagged_wer, rest_wer = [], [], [], [], [], []
    for u in rows:
        first, chosen = judged.get(take_key(u, 0)), judged.get(take_key(u, u.winner))
        best = oracle_index(u, judged, len(u.candidates))
        if first is None or chosen is None or best is None:
            continue
        c0.append(first[0])
        winner.append(chosen[0])
        oracle.append(judged[take_key(u, best)][0])
        (flagged_wer if u.flagged else rest_wer).append(chosen[0])
        if pool:
            full = pool.get(u.key)
            at = oracle_index(full, judged, len(full.candidates)) if full else None
            oracle_pool.append(judged[take_key(full, at)][0] if at is not None else float("nan"))
    flagged = sum(1 for u in rows if u.flagged)
    ratio = None
    if flagged_wer and rest_wer and statistics.fmean(rest_wer) > 0:
        ratio = round(statistics.fmean(flagged_wer) / statistics.fmean(rest_wer), 2)
    out: dict[str, Any] = {
        "utterances": len(rows),
        "judged": len(c0),
        "judge_wer": {"candidate0": _mean(c0), "winner": _mean(winner), "oracle": _mean(oracle)},
        "winner_vs_candidate0": _compare(c0, winner) if c0 else None,
        "oracle_vs_candidate0": _compare(c0, oracle) if c0 else None,
        "takes_per_line": _mean([len(u.candidates) for u in rows]),
        "lines_whose_take_changed": sum(1 for u in rows if u.winner != 0),
        "flagged": flagged,
        "flagged_share": round(flagged / len(rows), 4) if rows else None,
        "judge_wer_flagged_winners": _mean(flagged_wer),
        "judge_wer_other_winners": _mean(rest_wer),
        "judge_wer_ratio_flagged_to_rest": ratio,
    }
    if pool and oracle_pool and all(x == x for x in oracle_pool):
        takes = max(len(u.candidates) for u in pool.values())
        out["judge_wer"][f"oracle_of_{takes}"] = _mean(oracle_pool)
        out[f"oracle_of_{takes}_vs_candidate0"] = _compare(c0, oracle_pool)
    if dnsmos is not None:
        out["dnsmos_overall"] = dnsmos_figures(rows, dnsmos)
    return out


def dnsmos_figures(rows: Sequence[Any], scores: Mapping[str, float]) -> dict[str, Any]:
    """DNSMOS overall of the winners and of candidate 0, paired (winner minus candidate 0), over
    every line and over the lines whose take changed."""
    pairs = [
        (scores[take_key(u, 0)], scores[take_key(u, u.winner)], u.winner != 0)
        for u in rows
        if take_key(u, 0) in scores and take_key(u, u.winner) in scores
    ]
    changed = [(a, b) for a, b, moved in pairs if moved]
    figures: dict[str, Any] = {
        "lines": len(pairs),
        "candidate0": _mean([a for a, _, _ in pairs]),
        "winner": _mean([b for _, b, _ in pairs]),
    }
    if pairs:
        figures["winner_minus_candidate0"] = paired_gain([b - a for a, b, _ in pairs]).as_dict(
            "difference"
        )
    if changed:
        figures["changed_lines"] = {
            "lines": len(changed),
            **paired_gain([b - a for a, b in changed]).as_dict("difference"),
        }
    return figures
