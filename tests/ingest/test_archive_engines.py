"""The archive beyond one machine: parsing on the workers of a Dask cluster (a LocalCluster of two
worker processes, reached by its scheduler's address as a batch system's would be), committing into
the same Delta table locally and on S3 (the local S3 test server), and other engines reading
xamm's tables: delta-rs's pyarrow dataset and Dask's Parquet reader."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from conftest import skip_unless_installed

skip_unless_installed("distributed", "dask[distributed] is in the test extra")
skip_unless_installed("moto", "moto[server] is in the test extra")

from s3_server import BUCKET  # noqa: E402  (s3 and s3_env are fixtures of conftest.py)

from xamm_data.store.store import Store  # noqa: E402
from xamm_ingest import ingest_archive  # noqa: E402
from xamm_ingest.readers.profile_common import SampleSpec  # noqa: E402

SORT = Path("LLNL+thicket-tutorial") / "data" / "parallel-sorting"
SPEC = SampleSpec(app="sort", machine="grace")
# the columns another engine's reader hands back as they are (nested columns compared apart)
FLAT = ["app", "variant", "input_size", "input_type", "programming_model", "machine", "device",
        "ranks", "trial", "runtime_s", "source_path", "source_sha256"]  # fmt: skip


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        yield c.scheduler_address


@pytest.fixture(scope="module")
def corpus(shared_data) -> Path:
    return shared_data / SORT / "team5"


@pytest.fixture(scope="module")
def local_table(corpus, tmp_path_factory) -> pl.DataFrame:
    st = tmp_path_factory.mktemp("local") / "store"
    rep = ingest_archive("caliper", corpus, store=st, spec=SPEC, batch_files=200, workers=2)
    assert rep.rows_written == 504 and not rep.rejected
    return Store(st).scan("app_profiles").collect().sort("source_sha256")


def test_dask_workers_parse_and_the_same_rows_are_committed(cluster, corpus, local_table, tmp_path):
    st = tmp_path / "store"
    rep = ingest_archive("caliper", corpus, store=st, spec=SPEC, batch_files=200,
                         executor="dask", scheduler=cluster)  # fmt: skip
    assert rep.rows_written == 504 and len(rep.commits) == 3
    assert Store(st).scan("app_profiles").collect().sort("source_sha256").equals(local_table)


def test_dask_workers_commit_into_a_table_on_s3(cluster, corpus, local_table, s3_env):
    uri = f"s3://{BUCKET}/archive/store"
    rep = ingest_archive("caliper", corpus, store=uri, spec=SPEC, batch_files=200,
                         executor="dask", scheduler=cluster)  # fmt: skip
    assert rep.rows_written == 504
    _, client = s3_env
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="archive/")["Contents"]]
    assert sum(k.endswith(".parquet") for k in keys) == 3
    assert Store(uri).scan("app_profiles").collect().sort("source_sha256").equals(local_table)
    again = ingest_archive("caliper", corpus, store=uri, spec=SPEC, executor="dask",
                           scheduler=cluster)  # fmt: skip
    assert again.already_stored == 504 and again.rows_written == 0


def test_dask_workers_merge_one_runs_files_as_one_commit_does(cluster, tmp_path):
    """RAJAPerf on the workers, in batches of one directory: each run's CSV and Caliper files reach
    one worker together, are merged there, and the table equals one commit's."""
    from conftest import FIXTURES

    from xamm_ingest import ingest

    once = ingest("rajaperf", FIXTURES / "rajaperf_sample", store=tmp_path / "once", workers=1)
    rep = ingest("rajaperf", FIXTURES / "rajaperf_sample", store=tmp_path / "dask",
                 commit="batches", batch_files=1, executor="dask", scheduler=cluster)  # fmt: skip
    assert len(rep.commits) == 2 and rep.merged_rows == once.merged_rows > 0
    cols = ["kernel", "variant", "tuning", "source_path", "time_per_rep_s", "extra_metrics"]
    a, b = (Store(tmp_path / s).scan("benchmark_runs").collect().select(cols).sort(cols[:4])
            for s in ("once", "dask"))  # fmt: skip
    assert a.equals(b) and a.height == once.frame.height


def test_a_local_cluster_is_started_when_no_scheduler_is_named(corpus, local_table, tmp_path):
    one = sorted(corpus.rglob("*.cali"))[:3]
    rep = ingest_archive("caliper", one, store=tmp_path / "s", spec=SPEC, executor="dask",
                         workers=1)  # fmt: skip
    assert rep.rows_written == 3


def test_other_engines_read_the_same_rows(local_table, corpus, tmp_path):
    """delta-rs's pyarrow dataset and dask.dataframe read the Delta table xamm wrote."""
    import dask.dataframe as dd
    from deltalake import DeltaTable

    st = tmp_path / "store"
    ingest_archive("caliper", corpus, store=st, spec=SPEC, batch_files=200, workers=1)
    uri = str(st / "app_profiles")
    arrow = DeltaTable(uri).to_pyarrow_dataset().to_table()
    via_arrow = pl.from_arrow(arrow).sort("source_sha256")
    assert via_arrow.height == local_table.height
    assert via_arrow.select(FLAT).equals(local_table.select(FLAT))
    assert (
        via_arrow.get_column("extra_metadata").to_list()
        == local_table.get_column("extra_metadata").to_list()
    )
    # the machine is a column of every file too: no partitioning to infer from the paths
    files = DeltaTable(uri).file_uris()
    via_dask = dd.read_parquet(files, columns=FLAT, dataset={"partitioning": None}).compute()
    assert pl.from_pandas(via_dask).sort("source_sha256").equals(local_table.select(FLAT))


def test_a_scheduler_that_does_not_answer_is_one_line_and_exit_1(tmp_path, capsys, monkeypatch):
    from cali_writer import write_cali

    import xamm_ingest.pipeline.executors as executors
    from xamm_ingest.cli import main

    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1)
    write_cali(tmp_path / "p.cali", [(["main"], {"time.duration": 1.0})], {"cluster": "c"},
               units={"time.duration": "sec"})  # fmt: skip
    rc = main(["caliper", str(tmp_path), "--app", "a", "--executor", "dask",
               "--scheduler", "tcp://127.0.0.1:9", "--store", str(tmp_path / "s")])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 1 and "no Dask scheduler answered at tcp://127.0.0.1:9 within 1 s" in err
    assert "Traceback" not in err


def test_a_worker_that_dies_while_it_starts_is_one_line_and_exit_1(tmp_path):
    """A real start-up failure: each worker of the local cluster runs a preload that exits the
    process, so its nanny fails to start (what killing a worker while it starts does)."""
    import json
    import os
    import subprocess
    import sys

    from cali_writer import write_cali

    (tmp_path / "die.py").write_text("import os\n\ndef dask_setup(worker):\n    os._exit(1)\n")
    write_cali(tmp_path / "runs" / "p.cali", [(["main"], {"time.duration": 1.0})],
               {"cluster": "c"}, units={"time.duration": "sec"})  # fmt: skip
    env = {
        **os.environ,
        "DASK_DISTRIBUTED__WORKER__PRELOAD": json.dumps([str(tmp_path / "die.py")]),
    }
    p = subprocess.run(
        [str(Path(sys.executable).parent / "xamm-ingest"), "caliper", str(tmp_path / "runs"),
         "--app", "a", "--executor", "dask", "--workers", "1", "--no-progress",
         "--store", str(tmp_path / "s")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    (line,) = lines
    assert "the local Dask cluster did not start" in line and "Nanny failed to start" in line
    assert not (tmp_path / "s" / "app_profiles").exists()  # nothing written
