"""Dubbing Sintel into a film: time to dub and mux, the mix's loudness, fits, and the judge's WER.

Makes a film as long as the Sintel subtitles (tests/data/sintel-en.srt, (c) Blender Foundation,
durian.blender.org, CC-BY 3.0) with PyAV: generated frames and a soundtrack of tones and noise with
a speech-like "original dialogue" during every cue (tests/video_fixtures.py), plus the same
background alone as a music-and-effects stem. Then dubs the 26 cues into it as a user would, with
the default models (``verified-tts dub sintel.srt --video sintel.mp4``, here through the library
to time the stages), once over the film's own audio and once over the stem, and reports: seconds
to dub (synthesis) and to mix and mux, the delivered mix's integrated loudness, loudness range and
true peak (measured on the mix and on the film's decoded AAC track), the cues fitted without
stretch, with stretch and overrunning, and the independent judge's WER (Whisper base,
``bundled:base``, never used for selection) over the placed winners. Writes
benchmarks/results/dub_video.json. The seconds need idle cores; the rest does not.

Usage: python -m benchmarks.dubbing.dub_video [-n 4] [--loudness -23]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SINTEL = ROOT / "tests" / "data" / "sintel-en.srt"
RESULT = ROOT / "benchmarks" / "results" / "dub_video.json"
sys.path.insert(0, str(ROOT / "tests"))  # the film maker the tests use


def make_material(folder: Path) -> tuple[Path, Path, float]:
    import soundfile as sf
    import srt
    from video_fixtures import RATE, background, make_film, speech_like

    cues = list(srt.parse(SINTEL.read_text(encoding="utf-8")))
    seconds = cues[-1].end.total_seconds() + 2.0
    lines = [(c.start.total_seconds(), c.end.total_seconds()) for c in cues]
    bed = background(seconds)
    film = make_film(
        folder / "sintel.mp4", seconds, audio=bed + speech_like(seconds, lines)[:, None]
    )
    stem = folder / "sintel-me.wav"
    sf.write(stem, bed, RATE, subtype="FLOAT")
    return film, stem, seconds


def judged(out: Path, judge) -> dict:
    from verified_tts.workflows.judge import judge_clips

    report = json.loads((out / "dub.json").read_text(encoding="utf-8"))
    wanted = {(c["key"], c["winner"]): (c["audio"], c["text"]) for c in report["cues"]}
    heard = judge_clips(judge, wanted, out)
    results, seconds = heard.transcripts, heard.seconds
    wers = [results[key][0] for key in wanted]
    return {
        "judge_wer_mean": round(sum(wers) / len(wers), 4),
        "judge_perfect": sum(w == 0 for w in wers),
        "judge_seconds": round(seconds, 1),
    }


def run(film: Path, subtitles: Path, out: Path, synthesizer, **options) -> dict:
    from verified_tts.output.loudness import measure_loudness
    from verified_tts.workflows.dub import dub

    started = time.perf_counter()
    summary = dub(
        subtitles, out, synthesizer.config, synthesizer=synthesizer, video=film, **options
    )
    wall = time.perf_counter() - started
    report = json.loads((out / "dub.json").read_text(encoding="utf-8"))
    cues = report["cues"]
    import av
    import numpy as np

    with av.open(str(summary.video)) as container:
        stream = container.streams.audio[0]
        decoded = np.concatenate([f.to_ndarray().T for f in container.decode(stream)])
        heard = measure_loudness(decoded, stream.codec_context.sample_rate)
    return {
        "wall_seconds": round(wall, 1),
        "stage_seconds": summary.seconds,
        "cues": len(cues),
        "flagged": summary.flagged,
        "fit_without_stretch": sum(c["needed_stretch"] <= 1.0 for c in cues),
        "stretched": sum(c["stretch"] > 1.0 for c in cues),
        "overrunning": sum(c["overlap_seconds"] > 0 or c["overlap_next_seconds"] > 0 for c in cues),
        "mix": report["mixing"],
        "delivered_track": heard.record(),
        "dialogue_to_bed_db": [c["mix"]["dialogue_to_bed_db"] for c in cues],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=4)
    parser.add_argument("--loudness", type=float, default=-23.0)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()

    from verified_tts.config import build_config
    from verified_tts.pipeline import Synthesizer
    from verified_tts.workflows.judge import load_judge

    result: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "settings": {"n": args.n, "loudness_lufs": args.loudness, "generator": "piper"},
    }
    loaded = time.perf_counter()
    synthesizer = Synthesizer.load(build_config({}, candidates=args.n))
    result["load_seconds"] = round(time.perf_counter() - loaded, 1)
    judge = load_judge("bundled:base")
    with tempfile.TemporaryDirectory(prefix="vtts-dub-video-") as work:
        folder = Path(work)
        made = time.perf_counter()
        film, stem, seconds = make_material(folder)
        result["film"] = {
            "seconds": round(seconds, 2),
            "made_in_seconds": round(time.perf_counter() - made, 1),
        }
        for name, options in (
            ("over_the_films_audio", {}),
            ("over_a_stem", {"background": stem}),
        ):
            out = folder / name
            measured = run(film, SINTEL, out, synthesizer, loudness_lufs=args.loudness, **options)
            measured.update(judged(out, judge))
            result[name] = measured
            print(name, json.dumps({k: measured[k] for k in ("wall_seconds", "flagged")}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
