"""Few-shot adaptation across disjoint counter sets: a frozen paper predictor read through an
alignment learned from a few labelled profiles of a platform with other columns."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "AdaptedPredictor": "xamm_models.predictors.adapted.predictor",
    "AdaptConfig": "xamm_models.predictors.adapted.predictor",
    "adapt": "xamm_models.predictors.adapted.predictor",
    "SourceModel": "xamm_models.predictors.adapted.alignment",
    "fit_alignment": "xamm_models.predictors.adapted.alignment",
    "ridge_from_scratch": "xamm_models.predictors.adapted.alignment",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
