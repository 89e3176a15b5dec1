"""xamm's default predictor: each machine's physics signature from its own benchmark runs, the
prior with half the source's slowdown carried to the target, and split-conformal intervals."""

from __future__ import annotations

from xamm_models._lazy import lazy_exports

_PUBLIC = {
    "StackedPredictor": "xamm_models.predictors.default.model",
    "StackedConfig": "xamm_models.predictors.default.model",
    "Calibration": "xamm_models.predictors.default.model",
    "split_relr": "xamm_models.predictors.default.stacked",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
