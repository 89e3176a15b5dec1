"""A machine's partition read lazily (``Store.read(lazy=True)``, ``load_dataset(lazy=True)``, what
``compare`` and ``accept`` query): every file verified before the frame is returned, the same rows
as the eager read, a file of another schema conformed as the eager read conforms it."""

from __future__ import annotations

import io
import os
import random
import shutil

import polars as pl
import pytest
from conftest import FIXTURES
from polars.testing import assert_frame_equal

from xamm_data import load_dataset
from xamm_data.store.delta_log import CorruptLogError
from xamm_data.store.read import _scanned, projected
from xamm_data.store.store import CorruptDataError, Store
from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_data.tables.validate import ValidationError, conform
from xamm_ingest import read_rajaperf


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return read_rajaperf(FIXTURES / "rajaperf_sample", workers=1).frame


def _two_files(tmp_path, frame) -> Store:
    """A store whose one machine's rows sit in two files (two appends of different sources)."""
    st = Store(tmp_path / "s")
    second = frame.with_columns(
        (pl.lit("again/") + pl.col("source_path")).alias("source_path"),
        (pl.col("source_sha256").str.slice(1) + pl.lit("0")).alias("source_sha256"),
    )
    st.append(frame, "benchmark_runs")
    st.append(second, "benchmark_runs")
    return st


def test_a_lazy_read_holds_the_eager_reads_rows(tmp_path, frame):
    st = _two_files(tmp_path, frame)
    machine = frame.get_column("machine")[0]
    assert len(st.partition_files("benchmark_runs", machine)) == 2
    for columns in (None, ["kernel", "time_per_rep_s", "variant"]):
        eager = st.read("benchmark_runs", machine, columns=columns)
        lazy = st.read("benchmark_runs", machine, columns=columns, lazy=True)
        assert isinstance(lazy, pl.LazyFrame)
        assert_frame_equal(lazy.collect(), eager)  # sorted by the key alike
    q = load_dataset(machine, store=st, lazy=True).filter(pl.col("kernel") == "Basic_DAXPY")
    assert_frame_equal(q.collect(), st.read("benchmark_runs", machine).filter(
        pl.col("kernel") == "Basic_DAXPY"))  # fmt: skip


def test_a_lazy_read_refuses_a_changed_file_before_it_returns(tmp_path, frame):
    st = Store(tmp_path / "s")
    st.write(frame, "benchmark_runs")
    machine = frame.get_column("machine")[0]
    path = st.partition_path("benchmark_runs", machine)
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    i = random.Random(3).randrange(len(data))
    data[i] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError, match=rf"benchmark_runs / {machine}: .*SHA-256"):
        st.read("benchmark_runs", machine, lazy=True)  # raised here, not when collected
    with pytest.raises(CorruptDataError):
        load_dataset(machine, store=st, lazy=True)


def test_rows_of_another_machine_are_refused_lazily_as_eagerly(tmp_path, frame, monkeypatch):
    """A file the log files under one machine whose rows name another: both reads name it."""
    st = Store(tmp_path / "s")
    st.write(frame, "benchmark_runs")
    machine = frame.get_column("machine")[0]
    files = st.live_files("benchmark_runs")
    rel = files.get_column("path")[0]
    table = tmp_path / "s" / "benchmark_runs"
    shutil.copy(table / rel, table / rel.split("/")[-1])  # kept in its path by no partition
    lying = files.with_columns(
        pl.lit("other-node").alias("machine"), pl.col("path").str.split("/").list.last()
    )
    with pytest.raises(CorruptLogError, match="holds rows of another machine"):
        st.scan_partition("benchmark_runs", BENCHMARK_RUNS, lying, "other-node")  # raised now
    # and the reads, eager and lazy, of a log that files it so
    monkeypatch.setattr(st, "live_files", lambda *a, **k: lying)
    for lazy in (False, True):
        with pytest.raises(CorruptLogError, match="holds rows of another machine"):
            st.read("benchmark_runs", "other-node", lazy=lazy)
    assert machine != "other-node"


def _bytes(df: pl.DataFrame) -> bytes:
    out = io.BytesIO()
    df.write_parquet(out)
    return out.getvalue()


def test_a_file_of_another_schema_is_conformed_as_the_eager_read_does(frame):
    """An older file (a nullable column it never had, an integer column of another width) is
    parsed and conformed; one lacking a required column, or holding one the table does not have
    when every column is read, is refused, naming it."""
    machine = frame.get_column("machine")[0]
    older = frame.drop("run_date").with_columns(pl.col("trial").cast(pl.Int32))
    got = _scanned(_bytes(older), BENCHMARK_RUNS, machine, every=True).collect()
    assert_frame_equal(got, conform(older, BENCHMARK_RUNS))
    assert got.get_column("run_date").is_null().all()
    # a file in the schema's own types is scanned: nothing parsed until collected
    own = _bytes(conform(frame, BENCHMARK_RUNS))
    plan = _scanned(own, BENCHMARK_RUNS, machine, every=True).explain()
    assert "in-mem bytes" in plan
    with pytest.raises(ValidationError, match="kernel"):
        _scanned(_bytes(frame.drop("kernel")), BENCHMARK_RUNS, machine, every=True)
    # a column the table does not have: refused when every column is read, as eagerly
    extra = _bytes(conform(frame, BENCHMARK_RUNS).with_columns(pl.lit(1).alias("mystery")))
    with pytest.raises(ValidationError, match="mystery"):
        _scanned(extra, BENCHMARK_RUNS, machine, every=True)
    with pytest.raises(ValidationError, match="mystery"):
        conform(pl.read_parquet(io.BytesIO(extra)), BENCHMARK_RUNS)
    # ... and left unread when only some are
    some = projected(BENCHMARK_RUNS, ["kernel", "time_per_rep_s"])
    got = _scanned(extra, some, machine, every=False).collect()
    assert "mystery" not in got.columns and got.height == frame.height
