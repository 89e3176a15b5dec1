"""The median over stored trials of a profile's regions, where a trial holds no region."""

from __future__ import annotations

import polars as pl

from xamm_data.stored_profiles import SCHEMA, _trial_regions
from xamm_data.tables.schema import get_table


def _region(name: str, inclusive: float) -> dict:
    return {
        "region": name,
        "name": name,
        "parent": None,
        "inclusive_s": inclusive,
        "exclusive_s": inclusive,
        "calls": 1.0,
        "bytes": None,
        "flops": None,
        "work_from": None,
        "category": "compute",
    }


def test_a_trial_without_regions_adds_no_region_and_moves_no_median():
    """Polars 1.x made an empty list one null element when exploded, 2.x none: the regions
    (and their medians) are the same on every polars xamm supports."""
    dtype = get_table("app_profiles").polars_schema["regions"]
    rows = pl.DataFrame(
        {"regions": [[], [_region("a", 1.0), _region("b", 2.0)], [_region("a", 3.0)]]},
        schema={"regions": dtype},
    )
    out = _trial_regions(rows)
    assert out.columns == list(SCHEMA)
    assert out.get_column("region").to_list() == ["a", "b"]
    assert out.get_column("inclusive_s").to_list() == [2.0, 2.0]
