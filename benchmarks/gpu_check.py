"""GPU check for Orpheus: SNAC decode throughput and the token-rate ceiling of the 3B shape.

A short, self-contained script for a GPU machine that has torch, transformers and maybe snac,
but no vLLM and no network. It measures (1) SNAC 24 kHz decode throughput at several batch
sizes, with random weights in the published configuration (or real weights from ``--snac DIR``),
skipped with a note when ``snac`` does not import; (2) a random-weight Llama of the Orpheus-3B
shape (hidden 3072, 28 layers, 24 heads, 8 KV heads, intermediate 8192, vocabulary 156,940) in
transformers, bf16: prefill tokens/s and batched decode-step tokens/s with a KV cache, the
ceiling a serving engine works under. Orpheus needs about 82 tokens per second of audio, so
tokens/s / 82 is the number of real-time streams. Prints JSON and writes ``gpu_check.json`` to
``$OUT`` (or the current folder). ``--quick`` runs a tiny shape on any device, to test the script.
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
VOCAB = 156_940
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
TOKENS_PER_AUDIO_S = 7 * 24000 / 2048


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


def llama_check(
    device: torch.device,
    shape: dict[str, int],
    prefill: list[tuple[int, int]],
    batches: list[int],
    steps: int,
    repeats: int,
):
    from transformers import LlamaConfig, LlamaForCausalLM

    dtype = torch.bfloat16
    config = LlamaConfig(
        vocab_size=VOCAB,
        max_position_embeddings=8192,
        rope_theta=500_000.0,
        tie_word_embeddings=True,
        **shape,
    )
    t0 = time.perf_counter()
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    # Materialise straight on the device in bf16: no 13 GB fp32 copy on the host.
    model = model.to_empty(device=device).to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
        for name, buf in model.named_buffers():
            if "inv_freq" in name:  # rotary frequencies are buffers: recompute, not random
                dim = shape["head_dim"]
                freqs = 1.0 / (500_000.0 ** (torch.arange(0, dim, 2, device=device).float() / dim))
                buf.copy_(freqs)
    model.eval()
    params = sum(p.numel() for p in model.parameters())
    out: dict[str, Any] = {
        "shape": shape,
        "parameters_billion": round(params / 1e9, 3),
        "dtype": str(dtype),
        "build_s": round(time.perf_counter() - t0, 1),
        "prefill": {},
        "decode": {},
    }
    with torch.inference_mode():
        for batch, length in prefill:
            ids = torch.randint(0, VOCAB, (batch, length), device=device)
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
            prompt = torch.randint(0, VOCAB, (batch, 32), device=device)

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
                "realtime_streams": round(rate / TOKENS_PER_AUDIO_S, 1),
            }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shape, few steps: any device")
    parser.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    parser.add_argument("--snac", type=Path, default=None, help="local SNAC 24 kHz folder")
    args = parser.parse_args()

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
    if args.quick:
        report["snac"] = snac_check(device, [1, 2], 1.0, 1, args.snac)
        report["llama"] = llama_check(device, TINY, [(1, 64)], [1, 4], 4, 1)
    else:
        report["snac"] = snac_check(device, [1, 4, 16, 64], 10.0, 3, args.snac)
        report["llama"] = llama_check(
            device, ORPHEUS_3B, [(1, 512), (8, 512), (32, 512)], [1, 8, 32, 64, 128], 32, 3
        )
    report["wall_s"] = round(time.perf_counter() - t0, 1)

    text = json.dumps(report, indent=2)
    print(text)
    out_dir = Path(os.environ.get("OUT") or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "gpu_check.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
