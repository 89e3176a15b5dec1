"""``xamm-ingest benchpark``: a Benchpark/Ramble workspace laid out as the tools write it
(:mod:`ramble_writer`) around dane's real RAJAPerf Caliper files; every row carries the
experiment's metadata, checked against the results file read here with ``json``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from ramble_writer import EXPERIMENT, SYSTEM, write_workspace

from xamm_data.hub.datasets import load_dataset
from xamm_data.tables.workflow import metadata_columns
from xamm_ingest import read_rajaperf
from xamm_ingest.api import ingest_sources, read_sources

DANE = "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608/O3"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "ingest-benchpark.md"


@pytest.fixture
def dane_cali(shared_data):
    return sorted((shared_data / DANE).glob("*/*.cali"))


def test_a_workspace_s_runs_carry_its_system_modifiers_and_variables(tmp_path, dane_cali):
    ws = write_workspace(tmp_path / "root", dane_cali[:2])
    got = read_sources("benchpark", [tmp_path / "root"], workers=1)
    assert not got.rejected
    rows = metadata_columns(got.frame)
    assert rows.height == 146  # 73 kernels from each file, as xamm-ingest rajaperf reads them
    direct = read_rajaperf([str(f) for f in dane_cali[:2]], workers=1).frame
    key = ["kernel", "time_per_rep_s"]
    assert rows.select(key).sort(key).equals(direct.select(key).sort(key))
    assert set(rows["benchpark_system"]) == {SYSTEM}
    assert set(rows["benchpark_experiment"]) == {EXPERIMENT}
    assert set(rows["ramble_modifiers"]) == {"allocation;caliper:time"}
    assert set(rows["ramble_experiment"]) == {"suite_1_112_1", "suite_1_112_1.2"}
    doc = json.loads((ws / "results.latest.json").read_text())
    for e in doc["experiments"]:
        mine = rows.filter(pl.col("ramble_experiment") == e["experiment_name"])
        assert set(mine["ramble_status"]) == {e["RAMBLE_STATUS"]}
        assert set(mine["ramble_n_nodes"]) == {e["n_nodes"]}
        for k, v in e["RAMBLE_VARIABLES"].items():
            assert set(mine[f"ramble_variable_{k}"]) == {v}
    assert set(rows["machine"]) == {"dane"} and set(rows["ranks"]) == {112}


def test_a_workspace_never_analysed_still_gives_its_runs_and_says_so(tmp_path, dane_cali):
    write_workspace(tmp_path / "root", dane_cali[:1], results=False)
    got = read_sources("benchpark", [tmp_path / "root"], workers=1)
    rows = metadata_columns(got.frame)
    assert rows.height == 73
    assert set(rows["ramble_application"]) == {"raja-perf"}
    assert rows["ramble_results"][0].startswith("no results.latest.json")
    assert "ramble_variable_n_ranks" not in rows.columns


def test_a_bad_results_file_refuses_its_workspace_naming_it(tmp_path, dane_cali):
    ws = write_workspace(tmp_path / "a", dane_cali[:1])
    (ws / "results.latest.json").unlink()
    (ws / "results.latest.json").write_text('{"experiments": [{"name": "x"}]}')
    write_workspace(tmp_path / "b", dane_cali[1:2])
    got = read_sources("benchpark", [tmp_path / "a", tmp_path / "b"], workers=1)
    assert got.frame.height == 73  # the good workspace is kept
    assert len(got.rejected) == 1
    assert "results.latest.json" in got.rejected[0].path
    assert "application_name" in got.rejected[0].reason
    not_one = read_sources("benchpark", [tmp_path / "b" / "setup.sh"], workers=1)
    assert "not a Ramble workspace" in not_one.rejected[0].reason


def test_benchpark_runs_round_trip_the_store_and_drift(tmp_path, dane_cali, monkeypatch):
    from xamm_models.compare.history.drift import drift

    write_workspace(tmp_path / "accepted", dane_cali[:2])
    write_workspace(tmp_path / "update", dane_cali[2:])
    for d in ("accepted", "update"):
        ingest_sources("benchpark", [tmp_path / d], store=tmp_path / "store", workers=1)
    runs = metadata_columns(load_dataset("dane", store=tmp_path / "store"))
    assert runs.height == 365
    assert runs["run_metadata"].null_count() == 0
    assert set(runs["benchpark_system"]) == {SYSTEM}
    d = drift(runs.filter(pl.col("trial") < 2), runs.filter(pl.col("trial") >= 2))
    assert not d.drifted


@pytest.mark.parametrize("analysed", [True, False], ids=["analysed", "never analysed"])
def test_the_pages_python_runs_as_written_on_a_workspace_analysed_or_not(
    tmp_path, dane_cali, monkeypatch, analysed
):
    """docs/ingest-benchpark.md's snippet, run as written on ``dane`` ingested from a workspace
    (``XAMM_HOME``'s store): the columns it selects exist either way, null where never analysed."""
    write_workspace(tmp_path / "root", dane_cali[:1], results=analysed)
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    ingest_sources("benchpark", [tmp_path / "root"], store=tmp_path / "home" / "store", workers=1)
    (code,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    space: dict = {}
    exec(compile(code, str(PAGE), "exec"), space)
    shown = space["runs"].select(
        "kernel", "benchpark_system", "ramble_experiment", "ramble_variable_n_threads_per_proc"
    )
    assert shown.height == 73 and set(shown["benchpark_system"]) == {SYSTEM}
    threads = shown["ramble_variable_n_threads_per_proc"]
    assert threads.null_count() == (0 if analysed else 73)
