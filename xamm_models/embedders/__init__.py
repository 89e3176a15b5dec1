"""Sample embedders (torch): a registry (``register_embedder``, ``list_embedders``,
``create_embedder``, ``load_embedder``) and the networks (attention/TabNet, MLP, autoencoder,
VAE)."""

from __future__ import annotations

from xamm_models.embedders.networks import (
    REGISTRY,
    AttentionEmbedder,
    AutoencoderEmbedder,
    Embedder,
    MLPEmbedder,
    VAEEmbedder,
    create_embedder,
    list_embedders,
    load_embedder,
    local_rng,
    masked_mse,
    register_embedder,
    resolve_device,
    sparsemax,
)

__all__ = [
    "REGISTRY",
    "AttentionEmbedder",
    "AutoencoderEmbedder",
    "Embedder",
    "MLPEmbedder",
    "VAEEmbedder",
    "create_embedder",
    "list_embedders",
    "load_embedder",
    "local_rng",
    "masked_mse",
    "register_embedder",
    "resolve_device",
    "sparsemax",
]
