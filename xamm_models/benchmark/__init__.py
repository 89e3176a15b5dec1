"""The ``xplat-rajaperf`` benchmark (OGB-style): its named sources and declared configurations, the
data set of relR labels, official splits, metrics with bootstrap intervals, the bound ``Evaluator``
and the baselines."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "XplatDataset": "xamm_models.benchmark.dataset",
    "ingest_sources": "xamm_models.benchmark.dataset",
    "build": "xamm_models.benchmark.dataset",
    "samples_from_runs": "xamm_models.benchmark.dataset",
    "SCHEMES": "xamm_models.benchmark.splits",
    "Fold": "xamm_models.benchmark.splits",
    "get_idx_split": "xamm_models.benchmark.splits",
    "Evaluator": "xamm_models.benchmark.evaluate",
    "SCENARIOS": "xamm_models.benchmark.evaluate",
    "METRICS": "xamm_models.benchmark.metrics",
    "score": "xamm_models.benchmark.metrics",
    "bootstrap": "xamm_models.benchmark.metrics",
    "compare": "xamm_models.benchmark.metrics",
    "pair_median": "xamm_models.benchmark.baselines",
    "pair_size_median": "xamm_models.benchmark.baselines",
    "roofline": "xamm_models.benchmark.baselines",
    "knn": "xamm_models.benchmark.baselines",
    "machine_figures": "xamm_models.benchmark.baselines",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
