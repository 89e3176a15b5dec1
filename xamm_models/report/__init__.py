"""``xamm report``: a centre's static site over its home (:mod:`.site`): what it shows is read by
:mod:`.gather`, drawn by :mod:`.figures`, written as pages by :mod:`.pages` in the HTML of
:mod:`.markup`. Imports :mod:`~xamm_models.compare` and, for a chosen profile,
:mod:`~xamm_models.predictors`.
"""

from __future__ import annotations

__all__: list[str] = []
