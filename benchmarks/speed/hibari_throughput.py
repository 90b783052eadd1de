"""How fast does the hibari voice sample candidates, and where does the time go?

Synthesizes 8 candidates each of the first Harvard sentences (the package's copy,
benchmarks/common/harvard.py) with hibari "heart" and reports, per layout, the generation real-time
factor per candidate (wall seconds / seconds of audio; the front end included) and the CPU
seconds per second of audio, which other work on a shared machine does not inflate:

- sequential: one graph run or signal stage at a time, one onnxruntime thread;
- threads: one at a time, onnxruntime's intra-op threads = the cores;
- workers: graph runs and signal stages in parallel over the cores, one thread each (the
  generator's default layout).

Each layout runs twice: with the seeded variation of the given settings (every candidate its own
graph run) and with seeds alone (``0/0``: the 8 candidates of a sentence share one graph run, only
the signal stage runs 8 times). A last pass times the graph and the signal stage apart, one
thread. Writes benchmarks/results/hibari_throughput.json.

Usage: nice -n 10 python -m benchmarks.speed.hibari_throughput [--sentences 20] [--jitter 0.04/0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from benchmarks.common.harvard import sentences
from verified_tts.cores import usable_cores

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results" / "hibari_throughput.json"
CANDIDATES = 8


def timed(generator, texts: list[str]) -> dict:
    from verified_tts.generators import SynthesisRequest

    generator.sample([SynthesisRequest("warm", 0, 0, texts[0])])  # first-run allocations
    started, cpu_started = time.perf_counter(), time.process_time()
    audio_s = 0.0
    for i, text in enumerate(texts):
        requests = [SynthesisRequest(f"u{i}", k, 1000 * i + k, text) for k in range(CANDIDATES)]
        audio_s += sum(c.duration_s for c in generator.sample(requests))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "audio_s": round(audio_s, 2),
        "rtf_per_candidate": round(wall / audio_s, 5),
        "cpu_rtf_per_candidate": round(cpu / audio_s, 5),
    }


def stages(generator, texts: list[str]) -> dict:
    """Seconds of graph runs and of signal stages for one candidate per sentence, one thread."""
    graph_s = signal_s = audio_s = 0.0
    for i, text in enumerate(texts):
        for number, phonemes in enumerate(generator.phonemes(text)[0]):
            ids = generator.ids(phonemes)
            speed = generator.draw_speed(i)
            scales = generator.draw_durations(i, number, len(ids))
            started = time.perf_counter()
            features = generator.features(ids, speed, scales)
            graph_s += time.perf_counter() - started
            started = time.perf_counter()
            audio = generator.waveform(features, i, number)
            signal_s += time.perf_counter() - started
            audio_s += len(audio) / generator.sample_rate
    return {
        "graph_rtf": round(graph_s / audio_s, 5),
        "signal_rtf": round(signal_s / audio_s, 5),
        "audio_s": round(audio_s, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--jitter", default="0.04/0.1", help="speed_jitter/duration_jitter")
    args = parser.parse_args()

    import hibari

    from verified_tts.generators import GeneratorConfig
    from verified_tts.generators.hibari import load

    texts = sentences(0, args.sentences)
    cores = usable_cores()
    speed_jitter, duration_jitter = (float(x) for x in args.jitter.split("/"))
    variations = {
        args.jitter: {"speed_jitter": speed_jitter, "duration_jitter": duration_jitter},
        "0/0": {},
    }
    layouts = {
        "sequential": {"threads": 1, "workers": 1},
        "threads": {"threads": cores, "workers": 1},
        "workers": {"threads": 1, "workers": cores},
    }
    results: dict[str, dict] = {}
    for variation, jitter in variations.items():
        for name, layout in layouts.items():
            generator = load(GeneratorConfig(name="hibari", options={**jitter, **layout}))
            label = f"{name} {variation}"
            results[label] = {**layout, "variation": variation, **timed(generator, texts)}
            print(label, results[label], flush=True)
    one_thread = load(
        GeneratorConfig(name="hibari", options={**variations[args.jitter], "workers": 1})
    )
    split = stages(one_thread, texts)
    print("stages", split, flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "voice": f"hibari:heart (hibari-tts {hibari.__version__})",
                "sentences": len(texts),
                "candidates": CANDIDATES,
                "cores": cores,
                "machine": platform.processor() or platform.machine(),
                "load_average_at_end": os.getloadavg(),
                "layouts": results,
                "stages_one_thread": split,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"-> {OUT}")


if __name__ == "__main__":
    main()
