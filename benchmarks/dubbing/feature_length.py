"""Feature-length dubbing: wall time and peak memory of ``verified-tts dub --video`` by film length.

For each length (default 10 minutes and 2 hours) makes a 5.1 AAC film with
``verified_tts.testing.films.make_film`` (generated a second at a time into a temporary folder,
never committed; ``--keep DIR`` keeps the films there and reuses them), with the film's own
"original dialogue" under a handful of short cues spread evenly over it, and a subtitle file of
those cues. Then dubs it as a user would, ``verified-tts dub CUES.srt --video FILM.mp4
--generator espeak -n 1`` in a child process, so the synthesis is cheap and what is measured is
the mix (its passes over the film's decoded soundtrack), the loudness and true-peak measures and
the mux. Wall time and peak RSS of the child come from ``os.wait4`` (``ru_maxrss``). Separately,
a second child runs only the mix and mux of that dub (``--mix-only``: the placed lines read back
from ``track.wav`` at their places, so nothing is synthesised or loaded but the mixer) to show
the streaming part's own peak without the models' weights. Checks the delivered film with PyAV
(layout, codecs, each track's duration against the source's, within one AAC frame). Reports
both peaks, their ratio against the goal (the long film's peak at most 1.2x the short one's),
and the difference in MiB. Writes benchmarks/results/feature_length.json (``--label`` adds a
suffix, for a measure before a change).

Usage: python -m benchmarks.dubbing.feature_length [--seconds 600 7200] [--keep DIR] [--label NAME]
       python -m benchmarks.dubbing.feature_length --seconds 60 600 --out /tmp/quick.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "feature_length.json"
GOAL_RATIO = 1.2
CHANNELS = 6  # 5.1, a feature film's usual soundtrack
LINES = (
    "Where are you going?",
    "Stay here tonight.",
    "I found it by the river.",
    "We leave at dawn.",
    "Who told you that?",
    "Keep the lamp burning.",
    "It is not far now.",
    "Thank you, old friend.",
)
CUE_SECONDS = 2.5


def cue_times(seconds: float, count: int) -> list[tuple[float, float]]:
    """``count`` cues spread evenly over a film of ``seconds``."""
    gap = seconds / (count + 1)
    return [(round(gap * (k + 1), 3), round(gap * (k + 1) + CUE_SECONDS, 3)) for k in range(count)]


def write_cues(path: Path, times: list[tuple[float, float]]) -> Path:
    from datetime import timedelta

    import srt

    cues = [
        srt.Subtitle(k + 1, timedelta(seconds=a), timedelta(seconds=b), LINES[k % len(LINES)])
        for k, (a, b) in enumerate(times)
    ]
    path.write_text(srt.compose(cues), encoding="utf-8")
    return path


def film_for(folder: Path, seconds: float, cues: int) -> tuple[Path, Path, float]:
    """The film and its cues, made unless ``folder`` already holds them."""
    from verified_tts.testing.films import make_film

    times = cue_times(seconds, cues)
    stem = f"film-{int(seconds)}s-{CHANNELS}ch"
    film, subtitles = folder / f"{stem}.mp4", folder / f"{stem}.srt"
    started = time.perf_counter()
    if not film.is_file():
        partial = folder / f"{stem}.partial.mp4"
        make_film(partial, seconds, CHANNELS, dialogue=times)
        partial.replace(film)
    write_cues(subtitles, times)
    return film, subtitles, time.perf_counter() - started


def measured_child(command: list[str]) -> dict:
    """Run ``command``; its wall seconds, peak RSS (MiB) and exit status, from ``os.wait4``."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    return {
        "exit_status": child.returncode,
        "wall_seconds": round(wall, 1),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),  # ru_maxrss is in KiB on Linux
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "output_tail": output[-600:] if child.returncode else None,
    }


def check_output(film: Path, dubbed: Path) -> dict:
    """What a player reads of the dubbed film (PyAV, the fields ffprobe shows) against the
    source: layouts, codecs, and each track's duration within one AAC frame of the source's."""
    from verified_tts.testing.films import streams

    source, out = streams(film), streams(dubbed)
    length = next(s["seconds"] for s in source if s["type"] == "audio")
    frame = 1024 / 48_000
    audio = [s for s in out if s["type"] == "audio"]
    return {
        "streams": out,
        "source_audio_seconds": length,
        "dub_layout": audio[0]["layout"] if audio else None,
        "durations_within_one_frame": all(
            s["seconds"] is not None and abs(s["seconds"] - length) <= frame
            for s in out
            if s["type"] in ("audio", "video")
        ),
    }


def mix_only(film: Path, out: Path) -> None:
    """The mix and mux of a finished dub in ``out``, nothing else: the placed lines read back
    from ``track.wav`` at their places (never the whole track), then delivered as ``dub`` does."""
    import soundfile as sf

    from verified_tts.options import DubOptions
    from verified_tts.output.bed import read_bed
    from verified_tts.output.dub_delivery import deliver_dub
    from verified_tts.output.timeline import Timeline
    from verified_tts.output.video import probe_video

    report = json.loads((out / "dub.json").read_text(encoding="utf-8"))
    info = probe_video(film)
    bed, _ = read_bed(info, None, None)
    pieces = []
    with sf.SoundFile(str(out / "track.wav")) as track:
        rate, frames = track.samplerate, track.frames
        for cue in report["cues"]:
            first = round(cue["placed_start"] * rate)
            track.seek(first)
            size = round(cue["placed_end"] * rate) - first
            pieces.append((first, track.read(size, dtype="float32")))
    timeline = Timeline(rate, frames, tuple(pieces))
    placed = [_Placed(c["placed_start"], c["placed_end"], c["text"]) for c in report["cues"]]
    again = out / "mix-only"
    again.mkdir(exist_ok=True)
    options = DubOptions()
    deliver_dub(again, timeline, placed, bed, options, video=info, language="en")  # type: ignore[arg-type]


class _Placed:
    """What delivery reads of a placed line: where it landed and its words."""

    def __init__(self, start: float, end: float, text: str) -> None:
        from types import SimpleNamespace

        self.placed_start, self.placed_end = start, end
        self.cue = SimpleNamespace(text=text, start=start, end=end)


def one_length(folder: Path, seconds: float, cues: int) -> dict:
    film, subtitles, made = film_for(folder, seconds, cues)
    out = folder / f"dub-{int(seconds)}s"
    command = [
        str(Path(sys.executable).with_name("verified-tts")), "dub", str(subtitles),
        "--video", str(film), "--out", str(out), "--generator", "espeak", "-n", "1",
    ]  # fmt: skip
    dub = measured_child(command)
    record: dict = {
        "film_seconds": seconds,
        "cues": cues,
        "film_made_in_seconds": round(made, 1),
        "film_mib": round(film.stat().st_size / 2**20, 1),
        "dub": dub,
    }
    if dub["exit_status"] == 0:
        report = json.loads((out / "dub.json").read_text(encoding="utf-8"))
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        record["stage_seconds"] = {
            k: round(v, 1) for k, v in manifest.get("stats", {}).get("seconds", {}).items()
        }
        record["mixing"] = report["mixing"]
        record["output"] = check_output(film, out / f"{film.stem}.dub.mp4")
        mix = [sys.executable, "-m", "benchmarks.dubbing.feature_length",
               "--mix-only", str(film), str(out)]  # fmt: skip
        record["mix_and_mux_only"] = measured_child(mix)
    for name in ("mix.wav", "track.wav", "track.flac"):  # gigabytes for a feature film
        (out / name).unlink(missing_ok=True)
        (out / "mix-only" / name).unlink(missing_ok=True)
    return record


def compare(short: dict, long: dict, part: str) -> dict | None:
    if part not in short or part not in long:
        return None
    a, b = short[part]["peak_rss_mib"], long[part]["peak_rss_mib"]
    return {
        "short_film_seconds": short["film_seconds"],
        "long_film_seconds": long["film_seconds"],
        "short_peak_rss_mib": a,
        "long_peak_rss_mib": b,
        "ratio": round(b / a, 3),
        "difference_mib": round(b - a, 1),
        "goal_ratio": GOAL_RATIO,
        "meets_goal": b / a <= GOAL_RATIO,
    }


def write_atomic(path: Path, data: dict) -> None:
    from verified_tts.storage.atomic import write_json_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, nargs="+", default=[600.0, 7200.0])
    parser.add_argument("--cues", type=int, default=8)
    parser.add_argument("--keep", type=Path, help="make the films here and keep them")
    parser.add_argument("--label", help="suffix of the result file, e.g. before")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--mix-only", nargs=2, type=Path, metavar=("FILM", "DUB_DIR"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.mix_only:
        mix_only(*args.mix_only)
        return
    destination = args.out or (
        RESULT.with_name(f"feature_length_{args.label}.json") if args.label else RESULT
    )
    result: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "settings": {
            "layout": "5.1",
            "generator": "espeak",
            "n": 1,
            "cues": args.cues,
            "command": "verified-tts dub CUES.srt --video FILM.mp4 --generator espeak -n 1",
        },  # fmt: skip
        "films": [],
    }
    with tempfile.TemporaryDirectory(prefix="vtts-feature-") as work:
        folder = args.keep or Path(work)
        folder.mkdir(parents=True, exist_ok=True)
        for seconds in sorted(args.seconds):
            record = one_length(folder, seconds, args.cues)
            result["films"].append(record)
            print(json.dumps({"film_seconds": seconds, **record["dub"],
                              "mix_only": record.get("mix_and_mux_only")}), flush=True)  # fmt: skip
            write_atomic(destination, result)  # a finished length is never lost
    short, long = result["films"][0], result["films"][-1]
    result["peak_rss"] = {
        "dub": compare(short, long, "dub"),
        "mix_and_mux_only": compare(short, long, "mix_and_mux_only"),
    }
    write_atomic(destination, result)
    print(json.dumps(result["peak_rss"], indent=2))
    print(f"wrote {destination}")


if __name__ == "__main__":
    main()
