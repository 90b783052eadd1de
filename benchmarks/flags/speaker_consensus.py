"""The speaker gate judged against a line's own takes: what it clears, and what it still catches.

A one-word exclamation or question ("So!", "What?") moves every take's Resemblyzer embedding away
from the narration's: on the real-prose renders all eight takes of "What?" sit at 0.75-0.79
against the 0.81 bound, and the judge hears each word for word. The voice is the same in every
take (Piper has one speaker); what every take of a line shares is the line's, as a name that
tiny.en doubts in every take is (verified_tts.selection.consensus). ``speaker_take`` takes the
shortfall that even the line's best take has below a ceiling, up to an allowance, off every take of
the line; a take unlike its own line's takes still fails, and so does a line whose best take is
further below the bound than the allowance.

This script reads a finished render that kept every take (``real_books.py`` leaves one), embeds
every take and a ``voice`` fault of it (the calibration's wrong voice: pitch and formants shifted
4-7 semitones, verified_tts.calibration.faults), and scores each against the render's own
references as they stood at the end (the centroid of the winners, and of the short winners for a
take too short for it). For each (ceiling, allowance), allowance 0 being today's gate:

- clean lines the speaker gate flags (no take passes it), each listed, and clean takes it fails;
- one take of each line replaced by its voice fault, among the line's clean takes: faults caught;
- every take of a line in the same wrong voice (one shift for the line): lines caught.

The setting is chosen by a rule fixed before the figures were seen: among the settings that catch
every fault of both kinds that today's gate catches, the fewest clean lines flagged, then the
smallest allowance, then the lowest ceiling. Run it on the development render to choose, and on
a held-out render to test the shipped setting (``shipped``: verified_tts.selection.consensus's
constants). Writes benchmarks/results/speaker_consensus_<name>.json.

Usage: python -m benchmarks.flags.speaker_consensus OUT_DIR --name dev [--bound 0.8093]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CEILINGS = (0.81, 0.83, 0.85, 0.87, 0.89)
ALLOWANCES = (0.0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15)


def lifted(values: Sequence[float], ceiling: float, allowance: float) -> list[float]:
    """``values`` (one line's takes, one reference) as ``speaker_take`` under this setting
    (verified_tts.selection.consensus; a lone take is left as it is)."""
    from verified_tts.selection.consensus import shared_voice_shortfall

    shared = shared_voice_shortfall(
        [{"speaker": v} for v in values], [{}] * len(values), ceiling=ceiling, allowance=allowance
    )
    return [v + float(s or 0.0) for v, s in zip(values, shared, strict=True)]


def evaluate(
    lines: Sequence[dict[str, Any]], bound: float, ceiling: float, allowance: float
) -> dict[str, Any]:
    """The figures of one setting over ``lines`` (each: text, clean and voice similarities)."""
    flagged, clean_failed, clean_takes = [], 0, 0
    one_caught = one_total = every_caught = 0
    let_through = []
    for line in lines:
        clean = line["clean"]
        ok = [v >= bound for v in lifted(clean, ceiling, allowance)]
        clean_takes += len(clean)
        clean_failed += ok.count(False)
        if not any(ok):
            flagged.append({"text": line["text"], "best": round(max(clean), 4),
                            "speech_s": line["speech_s"]})  # fmt: skip
        for k, fault in enumerate(line["voice"]):
            one_total += 1
            group = [*clean[:k], fault, *clean[k + 1 :]]
            one_caught += lifted(group, ceiling, allowance)[k] < bound
        if any(v >= bound for v in lifted(line["voice"], ceiling, allowance)):
            let_through.append({"text": line["text"], "best_clean": round(max(clean), 4),
                                "best_wrong_voice": round(max(line["voice"]), 4)})  # fmt: skip
        else:
            every_caught += 1
    return {
        "ceiling": ceiling,
        "allowance": allowance,
        "clean_lines_flagged": len(flagged),
        "clean_takes_failed": clean_failed,
        "clean_takes_failed_share": round(clean_failed / clean_takes, 4) if clean_takes else None,
        "one_take_wrong_voice_caught": round(one_caught / one_total, 4) if one_total else None,
        "every_take_wrong_voice_caught": round(every_caught / len(lines), 4) if lines else None,
        "flagged_lines": flagged,
        "wrong_voice_lines_let_through": let_through,
    }


def _brief(setting: dict[str, Any]) -> dict[str, Any]:
    """A setting's figures without its lists, and the wrong-voice lines it lets through by text."""
    brief = {k: v for k, v in setting.items() if not isinstance(v, list)}
    brief["wrong_voice_lines_let_through"] = [
        line["text"] for line in setting["wrong_voice_lines_let_through"]
    ]
    return brief


def choose(settings: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rule of the module docstring (the first setting is today's gate)."""
    today = settings[0]
    keeps = [
        s for s in settings
        if s["one_take_wrong_voice_caught"] >= today["one_take_wrong_voice_caught"]
        and s["every_take_wrong_voice_caught"] >= today["every_take_wrong_voice_caught"]
    ]  # fmt: skip
    return min(keeps, key=lambda s: (s["clean_lines_flagged"], s["allowance"], s["ceiling"]))


def embed(out: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every take of the render in ``out`` and its voice fault, embedded as the speaker verifier
    embeds them: per line, the take indices, embeddings and speech seconds of both."""
    from verified_tts.audio import read_audio
    from verified_tts.calibration.faults import audio_fault
    from verified_tts.output.manifest import read_manifest
    from verifiers import Clip
    from verifiers.speaker import load_speaker_verifier

    speaker = load_speaker_verifier()
    lines = []
    for number, u in enumerate(read_manifest(out).utterances):
        takes = [c for c in u.candidates if c.audio]
        audio = [read_audio(out / c.audio, "a take") for c in takes]
        rng = np.random.default_rng([number, 11])
        state = rng.bit_generator.state
        faulted = []
        for samples, rate in audio:
            rng.bit_generator.state = state  # one shift for the whole line
            faulted.append((audio_fault("voice", samples, rate, rng).audio, rate))
        vectors, speech = speaker.embed_with_speech(
            [Clip(a, r, u.text) for a, r in [*audio, *faulted]]
        )
        n = len(takes)
        lines.append({
            "key": u.key, "text": u.text, "winner": u.winner,
            "takes": [c.index for c in takes],
            "as_rendered": [c.metric("speaker") for c in takes],
            "clean": [[float(x) for x in v] for v in vectors[:n]], "clean_speech": speech[:n],
            "voice": [[float(x) for x in v] for v in vectors[n:]], "voice_speech": speech[n:],
        })  # fmt: skip
    return lines, dict(speaker.identity())


def similarities(lines: Sequence[dict[str, Any]], window: int) -> list[dict[str, Any]]:
    """Each take's similarity, clean and faulted, against the references the render held when
    its line was scored (verified_tts.pipeline: window by window, the centroid of the winners so
    far, and of the short ones for a short take; before any, the first window's candidate 0)."""
    from verified_tts.pipeline import MIN_SHORT_TAKES
    from verified_tts.selection.scoring import unit_centroid
    from verifiers.speaker import SpeakerOptions, speech_is_short

    options = SpeakerOptions()

    def short(seconds: float) -> bool:
        return speech_is_short(seconds, options)

    def first(line: dict[str, Any]) -> tuple[np.ndarray, float] | None:
        if 0 not in line["takes"]:
            return None
        at = line["takes"].index(0)
        return np.asarray(line["clean"][at]), line["clean_speech"][at]

    def won(line: dict[str, Any]) -> tuple[np.ndarray, float] | None:
        if line["winner"] not in line["takes"]:
            return None
        at = line["takes"].index(line["winner"])
        return np.asarray(line["clean"][at]), line["clean_speech"][at]

    opening = [f for f in map(first, lines[:window]) if f is not None]
    boot_book = unit_centroid([v for v, _ in opening])
    boot_short = [v for v, s in opening if short(s)]
    winners: list[np.ndarray] = []
    short_winners: list[np.ndarray] = []
    out = []
    for start in range(0, len(lines), window):
        book = unit_centroid(winners) if winners else boot_book
        short_ref = unit_centroid(
            short_winners if len(short_winners) >= MIN_SHORT_TAKES else boot_short
        ) if max(len(short_winners), len(boot_short)) >= MIN_SHORT_TAKES else None
        for line in lines[start : start + window]:
            kinds = {}
            for kind in ("clean", "voice"):
                values = []
                for vector, seconds in zip(line[kind], line[f"{kind}_speech"], strict=True):
                    reference = short_ref if short(seconds) else book
                    values.append(
                        None if reference is None else float(np.dot(reference, vector))
                    )
                kinds[kind] = values
            # a take judged "too short" without a short reference has no similarity: left out
            kept = [i for i, (c, v) in enumerate(zip(kinds["clean"], kinds["voice"], strict=True))
                    if c is not None and v is not None]  # fmt: skip
            if kept:
                out.append({
                    "text": line["text"],
                    "speech_s": round(float(np.median(line["clean_speech"])), 3),
                    "clean": [kinds["clean"][i] for i in kept],
                    "voice": [kinds["voice"][i] for i in kept],
                    "as_rendered": [line["as_rendered"][i] for i in kept],
                })  # fmt: skip
        for line in lines[start : start + window]:
            kept_take = won(line)
            if kept_take is not None:
                winners.append(kept_take[0])
                if short(kept_take[1]):
                    short_winners.append(kept_take[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("render", type=Path, help="a finished render that kept every take")
    parser.add_argument("--name", required=True, help="the result is speaker_consensus_NAME.json")
    parser.add_argument("--bound", type=float, default=None, help="default: the shipped gate's")
    parser.add_argument("--cache", type=Path, default=None, help="keep the similarities here")
    args = parser.parse_args()
    if args.bound is None:
        from verified_tts.selection.policy import PER_CLIP_GATES

        args.bound = next(g.min for g in PER_CLIP_GATES if g.metric in ("speaker", "speaker_take"))
    if args.cache is not None and args.cache.is_file():
        stored = json.loads(args.cache.read_text(encoding="utf-8"))
        embedded, identity = stored["lines"], stored["verifier"]
    else:
        embedded, identity = embed(args.render)
        if args.cache is not None:
            args.cache.write_text(json.dumps({"lines": embedded, "verifier": identity}), "utf-8")
    from verified_tts.output.manifest import read_manifest

    window = int(read_manifest(args.render).config.get("window", 16))
    lines = similarities(embedded, window)
    agreement = max(
        (abs(a - c) for line in lines
         for a, c in zip(line["as_rendered"], line["clean"], strict=True) if a is not None),
        default=None,
    )  # fmt: skip
    settings = [evaluate(lines, args.bound, CEILINGS[0], 0.0)]
    settings += [
        evaluate(lines, args.bound, c, a) for c in CEILINGS for a in ALLOWANCES if a > 0
    ]
    chosen = choose(settings)
    from verified_tts.selection.consensus import SPEAKER_ALLOWANCE, SPEAKER_CEILING

    shipped = evaluate(lines, args.bound, SPEAKER_CEILING, SPEAKER_ALLOWANCE)
    record = {
        "benchmark": "speaker_consensus",
        "command": f"python -m benchmarks.flags.speaker_consensus {args.render} --name {args.name}",
        "render": str(args.render),
        "verifier": identity,
        "bound": args.bound,
        "lines": len(lines),
        "takes": sum(len(line["clean"]) for line in lines),
        "largest_difference_from_the_render_s_own_similarity": agreement,
        "rule": "among the settings that catch every fault of both kinds that today's gate "
        "catches, the fewest clean lines flagged, then the smallest allowance, then the lowest "
        "ceiling",
        "today": settings[0],
        "chosen": {k: v for k, v in chosen.items()},
        "shipped": shipped,
        "settings": [_brief(s) for s in settings],
    }
    path = ROOT / "benchmarks" / "results" / f"speaker_consensus_{args.name}.json"
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    for s in (settings[0], chosen, shipped):
        print(json.dumps(_brief(s)))
        for line in s["flagged_lines"]:
            print("   ", line)


if __name__ == "__main__":
    main()
