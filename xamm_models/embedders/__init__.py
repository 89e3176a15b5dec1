"""Sample embedders (torch): a registry (``register_embedder``, ``list_embedders``,
``create_embedder``, ``load_embedder``) and the networks (attention/TabNet, MLP, autoencoder,
VAE). The names load torch on first use."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

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

# torch loads on first use of a name, so the package imports without the models extra
__getattr__, __dir__ = lazy_exports(
    __name__, {name: "xamm_models.embedders.networks" for name in __all__}
)
