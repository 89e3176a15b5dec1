"""load_dataset / list_datasets, and publishing to a Hub-protocol server through huggingface_hub."""

from __future__ import annotations

import hashlib

import polars as pl
import pytest
import yaml
from conftest import FIXTURES
from huggingface_hub import hf_hub_download

from xamm_data import list_datasets, load_dataset
from xamm_data.hub.datasets import UnknownDatasetError
from xamm_data.hub.publish import push_dataset
from xamm_data.store.store import Store
from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_ingest import ingest_rajaperf

SAMPLE = FIXTURES / "rajaperf_sample"


@pytest.fixture
def store(tmp_path) -> Store:
    st = Store(tmp_path / "store")
    ingest_rajaperf(SAMPLE, store=st, workers=1)
    return st


def test_unknown_name_lists_known_and_suggests(store):
    with pytest.raises(UnknownDatasetError) as ei:
        load_dataset("quartzz", store=store)
    msg = str(ei.value)
    assert "Did you mean 'quartz'?" in msg and "lassen" in msg and "example-node" in msg


def test_list_and_load_local(store):
    assert "example-node" in list_datasets(store=store) and "quartz" in list_datasets(store=store)
    assert list_datasets("xeon-gold*", store=store) == ["xeon-gold", "xeon-gold-6140"]
    df = load_dataset("example-node", store=store)
    assert isinstance(df, pl.DataFrame) and df.height == 10
    lf = load_dataset("example-node", store=store, lazy=True)
    assert isinstance(lf, pl.LazyFrame) and lf.collect().equals(df)
    with pytest.raises(ValueError, match="unknown kind"):
        load_dataset("example-node", kind="profiles", store=store)


def test_registry_machine_without_data_says_where_it_looked(store, local_hub):
    before = len(local_hub.state.requests)  # the server is the session's: earlier tests' too
    with pytest.raises(
        FileNotFoundError, match="not in the local store .* no published revision .* is pinned"
    ):
        # alias resolves; no local data, none embedded, no pinned commit to ask for
        load_dataset("Corona", store=store)
    # the Hub was not asked for a moving branch
    assert not [r for r in local_hub.state.requests[before:] if "corona" in r[1]]


def test_push_then_load_from_fresh_cache_at_pinned_revision(
    store, local_hub, tmp_path, monkeypatch
):
    repo = "xamm-test/push-roundtrip"
    sha1 = push_dataset("example-node", repo, store=store, licenses="mit")
    local = store.read("benchmark_runs", "example-node")
    # change the data and push again: the first revision must still give the first frame
    store.write(local.with_columns(pl.col("time_per_rep_s") * 3), "benchmark_runs")
    sha2 = push_dataset("example-node", repo, store=store, licenses="mit")
    assert sha1 != sha2
    monkeypatch.setenv("HF_HOME", str(tmp_path / "fresh_hf_home"))
    empty = Store(tmp_path / "empty")
    old = load_dataset("example-node", revision=sha1, store=empty, repo_id=repo)
    new = load_dataset("example-node", revision=sha2, store=empty, repo_id=repo)
    assert old.equals(local)
    assert (
        new.get_column("time_per_rep_s").to_list()
        == (local.get_column("time_per_rep_s") * 3).to_list()
    )
    # revision given: the Hub copy wins over the local store
    assert load_dataset("example-node", revision=sha1, store=store, repo_id=repo).equals(local)


def test_card_follows_hub_conventions_and_keeps_counts_in_yaml(store, local_hub, tmp_path):
    repo = "xamm-test/card"
    other = store.read("benchmark_runs", "example-node").with_columns(
        pl.lit("quartz").alias("machine")
    )
    store.write(other, "benchmark_runs")
    push_dataset("example-node", repo, store=store, licenses=["mit", "bsd-3-clause"], version=0)
    sha = push_dataset("quartz", repo, store=store, licenses=["mit", "bsd-3-clause"], version=1)
    text = open(
        hf_hub_download(
            repo, "README.md", repo_type="dataset", revision=sha, endpoint=local_hub.endpoint
        )
    ).read()
    header = yaml.safe_load(text.split("---")[1])
    assert [c["config_name"] for c in header["configs"]] == ["default", "example-node", "quartz"]
    assert header["configs"][0]["default"] is True
    assert header["configs"][0]["data_files"][0]["path"] == "benchmark_runs/machine=*/*.parquet"
    assert (
        header["configs"][2]["data_files"][0]["path"] == "benchmark_runs/machine=quartz/*.parquet"
    )
    assert header["license"] == ["mit", "bsd-3-clause"] and header["task_categories"] == [
        "tabular-regression"
    ]
    assert header["size_categories"] == ["n<1K"] and header["source_datasets"] == ["original"]
    assert header["xamm"]["schema_versions"]["benchmark_runs"] == BENCHMARK_RUNS.version
    parts = header["xamm"]["partitions"]["benchmark_runs"]
    served = {
        m: hashlib.sha256(
            open(
                hf_hub_download(
                    repo,
                    f"benchmark_runs/machine={m}/data.parquet",
                    repo_type="dataset",
                    revision=sha,
                    endpoint=local_hub.endpoint,
                ),
                "rb",
            ).read()
        ).hexdigest()
        for m in ("example-node", "quartz")
    }
    # kept from the first push
    assert parts["example-node"] == {
        "rows": 10,
        "sources": 3,
        "table_version": 0,
        "sha256": served["example-node"],
    }
    assert parts["quartz"] == {
        "rows": 10,
        "sources": 3,
        "table_version": 1,
        "sha256": served["quartz"],
    }
    with pytest.raises(ValueError, match="SPDX"):
        push_dataset("quartz", repo, store=store, licenses="other")


def test_a_pulled_file_the_card_does_not_vouch_for_is_refused(store, local_hub):
    """Files committed behind xamm's back (the card not updated): refused by their checksum before
    any row is read; the file's own metadata and rows are checked too, for files that pass it."""
    import io
    import json

    import pyarrow.parquet as pq
    from huggingface_hub import CommitOperationAdd, HfApi

    from xamm_data.store.files import CorruptDataError, parquet_bytes
    from xamm_data.store.store import read_parquet_checked
    from xamm_data.tables.validate import ValidationError

    repo = "xamm-test/liar"
    push_dataset("example-node", repo, store=store, licenses="mit")
    rows = store.read("benchmark_runs", "example-node").with_columns(
        pl.lit("lassen").alias("machine")
    )
    api = HfApi(endpoint=local_hub.endpoint, token="hf_xamm_test_token")
    info = api.create_commit(
        repo,
        [
            CommitOperationAdd(
                "benchmark_runs/machine=quartz/data.parquet", parquet_bytes(rows, BENCHMARK_RUNS)
            )
        ],
        repo_type="dataset",
        commit_message="a file under the wrong name",
    )
    empty = Store(store.root.parent / "empty")
    with pytest.raises(
        CorruptDataError,
        match=rf"{repo}@{info.oid} .*machine=quartz/data.parquet: no SHA-256 was recorded",
    ):
        load_dataset("quartz", revision=info.oid, store=empty, repo_id=repo)
    good = store.read("benchmark_runs", "example-node")
    for change, msg in (
        ({"table": "app_profiles"}, "holds app_profiles"),
        ({"schema_version": "2.0.0"}, "v2.0.0"),
    ):
        meta = json.loads(
            pq.ParquetFile(io.BytesIO(parquet_bytes(good, BENCHMARK_RUNS))).metadata.metadata[
                b"xamm"
            ]
        )
        buf = io.BytesIO()
        pq.write_table(
            good.to_arrow().replace_schema_metadata({"xamm": json.dumps({**meta, **change})}), buf
        )
        info = api.create_commit(
            repo,
            [
                CommitOperationAdd(
                    "benchmark_runs/machine=example-node/data.parquet", buf.getvalue()
                )
            ],
            repo_type="dataset",
            commit_message="x",
        )
        with pytest.raises(CorruptDataError, match="do not match the SHA-256 recorded at push"):
            load_dataset("example-node", revision=info.oid, store=empty, repo_id=repo)
        with pytest.raises(ValidationError, match=msg):
            read_parquet_checked(buf.getvalue(), "benchmark_runs", name="x")


def test_an_unpinned_model_download_works_against_the_local_hub(local_hub, tmp_path, monkeypatch):
    """The local Hub answers HEAD errors without a body (a body broke the next request on the
    connection)."""
    from huggingface_hub import hf_hub_download as dl
    from huggingface_hub.errors import EntryNotFoundError

    api = __import__("huggingface_hub").HfApi(
        endpoint=local_hub.endpoint, token="hf_xamm_test_token"
    )
    api.create_repo("xamm-test/model", exist_ok=True)
    api.upload_file(path_or_fileobj=b"{}", path_in_repo="config.json", repo_id="xamm-test/model")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for _ in range(3):  # a missing file (HEAD 404), then a present one, on the same connection pool
        with pytest.raises(EntryNotFoundError):
            dl("xamm-test/model", "missing.json", endpoint=local_hub.endpoint)
        assert (
            open(dl("xamm-test/model", "config.json", endpoint=local_hub.endpoint)).read() == "{}"
        )


def test_offline_uses_cache_only(store, local_hub, monkeypatch):
    repo = "xamm-test/offline"
    sha = push_dataset("example-node", repo, store=store, licenses="mit")
    empty = Store(store.root.parent / "empty")
    first = load_dataset("example-node", revision=sha, store=empty, repo_id=repo)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_dataset("example-node", revision=sha, store=empty, repo_id=repo).equals(first)
    with pytest.raises(FileNotFoundError, match="HF_HUB_OFFLINE"):
        load_dataset("lassen", revision=sha, store=empty, repo_id=repo)


def test_push_nothing_is_an_error(store, local_hub):
    with pytest.raises(FileNotFoundError, match="nothing to push"):
        push_dataset("lassen", "xamm-test/none", store=store, licenses="mit")


def test_the_published_configs_load_with_the_datasets_library(
    store, local_hub, tmp_path, monkeypatch
):
    """The card's `default` config (every machine) and a per-machine config load with
    `datasets.load_dataset`."""
    datasets = pytest.importorskip("datasets", reason="the datasets library is in the test extra")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    if hasattr(datasets.config, "HF_ENDPOINT"):
        monkeypatch.setattr(datasets.config, "HF_ENDPOINT", local_hub.endpoint)
    repo = "xamm-test/datasets-lib"
    store.write(
        store.read("benchmark_runs", "example-node").with_columns(
            pl.lit("quartz").alias("machine")
        ),
        "benchmark_runs",
    )
    push_dataset("example-node", repo, store=store, licenses="mit")
    sha = push_dataset("quartz", repo, store=store, licenses="mit")
    everything = datasets.load_dataset(repo, revision=sha, split="train")
    quartz = datasets.load_dataset(repo, "quartz", revision=sha, split="train")
    assert everything.num_rows == 20 and sorted(set(everything["machine"])) == [
        "example-node",
        "quartz",
    ]
    assert quartz.num_rows == 10 and set(quartz["machine"]) == {"quartz"}
    mine = store.read("benchmark_runs", "quartz")
    assert sorted(quartz["time_per_rep_s"]) == sorted(mine.get_column("time_per_rep_s").to_list())
