"""Acceptance testing: a new machine against the machines a centre knows, kernel by kernel.

``compare("newbox:gpu", ["lassen:gpu"])`` (``xamm compare`` on the shell) matches the targets'
benchmark runs like for like, gives each kernel's ratio of time per iteration with its spread over
trials, each kernel group's geometric mean with a bootstrap interval, the physics figures side by
side, and the kernels that fall short of (or beat) what the two physics signatures predict.

Four rooms, each importing only the ones before it:

* :mod:`~xamm_models.compare.runs`: matching and comparison (a target's runs, the like-for-like
  match, the comparison, its figures and report);
* :mod:`~xamm_models.compare.certificates`: certificates and acceptance (the evidence chain, the
  registry of certificates, ``accept``);
* :mod:`~xamm_models.compare.history`: states, history and drift (``M@accepted``, a machine's
  versions, what moved between two sets of runs);
* :mod:`~xamm_models.compare.hub`: certificates and histories pushed to and pulled from the Hub.
"""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

_PUBLIC = {
    "compare": "xamm_models.compare.runs.targets",
    "target_runs": "xamm_models.compare.runs.targets",
    "describe_runs": "xamm_models.compare.runs.targets",
    "Comparison": "xamm_models.compare.runs.comparison",
    "compare_runs": "xamm_models.compare.runs.comparison",
    "interval": "xamm_models.compare.runs.comparison",
    "SPREAD_FILE": "xamm_models.compare.runs.comparison",
    "REASONS": "xamm_models.compare.runs.matching",
    "accept": "xamm_models.compare.certificates.acceptance",
    "Certificate": "xamm_models.compare.certificates.records",
    "CertificateRegistry": "xamm_models.compare.certificates.records",
    "drift": "xamm_models.compare.history.drift",
    "Drift": "xamm_models.compare.history.drift",
}
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
__all__ = sorted(_PUBLIC)
