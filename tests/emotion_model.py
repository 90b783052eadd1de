"""A tiny random-weight wav2vec2 emotion classifier, saved the way a real one is shipped."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def build_emotion_model(folder: Path, labels: Mapping[int, str]) -> Path:
    import torch
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForSequenceClassification,
    )

    torch.manual_seed(0)
    config = Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16, 16),
        conv_stride=(5, 4, 4),
        conv_kernel=(10, 4, 4),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        feat_extract_norm="layer",  # the layer-norm variant takes an attention mask
        classifier_proj_size=16,
        id2label=dict(labels),
        label2id={v: k for k, v in labels.items()},
    )
    model = Wav2Vec2ForSequenceClassification(config).eval()
    extractor = Wav2Vec2FeatureExtractor(
        feature_size=1, sampling_rate=16_000, do_normalize=True, return_attention_mask=True
    )
    model.save_pretrained(folder)
    extractor.save_pretrained(folder)
    return folder
