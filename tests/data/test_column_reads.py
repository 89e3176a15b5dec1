"""Reading some columns of a stored machine: ``load_dataset(..., columns=)`` and
``Store.read(..., columns=)`` give exactly those columns of the whole read, an unknown column is
refused naming the table's, and a comparison read that way is the comparison of every column."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from xamm_data import load_dataset
from xamm_data.store.store import Store
from xamm_ingest import ingest_rajaperf

DANE = "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608/O3"
WANT = ["kernel", "time_per_rep_s", "compiler_flags", "source_sha256", "run_date"]


@pytest.fixture(scope="module")
def store(rajaperf_sets, shared_data, tmp_path_factory) -> Store:
    st = Store(tmp_path_factory.mktemp("columns") / "store")
    thicket = rajaperf_sets["thicket"]
    ingest_rajaperf(thicket / "quartz", store=st, machine="quartz", workers=1)
    dane = sorted((shared_data / DANE).glob("*/*.cali"))
    assert len(dane) >= 4
    for i in (0, 2):  # two commits: the partition holds several files
        ingest_rajaperf(dane[i : i + 2], store=st, machine="dane", workers=1)
    return st


@pytest.mark.parametrize("machine", ["quartz", "dane"])
def test_the_columns_read_are_those_of_the_whole_read(store, machine):
    whole = load_dataset(machine, store=store)
    part = load_dataset(machine, store=store, columns=WANT)
    assert part.columns == WANT and part.height == whole.height > 0
    assert_frame_equal(part, whole.select(WANT))
    assert_frame_equal(store.read("benchmark_runs", machine, columns=WANT[::-1]), part[WANT[::-1]])
    lazy = load_dataset(machine, store=store, columns=WANT, lazy=True).collect()
    assert_frame_equal(lazy, whole.select(WANT))


def test_an_unknown_column_is_refused_naming_the_tables(store):
    with pytest.raises(ValueError, match=r"benchmark_runs has no column 'kernal'.*kernel"):
        load_dataset("quartz", store=store, columns=["kernal", "time_per_rep_s"])
    with pytest.raises(ValueError, match="has no column 'nope'"):
        store.read("benchmark_runs", "quartz", columns=["nope"])


def test_a_comparison_of_the_columns_read_is_that_of_every_column(store):
    """``compare`` reads :data:`COMPARED` (repeated strings held once each); the comparison of the
    same machines from every column of their rows is the same, kernel by kernel."""
    from xamm_models.compare.runs.comparison import compare_runs
    from xamm_models.compare.runs.targets import COMPARED, compare, describe_runs, target_runs

    got = compare("dane", ["quartz"], store=store.root, size_ratio=16)
    full = {
        f"{m}:cpu": load_dataset(m, store=store).filter(pl.col("device") == "cpu")
        for m in ("dane", "quartz")
    }
    want = compare_runs(full, "dane:cpu", ["quartz:cpu"], size_ratio=16)
    assert got.kernels.height > 10
    assert_frame_equal(got.kernels, want.kernels)
    assert_frame_equal(got.unmatched, want.unmatched)
    assert got.configurations == want.configurations
    _, rows = target_runs("dane", store=store.root)
    assert set(rows.collect_schema().names()) <= set(COMPARED)
    assert describe_runs(rows) == describe_runs(full["dane:cpu"])
