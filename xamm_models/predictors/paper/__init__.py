"""The xAMM paper's pipeline: sample embeddings and AMMs into a downstream regressor (``xamm
run``)."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "XammPredictor": "xamm_models.predictors.paper.predictor",
    "PredictorConfig": "xamm_models.predictors.paper.predictor",
    "register_regressor": "xamm_models.predictors.paper.regressors",
    "list_regressors": "xamm_models.predictors.paper.regressors",
    "create_regressor": "xamm_models.predictors.paper.regressors",
    "pair_relative": "xamm_models.predictors.paper.relperf",
    "RunConfig": "xamm_models.predictors.paper.pipeline",
    "load_config": "xamm_models.predictors.paper.pipeline",
    "run": "xamm_models.predictors.paper.pipeline",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
