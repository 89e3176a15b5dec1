"""The model zoo: its kinds in one registry, ``load_model`` for any saved predictor, cards, and
building and publishing the pretrained models."""

from __future__ import annotations

from xamm_models._lazy import lazy_exports

_PUBLIC = {
    "ModelKind": "xamm_models.zoo.registry",
    "MODELS": "xamm_models.zoo.registry",
    "list_models": "xamm_models.zoo.registry",
    "load_model": "xamm_models.zoo.registry",
    "kind_of": "xamm_models.zoo.registry",
    "build_zoo": "xamm_models.zoo.build",
    "push_zoo": "xamm_models.zoo.build",
    "write_snapshot": "xamm_models.zoo.build",
    "build_physics_signatures": "xamm_models.zoo.build",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
