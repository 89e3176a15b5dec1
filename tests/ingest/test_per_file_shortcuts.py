"""What the per-file path of a Caliper ingest keeps from one profile for the next, or works out
by a shorter road, is what the plain rule gives: each shortcut against that rule written out
here, on seeded inputs that reach its edges (non-finite and overflowing sums, a second spelling of
a counter, versions that are equal keys but different text, a list where text is expected,
columns in another order, file names with dots at either end)."""

from __future__ import annotations

import math
import random
from pathlib import PurePosixPath

import pytest

from xamm_data.tables import counters
from xamm_data.tables.regions import SCHEMA, exact_sum
from xamm_ingest.errors import IngestError
from xamm_ingest.readers import base, caliper_regions, profile_common
from xamm_ingest.readers.base import Source


def test_a_file_names_stem_and_suffix_are_pathlibs():
    rng = random.Random(66)
    names = ["", "a", ".a", "a.", "..", "...", "a.b.c", "..a", "a..", "x.JSON", ".a.b", "a.b."]
    names += ["".join(rng.choice("ab.") for _ in range(rng.randint(1, 7))) for _ in range(3000)]
    for name in names:
        p = PurePosixPath("/d", name) if name.strip(".") or len(name) > 2 else PurePosixPath(name)
        assert caliper_regions._stem_suffix(p.name) == (p.stem, p.suffix), name


def test_metric_totals_are_the_exact_sum_of_each_column_whatever_it_holds():
    rng = random.Random(66)
    edge = [math.inf, -math.inf, math.nan, 1e308, -1e308, 0.1, -0.0, 5e-324]
    for _ in range(500):
        numeric = tuple(sorted(rng.sample(["a#time.duration", "papi.PAPI_TOT_INS", "x", "y"], 3)))
        cols = [
            [rng.choice(edge) if rng.random() < 0.1 else rng.uniform(-1e3, 1e3) for _ in range(5)]
            for _ in numeric
        ]
        got = caliper_regions._totals(iter(cols), numeric)
        want = dict(zip(caliper_regions._total_names(numeric), map(exact_sum, cols)))
        assert list(got) == list(want)
        assert all(math.isnan(want[k]) if math.isnan(v) else v == want[k] for k, v in got.items())


def _split_as_written(metrics: dict, src: Source) -> tuple[dict, list]:
    """The counters and the rest by the plain rule: sorted, the first spelling fills a counter."""
    canon: dict = {}
    extra: list = []
    for raw in sorted(metrics):
        value = metrics[raw]
        if value is None or not math.isfinite(value):
            raise IngestError(src.path, f"metric {raw!r} is {value!r}", record=raw)
        name = counters.resolve(raw)
        if name is not None and name not in canon:
            if value < 0:
                raise IngestError(src.path, f"counter {raw!r} is negative", record=raw)
            canon[name] = float(value)
        else:
            extra.append({"name": raw, "value": float(value)})
    return canon, extra


def test_metrics_split_into_counters_and_the_rest_by_the_plain_rule(tmp_path):
    rng = random.Random(66)
    src = Source(tmp_path / "p.cali", "p.cali", "0" * 64)
    spellings = ["PAPI_TOT_INS", "papi.PAPI_TOT_INS", "instructions", "PAPI_TOT_CYC", "foo", "bar"]
    for _ in range(600):
        keys = rng.sample(spellings, rng.randint(1, len(spellings)))
        metrics = {k: rng.choice([1.0, 2.5, -1.0, math.nan, None, 7]) for k in keys}
        try:
            want = _split_as_written(metrics, src)
        except IngestError as e:
            with pytest.raises(IngestError) as got:
                profile_common._split_metrics(metrics, src)
            assert got.value.record == e.record
        else:
            assert profile_common._split_metrics(metrics, src) == want


def test_provenance_writes_each_tools_version_as_written(tmp_path):
    """Kept text is looked up by its versions: 1, 1.0 and True are one key but three texts, and a
    list is no key."""
    src = Source(tmp_path / "p.cali", "p.cali", "0" * 64)
    cases = [
        {"caliper": "2.11"}, {"caliper": 1}, {"caliper": 1.0}, {"caliper": True},
        {"caliper": ["2.11", "2.12"]}, {"caliper": None, "raja": "0.1"}, {}, None,
    ]  # fmt: skip
    for _ in range(2):  # the second time from what the first kept
        for versions in cases:
            got = base.provenance(src, "caliper-cali", "r", versions)["tool_versions"]
            want = ";".join(f"{k}={v}" for k, v in sorted((versions or {}).items()) if v) or None
            assert got == want, versions


def test_region_rows_take_the_columns_in_any_order(tmp_path):
    cols = {c: [] for c in SCHEMA}
    n = 3
    for c in cols:
        cols[c] = (
            [float(i) for i in range(n)] if c.endswith("_s") else [f"{c}{i}" for i in range(n)]
        )
    meta = profile_common.ProfileFields(path="p", format="caliper-cali", app="a")
    shuffled = dict(reversed(list(cols.items())))
    a = profile_common.RegionRows.of_columns(meta, cols, {}, [])
    b = profile_common.RegionRows.of_columns(meta, shuffled, {}, [])
    assert list(a.rows) == list(b.rows) and list(a.rows.columns) == list(SCHEMA)
    assert a.runtime_s == b.runtime_s == exact_sum(cols["exclusive_s"])
    empty = profile_common.RegionRows.of_columns(meta, {c: [] for c in SCHEMA}, {}, [])
    assert empty.runtime_s is None and len(empty.rows) == 0
