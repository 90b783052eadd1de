"""GPU check for the three codec LMs: codec decode throughput and each LM shape's token ceiling.

A short script for a GPU machine that has torch and transformers (maybe snac), but no vLLM and
no network. Per layout it measures (1) codec decode throughput at several batch sizes with random
weights in the published configurations: SNAC 24 kHz (Orpheus; skipped with a note when ``snac``
does not import, real weights with ``--snac DIR``), X-codec2 through transformers' Xcodec2Model
(Llasa; the semantic encoder, which decoding never runs, is shrunk to one layer to save memory)
and BiCodec (Spark-TTS; this project's modules, imported from the checkout); (2) a random-weight
LM of the real shape in transformers, bf16: prefill tokens/s and batched decode-step tokens/s
with a KV cache, the ceiling a serving engine works under: Orpheus-3B (Llama, vocabulary
156,940, about 82 tokens per audio second), Llasa-1B (Llama 3.2 1B, 193,800, 50/s) and
Spark-TTS 0.5B (Qwen2.5-0.5B, 166,000, 50/s). tokens/s divided by tokens per audio second is the
number of real-time streams. Prints JSON and writes ``gpu_check.json`` to ``$OUT`` (or the current
folder). ``--quick`` runs tiny shapes on any device, to test the script; ``--only`` picks layouts.

``--search`` adds a search run (needs vLLM): beam search against best-of-N at equal budget on a
few Harvard sentences through the real pipeline (``benchmarks/selection/search_benchmark.py``):
tokens and wall seconds per utterance, the overhead of decoding and scoring partial audio, the
prefix-cache share. With real weights pass ``--search-model DIR --search-codec DIR``
(``--search-layout`` orpheus, llasa or spark); with ``--quick`` it builds the tiny random models and
runs on any device.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # BiCodec's modules, this checkout

ORPHEUS_3B = dict(
    hidden_size=3072,
    intermediate_size=8192,
    num_hidden_layers=28,
    num_attention_heads=24,
    num_key_value_heads=8,
    head_dim=128,
)
TINY = dict(
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=64,
)
LLASA_1B = dict(
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=64,
)
SPARK_05B = dict(
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
)
# layout -> (family, vocabulary, LM tokens per audio second)
LAYOUTS = {
    "orpheus": ("llama", 156_940, 7 * 24000 / 2048),
    "llasa": ("llama", 193_800, 50.0),
    "spark": ("qwen2", 166_000, 50.0),
}
SNAC_24KHZ = dict(
    sampling_rate=24000,
    encoder_dim=48,
    encoder_rates=[2, 4, 8, 8],
    decoder_dim=1024,
    decoder_rates=[8, 8, 4, 2],
    attn_window_size=None,
    codebook_size=4096,
    codebook_dim=8,
    vq_strides=[4, 2, 1],
    noise=True,
    depthwise=True,
)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Any, device: torch.device, repeats: int) -> float:
    """Best of `repeats` wall times (after one warm-up call)."""
    fn()
    _sync(device)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def snac_check(device: torch.device, batches: list[int], seconds: float, repeats: int, snac_dir):
    try:
        from snac import SNAC
    except ImportError as exc:
        return {"skipped": f"snac does not import ({exc}); pip install snac to measure decoding"}
    if snac_dir:
        model = SNAC.from_pretrained(str(snac_dir))
        weights = f"from {snac_dir}"
    else:
        torch.manual_seed(0)
        model = SNAC(**SNAC_24KHZ)
        weights = "random, 24 kHz configuration"
    model = model.eval().to(device)
    frames = int(seconds * 24000 / 2048)
    out: dict[str, Any] = {"weights": weights, "clip_audio_s": round(frames * 2048 / 24000, 3)}
    for b in batches:
        codes = [
            torch.randint(0, 4096, (b, frames * per), device=device, dtype=torch.long)
            for per in (1, 2, 4)
        ]
        try:
            with torch.inference_mode():
                best = _timed(lambda codes=codes: model.decode(codes), device, repeats)
        except torch.OutOfMemoryError:
            out[f"batch_{b}"] = {"skipped": "out of memory"}
            break
        audio_s = b * frames * 2048 / 24000
        out[f"batch_{b}"] = {
            "seconds": round(best, 4),
            "audio_s_per_s": round(audio_s / best, 1),
            "s_per_audio_s": round(best / audio_s, 5),
        }
    return out


def xcodec2_check(device: torch.device, batches: list[int], seconds: float, repeats: int):
    try:
        from transformers import Xcodec2Config, Xcodec2Model
    except ImportError as exc:
        return {"skipped": f"transformers has no Xcodec2Model ({exc}): needs transformers>=5.13"}
    torch.manual_seed(0)
    config = Xcodec2Config(semantic_model_config={"num_hidden_layers": 1})
    model = Xcodec2Model(config).eval().to(device)
    codes_n = int(seconds * 50)
    out: dict[str, Any] = {"weights": "random, published decoder", "clip_audio_s": codes_n / 50}
    for b in batches:
        codes = torch.randint(0, 65_536, (b, 1, codes_n), device=device)
        try:
            with torch.inference_mode():
                best = _timed(lambda codes=codes: model.decode(audio_codes=codes), device, repeats)
        except torch.OutOfMemoryError:
            out[f"batch_{b}"] = {"skipped": "out of memory"}
            break
        audio_s = b * codes_n / 50
        out[f"batch_{b}"] = {
            "seconds": round(best, 4),
            "audio_s_per_s": round(audio_s / best, 1),
            "s_per_audio_s": round(best / audio_s, 5),
        }
    return out


def bicodec_check(
    device: torch.device, batches: list[int], seconds: float, repeats: int, tiny: bool
):
    from verified_tts.generators.codecs.bicodec_modules import BiCodecNet
    from verified_tts.testing.tiny_models import bicodec_config

    torch.manual_seed(0)
    net = BiCodecNet(bicodec_config(tiny)).eval().to(device)
    n = int(seconds * 50)
    out: dict[str, Any] = {
        "weights": "random, " + ("tiny" if tiny else "Spark-TTS-0.5B") + " configuration",
        "clip_audio_s": n / 50,
    }
    for b in batches:
        sem = torch.randint(0, 8192, (b, n), device=device)
        glo = torch.randint(0, 4096, (b, 1, 32), device=device)
        try:
            with torch.inference_mode():
                best = _timed(lambda s=sem, g=glo: net.detokenize(s, g), device, repeats)
        except torch.OutOfMemoryError:
            out[f"batch_{b}"] = {"skipped": "out of memory"}
            break
        audio_s = b * n / 50
        out[f"batch_{b}"] = {
            "seconds": round(best, 4),
            "audio_s_per_s": round(audio_s / best, 1),
            "s_per_audio_s": round(best / audio_s, 5),
        }
    return out


def llm_check(
    device: torch.device,
    layout: str,
    shape: dict[str, int],
    prefill: list[tuple[int, int]],
    batches: list[int],
    steps: int,
    repeats: int,
):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    family, vocab, tokens_per_audio_s = LAYOUTS[layout]
    dtype = torch.bfloat16
    if family == "llama":
        config = LlamaConfig(
            vocab_size=vocab,
            max_position_embeddings=8192,
            rope_theta=500_000.0,
            tie_word_embeddings=True,
            **shape,
        )
        model_class: Any = LlamaForCausalLM
    else:
        config = Qwen2Config(
            vocab_size=vocab,
            max_position_embeddings=8192,
            rope_theta=1_000_000.0,
            tie_word_embeddings=True,
            **shape,
        )
        model_class = Qwen2ForCausalLM
    t0 = time.perf_counter()
    with torch.device("meta"):
        model = model_class(config)
    # Materialise straight on the device in bf16: no 13 GB fp32 copy on the host.
    model = model.to_empty(device=device).to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
        for name, buf in model.named_buffers():
            if "inv_freq" in name:  # rotary frequencies are buffers: recompute, not random
                dim = shape.get("head_dim") or shape["hidden_size"] // shape["num_attention_heads"]
                theta = 500_000.0 if family == "llama" else 1_000_000.0
                freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device).float() / dim))
                buf.copy_(freqs)
    model.eval()
    params = sum(p.numel() for p in model.parameters())
    out: dict[str, Any] = {
        "layout": layout,
        "tokens_per_audio_s": round(tokens_per_audio_s, 2),
        "shape": shape,
        "parameters_billion": round(params / 1e9, 3),
        "dtype": str(dtype),
        "build_s": round(time.perf_counter() - t0, 1),
        "prefill": {},
        "decode": {},
    }
    with torch.inference_mode():
        for batch, length in prefill:
            ids = torch.randint(0, vocab, (batch, length), device=device)
            try:
                best = _timed(
                    lambda ids=ids: model(input_ids=ids, use_cache=False), device, repeats
                )
            except torch.OutOfMemoryError:
                out["prefill"][f"{batch}x{length}"] = {"skipped": "out of memory"}
                continue
            out["prefill"][f"{batch}x{length}"] = {
                "seconds": round(best, 4),
                "tokens_per_s": round(batch * length / best, 1),
            }
        for batch in batches:
            prompt = torch.randint(0, vocab, (batch, 32), device=device)

            def decode(prompt: torch.Tensor = prompt) -> None:
                result = model(input_ids=prompt, use_cache=True)
                cache = result.past_key_values
                token = result.logits[:, -1:].argmax(-1)
                for _ in range(steps):
                    result = model(input_ids=token, past_key_values=cache, use_cache=True)
                    cache = result.past_key_values
                    token = result.logits[:, -1:].argmax(-1)

            try:
                # Time the prompt alone too, and subtract it: what is left is `steps` decode steps.
                prefill_only = _timed(
                    lambda prompt=prompt: model(input_ids=prompt, use_cache=True), device, repeats
                )
                best = _timed(decode, device, repeats)
            except torch.OutOfMemoryError:
                out["decode"][f"batch_{batch}"] = {"skipped": "out of memory"}
                break
            step_s = max(best - prefill_only, 1e-9) / steps
            rate = batch / step_s
            out["decode"][f"batch_{batch}"] = {
                "ms_per_step": round(1000 * step_s, 3),
                "tokens_per_s": round(rate, 1),
                "realtime_streams": round(rate / tokens_per_audio_s, 1),
            }
    return out


def search_check(args: argparse.Namespace) -> dict[str, Any]:
    """Beam vs best-of-N at equal budget through the real pipeline (see the module doc)."""
    import tempfile

    try:
        import vllm  # noqa: F401
    except Exception as exc:
        return {"skipped": f"vllm not importable: {type(exc).__name__}"}
    from benchmarks.selection import search_benchmark

    layout = args.search_layout
    settings = argparse.Namespace(
        n=8, width=2, expansions=4, chunk=1.0, budget=None, sentences=2 if args.quick else 8
    )
    started = time.perf_counter()
    if args.quick or args.search_model is None:
        if not args.quick:
            return {"skipped": "no --search-model (real weights) and not --quick"}
        from verified_tts.testing.tiny_models import build_all

        with tempfile.TemporaryDirectory(prefix="vtts-tiny-") as tmp:
            built = build_all(Path(tmp), only=(layout,))[layout]
            settings.chunk = 0.5
            result = search_benchmark.run_layout(layout, built, settings)
    else:
        # a GPU engine at its defaults; candidates up to 12 s of speech
        engine = {"max_tokens_max": int(12 * {"orpheus": 82}.get(layout, 50)) // 7 * 7}
        models = {"lm": args.search_model, "codec": args.search_codec}
        result = search_benchmark.run_layout(layout, models, settings, engine)
    return {
        "layout": layout,
        "settings": vars(settings),
        **result,
        "wall_s": round(time.perf_counter() - started, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shape, few steps: any device")
    parser.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    parser.add_argument("--snac", type=Path, default=None, help="local SNAC 24 kHz folder")
    parser.add_argument("--only", default="orpheus,llasa,spark", help="comma-separated layouts")
    parser.add_argument("--search", action="store_true", help="add a beam vs best-of-N run")
    parser.add_argument("--search-layout", default="orpheus")
    parser.add_argument("--search-model", type=Path, default=None, help="LM folder (real weights)")
    parser.add_argument("--search-codec", type=Path, default=None, help="codec folder")
    parser.add_argument("--search-only", action="store_true", help="skip the codec and LM checks")
    args = parser.parse_args()
    layouts = [name.strip() for name in args.only.split(",") if name.strip()]
    if args.search_only:
        layouts = []

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "quick": args.quick,
    }
    for name in ("transformers", "torchaudio", "snac"):
        try:
            module = __import__(name)
            report[name] = getattr(module, "__version__", "installed")
        except Exception as exc:  # a broken torchaudio pairing raises OSError, not ImportError
            report[name] = f"not importable: {type(exc).__name__}"
    if device.type == "cuda":
        report["gpu_memory_gib"] = round(
            torch.cuda.get_device_properties(device).total_memory / 2**30, 1
        )
    t0 = time.perf_counter()
    shapes = {"orpheus": ORPHEUS_3B, "llasa": LLASA_1B, "spark": SPARK_05B}
    for layout in layouts:
        started = time.perf_counter()
        section: dict[str, Any] = {}
        if args.quick:
            batches, seconds, repeats = [1, 2], 1.0, 1
            lm = (TINY, [(1, 64)], [1, 4], 4, 1)
        else:
            batches, seconds, repeats = [1, 4, 16, 64], 10.0, 3
            lm = (shapes[layout], [(1, 512), (8, 512), (32, 512)], [1, 8, 32, 64, 128], 32, 3)
        if layout == "orpheus":
            section["codec"] = snac_check(device, batches, seconds, repeats, args.snac)
        elif layout == "llasa":
            section["codec"] = xcodec2_check(device, batches, seconds, repeats)
        else:
            section["codec"] = bicodec_check(device, batches, seconds, repeats, args.quick)
        # Qwen2's config derives head_dim (hidden / heads: 64 for both shapes used here)
        shape = {k: v for k, v in lm[0].items() if not (layout == "spark" and k == "head_dim")}
        section["lm"] = llm_check(device, layout, shape, *lm[1:])
        section["wall_s"] = round(time.perf_counter() - started, 1)
        report[layout] = section
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if args.search:
        report["search"] = search_check(args)
    report["wall_s"] = round(time.perf_counter() - t0, 1)

    text = json.dumps(report, indent=2)
    print(text)
    out_dir = Path(os.environ.get("OUT") or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "gpu_check.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
