"""BiCodec's neural modules (Spark-TTS), written in plain torch with the checkpoint's names.

Spark-TTS ships BiCodec as ``BiCodec/config.yaml`` + ``model.safetensors``; its own code (and
the ``spark-tts-lib`` repackaging) imports torchaudio, which cannot load beside a CPU torch build.
These modules rebuild the same network from the same config: the attribute names below are the
state-dict names of ``BiCodec.load_from_checkpoint`` (``encoder.encoder.convnext.0.dwconv...``,
``decoder.model.1.block.2...``, ``speaker_encoder.perceiver_sampler.layers.0.0.to_kv...``), so the
published checkpoint loads into them unchanged. Weight-normalised convolutions are plain
convolutions here; :func:`fold_weight_norm` turns a checkpoint's ``weight_g``/``weight_v`` pairs
into the weight they stand for. The pieces: a Vocos/ConvNeXt feature encoder and condition-aware
prenet, a factorised VQ (8,192 semantic codes), a DAC-style wave generator with Snake
activations, and the speaker encoder (ECAPA-TDNN, a perceiver resampler to 32 latents, and a
residual FSQ with 4,096 codes: the global tokens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "BiCodecNet",
    "WNConv1d",
    "WNConvTranspose1d",
    "fold_weight_norm",
    "split_weight_norm",
]


class WNConv1d(nn.Conv1d):
    """A convolution stored weight-normalised in the checkpoint (``weight_g`` + ``weight_v``)."""


class WNConvTranspose1d(nn.ConvTranspose1d):
    """A transposed convolution stored weight-normalised in the checkpoint."""


def fold_weight_norm(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Replace each ``X.weight_g``/``X.weight_v`` (or parametrization) pair by ``X.weight``."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if key.endswith(".weight_v") or key.endswith(".parametrizations.weight.original1"):
            continue
        if key.endswith(".weight_g"):
            prefix, v = key[: -len(".weight_g")], state[key[: -len("_g")] + "_v"]
        elif key.endswith(".parametrizations.weight.original0"):
            prefix = key[: -len(".parametrizations.weight.original0")]
            v = state[prefix + ".parametrizations.weight.original1"]
        else:
            out[key] = value
            continue
        dims = tuple(range(1, v.dim()))  # weight_norm's default dim=0: one norm per out slice
        out[prefix + ".weight"] = v * (value / v.norm(dim=dims, keepdim=True))
    return out


def split_weight_norm(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict as the checkpoint stores it: weight-normalised layers as g and v."""
    state = dict(model.state_dict())
    for name, module in model.named_modules():
        if isinstance(module, WNConv1d | WNConvTranspose1d):
            w = state.pop(f"{name}.weight")
            state[f"{name}.weight_g"] = w.norm(dim=tuple(range(1, w.dim())), keepdim=True)
            state[f"{name}.weight_v"] = w.clone()
    return state


# --- blocks -----------------------------------------------------------------------------------


class Snake1d(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, channels, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + (self.alpha + 1e-9).reciprocal() * torch.sin(self.alpha * x).pow(2)


class AdaLayerNorm(nn.Module):
    def __init__(self, condition_dim: int, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps
        self.scale = nn.Linear(condition_dim, dim)
        self.shift = nn.Linear(condition_dim, dim)

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        x = F.layer_norm(x, (self.dim,), eps=self.eps)
        return x * self.scale(cond).unsqueeze(1) + self.shift(cond).unsqueeze(1)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int, intermediate: int, scale: float, cond: int | None) -> None:
        super().__init__()
        self.dwconv = nn.Conv1d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = AdaLayerNorm(cond, dim) if cond else nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, intermediate)
        self.pwconv2 = nn.Linear(intermediate, dim)
        self.gamma = nn.Parameter(scale * torch.ones(dim)) if scale > 0 else None

    def forward(self, x: torch.Tensor, cond: torch.Tensor | None) -> torch.Tensor:
        y = self.dwconv(x).transpose(1, 2)
        y = self.norm(y, cond) if isinstance(self.norm, AdaLayerNorm) else self.norm(y)
        y = self.pwconv2(F.gelu(self.pwconv1(y)))
        if self.gamma is not None:
            y = self.gamma * y
        return x + y.transpose(1, 2)


class VocosBackbone(nn.Module):
    """(B, C_in, T) -> (B, T, dim): a conv embedding and ConvNeXt blocks, optionally conditioned."""

    def __init__(
        self, channels: int, dim: int, intermediate: int, layers: int, cond: int | None = None
    ) -> None:
        super().__init__()
        self.embed = nn.Conv1d(channels, dim, kernel_size=7, padding=3)
        self.norm = AdaLayerNorm(cond, dim) if cond else nn.LayerNorm(dim, eps=1e-6)
        self.convnext = nn.ModuleList(
            ConvNeXtBlock(dim, intermediate, 1 / layers, cond) for _ in range(layers)
        )
        self.final_layer_norm = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x: torch.Tensor, condition: torch.Tensor | None = None) -> torch.Tensor:
        x = self.embed(x).transpose(1, 2)
        x = self.norm(x, condition) if isinstance(self.norm, AdaLayerNorm) else self.norm(x)
        x = x.transpose(1, 2)
        for block in self.convnext:
            x = block(x, condition)
        return self.final_layer_norm(x.transpose(1, 2))


class SamplingBlock(nn.Module):
    """(B, T, C) -> (B, C, T'): learned up/down-sampling plus repeat/average-pool skips."""

    def __init__(self, dim: int, up: int = 1, down: int = 1) -> None:
        super().__init__()
        self.up, self.down = up, down
        if up > 1:
            self.de_conv_upsampler = nn.Sequential(
                nn.LeakyReLU(0.2),
                nn.ConvTranspose1d(
                    dim, dim, up * 2, up, up // 2 + up % 2, output_padding=up % 2, groups=dim
                ),
            )
        if down > 1:
            self.conv_downsampler = nn.Sequential(
                nn.LeakyReLU(0.2),
                nn.Conv1d(dim, dim, 2 * down, down, down // 2 + down % 2, groups=dim),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.transpose(1, 2)
        repeat = x.repeat_interleave(self.up, dim=2) if self.up > 1 else x
        merged = repeat + self.de_conv_upsampler(x) if self.up > 1 else x
        if self.down <= 1:
            return merged + repeat + merged
        pool = lambda t: F.avg_pool1d(t, self.down, self.down)  # noqa: E731
        return self.conv_downsampler(merged) + pool(repeat) + pool(merged)


def _stages(dim: int, intermediate: int, ratios: Sequence[int], *, up: bool) -> nn.Sequential:
    return nn.Sequential(
        *(
            nn.Sequential(
                SamplingBlock(dim, up=r if up else 1, down=1 if up else r),
                VocosBackbone(dim, dim, intermediate, 2),
            )
            for r in ratios
        )
    )


class FeatEncoder(nn.Module):
    """wav2vec2 features (B, C_in, T) -> latents (B, out, T)."""

    def __init__(self, **c: Any) -> None:
        super().__init__()
        dim, inter = c["vocos_dim"], c["vocos_intermediate_dim"]
        self.encoder = VocosBackbone(c["input_channels"], dim, inter, c["vocos_num_layers"])
        self.downsample = _stages(dim, inter, c.get("sample_ratios", [1, 1]), up=False)
        self.project = nn.Linear(dim, c["out_channels"])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.project(self.downsample(self.encoder(x))).transpose(1, 2)


class FeatDecoder(nn.Module):
    """Latents (B, C_in, T) [+ a condition] -> (B, out, T): BiCodec's prenet and postnet."""

    def __init__(self, **c: Any) -> None:
        super().__init__()
        dim, inter = c["vocos_dim"], c["vocos_intermediate_dim"]
        self.linear_pre = nn.Linear(c["input_channels"], dim)
        self.downsample = _stages(dim, inter, c.get("sample_ratios", [1, 1]), up=True)
        self.vocos_backbone = VocosBackbone(
            dim, dim, inter, c["vocos_num_layers"], c.get("condition_dim")
        )
        self.linear = nn.Linear(dim, c["out_channels"])
        self.tanh = bool(c.get("use_tanh_at_final", False))

    def forward(self, x: torch.Tensor, cond: torch.Tensor | None = None) -> torch.Tensor:
        x = self.downsample(self.linear_pre(x.transpose(1, 2))).transpose(1, 2)
        x = self.linear(self.vocos_backbone(x, condition=cond)).transpose(1, 2)
        return torch.tanh(x) if self.tanh else x


class ResidualUnit(nn.Module):
    def __init__(self, dim: int, dilation: int) -> None:
        super().__init__()
        pad = ((7 - 1) * dilation) // 2
        self.block = nn.Sequential(
            Snake1d(dim),
            WNConv1d(dim, dim, kernel_size=7, dilation=dilation, padding=pad),
            Snake1d(dim),
            WNConv1d(dim, dim, kernel_size=1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        pad = (x.shape[-1] - y.shape[-1]) // 2
        return (x[..., pad:-pad] if pad > 0 else x) + y


class DecoderBlock(nn.Module):
    def __init__(self, dim_in: int, dim_out: int, kernel: int, stride: int) -> None:
        super().__init__()
        self.block = nn.Sequential(
            Snake1d(dim_in),
            WNConvTranspose1d(dim_in, dim_out, kernel, stride, padding=(kernel - stride) // 2),
            ResidualUnit(dim_out, 1),
            ResidualUnit(dim_out, 3),
            ResidualUnit(dim_out, 9),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


class WaveGenerator(nn.Module):
    """Latents (B, C, T) -> waveform (B, 1, T * prod(rates))."""

    def __init__(self, **c: Any) -> None:
        super().__init__()
        channels = c["channels"]
        layers: list[nn.Module] = [WNConv1d(c["input_channel"], channels, 7, padding=3)]
        out = channels
        for i, (kernel, stride) in enumerate(zip(c["kernel_sizes"], c["rates"], strict=True)):
            out = channels // 2 ** (i + 1)
            layers.append(DecoderBlock(channels // 2**i, out, kernel, stride))
        layers += [Snake1d(out), WNConv1d(out, c.get("d_out", 1), 7, padding=3), nn.Tanh()]
        self.model = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


class FactorizedVQ(nn.Module):
    """The semantic quantizer: cosine nearest code in a low-dimensional codebook."""

    def __init__(self, **c: Any) -> None:
        super().__init__()
        dim, code_dim, size = c["input_dim"], c["codebook_dim"], c["codebook_size"]
        if dim != code_dim:
            self.in_project: nn.Module = WNConv1d(dim, code_dim, kernel_size=1)
            self.out_project: nn.Module = WNConv1d(code_dim, dim, kernel_size=1)
        else:
            self.in_project = self.out_project = nn.Identity()
        self.codebook = nn.Embedding(size, code_dim)
        self.register_buffer("cluster_size", torch.zeros(size))

    def tokenize(self, z: torch.Tensor) -> torch.Tensor:
        z_e = self.in_project(z)  # (B, d, T)
        enc = F.normalize(z_e.transpose(1, 2).reshape(-1, z_e.shape[1]))
        book = F.normalize(self.codebook.weight)
        dist = enc.pow(2).sum(1, keepdim=True) - 2 * enc @ book.t() + book.pow(2).sum(1)[None]
        return (-dist).max(1)[1].reshape(z_e.shape[0], -1)

    def detokenize(self, indices: torch.Tensor) -> torch.Tensor:
        return self.out_project(F.embedding(indices, self.codebook.weight).transpose(1, 2))


class FSQ:
    """Finite scalar quantisation arithmetic (no parameters): levels -> implicit codebook."""

    def __init__(self, levels: Sequence[int]) -> None:
        self.levels = torch.tensor(list(levels), dtype=torch.int64)
        self.basis = torch.cumprod(torch.tensor([1, *list(levels)[:-1]]), 0)

    def quantize_indices(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        levels = self.levels.to(z.device)
        half_l = (levels - 1) * (1 + 1e-3) / 2
        offset = torch.where(levels % 2 == 0, 0.5, 0.0)
        shift = (offset / half_l).atanh()
        bounded = (z.float() + shift).tanh() * half_l - offset
        half_width = levels // 2
        codes = bounded.round() / half_width
        index = ((codes * half_width + half_width) * self.basis.to(z.device)).sum(-1)
        return codes, index.round().long()

    def codes(self, indices: torch.Tensor) -> torch.Tensor:
        levels = self.levels.to(indices.device)
        half_width = levels // 2
        level = (indices[..., None] // self.basis.to(indices.device)) % levels
        return (level - half_width).float() / half_width


class ResidualFSQ(nn.Module):
    """The global-token quantizer (channel-first input): project, FSQ per stage, project back."""

    def __init__(self, levels: Sequence[int], stages: int, dim: int) -> None:
        super().__init__()
        self.project_in = nn.Linear(dim, len(levels)) if dim != len(levels) else nn.Identity()
        self.project_out = nn.Linear(len(levels), dim) if dim != len(levels) else nn.Identity()
        self.fsq = FSQ(levels)
        self.scales = [(torch.tensor(list(levels)).float() - 1) ** -q for q in range(stages)]

    def indices(self, x: torch.Tensor) -> torch.Tensor:
        """(B, dim, N) -> (B, stages, N)."""
        residual = self.project_in(x.transpose(1, 2))
        found = []
        for scale in self.scales:
            codes, index = self.fsq.quantize_indices(residual / scale.to(x.device))
            residual = residual - codes * scale.to(x.device)
            found.append(index)
        return torch.stack(found, dim=1)

    def output(self, indices: torch.Tensor) -> torch.Tensor:
        """(B, N, stages) -> (B, N, dim)."""
        total = sum(
            self.fsq.codes(indices[..., q]) * self.scales[q].to(indices.device)
            for q in range(indices.shape[-1])
        )
        return self.project_out(total)


class Conv1dReluBn(nn.Module):
    def __init__(self, c_in: int, c_out: int, kernel: int = 1, padding: int = 0) -> None:
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, kernel, 1, padding)
        self.bn = nn.BatchNorm1d(c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(F.relu(self.conv(x)))


class Res2Conv1dReluBn(nn.Module):
    def __init__(self, channels: int, padding: int, dilation: int, scale: int = 8) -> None:
        super().__init__()
        self.width = channels // scale
        self.convs = nn.ModuleList(
            nn.Conv1d(self.width, self.width, 3, 1, padding, dilation) for _ in range(scale - 1)
        )
        self.bns = nn.ModuleList(nn.BatchNorm1d(self.width) for _ in range(scale - 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = torch.split(x, self.width, 1)
        out, sp = [], parts[0]
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns, strict=True)):
            sp = sp + parts[i] if i >= 1 else sp
            sp = bn(F.relu(conv(sp)))
            out.append(sp)
        return torch.cat([*out, parts[len(self.convs)]], dim=1)


class SEConnect(nn.Module):
    def __init__(self, channels: int, bottleneck: int = 128) -> None:
        super().__init__()
        self.linear1 = nn.Linear(channels, bottleneck)
        self.linear2 = nn.Linear(bottleneck, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.sigmoid(self.linear2(F.relu(self.linear1(x.mean(dim=2)))))
        return x * w.unsqueeze(2)


class SERes2Block(nn.Module):
    def __init__(self, channels: int, padding: int, dilation: int) -> None:
        super().__init__()
        self.se_res2block = nn.Sequential(
            Conv1dReluBn(channels, channels),
            Res2Conv1dReluBn(channels, padding, dilation),
            Conv1dReluBn(channels, channels),
            SEConnect(channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.se_res2block(x)


class AttentiveStatsPool(nn.Module):
    """ASTP with global context: only its parameters matter here (the x-vector is not used)."""

    def __init__(self, dim: int, bottleneck: int = 128) -> None:
        super().__init__()
        self.linear1 = nn.Conv1d(dim * 3, bottleneck, kernel_size=1)
        self.linear2 = nn.Conv1d(bottleneck, dim, kernel_size=1)


class EcapaTdnn(nn.Module):
    """ECAPA-TDNN (512 channels, global-context pooling); tokenising reads its frame latents."""

    def __init__(self, feat_dim: int, embed_dim: int, channels: int = 512) -> None:
        super().__init__()
        self.layer1 = Conv1dReluBn(feat_dim, channels, kernel=5, padding=2)
        self.layer2 = SERes2Block(channels, 2, 2)
        self.layer3 = SERes2Block(channels, 3, 3)
        self.layer4 = SERes2Block(channels, 4, 4)
        self.conv = nn.Conv1d(channels * 3, 512 * 3, kernel_size=1)
        self.pool = AttentiveStatsPool(512 * 3)
        self.bn = nn.BatchNorm1d(512 * 6)
        self.linear = nn.Linear(512 * 6, embed_dim)

    def latent(self, mels: torch.Tensor) -> torch.Tensor:
        """(B, T, F) -> (B, 1536, T)."""
        x = mels.permute(0, 2, 1)
        a = self.layer1(x)
        b = self.layer2(a)
        c = self.layer3(b)
        d = self.layer4(c)
        return F.relu(self.conv(torch.cat([b, c, d], dim=1)))


class CrossAttention(nn.Module):
    def __init__(self, dim: int, heads: int = 8, dim_head: int = 64) -> None:
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim_head * heads, bias=False)
        self.to_kv = nn.Linear(dim, dim_head * heads * 2, bias=False)
        self.to_out = nn.Linear(dim_head * heads, dim, bias=False)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        context = torch.cat((x, context), dim=-2)  # the latents attend to themselves too
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        split = lambda t: t.unflatten(-1, (self.heads, -1)).transpose(1, 2)  # noqa: E731
        out = F.scaled_dot_product_attention(split(q), split(k), split(v))
        return self.to_out(out.transpose(1, 2).flatten(2))


class GegluFeedForward(nn.Sequential):
    def __init__(self, dim: int, mult: int = 4) -> None:
        inner = int(dim * mult * 2 / 3)
        super().__init__(nn.Linear(dim, inner * 2), nn.Identity(), nn.Linear(inner, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, gate = self[0](x).chunk(2, dim=-1)
        return self[2](F.gelu(gate) * h)


class PerceiverResampler(nn.Module):
    def __init__(self, dim: int, dim_context: int, num_latents: int, depth: int = 2) -> None:
        super().__init__()
        self.proj_context = nn.Linear(dim_context, dim) if dim_context != dim else nn.Identity()
        self.latents = nn.Parameter(torch.zeros(num_latents, dim))
        self.layers = nn.ModuleList(
            nn.ModuleList([CrossAttention(dim), GegluFeedForward(dim)]) for _ in range(depth)
        )
        self.norm = RMSGain(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj_context(x)
        latents = self.latents.expand(x.shape[0], -1, -1)
        for attn, ff in self.layers:
            latents = attn(latents, x) + latents
            latents = ff(latents) + latents
        return self.norm(latents)


class RMSGain(nn.Module):
    """RMS normalisation with a learned gain (``norm.gamma``)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))
        self.scale = dim**0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=-1) * self.scale * self.gamma


class SpeakerEncoder(nn.Module):
    """Mel frames -> 32 global tokens, and global tokens -> the decoder's speaker vector."""

    def __init__(self, **c: Any) -> None:
        super().__init__()
        latent, tokens = c.get("latent_dim", 128), c.get("token_num", 32)
        levels = c.get("fsq_levels", [4, 4, 4, 4, 4, 4])
        self.speaker_encoder = EcapaTdnn(c.get("input_dim", 100), c.get("out_dim", 512))
        self.perceiver_sampler = PerceiverResampler(latent, 512 * 3, tokens)
        self.quantizer = ResidualFSQ(levels, c.get("fsq_num_quantizers", 1), latent)
        self.project = nn.Linear(latent * tokens, c.get("out_dim", 512))

    def tokenize(self, mels: torch.Tensor) -> torch.Tensor:
        """(B, T, n_mels) -> (B, stages, 32)."""
        latent = self.speaker_encoder.latent(mels)
        x = self.perceiver_sampler(latent.transpose(1, 2)).transpose(1, 2)
        return self.quantizer.indices(x)

    def detokenize(self, indices: torch.Tensor) -> torch.Tensor:
        """(B, stages, 32) -> (B, out_dim)."""
        zq = self.quantizer.output(indices.transpose(1, 2)).transpose(1, 2)
        return self.project(zq.reshape(zq.shape[0], -1))


class BiCodecNet(nn.Module):
    """BiCodec from its ``audio_tokenizer`` config section; the attribute names are the keys."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__()
        self.encoder = FeatEncoder(**config["encoder"])
        self.quantizer = FactorizedVQ(**config["quantizer"])
        self.prenet = FeatDecoder(**config["prenet"])
        self.postnet = FeatDecoder(**config["postnet"])
        self.decoder = WaveGenerator(**config["decoder"])
        self.speaker_encoder = SpeakerEncoder(**config["speaker_encoder"])

    def detokenize(self, semantic: torch.Tensor, global_tokens: torch.Tensor) -> torch.Tensor:
        """(B, T) semantic codes + (B, stages, 32) global codes -> (B, 1, T * hop) audio."""
        z_q = self.quantizer.detokenize(semantic)
        d_vector = self.speaker_encoder.detokenize(global_tokens)
        x = self.prenet(z_q, d_vector) + d_vector.unsqueeze(-1)
        return self.decoder(x)

    def tokenize(self, feats: torch.Tensor, mels: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """wav2vec2 features (B, T, C) and mel frames (B, T', n_mels) -> (semantic, global)."""
        semantic = self.quantizer.tokenize(self.encoder(feats.transpose(1, 2)))
        return semantic, self.speaker_encoder.tokenize(mels)
