"""xamm's default predictor: a physics prior from each machine's own benchmark runs, learned
residuals per scenario chosen on inner folds, and conformal intervals."""

from __future__ import annotations

from xamm_models._lazy import lazy_exports

_PUBLIC = {
    "StackedPredictor": "xamm_models.predictors.default.model",
    "StackedConfig": "xamm_models.predictors.default.model",
    "Calibration": "xamm_models.predictors.default.model",
    "CANDIDATES": "xamm_models.predictors.default.candidates",
    "register_candidate": "xamm_models.predictors.default.candidates",
    "default_candidates": "xamm_models.predictors.default.candidates",
    "make_candidate": "xamm_models.predictors.default.candidates",
    "RULES": "xamm_models.predictors.default.conformal",
    "register_rule": "xamm_models.predictors.default.conformal",
    "choose_rule": "xamm_models.predictors.default.conformal",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
