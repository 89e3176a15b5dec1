"""States, history and drift: ``M@accepted`` and other states of a machine (:mod:`.states`), its
versions one after another (:mod:`.versions`), what moved between two sets of runs (:mod:`.drift`,
:mod:`.drift_report`). Imports :mod:`~xamm_models.compare.runs` and
:mod:`~xamm_models.compare.certificates`.
"""

from __future__ import annotations

__all__: list[str] = []
