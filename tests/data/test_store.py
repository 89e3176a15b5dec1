"""The Delta Lake store: layout, metadata, atomic and idempotent writes, trials, determinism,
verified reads, time travel, migration from the 0.2 layout, housekeeping."""

from __future__ import annotations

import json

import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES

from xamm_data.store.store import Store
from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_data.tables.validate import ValidationError
from xamm_ingest import read_rajaperf

SAMPLE = FIXTURES / "rajaperf_sample"


@pytest.fixture
def sample_frame() -> pl.DataFrame:
    return read_rajaperf(SAMPLE, workers=1).frame


def test_layout_compression_and_metadata(tmp_path, sample_frame):
    import hashlib

    st = Store(tmp_path / "s")
    rep = st.write(sample_frame, "benchmark_runs")
    path = st.partition_path("benchmark_runs", "example-node")
    assert rep.partitions[0].path == path and path.parent.name == "machine=example-node"
    # content-addressed
    assert path.name == f"part-{hashlib.sha256(path.read_bytes()).hexdigest()}.parquet"
    assert (tmp_path / "s" / "benchmark_runs" / "_delta_log").is_dir() and rep.version == 0
    table = st.table_metadata("benchmark_runs")  # the table's own metadata
    assert (
        table["schema_version"] == BENCHMARK_RUNS.version
        and table["units"]["time_per_rep_s"] == "s"
    )
    meta = pq.ParquetFile(path).metadata
    assert {meta.row_group(0).column(i).compression for i in range(meta.num_columns)} == {"ZSTD"}
    info = st.metadata("benchmark_runs", "example-node")
    assert json.loads(meta.metadata[b"xamm"]) == info  # pyarrow reads the footer xamm wrote
    assert info["table"] == "benchmark_runs" and info["schema_version"] == BENCHMARK_RUNS.version
    assert info["units"]["time_per_rep_s"] == "s" and info["units"]["bytes_per_rep"] == "B"
    assert {s["source_path"] for s in info["sources"]} == set(
        sample_frame.get_column("source_path")
    )
    back = st.read("benchmark_runs", "example-node")
    assert back.get_column("machine").unique().to_list() == ["example-node"]  # a real column
    assert back.sort(list(BENCHMARK_RUNS.primary_key)).equals(
        sample_frame.sort(list(BENCHMARK_RUNS.primary_key))
    )
    # an independent reader of the table format sees the same rows
    assert pl.read_delta(str(tmp_path / "s" / "benchmark_runs")).height == sample_frame.height


def test_reingest_is_idempotent_and_bytes_are_deterministic(tmp_path, sample_frame):
    a, b = Store(tmp_path / "a"), Store(tmp_path / "b")
    a.write(sample_frame, "benchmark_runs")
    first = a.partition_path("benchmark_runs", "example-node").read_bytes()
    rep = a.write(sample_frame.sample(fraction=1.0, shuffle=True, seed=3), "benchmark_runs")
    assert rep.partitions[0].rows_replaced == sample_frame.height
    assert rep.partitions[0].rows_after == sample_frame.height
    # nothing changed: no new version
    assert rep.version is None and a.version("benchmark_runs") == 0
    assert a.partition_path("benchmark_runs", "example-node").read_bytes() == first
    b.write(sample_frame, "benchmark_runs")
    assert b.partition_path("benchmark_runs", "example-node").read_bytes() == first


def test_trials_renumbered_across_batches(tmp_path, sample_frame):
    st = Store(tmp_path / "s")
    one = sample_frame.filter(pl.col("source_path").str.starts_with("run-2"))
    st.write(one, "benchmark_runs")
    later = one.with_columns(
        pl.lit("f" * 64).alias("source_sha256"),
        pl.lit("run-3/x.csv").alias("source_path"),
        pl.col("time_per_rep_s") * 1.1,
    )
    st.write(later, "benchmark_runs")
    df = st.read("benchmark_runs", "example-node")
    assert df.height == 2 * one.height
    assert sorted(df.get_column("trial").unique().to_list()) == [0, 1]
    assert df.filter(pl.col("source_path") == "run-3/x.csv").get_column(
        "trial"
    ).unique().to_list() == [1]


@pytest.mark.parametrize("merge_at", [4096, 1])
def test_appends_number_trials_alike_with_and_without_the_kept_counts(
    tmp_path, sample_frame, monkeypatch, merge_at
):
    """Consecutive appends through one Store keep the rows held per configuration instead of
    scanning the table; the trials they give equal those of appends through fresh Stores (which
    scan), and another writer's commit in between is counted, not missed (with the new
    configurations kept apart, and merged into the rest at every commit)."""
    from xamm_data.store import counts as store_counts

    monkeypatch.setattr(store_counts, "MERGE_AT", merge_at)
    one = sample_frame.filter(pl.col("source_path").str.starts_with("run-2"))

    def copy(k: int) -> pl.DataFrame:  # half the configurations again, half new, another file
        size = pl.col("problem_size")
        return one.with_columns(
            pl.lit(f"{k:064x}").alias("source_sha256"),
            pl.lit(f"run-{k}/x.csv").alias("source_path"),
            pl.when(pl.int_range(pl.len()) % 2 == 0)
            .then(size)
            .otherwise(size + 1 + k % 2)
            .alias("problem_size"),
        )

    kept, fresh = Store(tmp_path / "kept"), tmp_path / "fresh"
    for k in range(1, 7):
        kept.append(copy(k), "benchmark_runs", unheld_at=kept.version("benchmark_runs"))
        Store(fresh).append(copy(k), "benchmark_runs")
    Store(tmp_path / "kept").append(copy(7), "benchmark_runs")  # another writer
    kept.append(copy(8), "benchmark_runs", unheld_at=kept.version("benchmark_runs"))
    Store(fresh).append(copy(7), "benchmark_runs")
    Store(fresh).append(copy(8), "benchmark_runs")
    cols = ["source_path", "kernel", "variant", "tuning", "problem_size", "trial"]
    got = kept.read("benchmark_runs", "example-node").select(cols).sort(cols)
    want = Store(fresh).read("benchmark_runs", "example-node").select(cols).sort(cols)
    assert got.equals(want)
    assert got["trial"].max() == 7  # the configurations every file repeats


def test_bad_batch_writes_nothing_in_any_partition(tmp_path, sample_frame):
    st = Store(tmp_path / "s")
    st.write(sample_frame, "benchmark_runs")
    before = st.partition_path("benchmark_runs", "example-node").read_bytes()
    other = sample_frame.with_columns(pl.lit("other-node").alias("machine"))
    bad = other.with_columns(
        pl.when(pl.col("kernel") == "Basic_DAXPY")
        .then(-1.0)
        .otherwise(pl.col("time_per_rep_s"))
        .alias("time_per_rep_s")
    )
    with pytest.raises(ValidationError, match="time_per_rep_s"):
        st.write(pl.concat([sample_frame, bad]), "benchmark_runs")
    assert st.partition_path("benchmark_runs", "example-node").read_bytes() == before
    assert not st.has("benchmark_runs", "other-node")


def test_crash_during_write_keeps_previous_version(tmp_path, sample_frame, monkeypatch):
    st = Store(tmp_path / "s")
    st.write(sample_frame, "benchmark_runs")
    path = st.partition_path("benchmark_runs", "example-node")
    before = st.read("benchmark_runs", "example-node")

    def disk_full(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("xamm_data.store.files.os.replace", disk_full)
    with pytest.raises(OSError, match="disk full"):
        st.write(sample_frame.with_columns(pl.col("time_per_rep_s") * 2), "benchmark_runs")
    monkeypatch.undo()
    assert st.version("benchmark_runs") == 0 and st.read("benchmark_runs", "example-node").equals(
        before
    )
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left behind


def test_identical_copies_of_a_file_count_once(tmp_path, sample_frame):
    st = Store(tmp_path / "s")
    copy = sample_frame.with_columns(("copy/" + pl.col("source_path")).alias("source_path"))
    rep = st.write(pl.concat([sample_frame, copy]), "benchmark_runs")
    assert rep.duplicate_sources_dropped == sample_frame.height
    assert st.read("benchmark_runs", "example-node").height == sample_frame.height


def _dedupe_by_window(df: pl.DataFrame) -> pl.DataFrame:
    """The copies rule as its definition says it, on every frame (no shortcut)."""
    from xamm_data.store.reports import config_key

    first = pl.col("source_path").first().over([*config_key(BENCHMARK_RUNS), "source_sha256"])
    return df.sort("source_path", maintain_order=True).filter(pl.col("source_path") == first)


def test_the_copies_rule_gives_what_its_definition_gives_on_seeded_frames():
    """``dedupe_sources`` skips its window where no hash is held under two paths: on 200 seeded
    frames (paths in order or not, a hash under one path or several, a configuration repeated,
    null paths and hashes) it gives the rows, in the order, that the window gives."""
    import random

    from xamm_data.store.reports import config_key
    from xamm_data.store.rows import dedupe_sources

    key = config_key(BENCHMARK_RUNS)
    rng = random.Random(20261130)
    kept_all = no_copy = 0
    for _ in range(200):
        names = [f"r/{k}.cali" for k in range(rng.randint(1, 6))]
        # few hash letters: two files often hold the same bytes
        sha = {p: rng.choice("abcdef"[: rng.randint(1, 6)]) for p in names}
        rows = []
        for i in range(rng.randint(1, 30)):
            p = None if rng.random() < 0.05 else rng.choice(names)
            s = None if rng.random() < 0.05 else sha.get(p, "z")
            # two of the configuration's columns vary: a copy's rows meet their original's
            conf = {c: rng.choice("xy") if c in key[:2] else "x" for c in key}
            rows.append({**conf, "source_path": p, "source_sha256": s, "n": i})
        schema = {**dict.fromkeys([*key, "source_path", "source_sha256"], pl.String), "n": pl.Int64}
        df = pl.DataFrame(rows, schema=schema)
        if rng.random() < 0.5:
            df = df.sort("source_path", maintain_order=True)
        got, want = dedupe_sources(df, BENCHMARK_RUNS), _dedupe_by_window(df)
        assert got.equals(want), (df, got, want)
        kept_all += got.height == df.height
        held = {(r["source_sha256"], r["source_path"]) for r in rows}
        one_path = len({h for h, _ in held}) == len(held) and None not in {p for _, p in held}
        no_copy += one_path
    # frames with copies dropped and frames without; frames where no hash has two paths
    assert 25 < kept_all < 175 and no_copy > 25


def _trials_by_sorting(df: pl.DataFrame) -> pl.DataFrame:
    """The trial rule as its definition says it: the rows sorted by run date (unknown last), path,
    hash and the reader's trial, numbered within each configuration, put back in their order."""
    from xamm_data.store.reports import config_key

    order = ["run_date", "source_path", "source_sha256", "trial"]
    number = pl.int_range(pl.len(), dtype=pl.Int64).over(config_key(BENCHMARK_RUNS))
    return (
        df.with_row_index("_at")
        .sort(order, nulls_last=True, maintain_order=True)
        .with_columns(number.alias("trial"))
        .sort("_at")
        .drop("_at")
    )


def test_trials_are_numbered_as_their_definition_numbers_them_and_rows_keep_their_order():
    """``renumber_trials`` ranks each row among its configuration's rows without moving a row: on
    200 seeded frames (run dates repeated or unknown, paths and hashes alike or not, a
    configuration's columns null or repeated, the reader's trials in any order) each row's trial is
    the one sorting gives, and the rows are where they were."""
    import random
    from datetime import UTC, datetime

    from xamm_data.store.reports import config_key
    from xamm_data.store.rows import renumber_trials

    key = config_key(BENCHMARK_RUNS)
    order = ["run_date", "source_path", "source_sha256", "trial"]
    rng = random.Random(20261130)
    dates = [None, datetime(2022, 1, 1, tzinfo=UTC), datetime(2023, 5, 2, tzinfo=UTC)]
    tied = 0
    for _ in range(200):
        rows = []
        for i in range(rng.randint(1, 40)):
            conf = {c: rng.choice(["x", "y", None]) if c in key[:2] else "x" for c in key}
            rows.append({**conf, "run_date": rng.choice(dates), "n": i,
                         "source_path": rng.choice([None, "a.cali", "b.cali"]),
                         "source_sha256": rng.choice([None, "h1", "h2"]),
                         "trial": rng.choice([0, 1, 2])})  # fmt: skip
        schema = dict.fromkeys([*key, "source_path", "source_sha256"], pl.String)
        schema |= {"run_date": pl.Datetime("us", "UTC"), "trial": pl.Int64, "n": pl.Int64}
        df = pl.DataFrame(rows, schema=schema)
        got, want = renumber_trials(df, BENCHMARK_RUNS), _trials_by_sorting(df)
        assert got.equals(want), (df, got, want)
        assert got.get_column("n").to_list() == list(range(df.height))
        # rows alike in every ordering column and the configuration: their order decides
        tied += df.select([*order, *key]).is_duplicated().any()
    assert tied > 50


def test_unknown_kind_and_missing_partition(tmp_path):
    st = Store(tmp_path / "s")
    with pytest.raises(ValueError, match="unknown data kind"):
        st.partition_path("bogus", "quartz")
    with pytest.raises(FileNotFoundError, match="quartz"):
        st.read("benchmark_runs", "quartz")
    assert st.scan("benchmark_runs").collect().columns == BENCHMARK_RUNS.names


def test_minimal_frame_gets_nullable_columns_and_a_trial(tmp_path, sample_frame):
    st = Store(tmp_path / "s")
    required = [c.name for c in BENCHMARK_RUNS.columns if not c.nullable]
    rep = st.write(sample_frame.select(required).head(3), "benchmark_runs")
    df = st.read("benchmark_runs", "example-node")
    assert (
        rep.rows_written == 3
        and df.columns == BENCHMARK_RUNS.names
        and df.get_column("run_date").null_count() == 3
    )


def write_legacy_store(root, frame: pl.DataFrame, schema_version: str | None = None) -> None:
    """A store as xamm 0.2 wrote it: <root>/benchmark_runs/machine=<m>/data.parquet, metadata key
    ``xamm``."""
    import json

    from xamm_data.store.files import file_metadata

    for (machine,), part in frame.group_by(["machine"]):
        table = part.to_arrow()
        meta = file_metadata(part, BENCHMARK_RUNS)
        if schema_version:  # an older minor version, written without the columns it lacked
            meta["schema_version"] = schema_version
            table = table.drop_columns(["extra_metrics"])
        path = root / "benchmark_runs" / f"machine={machine}" / "data.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            table.replace_schema_metadata({"xamm": json.dumps(meta)}), path, compression="zstd"
        )


def test_a_store_in_the_0_2_layout_with_schema_1_0_0_is_migrated_once_without_loss(
    tmp_path, sample_frame
):
    """benchmark_runs 1.1.0 added extra_metrics; a 0.2 store holding 1.0.0 files (without it) is
    moved into the Delta table in one commit, reads extra_metrics as null, keeps its old files
    aside, and still merges."""
    other = sample_frame.with_columns(pl.lit("other-node").alias("machine"))
    write_legacy_store(tmp_path / "s", pl.concat([sample_frame, other]), schema_version="1.0.0")
    st = Store(tmp_path / "s")
    back = st.read("benchmark_runs", "example-node")
    assert (
        back.columns == BENCHMARK_RUNS.names
        and back.get_column("extra_metrics").null_count() == back.height
    )
    key = list(BENCHMARK_RUNS.primary_key)
    assert back.drop("extra_metrics").sort(key).equals(sample_frame.drop("extra_metrics").sort(key))
    assert st.machines() == ["example-node", "other-node"] and st.version("benchmark_runs") == 0
    assert "migrated_from" in st.history("benchmark_runs").get_column("xamm")[0]
    assert not list((tmp_path / "s" / "benchmark_runs").glob("machine=*/data.parquet"))
    assert (
        len(list((tmp_path / "s" / ".pre-delta" / "benchmark_runs").glob("machine=*/data.parquet")))
        == 2
    )
    assert Store(tmp_path / "s").version("benchmark_runs") == 0  # once
    one_source = sample_frame.filter(
        pl.col("source_path") == sample_frame.get_column("source_path")[0]
    )
    rep = st.write(one_source, "benchmark_runs")  # re-ingest one source into the migrated partition
    assert (
        rep.partitions[0].rows_replaced == one_source.height
        and rep.partitions[0].rows_after == sample_frame.height
    )
    # the untouched machine is untouched
    assert st.read("benchmark_runs", "other-node").height == other.height


def test_store_lock_excludes_other_processes(tmp_path):
    """The store's lock is a real inter-process lock (filelock): another process cannot take it
    meanwhile."""
    import subprocess
    import sys

    from xamm_data.atomic import locked

    lock = tmp_path / "s" / "benchmark_runs" / ".lock"
    probe = (
        "import sys, filelock\ntry:\n    filelock.FileLock(sys.argv[1], "
        "timeout=0.2).acquire()\n    print('got')\n"
        "except filelock.Timeout:\n    print('busy')\n"
    )
    with locked(lock):
        assert (
            subprocess.run(
                [sys.executable, "-c", probe, str(lock)], capture_output=True, text=True
            ).stdout.strip()
            == "busy"
        )
    assert (
        subprocess.run(
            [sys.executable, "-c", probe, str(lock)], capture_output=True, text=True
        ).stdout.strip()
        == "got"
    )


def test_default_home_is_the_platform_cache_dir(monkeypatch, tmp_path):
    from xamm_data.paths import xamm_home

    monkeypatch.delenv("XAMM_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert xamm_home() == tmp_path / "cache" / "xamm"
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "elsewhere"))
    assert xamm_home() == tmp_path / "elsewhere"
