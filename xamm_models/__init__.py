"""xamm_models: machine models, predictors and the cross-platform benchmark.

Rooms by concern, lower layers never importing upper ones (``tests/test_layers.py`` checks it):

* ``errors``, ``features``, ``profile_input``, ``runtime``: shared by all (no model library);
* :mod:`~xamm_models.machines`: what a machine is (physics signatures, Algorithm 1's attention AMMs,
  the signature registry and its Hub repo); :mod:`~xamm_models.embedders`: sample embedders
  (torch);
* :mod:`~xamm_models.benchmark`: the ``xplat-rajaperf`` data set, splits, metrics, ``Evaluator``,
  baselines;
* :mod:`~xamm_models.predictors`: everything that answers ``predict(profiles, source, targets)``;
* :mod:`~xamm_models.zoo`: model kinds, ``load_model``, cards, building and publishing;
* :mod:`~xamm_models.experiments` (the ``xamm eval`` harness) and :mod:`~xamm_models.studies`
  (research studies);
* :mod:`~xamm_models.cli`: the ``xamm`` commands.

Names load on first use: importing the default predictor loads no torch. Needs the ``models`` extra.
"""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "load_model": "xamm_models.predictors.kinds",
    "list_models": "xamm_models.predictors.kinds",
    "StackedPredictor": "xamm_models.predictors.default.model",
    "XammPredictor": "xamm_models.predictors.paper.predictor",
    "XplatDataset": "xamm_models.benchmark.dataset",
    "Evaluator": "xamm_models.benchmark.evaluate",
    "get_idx_split": "xamm_models.benchmark.splits",
    "ConfigError": "xamm_models.errors",
    "FeatureSchemaError": "xamm_models.errors",
    "ImmutableSignatureError": "xamm_models.errors",
    "ProfileInputError": "xamm_models.errors",
    "UnknownSourceError": "xamm_models.errors",
    "UnknownTargetError": "xamm_models.errors",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
