"""xamm's default predictor: the plain roofline from each machine's own benchmark runs with
split-conformal intervals, the label-free candidates it was measured against, and the choice among
them on inner folds."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "StackedPredictor": "xamm_models.predictors.default.model",
    "StackedConfig": "xamm_models.predictors.default.model",
    "Choice": "xamm_models.predictors.default.selection",
    "CANDIDATES": "xamm_models.predictors.default.neighbours",
    "split_relr": "xamm_models.predictors.default.stacked",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
