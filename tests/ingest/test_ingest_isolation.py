"""One pipeline, every source isolated: any exception in one source rejects that source alone.

Each kind of exception is injected into each reader for one source; the other sources must land,
and the rejection must name the file, the exception type and its message.
"""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from cali_writer import rajaperf_cali, write_cali
from conftest import FIXTURES

from xamm_data.store.store import Store
from xamm_ingest import ingest_profiles, read_profiles, read_rajaperf
from xamm_ingest.cli import main
from xamm_ingest.readers import caliper_profile, hpctoolkit, rajaperf_caliper, rajaperf_csv, table
from xamm_ingest.readers.profile_common import SampleSpec

SAMPLE = FIXTURES / "rajaperf_sample"
SPEC = SampleSpec(app="demo", machine="quartz")
EXCEPTIONS = [
    ValueError("bad value"),
    KeyError("missing_key"),
    AttributeError("'str' object has no attribute 'get'"),
    TypeError("unsupported operand"),
    IndexError("list index out of range"),
    ZeroDivisionError("division by zero"),
    pl.exceptions.ComputeError("polars could not compute"),
    pl.exceptions.SchemaError("schema mismatch"),
    RecursionError("maximum recursion depth exceeded"),
    OSError(5, "Input/output error"),
]


def _failing(real, victim: str, exc: Exception):
    def reader(src, *a, **kw):
        path = getattr(src, "path", src)
        if victim in str(path):
            raise exc
        return real(src, *a, **kw)

    return reader


def _check_rejection(rep, victim: str, exc: Exception):
    assert len(rep.rejected) == 1, rep.rejected
    r = rep.rejected[0]
    assert victim in r.path and victim in r.reason
    if isinstance(exc, OSError):
        assert "Input/output error" in r.reason
    else:
        assert type(exc).__name__ in r.reason and str(exc).strip("'") in r.reason


@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_rajaperf_caliper_reader_failure_rejects_one_file(monkeypatch, exc):
    monkeypatch.setattr(
        rajaperf_caliper,
        "read_caliper",
        _failing(rajaperf_caliper.read_caliper, "Base_Seq-default.cali", exc),
    )
    rep = read_rajaperf(SAMPLE, workers=1)
    _check_rejection(rep, "Base_Seq-default.cali", exc)
    assert rep.frame.height == 10 and set(rep.frame.get_column("source_format")) == {
        "rajaperf-csv",
        "rajaperf-timing-csv",
    }


@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_rajaperf_csv_reader_failure_rejects_one_run(monkeypatch, exc):
    real = rajaperf_csv.read_csv_run

    def reader(run, src, **kw):
        if "run-2" in str(src.path):
            raise exc
        return real(run, src, **kw)

    monkeypatch.setattr(rajaperf_csv, "read_csv_run", reader)
    rep = read_rajaperf(SAMPLE, workers=1)
    _check_rejection(rep, "run-2", exc)
    assert rep.frame.height == 5 and rep.merged_rows == 3


def _app_cali(path, t):
    return write_cali(
        path,
        [(["main"], {"inclusive#sum#time.duration": t, "sum#papi.PAPI_TOT_INS": 1e9})],
        {"cluster": "quartz"},
        units={"inclusive#sum#time.duration": "sec"},
    )


@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_caliper_profile_reader_failure_rejects_one_file(monkeypatch, tmp_path, exc):
    _app_cali(tmp_path / "good.cali", 2.0)
    _app_cali(tmp_path / "victim.cali", 3.0)
    monkeypatch.setattr(
        caliper_profile,
        "read_caliper_profile",
        _failing(caliper_profile.read_caliper_profile, "victim.cali", exc),
    )
    rep = read_profiles("caliper", tmp_path, SPEC)
    _check_rejection(rep, "victim.cali", exc)
    assert rep.frame.get_column("runtime_s").to_list() == [2.0]


def _tables(tmp_path):
    (tmp_path / "a.csv").write_text(
        "app,machine,runtime_s,threads\nKripke,quartz,1.5,4\nKripke,ruby,0.5,4\n"
    )
    (tmp_path / "victim.csv").write_text("app,machine,runtime_s,threads\nLULESH,quartz,2.5,8\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        '[columns]\napp = "app"\nmachine = "machine"\nruntime_s = '
        '"runtime_s"\nthreads = "threads"\n'
    )
    return mapping


@pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: type(e).__name__)
def test_table_reader_failure_rejects_one_file(monkeypatch, tmp_path, exc):
    mapping = _tables(tmp_path)
    monkeypatch.setattr(table, "read_table", _failing(table.read_table, "victim.csv", exc))
    rep = read_profiles("table", tmp_path, mapping=mapping)
    _check_rejection(rep, "victim.csv", exc)
    assert sorted(rep.frame.get_column("runtime_s").to_list()) == [0.5, 1.5]


@pytest.mark.data
@pytest.mark.parametrize("exc", EXCEPTIONS[:4], ids=lambda e: type(e).__name__)
def test_hpctoolkit_reader_failure_rejects_one_database(monkeypatch, tmp_path, shared_data, exc):
    meta = shared_data / "HPCToolkit+hpcviewer.e4" / "tests" / "resources" / "metadb"
    monkeypatch.setattr(
        hpctoolkit, "read_hpctoolkit", _failing(hpctoolkit.read_hpctoolkit, "multithread", exc)
    )
    rep = read_profiles("hpctoolkit", [meta / "loop-fork-cycles", meta / "multithread"], SPEC)
    _check_rejection(rep, "multithread", exc)
    assert rep.frame.height == 1 and rep.frame.get_column("source_path").to_list() == [
        "loop-fork-cycles"
    ]


def test_examples_that_used_to_abort_a_batch(tmp_path, capsys):
    d = tmp_path / "runs"
    shutil.copytree(SAMPLE, d)
    (d / "run-1" / "stray.json").write_text(
        json.dumps({"data": [], "columns": [], "nodes": ["a", "b"]})
    )
    ks = {"Basic_DAXPY": {"time": 0.5, "reps": 500, "size": 1000, "bytes": 24000, "flops": 2000}}
    rajaperf_cali(
        d / "other" / "Base_Seq-default.cali",
        ks,
        cluster="example-node",
        cmdline="[raja-perf.exe,--npasses,abc]",
    )
    store = tmp_path / "store"
    assert main(["rajaperf", str(d), "--store", str(store), "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    reasons = {r["path"].split("/")[-1] + "|" + r["reason"] for r in out["rejected_files"]}
    assert any(r.startswith("stray.json|") and "node 0 is 'a'" in r for r in reasons)
    assert any(r.startswith("Base_Seq-default.cali|") and "--npasses 'abc'" in r for r in reasons)
    assert out["rows"] == 10 and Store(store).read("benchmark_runs", "example-node").height == 10


def test_bad_cells_in_a_table_drop_their_rows_only(tmp_path, capsys):
    mapping = _tables(tmp_path)
    (tmp_path / "victim.csv").write_text(
        "app,machine,runtime_s,threads\nLULESH,quartz,fast,8\n"
        "LULESH,quartz,2.5,four\nLULESH,quartz,3.5,8\n"
    )
    rep = ingest_profiles("table", tmp_path, mapping=mapping, store=Store(tmp_path / "s"))
    assert rep.rejected == []
    assert sorted((d.record, d.field, d.value) for d in rep.dropped) == [
        ("row 2", "runtime_s", "fast"),
        ("row 3", "threads", "four"),
    ]
    assert sorted(rep.frame.get_column("runtime_s").to_list()) == [0.5, 1.5, 3.5]
    assert Store(tmp_path / "s").read("app_profiles", "quartz").height == 2


def test_debug_reraises_unexpected_errors(monkeypatch):
    monkeypatch.setattr(
        rajaperf_caliper,
        "read_caliper",
        _failing(rajaperf_caliper.read_caliper, ".cali", KeyError("x")),
    )
    with pytest.raises(KeyError):
        read_rajaperf(SAMPLE, workers=1, debug=True)


def test_a_failing_merge_rejects_only_its_directory(monkeypatch, tmp_path):
    import xamm_ingest.formats.rajaperf as rp

    d = tmp_path / "runs"
    shutil.copytree(SAMPLE, d)
    real = rp.merge_csv_and_caliper

    def merge(frame, **kw):
        if frame.get_column("source_path").str.starts_with("run-1").any():
            raise pl.exceptions.ComputeError("merge blew up")
        return real(frame, **kw)

    monkeypatch.setattr(rp, "merge_csv_and_caliper", merge)
    rep = read_rajaperf(d, workers=1)
    assert {r.path for r in rep.rejected} == {
        "run-1/Base_Seq-default.cali",
        "run-1/RAJAPerf-kernel-run-data.csv",
    }
    assert all("ComputeError: merge blew up" in r.reason for r in rep.rejected)
    assert rep.frame.height == 5 and set(rep.frame.get_column("source_path")) == {
        "run-2/RAJAPerf-timing-Average.csv"
    }
