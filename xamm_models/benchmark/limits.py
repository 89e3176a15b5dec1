"""The ranges a like-for-like match and a drift tolerance take, defined once: read by the
benchmark's rules (:mod:`xamm_models.benchmark.spec`), the comparisons and the command lines that
check them (no other import, so building a parser costs nothing)."""

from __future__ import annotations

__all__ = ["MAX_SIZE_RATIO", "MAX_TOLERANCE", "SIZE_RATIO"]

#: the widest size ratio a comparison or a criterion takes: beyond it "like for like" means nothing
MAX_SIZE_RATIO = 64.0
#: the largest drift tolerance (a change of 10x): beyond it a tolerance flags nothing a run shows
MAX_TOLERANCE = 10.0
SIZE_RATIO = 1.5  # the two samples' problem sizes agree within 1.5x (the bucket alone allows 2x)
