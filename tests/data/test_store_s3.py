"""The store on object storage. A local S3-compatible server (moto in server
mode, on
127.0.0.1) holds the store; ingest, load, time travel, verified reads and concurrent writers run
against it through delta-rs and pyarrow's S3 client, exactly as against a remote bucket."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import polars as pl
import pytest
from conftest import FIXTURES, skip_unless_installed

skip_unless_installed("moto", "moto[server] is in the test extra")

from s3_server import BUCKET  # noqa: E402  (s3 and s3_env are fixtures of conftest.py)

from xamm_data import load_dataset  # noqa: E402
from xamm_data.store.store import CorruptDataError, CorruptLogError, Store  # noqa: E402
from xamm_ingest import read_rajaperf  # noqa: E402


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return read_rajaperf(FIXTURES / "rajaperf_sample", workers=1).frame


def test_ingest_load_time_travel_and_verified_reads_on_s3(s3_env, frame, tmp_path, monkeypatch):
    env, client = s3_env
    uri = f"s3://{BUCKET}/t1/store"
    st = Store(uri)
    st.write(frame, "benchmark_runs")
    st.write(frame.with_columns(pl.lit("node-b").alias("machine")), "benchmark_runs")
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="t1/store/")["Contents"]]
    # two commits, in the bucket
    assert any("_delta_log/00000000000000000001.json" in k for k in keys)
    assert not (tmp_path / "t1").exists()
    # the default store follows XAMM_HOME's URI
    monkeypatch.setenv("XAMM_HOME", f"s3://{BUCKET}/t1")
    assert (
        load_dataset("example-node")
        .sort("kernel", "trial")
        .equals(st.read("benchmark_runs", "example-node").sort("kernel", "trial"))
    )
    assert Store(uri).machines() == ["example-node", "node-b"]
    assert st.read("benchmark_runs", "node-b", version=1).height == frame.height
    with pytest.raises(FileNotFoundError):
        st.read("benchmark_runs", "node-b", version=0)  # not there yet at version 0
    # a flipped bit in the stored object is caught
    key = next(k for k in keys if "machine=node-b/part-" in k)
    body = bytearray(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    body[len(body) // 2] ^= 0x10
    client.put_object(Bucket=BUCKET, Key=key, Body=bytes(body))
    with pytest.raises(CorruptDataError, match="node-b"):
        st.read("benchmark_runs", "node-b")
    assert len(st.verify()) == 1


def test_the_log_on_s3_is_verified_like_a_local_one(s3_env, frame):
    """The head record is written to the bucket; a lost newest log object is a named error, not a
    rollback."""
    _, client = s3_env
    st = Store(f"s3://{BUCKET}/t4/store")
    st.write(frame, "benchmark_runs")
    st.write(frame.with_columns(pl.lit("node-b").alias("machine")), "benchmark_runs")
    assert st.verify() == []
    assert client.get_object(Bucket=BUCKET, Key="t4/store/benchmark_runs/_xamm/head.json")[
        "Body"
    ].read()
    client.delete_object(
        Bucket=BUCKET, Key="t4/store/benchmark_runs/_delta_log/00000000000000000001.json"
    )
    with pytest.raises(
        CorruptLogError,
        match=r"committed version 1 but the log ends at 0: .*00000000000000000001\.json",
    ):
        st.machines()
    assert len(st.verify()) == 1


def test_a_log_line_or_checkpoint_nested_too_deep_on_s3_is_refused_before_delta_rs(s3_env, frame):
    """The screen before delta-rs opens a table reads an object store's log entries and the
    footers of its checkpoints (ranged reads) as it reads a local table's."""
    from deltalake import DeltaTable
    from parquet_footer_writer import chain, parquet_file

    env, client = s3_env
    st = Store(f"s3://{BUCKET}/t5/store")
    st.write(frame, "benchmark_runs")
    DeltaTable(
        f"s3://{BUCKET}/t5/store/benchmark_runs",
        storage_options=st.location("benchmark_runs").storage_options,
    ).create_checkpoint()
    log = "t5/store/benchmark_runs/_delta_log/"
    checkpoint = f"{log}{0:020d}.checkpoint.parquet"
    good = client.get_object(Bucket=BUCKET, Key=checkpoint)["Body"].read()
    client.put_object(Bucket=BUCKET, Key=checkpoint, Body=parquet_file(chain(100_000)))
    with pytest.raises(CorruptLogError, match=f"{checkpoint}: its schema nests more than 64"):
        st.machines()
    client.put_object(Bucket=BUCKET, Key=checkpoint, Body=good)
    assert st.machines() == ["example-node"]
    entry = f"{log}{1:020d}.json"
    client.put_object(Bucket=BUCKET, Key=entry, Body=b"[" * 100_000 + b"]" * 100_000 + b"\n")
    with pytest.raises(CorruptLogError, match=f"{entry} line 1: JSON nested 100,000 levels deep"):
        st.machines()


def test_the_cli_takes_a_store_uri(s3_env, frame, capsys):
    from xamm_data.cli.commands import main as xamm

    st = Store(f"s3://{BUCKET}/t2/store")
    st.write(frame, "benchmark_runs")
    assert xamm(["datasets", "list", "--json", "--store", f"s3://{BUCKET}/t2/store"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["example-node"]["local_benchmark_runs_rows"] == frame.height
    assert xamm(["datasets", "verify", "--store", f"s3://{BUCKET}/t2/store"]) == 0


WRITER = """
import sys, time
import polars as pl
from xamm_data.store.store import Store
st, df, start = Store(sys.argv[1]), pl.read_parquet(sys.argv[2]), float(sys.argv[3])
while time.time() < start:
    time.sleep(0.001)
st.write(df, "benchmark_runs")
"""


def test_four_concurrent_writers_on_s3_lose_nothing(s3_env, frame, tmp_path):
    env, _ = s3_env
    uri = f"s3://{BUCKET}/t3/store"
    inputs = []
    for i, machine in enumerate(("example-node", "example-node", "node-b", "node-c")):
        inputs.append(
            frame.with_columns(
                (pl.lit(f"w{i}/") + pl.col("source_path")).alias("source_path"),
                (pl.col("source_sha256").str.slice(0, 62) + pl.lit(f"{i:02d}")).alias(
                    "source_sha256"
                ),
                pl.lit(machine).alias("machine"),
            )
        )
    start = time.time() + 2.0
    procs = []
    for i, df in enumerate(inputs):
        df.write_parquet(tmp_path / f"in{i}.parquet")
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WRITER, uri, str(tmp_path / f"in{i}.parquet"), str(start)],
                stderr=subprocess.PIPE,
                text=True,
                env={**__import__("os").environ, **env},
            )
        )
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()[-2000:]
    got = Store(uri).scan("benchmark_runs").collect()
    want = pl.concat(inputs)
    assert got.height == want.height and set(got["source_sha256"]) == set(want["source_sha256"])
    assert Store(uri).version("benchmark_runs") == 3 and Store(uri).verify() == []
