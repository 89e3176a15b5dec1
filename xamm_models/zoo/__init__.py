"""The model zoo: its kinds in one registry, ``load_model`` for any saved predictor, cards, and
building and publishing the pretrained models."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "ModelKind": "xamm_models.predictors.kinds",
    "MODELS": "xamm_models.predictors.kinds",
    "list_models": "xamm_models.predictors.kinds",
    "load_model": "xamm_models.predictors.kinds",
    "kind_of": "xamm_models.predictors.kinds",
    "build_zoo": "xamm_models.zoo.build",
    "push_zoo": "xamm_models.zoo.build",
    "write_snapshot": "xamm_models.zoo.build",
    "build_physics_signatures": "xamm_models.zoo.physics",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
