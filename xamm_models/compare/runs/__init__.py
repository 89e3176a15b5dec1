"""Matching and comparison: a target's runs (:mod:`.targets`), the like-for-like match
(:mod:`.matching`), the comparison (:mod:`.comparison`), its physics figures (:mod:`.figures`) and
its Markdown report (:mod:`.report`). Imports no other room of ``compare``.
"""

from __future__ import annotations

__all__: list[str] = []
