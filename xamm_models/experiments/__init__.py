"""The ``xamm eval`` harness: every entry in one registry, the runner and its report."""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "ENTRIES": "xamm_models.experiments.entries",
    "Entry": "xamm_models.experiments.entries",
    "entry": "xamm_models.experiments.entries",
    "list_entries": "xamm_models.experiments.entries",
    "FoldContext": "xamm_models.experiments.entries",
    "EvalSettings": "xamm_models.experiments.run",
    "run_experiments": "xamm_models.experiments.run",
    "markdown": "xamm_models.experiments.report",
}
__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
