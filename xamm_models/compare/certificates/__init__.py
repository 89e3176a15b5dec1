"""Certificates and acceptance: the evidence every certificate carries (:mod:`.evidence`: canonical
hashes, the chain, signatures), the certificate and its registry (:mod:`.records`) and ``accept``
(:mod:`.acceptance`). Imports :mod:`~xamm_models.compare.runs`.
"""

from __future__ import annotations

__all__: list[str] = []
