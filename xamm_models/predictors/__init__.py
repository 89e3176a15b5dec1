"""Everything that answers ``predict(profiles, source, targets)``: the default (stacked physics)
predictor, the xAMM paper's predictor, the VAE-DNN, few-shot adaptation and the baselines. Torch
loads only with the kinds that need it (paper, VAE-DNN, adapted)."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "StackedPredictor": "xamm_models.predictors.default.model",
    "StackedConfig": "xamm_models.predictors.default.model",
    "XammPredictor": "xamm_models.predictors.paper.predictor",
    "PredictorConfig": "xamm_models.predictors.paper.predictor",
    "AdaptedPredictor": "xamm_models.predictors.adapted.predictor",
    "AdaptConfig": "xamm_models.predictors.adapted.predictor",
    "adapt": "xamm_models.predictors.adapted.predictor",
    "VaeDnn": "xamm_models.predictors.vae_dnn",
    "BaselinePredictor": "xamm_models.predictors.baseline",
    "fit_baselines": "xamm_models.predictors.baseline",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
