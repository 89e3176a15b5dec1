"""load_dataset / list_datasets, and publishing to a Hub-protocol server through huggingface_hub."""

from __future__ import annotations

import polars as pl
import pytest
import yaml
from conftest import FIXTURES
from huggingface_hub import hf_hub_download

from xamm_data import list_datasets, load_dataset
from xamm_data.datasets import UnknownDatasetError
from xamm_data.hub import push_dataset
from xamm_data.schema import BENCHMARK_RUNS
from xamm_data.store import Store
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


def test_registry_machine_without_data_says_where_it_looked(store, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="not in the local store"):
        load_dataset("Quartz", store=store)  # alias resolves; no local data, Hub unreachable


def test_push_then_load_from_fresh_cache_at_pinned_revision(store, local_hub, tmp_path, monkeypatch):
    repo = "xamm-test/push-roundtrip"
    sha1 = push_dataset("example-node", repo, store=store)
    local = store.read("benchmark_runs", "example-node")
    # change the data and push again: the first revision must still give the first frame
    store.write(local.with_columns(pl.col("time_per_rep_s") * 3), "benchmark_runs")
    sha2 = push_dataset("example-node", repo, store=store)
    assert sha1 != sha2
    monkeypatch.setenv("HF_HOME", str(tmp_path / "fresh_hf_home"))
    empty = Store(tmp_path / "empty")
    old = load_dataset("example-node", revision=sha1, store=empty, repo_id=repo)
    new = load_dataset("example-node", revision=sha2, store=empty, repo_id=repo)
    assert old.equals(local)
    assert new.get_column("time_per_rep_s").to_list() == (local.get_column("time_per_rep_s") * 3).to_list()
    # revision given: the Hub copy wins over the local store
    assert load_dataset("example-node", revision=sha1, store=store, repo_id=repo).equals(local)


def test_card_lists_every_machine_and_validates(store, local_hub, tmp_path):
    repo = "xamm-test/card"
    other = store.read("benchmark_runs", "example-node").with_columns(pl.lit("quartz").alias("machine"))
    store.write(other, "benchmark_runs")
    push_dataset("example-node", repo, store=store, license="cc-by-4.0")
    sha = push_dataset("quartz", repo, store=store, license="cc-by-4.0")
    text = open(hf_hub_download(repo, "README.md", repo_type="dataset", revision=sha, endpoint=local_hub.endpoint)).read()
    header = yaml.safe_load(text.split("---")[1])
    assert [c["config_name"] for c in header["configs"]] == ["example-node", "quartz"]
    assert header["configs"][1]["data_files"][0]["path"] == "benchmark_runs/machine=quartz/*.parquet"
    assert header["license"] == "cc-by-4.0" and header["xamm"]["schema_versions"]["benchmark_runs"] == BENCHMARK_RUNS.version
    assert f"| `example-node` | `benchmark_runs` | {BENCHMARK_RUNS.version} | 10 | 3 |" in text  # kept from the first push


def test_offline_uses_cache_only(store, local_hub, monkeypatch):
    repo = "xamm-test/offline"
    sha = push_dataset("example-node", repo, store=store)
    empty = Store(store.root.parent / "empty")
    first = load_dataset("example-node", revision=sha, store=empty, repo_id=repo)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_dataset("example-node", revision=sha, store=empty, repo_id=repo).equals(first)
    with pytest.raises(FileNotFoundError, match="HF_HUB_OFFLINE"):
        load_dataset("lassen", revision=sha, store=empty, repo_id=repo)


def test_push_nothing_is_an_error(store, local_hub):
    with pytest.raises(FileNotFoundError, match="nothing to push"):
        push_dataset("lassen", "xamm-test/none", store=store)
