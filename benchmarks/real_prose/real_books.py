"""Real books: how many lines are flagged on real prose, whether the judge agrees, what N=8 gains.

Renders a sample of the real-prose books (benchmarks/real_prose/real_prose.py: held-out chapters by
default, never tuned on; ``--part dev`` for the development chapters) as the plain-text book a user
would give, with the defaults (Piper joe-medium, N=8 adaptive), in a fresh work folder so the
render's time is its own. Then renders it again with the verification as it was before real prose
was looked at (``benchmarks/configs/before_real_prose.toml``: the text as written for the reference,
the old worst-token gate, no comparison of takes), reusing the first render's audio (candidate k
of an utterance is the same audio in both), so the two differ in verification only. The judge
(Whisper base, ``bundled:base``, never used for selection) transcribes candidate 0 and every
winner of both. Reports per render: utterances, flagged, flagged the judge confirms (it hears an
error in the kept take) and flagged it hears perfectly, the judge WER of flagged winners against
the rest, the judge WER of candidate 0 and of the winners with the paired interval
(verified_tts.paired), candidates per utterance and the timing; the passed winners' judge WER by
what the verifier's own transcripts miss in every take of the line (a word in lower case, only a
name, or nothing); and each false-alarm cause
(classified from the failed gate and its worst token: punctuation, a heading, a word every take
gets low, a hyphenated compound heard as two words, a long utterance) with its counts before and
after. ``--demo`` does the same for examples/book.md instead of a sample (into
real_books_demo.json). ``--seed-store`` starts the first render from an earlier store's takes
(the time is then not the render's own). Timings on a shared machine are inflated: each setting
records the load average; the real-time factor of the issue is measured on idle cores
(docs/real-prose.md gives the command), and the machine's speed in that hour, probed before and
after the render (benchmarks/speed/machine_speed.py), is recorded beside it.

Usage: python -m benchmarks.real_prose.real_books [--part held_out|held_out_b|...|held_out_g|dev |
       --demo | --harvard N] [--per-chapter N] [--chapters 3] [--skip-before] [--before-config TOML]
       [--seed-store STORE] [--work DIR] [--output JSON]
       python -m benchmarks.real_prose.real_books --analyse OUT_DIR... [--judged JUDGED_JSON...]
       --output JSON (finished renders, their utterances pooled: flags and causes, and the judge's
       figures where the runs' judgements of their takes are given)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.real_prose.real_prose import CHAPTERS, PARTS, PER_CHAPTER, START, write_sample
from benchmarks.speed.machine_speed import probe as probe_machine
from verified_tts.paired import paired_gain

ROOT = Path(__file__).resolve().parents[2]
BEFORE = ROOT / "benchmarks" / "configs" / "before_real_prose.toml"
DEMO = ROOT / "examples" / "book.md"
LONG_S = 14.0  # longer than half a packed window: scored alone


def render_timed(book: Path, out: Path, table: dict[str, Any]) -> dict[str, Any]:
    """Render ``book`` into ``out`` (N=8 adaptive, every take kept) and time it."""
    from verified_tts.config import build_config
    from verified_tts.output.manifest import read_manifest
    from verified_tts.workflows.render import render

    config = build_config(table, candidates=8, adaptive=True, keep="all")
    started, cpu_started = time.perf_counter(), time.process_time()
    render(book, out, config)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    manifest = read_manifest(out)
    speech = sum(u.winner_candidate.duration_s or 0.0 for u in manifest.utterances)
    load = manifest.stats["seconds"].get("load", 0.0)
    return {
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "load_seconds": load,
        "speech_seconds": round(speech, 2),
        "real_time_factor": round((wall - load) / speech, 4) if speech else None,
        "cpu_real_time_factor": round(cpu / speech, 4) if speech else None,
        "seconds_per_stage": manifest.stats["seconds"],
        "candidates_generated": manifest.stats.get("candidates_generated"),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


class JudgeCache:
    """The judge's WER and transcript of takes, by take key, kept in a JSON file (by judge, take
    key and reference) that is read and written back, so a rerun over the same takes judges only
    the ones it has not judged; the judge is loaded once, when a take first needs it."""

    def __init__(self, path: Path | None, judge_name: str) -> None:
        self.path, self.judge_name = path, judge_name
        self.known: dict[str, list[Any]] = {}
        if path is not None and path.is_file():
            stored = json.loads(path.read_text(encoding="utf-8"))
            self.known = stored["clips"] if stored.get("judge") == judge_name else {}
        self._judge: Any = None

    def judge(self, out: Path, takes: Sequence[tuple[Any, int]]) -> dict[str, tuple[float, str]]:
        """(WER, transcript) of each (utterance record, take index) of the render in ``out``
        that has audio, by take key."""
        from verified_tts.storage.atomic import write_json_atomic
        from verified_tts.workflows.judge import judge_clips, load_judge

        wanted, keys = {}, {}
        for u, index in takes:
            key = _key(u, index)
            stored = self.known.get(key)
            if u.candidates[index].audio and (stored is None or stored[2] != u.text):
                wanted[(u.key, index)] = (u.candidates[index].audio, u.text)
                keys[(u.key, index)] = key
        if wanted:
            self._judge = self._judge or load_judge(self.judge_name)
            fresh = judge_clips(self._judge, wanted, out).transcripts
            for k, (wer, heard) in fresh.items():
                self.known[keys[k]] = [wer, heard, wanted[k][1]]
            if self.path is not None:
                write_json_atomic(self.path, {"judge": self.judge_name, "clips": self.known})
        return {
            _key(u, index): (self.known[_key(u, index)][0], self.known[_key(u, index)][1])
            for u, index in takes
            if _key(u, index) in self.known
        }


def judge_runs(
    outs: list[Path], judge_name: str, cache: Path | None = None
) -> dict[str, tuple[float, str]]:
    """Judge WER and transcript of candidate 0 and the winner of every utterance of every run,
    by candidate key (the same take in two runs is judged once; ``cache``: see
    :class:`JudgeCache`)."""
    from verified_tts.output.manifest import read_manifest

    judges = JudgeCache(cache, judge_name)
    judged: dict[str, tuple[float, str]] = {}
    for out in outs:
        rows = read_manifest(out).utterances
        judged |= judges.judge(out, [(u, i) for u in rows for i in dict.fromkeys((0, u.winner))])
    return judged


def _key(u: Any, index: int) -> str:
    return u.candidates[index].extra.get("key") or f"{u.key}:{index}"


def _worst(candidate: Any, metric: str, views: list[Any], index: int) -> tuple[str, str | None]:
    """The worst token of a worst-token failure and the word it belongs to."""
    from verified_tts.selection.consensus import token_words

    detail = candidate.detail
    tokens = detail.get("tokens") or []
    position = detail.get("worst_token_index")
    if metric == "asr_min_take_logprob" and views[index] is not None:
        position = views[index].worst_index
    if position is None or position >= len(tokens):
        token = str(detail.get("worst_token", ""))
        return token, None
    return str(tokens[position]), token_words(detail)[position][1]


def cause_of(u: Any, index: int, views: list[Any], shared: set[str]) -> str | None:
    """Why this take failed, as a cause name (None when it passed)."""
    candidate = u.candidates[index]
    failed = list(candidate.failed_gates)
    if not failed:
        return None
    if u.kind == "heading":
        return "heading"
    first = failed[0]
    if first in ("asr_min_logprob", "asr_min_take_logprob"):
        token, word = _worst(candidate, first, views, index)
        if not any(c.isalnum() for c in token):
            return f"punctuation '{token.strip()}'"
        if word and word.strip("\"'“”‘’()[],.;:!?") in shared:
            return "a word every take gets low (name, rare word)"
        return "a word one take got wrong"
    if first == "asr_insertions":
        reference = str(candidate.detail.get("reference") or u.text)
        if "-" in reference:
            return "extra words, text has a hyphenated compound"
        return "extra words"
    if first == "wer":
        return "words heard as other words"
    if first == "speaker_take":
        return "speaker"
    if (candidate.duration_s or 0.0) > LONG_S:
        return f"{first} (utterance longer than {LONG_S:g} s)"
    return first


def misheard_in_every_take(u: Any) -> tuple[set[str], set[str]]:
    """The words of the text that the verifier's own transcript misses or replaces in every take
    of ``u``, as (words the text writes in lower case, names: capitalised in the text)."""
    import jiwer

    from verifiers.reference import heard_text
    from verifiers.textnorm import normalize

    text = u.spoken or u.text
    reference = normalize(heard_text(text)).split()
    missed: set[str] | None = None
    for candidate in u.candidates:
        heard = normalize(str(candidate.detail.get("transcript", ""))).split()
        wrong = set(reference)
        if heard and reference:
            wrong = set()
            for chunk in jiwer.process_words(" ".join(reference), " ".join(heard)).alignments[0]:
                if chunk.type in ("substitute", "delete"):
                    wrong |= set(reference[chunk.ref_start_idx : chunk.ref_end_idx])
        missed = wrong if missed is None else missed & wrong
    names = {normalize(word) for word in text.split() if word[:1].isupper()}
    words = {w for w in missed or set() if not w.isdigit()}
    return words - names, words & names


def by_transcripts(
    rows: Sequence[Any], wer: dict[str, float | None]
) -> dict[str, dict[str, Any]]:
    """The passed winners' judge WER split by what the verifier heard in every take: a word the
    text writes in lower case misheard in all of them, only a name, or nothing misheard in all."""
    groups: dict[str, list[float]] = {"a lower-case word": [], "only a name": [], "none": []}
    flagged = [float(wer[u.key]) for u in rows if u.flagged and wer[u.key] is not None]  # type: ignore[arg-type]
    for u in rows:
        if u.flagged or wer[u.key] is None:
            continue
        words, names = misheard_in_every_take(u)
        group = "a lower-case word" if words else "only a name" if names else "none"
        groups[group].append(float(wer[u.key]))  # type: ignore[arg-type]
    out: dict[str, Any] = {
        name: {"utterances": len(values),
               "judge_wer": round(statistics.fmean(values), 4) if values else None}
        for name, values in groups.items()
    }  # fmt: skip
    # what the first goal's ratio would be if the lines of a kind were flagged as well
    for kinds in (("a lower-case word",), ("a lower-case word", "only a name")):
        more = flagged + [w for kind in kinds for w in groups[kind]]
        rest = [w for kind, values in groups.items() if kind not in kinds for w in values]
        if more and rest and statistics.fmean(rest) > 0:
            out[f"if flagged too: {' or '.join(kinds)}"] = {
                "flagged_share": round(len(more) / (len(more) + len(rest)), 4),
                "judge_wer_ratio_flagged_to_rest": round(
                    statistics.fmean(more) / statistics.fmean(rest), 2
                ),
            }
    return out


def analyse(out: Path, judged: dict[str, tuple[float, str]]) -> dict[str, Any]:
    """The figures of one render (module docstring)."""
    from verified_tts.output.manifest import read_manifest

    return analyse_rows(read_manifest(out).utterances, judged)


def analyse_rows(rows: Sequence[Any], judged: dict[str, tuple[float, str]]) -> dict[str, Any]:
    """:func:`analyse` of a render's utterance records."""
    from verified_tts.selection.consensus import shared_hard_words, take_views

    flagged = [u for u in rows if u.flagged]
    wer = {u.key: judged.get(_key(u, u.winner), (None, ""))[0] for u in rows}
    c0 = {u.key: judged.get(_key(u, 0), (None, ""))[0] for u in rows}
    known = [u for u in rows if wer[u.key] is not None and c0[u.key] is not None]
    flagged_wer = [wer[u.key] for u in flagged if wer[u.key] is not None]
    other_wer = [wer[u.key] for u in rows if not u.flagged and wer[u.key] is not None]
    candidate_causes: Counter[str] = Counter()
    flag_causes: Counter[str] = Counter()
    false_alarms: Counter[str] = Counter()
    notes = 0
    flag_cause: dict[str, str] = {}
    for u in rows:
        details = [c.detail for c in u.candidates]
        views = take_views(details)
        shared = {w.strip("\"'“”‘’()[],.;:!?") for w in shared_hard_words(details)}
        notes += sum(1 for r in u.reasons if r.get("kind") == "check_pronunciation")
        for index in range(len(u.candidates)):
            cause = cause_of(u, index, views, shared)
            if cause:
                candidate_causes[cause] += 1
        if u.flagged:
            cause = cause_of(u, u.winner, views, shared) or "?"
            flag_cause[u.key] = cause
            flag_causes[cause] += 1
            if wer[u.key] == 0.0:
                false_alarms[cause] += 1
    mean = lambda xs: round(statistics.fmean(xs), 4) if xs else None  # noqa: E731
    gains = [c0[u.key] - wer[u.key] for u in known]
    ratio = None
    if flagged_wer and mean(other_wer):
        ratio = round(mean(flagged_wer) / mean(other_wer), 2)
    return {
        "utterances": len(rows),
        "flagged": len(flagged),
        "flagged_share": round(len(flagged) / len(rows), 4) if rows else None,
        "flagged_judge_confirms": sum(1 for w in flagged_wer if w > 0),
        "flagged_judge_hears_perfectly": sum(1 for w in flagged_wer if w == 0),
        "judge_wer_flagged_winners": mean(flagged_wer),
        "judge_wer_other_winners": mean(other_wer),
        "judge_wer_ratio_flagged_to_rest": ratio,
        "judge_wer_candidate0": mean([c0[u.key] for u in known]),
        "judge_wer_winners": mean([wer[u.key] for u in known]),
        "judge_gain_n8_over_candidate0": (
            paired_gain(gains).as_dict("mean_gain") if gains else None
        ),
        "candidates_per_utterance": mean([len(u.candidates) for u in rows]),
        "words_to_check_once": notes,
        "passed_winners_misheard_in_every_take": by_transcripts(rows, wer),
        "flagged_by_cause": dict(flag_causes.most_common()),
        "false_alarms_by_cause": dict(false_alarms.most_common()),
        "failed_takes_by_cause": dict(candidate_causes.most_common()),
        "takes": sum(len(u.candidates) for u in rows),
        "long_utterances": sum(1 for u in rows if (u.winner_candidate.duration_s or 0) > LONG_S),
        "flagged_utterances": [
            {
                "text": u.text,
                "cause": flag_cause[u.key],
                "reasons": [r.get("text") for r in u.reasons if r.get("flag", True)],
                "judge_wer": wer[u.key],
                "judge_heard": judged.get(_key(u, u.winner), (0, ""))[1],
            }
            for u in flagged
        ],  # fmt: skip
    }


def run(
    book: Path, work: Path, skip_before: bool, judge_name: str, seed: Path | None = None,
    before_config: Path = BEFORE,
) -> dict[str, Any]:  # fmt: skip
    """Render ``book`` with today's verification and the one before (``before_config``),
    judge both, analyse; ``seed``: a store whose takes the first render starts from (its time is
    then not its own)."""
    from verified_tts.config import read_config_file

    after, before = work / "after", work / "before"
    for folder in (after, before):
        if folder.exists():
            shutil.rmtree(folder)
    if seed is not None:
        shutil.copytree(seed, after / "store")
    # the machine's speed in the hour of the render, probed before and after it
    # (benchmarks/speed/machine_speed.py): real-time factors of different hours compare only with it
    speed_before = probe_machine() if seed is None else None
    timing = render_timed(book, after, {})
    if seed is not None:
        timing["seeded_from"] = str(seed)
    else:
        timing["machine_speed"] = [speed_before, probe_machine()]
    outs = [after]
    if not skip_before:
        shutil.copytree(after / "store", before / "store")  # the same takes, scored again
        render_timed(book, before, read_config_file(before_config))
        outs.append(before)
    judged = judge_runs(outs, judge_name, work / "judged.json")
    result: dict[str, Any] = {"after": {**analyse(after, judged), "timing": timing}}
    if not skip_before:
        result["before"] = analyse(before, judged)
    return result


def cpu_model() -> dict[str, Any]:
    """The CPU's model name and whether it has AVX-512 (Linux): a real-time factor is only
    comparable between renders on the same kind of CPU (docs/research/real-prose.md, speed by
    machine)."""
    info = Path("/proc/cpuinfo")
    if not info.is_file():
        return {}
    text = info.read_text(encoding="utf-8", errors="replace")
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                 if line.startswith("model name")), None)  # fmt: skip
    flags = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return {"cpu": name, "avx512": "avx512f" in flags.split()}


def _shown(path: Path) -> str:
    """``path`` relative to the repository where it lies in it."""
    resolved = path.resolve()
    return resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=PARTS, default="held_out")
    parser.add_argument(
        "--per-chapter", type=int, default=None, help="utterances per chapter (the part's own)"
    )
    parser.add_argument(
        "--chapters", type=int, default=None, help="chapters per book (the part's own)"
    )
    parser.add_argument("--demo", action="store_true", help="examples/book.md, not a sample")
    parser.add_argument(
        "--harvard", type=int, default=None, metavar="N",
        help="the first N Harvard sentences as a Markdown book, not a sample",
    )  # fmt: skip
    parser.add_argument("--skip-before", action="store_true")
    parser.add_argument(
        "--before-config", type=Path, default=BEFORE,
        help="the config of the 'before' render (default: the verification before real prose)",
    )  # fmt: skip
    parser.add_argument("--judge", default="bundled:base")
    parser.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "work" / "real_books")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--seed-store", type=Path, default=None, help="start from this store's takes (no timing)"
    )
    parser.add_argument(
        "--analyse", type=Path, nargs="+", default=None,
        help="only analyse these finished renders (no judge), their utterances pooled",
    )  # fmt: skip
    parser.add_argument("--note", default=None, help="with --analyse: how the render was made")
    parser.add_argument(
        "--judged", type=Path, nargs="+", default=None,
        help="with --analyse: runs' judged.json files, whose judgements the analysis uses",
    )  # fmt: skip
    args = parser.parse_args()
    if args.analyse is not None:
        output = args.output or ROOT / "benchmarks" / "results" / "real_books_analysis.json"
        from verified_tts.output.manifest import read_manifest

        judged, judges = {}, set()
        for path in args.judged or ():
            cache = json.loads(path.read_text(encoding="utf-8"))
            judges.add(cache["judge"])
            judged |= {key: (wer, heard) for key, (wer, heard, _) in cache["clips"].items()}
        if len(judges) > 1:
            sys.exit(f"the judged files come from different judges ({', '.join(sorted(judges))})")
        rows = [u for out in args.analyse for u in read_manifest(out).utterances]
        render = str(args.analyse[0]) if len(args.analyse) == 1 else [str(a) for a in args.analyse]
        command = ["python", "-m", "benchmarks.real_prose.real_books", *sys.argv[1:]]
        figures = {"command": " ".join(command),
                   "render": render, "note": args.note, "judge": next(iter(judges), None),
                   **analyse_rows(rows, judged)}  # fmt: skip
        output.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", "utf-8")
        print(json.dumps({k: v for k, v in figures.items() if k != "flagged_utterances"}))
        return
    common = {
        "command": " ".join(["python", "-m", "benchmarks.real_prose.real_books", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), **cpu_model()},
        "judge": args.judge,
        "before_config": _shown(args.before_config),
        "timing_note": "wall seconds grow with other work on the machine (load_average_at_end); "
        "the real-time factor of the goal is measured on idle cores",
    }
    if args.harvard is not None:
        from benchmarks.common.harvard import harvard_book

        output = args.output or ROOT / "benchmarks" / "results" / "real_books_harvard.json"
        harvard_work = args.work / "harvard"
        book = harvard_book(harvard_work / "harvard.md", args.harvard)
        data = {
            **common,
            "book": f"the first {args.harvard} Harvard sentences (benchmarks/common/harvard.py)",
            **run(book, harvard_work, args.skip_before, args.judge, args.seed_store,
                  args.before_config),
        }  # fmt: skip
    elif args.demo:
        output = args.output or ROOT / "benchmarks" / "results" / "real_books_demo.json"
        demo_work = args.work / "demo"
        demo_work.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {
            **common,
            "book": DEMO.relative_to(ROOT).as_posix(),
            **run(DEMO, demo_work, args.skip_before, args.judge, args.seed_store,
                  args.before_config),
        }
    else:
        output = args.output or ROOT / "benchmarks" / "results" / f"real_books_{args.part}.json"
        work = args.work / args.part
        work.mkdir(parents=True, exist_ok=True)
        book = work / f"{args.part}.txt"
        per_chapter = args.per_chapter or PER_CHAPTER[args.part]
        chapters = args.chapters or CHAPTERS.get(args.part, 3)
        start = START.get(args.part, 0)
        samples = write_sample(
            book, args.part, per_chapter=per_chapter, chapters=chapters, start=start
        )
        data = {
            **common,
            "sample": {
                "part": args.part,
                "rule": "per book, the first ceil(n/2) numbered chapters are development, the "
                f"rest held out; from {chapters} chapters of the part spread evenly, "
                + (f"the heading and {per_chapter} utterances from the {start + 1}th on"
                   if start else f"the first {per_chapter} utterances")  # fmt: skip
                + " each (benchmarks/real_prose/real_prose.py)",
                "chapters": [[name, chapter.title, len(segs)] for name, chapter, segs in samples],
            },
            **run(book, work, args.skip_before, args.judge, args.seed_store, args.before_config),
        }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in data.items() if k != "sample"}, indent=2)[:4000])


if __name__ == "__main__":
    main()
