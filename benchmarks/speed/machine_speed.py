"""How fast this machine is now, in the work that costs a render most: Piper's CPU seconds per
second of audio it makes.

A render's real-time factor on the 2-core development machines moves with the hour (the same
Piper workload costs about a third more CPU in a slow hour than in a fast one, on an idle
machine), so a real-time factor is only comparable with one measured in an hour of the same speed.
This probe makes a fixed workload (the first ``--lines`` development lines of the real-prose
books, two takes each with fixed seeds, one graph run per core, the default voice with its plain
graph: ``planar = false``, as every probe before the planar convolutions ran) and reports
the CPU seconds it took per second of audio; :mod:`real_books` records it next to each render's
timing. The probe's own timing is not a goal: it says which hour a render ran in.

Usage: python -m benchmarks.speed.machine_speed [--lines 24] [--repeat 1] [--output JSON]
       (each run is appended to the output's list: the drift over a day, one line per probe)
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.real_prose.real_prose import sample_segments

ROOT = Path(__file__).resolve().parents[2]
TAKES = 2  # takes per line, as the adaptive render's first two rounds make


def probe_requests(lines: int) -> list[Any]:
    """The fixed workload: ``TAKES`` takes of each of the first ``lines`` development lines."""
    from verified_tts.generators.base import SynthesisRequest

    segments = [s for _, _, chosen in sample_segments("dev", per_chapter=3) for s in chosen]
    return [
        SynthesisRequest(utterance_key=f"probe-{i}", index=k, seed=1000 * i + k, text=s.spoken)
        for i, s in enumerate(segments[:lines])
        for k in range(TAKES)
    ]


def probe_generator(planar: bool = False) -> Any:
    """The default voice; by default with its plain graph (``planar = false``), the graph every
    probe before the planar convolutions ran, so that probes of any day stay comparable."""
    from verified_tts.generators import GeneratorConfig, load_generator

    return load_generator(GeneratorConfig(name="piper", options={"planar": planar}))


def probe(lines: int = 24, generator: Any = None) -> dict[str, Any]:
    """Time Piper on the fixed workload (``generator``: a loaded Piper generator, else
    :func:`probe_generator`): CPU and wall seconds per second of audio."""
    if generator is None:
        generator = probe_generator()
    requests = probe_requests(lines)
    generator.sample(requests[:2])  # the first runs pay for onnxruntime's first allocations
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    candidates = generator.sample(requests)
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - started
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    audio = sum(c.audio.size / c.sample_rate for c in candidates)
    return {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "takes": len(candidates),
        "graph": "planar" if generator.voice.planar else "plain",
        "audio_seconds": round(audio, 2),
        "cpu_seconds_per_audio_second": round(cpu / audio, 4),
        "wall_seconds_per_audio_second": round(wall / audio, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--output", type=Path, default=ROOT / "benchmarks" / "results" / "machine_speed.json"
    )
    args = parser.parse_args()
    from verified_tts.storage.atomic import write_json_atomic

    generator = probe_generator()
    data = (
        json.loads(args.output.read_text(encoding="utf-8"))
        if args.output.is_file()
        else {"command": "python -m benchmarks.speed.machine_speed", "probes": []}
    )
    for _ in range(args.repeat):
        found = probe(args.lines, generator)
        print(json.dumps(found))
        data["probes"].append({"lines": args.lines, **found})
        write_json_atomic(args.output, data)


if __name__ == "__main__":
    main()
