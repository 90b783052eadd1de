"""Tiny random-weight codec LMs and codecs with the exact layouts of Orpheus, Llasa and Spark-TTS.

No weights can be downloaded in CI (or on many machines), so the tests, the benchmarks and
anyone trying the generators build their own models here: the real architectures (Llama for
Orpheus and Llasa, Qwen2 for Spark-TTS) with the real vocabularies and special ids, two small
layers with attention head_dim 64 (vLLM's CPU backend refuses smaller heads), saved with a
byte-level BPE tokenizer trained on a few sentences whose special and codec tokens sit where the
real tokenizers put them (Spark-TTS's added tokens get ids of our choosing after Qwen's; the layout
reads them by name). The codecs are built in :mod:`verified_tts.testing.tiny_codecs` (importable
here as before). ``build_all(OUT)`` writes ``OUT/{orpheus,llasa,spark}/{lm,codec}``;
``benchmarks/common/tiny_models.py`` is its command line.
"""

from __future__ import annotations

import contextlib
import json
from functools import partial
from pathlib import Path
from typing import Any

from verified_tts.testing.tiny_codecs import (
    SNAC_24KHZ_CONFIG,
    bicodec_config,
    build_bicodec,
    build_snac_24khz,
    build_xcodec2,
    xcodec2_config,
)

__all__ = [
    "ORPHEUS_3B_SHAPE",
    "SNAC_24KHZ_CONFIG",
    "TINY_SHAPE",
    "build_all",
    "build_bicodec",
    "build_llasa_like",
    "build_orpheus_like",
    "build_snac_24khz",
    "build_spark_like",
    "build_tokenizer",
    "build_xcodec2",
    "bicodec_config",
    "xcodec2_config",
]

ORPHEUS_VOCAB = 156_940  # 128256 Llama-3 ids + 10 Orpheus control ids + 7 * 4096 audio ids + 2
LLASA_VOCAB = 193_800  # 128256 + 8 Llasa specials + 65536 speech ids
SPARK_VOCAB = 166_000  # Spark-TTS-0.5B's Qwen2.5 embedding size
BOS_ID = 128_000
CUSTOM_BASE = 128_256

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
    "Convert the text to speech: system user assistant Cutting Knowledge Date Today",
]

# The Llama 3.2 chat layout (system turn with the knowledge and today's date, then the turns);
# like the real template, it uses today's date unless the caller passes date_string.
LLAMA32_CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if not date_string is defined %}{%- if strftime_now is defined %}"
    '{%- set date_string = strftime_now("%d %b %Y") %}'
    '{%- else %}{%- set date_string = "26 Jul 2024" %}{%- endif %}{%- endif %}'
    '{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}'
    '{{- "Cutting Knowledge Date: December 2023\\n" }}'
    '{{- "Today Date: " + date_string + "\\n\\n" }}'
    '{{- "<|eot_id|>" }}'
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' "
    "+ message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)

LLASA_SPECIALS = (
    "<|TEXT_GENERATION_START|>",
    "<|TEXT_GENERATION_END|>",
    "<|TEXT_UNDERSTANDING_START|>",
    "<|TEXT_UNDERSTANDING_END|>",
    "<|SPEECH_GENERATION_START|>",
    "<|SPEECH_GENERATION_END|>",
    "<|SPEECH_UNDERSTANDING_START|>",
    "<|SPEECH_UNDERSTANDING_END|>",
)

SPARK_CONTROL = (
    "<|task_tts|>",
    "<|task_controllable_tts|>",
    "<|start_content|>",
    "<|end_content|>",
    "<|start_style_label|>",
    "<|end_style_label|>",
    "<|start_acoustic_token|>",
    "<|end_acoustic_token|>",
    "<|start_global_token|>",
    "<|end_global_token|>",
    "<|start_semantic_token|>",
    "<|end_semantic_token|>",
    "<|gender_0|>",
    "<|gender_1|>",
    *(f"<|pitch_label_{i}|>" for i in range(5)),
    *(f"<|speed_label_{i}|>" for i in range(5)),
)


def _llama3_specials() -> dict[str, int]:
    """Llama-3's 256 reserved ids, named as Llama-3 names the ones these models use."""
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


def _qwen_specials() -> dict[str, int]:
    tokens = {"<|endoftext|>": 151_643, "<|im_start|>": 151_644, "<|im_end|>": 151_645}
    for n, i in enumerate(range(151_646, 151_665)):
        tokens[f"<|qwen_reserved_{n}|>"] = i
    return tokens


def _save_tokenizer(
    folder: Path,
    *,
    specials: dict[str, int],
    extra: dict[str, int],
    added: list[str],
    bos: str | None,
    eos: str,
    chat_template: str | None = None,
) -> None:
    """A byte-level BPE trained on a few sentences; ``specials`` and ``extra`` at fixed ids.

    ``specials`` are registered as special tokens; ``added`` (a subset of ``extra``) as plain
    added tokens, so text that spells them is tokenised to their ids (as Llasa's speech tokens
    and Spark's markers are); the rest of ``extra`` only exists as ids.
    """
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    base = Tokenizer(models.BPE())
    base.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    base.train_from_iterator(_CORPUS, trainer=trainer)
    trained = json.loads(base.to_str())["model"]
    vocab: dict[str, int] = dict(trained["vocab"])
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    vocab.update(specials)
    vocab.update(extra)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(specials))
    if added:
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in added])
    if bos is not None:
        # Like Llama-3: every encoding starts with <|begin_of_text|>.
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, specials[bos])]
        )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos)
    if chat_template:
        fast.chat_template = chat_template
    fast.save_pretrained(str(folder))
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"  # as in the real checkpoints
    config_path.write_text(json.dumps(config, indent=1))


def build_tokenizer(folder: Path) -> None:
    """The Orpheus tokenizer: Llama-3 specials at 128000.., ``<custom_token_N>`` at 128256 + N."""
    extra = {f"<custom_token_{n}>": CUSTOM_BASE + n for n in range(ORPHEUS_VOCAB - CUSTOM_BASE)}
    _save_tokenizer(
        folder,
        specials=_llama3_specials(),
        extra=extra,
        added=[],
        bos="<|begin_of_text|>",
        eos="<|eot_id|>",
    )


def _save_causal_lm(
    folder: Path, config: Any, model_class: Any, *, seed: int, big: bool = False
) -> None:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    with torch.device("meta") if big else contextlib.nullcontext():
        model = model_class(config)
    if big:
        # Billions of parameters: cast on the meta device, then materialise in bf16 only.
        model = model.to(torch.bfloat16).to_empty(device="cpu")
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.02)
    else:
        model = model.to(torch.bfloat16)
    model.save_pretrained(str(folder))


def build_orpheus_like(
    folder: Path,
    shape: dict[str, int] | None = None,
    *,
    max_position_embeddings: int = 4096,
    seed: int = 0,
    tokenizer: bool = True,
) -> Path:
    """Save a random-weight Llama with the Orpheus vocabulary (and tokenizer) into ``folder``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=ORPHEUS_VOCAB,
        max_position_embeddings=max_position_embeddings,
        rms_norm_eps=1e-5,
        rope_theta=500_000.0,
        bos_token_id=BOS_ID,
        eos_token_id=128_009,
        tie_word_embeddings=True,  # halves the file; vLLM handles tied heads
        torch_dtype="bfloat16",
        **(shape or TINY_SHAPE),
    )
    _save_causal_lm(folder, config, LlamaForCausalLM, seed=seed, big=shape is ORPHEUS_3B_SHAPE)
    if tokenizer:
        build_tokenizer(folder)
    return folder


def build_llasa_like(folder: Path, *, seed: int = 0) -> Path:
    """A random-weight Llama with Llasa's vocabulary, special ids and Llama 3.2 chat template."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=LLASA_VOCAB,
        max_position_embeddings=4096,
        rms_norm_eps=1e-5,
        rope_theta=500_000.0,
        bos_token_id=BOS_ID,
        eos_token_id=128_009,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
        **TINY_SHAPE,
    )
    _save_causal_lm(folder, config, LlamaForCausalLM, seed=seed)
    names = [*LLASA_SPECIALS, *(f"<|s_{n}|>" for n in range(LLASA_VOCAB - CUSTOM_BASE - 8))]
    _save_tokenizer(
        folder,
        specials=_llama3_specials(),
        extra={name: CUSTOM_BASE + i for i, name in enumerate(names)},
        added=names,  # upstream adds them with tokenizer.add_tokens
        bos="<|begin_of_text|>",
        eos="<|eot_id|>",
        chat_template=LLAMA32_CHAT_TEMPLATE,
    )
    return folder


def build_spark_like(folder: Path, *, seed: int = 0) -> Path:
    """A random-weight Qwen2 with Spark-TTS's markers, 4,096 global and 8,192 semantic tokens."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=SPARK_VOCAB,
        hidden_size=TINY_SHAPE["hidden_size"],
        intermediate_size=TINY_SHAPE["intermediate_size"],
        num_hidden_layers=TINY_SHAPE["num_hidden_layers"],
        num_attention_heads=TINY_SHAPE["num_attention_heads"],
        num_key_value_heads=TINY_SHAPE["num_key_value_heads"],
        max_position_embeddings=4096,
        bos_token_id=151_643,
        eos_token_id=151_645,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
    )
    _save_causal_lm(folder, config, Qwen2ForCausalLM, seed=seed)
    names = [
        *SPARK_CONTROL,
        *(f"<|bicodec_global_{i}|>" for i in range(4096)),
        *(f"<|bicodec_semantic_{i}|>" for i in range(8192)),
    ]
    _save_tokenizer(
        folder,
        specials=_qwen_specials(),
        extra={name: 151_665 + i for i, name in enumerate(names)},
        added=names,
        bos=None,
        eos="<|im_end|>",
    )
    return folder


def build_all(
    out: Path, *, only: tuple[str, ...] = ("orpheus", "llasa", "spark"), small_snac: bool = False
) -> dict:
    """``out/{orpheus,llasa,spark}/{lm,codec}``: every generator runnable without weights
    (``small_snac``: Orpheus's codec with the small decoder, for tests that decode often)."""
    built: dict[str, dict[str, Path]] = {}
    makers = {
        "orpheus": (build_orpheus_like, partial(build_snac_24khz, small_decoder=small_snac)),
        "llasa": (build_llasa_like, build_xcodec2),
        "spark": (build_spark_like, build_bicodec),
    }
    for name in only:
        make_lm, make_codec = makers[name]
        lm, codec = out / name / "lm", out / name / "codec"
        if not (lm / "config.json").is_file():
            make_lm(lm)
        if not (codec.is_dir() and any(codec.iterdir())):
            make_codec(codec)
        built[name] = {"lm": lm, "codec": codec}
    return built
