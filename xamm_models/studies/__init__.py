"""Research studies beside the benchmark: few-shot adaptation curves, job scheduling on a mixed
cluster, device-kind separation of embeddings, the VAE-DNN's vector metrics, and the generated
tables of their pages."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "curve_predictions": "xamm_models.studies.adaptation",
    "adapt_curve_predictions": "xamm_models.studies.adaptation",
    "Job": "xamm_models.studies.scheduling_sim",
    "simulate": "xamm_models.studies.scheduling_sim",
    "make_jobs": "xamm_models.studies.scheduling_jobs",
    "run_clusters": "xamm_models.studies.scheduling_jobs",
    "separation_report": "xamm_models.studies.separation",
    "vector_metrics": "xamm_models.studies.vae_dnn",
    "RandomForestVector": "xamm_models.studies.vae_dnn",
    "PairMedianVector": "xamm_models.studies.vae_dnn",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
