"""Inputs that are easy to read wrongly without a word, each a correct read or a refusal that
names the file and the record: machine names from metadata, two devices under one machine, a
profile or table that ``xamm predict`` is handed, and what ``xamm predict`` and ``xamm datasets
history`` say."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from cali_writer import write_cali

from xamm_ingest.cli import main as ingest

TIME = "inclusive#sum#time.duration"


def _profile(path, seconds: float, **globals_):
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_cali(
        path, [(["main"], {TIME: seconds})], {k: str(v) for k, v in globals_.items()},
        units={TIME: "sec"},
    )  # fmt: skip


def _ingest(argv, capsys) -> tuple[int, dict]:
    code = ingest([*argv, "--json", "--dry-run", "--no-progress"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, json.loads(out.out)


def test_a_machine_name_from_metadata_is_data_never_a_path(tmp_path, capsys):
    _profile(tmp_path / "runs" / "evil.cali", 2.0, cluster="../../../x")
    _profile(tmp_path / "runs" / "ok.cali", 2.0, cluster="newbox-7")
    code, out = _ingest(["caliper", str(tmp_path / "runs"), "--app", "a"], capsys)
    (r,) = out["rejected_files"]
    assert r["path"].endswith("evil.cali") and "path or control characters" in r["reason"]
    assert "cluster" in r["reason"] and out["rows"] == 1  # the other file is read
    # a name no registry knows is stored as given, and the summary says so once
    (note,) = [n for n in out["notes"] if "not a known machine" in n]
    assert "'newbox-7'" in note


def test_a_known_alias_is_stored_under_its_machine_without_a_note(tmp_path, capsys):
    _profile(tmp_path / "runs" / "q.cali", 2.0, cluster="quartz")
    code, out = _ingest(["caliper", str(tmp_path / "runs"), "--app", "a"], capsys)
    assert code == 0 and out["rows"] == 1
    assert not [n for n in out.get("notes", []) if "not a known machine" in n]


STREAM = """BabelStream
Version: 4.0
Implementation: CUDA
Running kernels 100 times
Precision: double
Array size: 268.4 MB (=0.3 GB)
Total size: 805.3 MB (=0.8 GB)
Using CUDA device {device}
Driver: 11040
Function    MBytes/sec  Min (sec)   Max         Average
Copy        1342177.280  0.00040     0.00041     0.00040
Mul         1342177.280  0.00040     0.00041     0.00040
Add         1342177.280  0.00060     0.00061     0.00060
Triad       1342177.280  0.00060     0.00061     0.00060
Dot         1342177.280  0.00040     0.00041     0.00040
"""


def test_logs_of_two_devices_under_one_machine_are_refused_unless_said_to_be_one(tmp_path):
    from xamm_ingest import read_babelstream

    (tmp_path / "mi210.out").write_text(STREAM.format(device="AMD Instinct MI210"))
    (tmp_path / "mi250x.out").write_text(STREAM.format(device="AMD Instinct MI250X"))
    rep = read_babelstream(tmp_path, machine="box", workers=1)
    assert rep.frame.height == 0 and len(rep.rejected) == 2
    assert all("MI210" in r.reason and "MI250X" in r.reason for r in rep.rejected)
    assert read_babelstream(tmp_path, machine="box", workers=1, one_device=True).frame.height == 10
    # one device spelled with the tag some implementations add is one device
    (tmp_path / "mi250x.out").write_text(STREAM.format(device="AMD Instinct MI210(gpu)"))
    assert read_babelstream(tmp_path, machine="box", workers=1).rejected == []


CPU_STREAM = STREAM.replace("Implementation: CUDA", "Implementation: OpenMP").replace(
    "Using CUDA device {device}", "Using OpenMP device {device}"
)


def test_a_cpu_and_a_gpu_under_one_machine_are_one_node_only_when_said_or_recorded(tmp_path):
    """Any two devices: a host CPU's log and a GPU's under one machine are refused unless
    --one-node says they are one node's or the registry records the machine with both; a run on a
    device kind the registry says the machine lacks is refused whatever it says."""
    from xamm_ingest import read_babelstream

    (tmp_path / "gpu.out").write_text(STREAM.format(device="NVIDIA A100"))
    (tmp_path / "cpu.out").write_text(CPU_STREAM.format(device="AMD EPYC 7763"))
    rep = read_babelstream(tmp_path, machine="box", workers=1)
    assert rep.frame.height == 0 and len(rep.rejected) == 2
    assert all("a CPU and a GPU" in r.reason and "--one-node" in r.reason for r in rep.rejected)
    ok = read_babelstream(tmp_path, machine="box", workers=1, one_node=True)
    assert sorted(set(ok.frame["device"])) == ["cpu", "gpu"] and ok.rejected == []
    # lassen is recorded with its CPU and its GPUs: one node's, said by the registry
    assert read_babelstream(tmp_path, machine="lassen", workers=1).rejected == []
    # v100-isambard is recorded as a GPU only: its CPU run is refused, --one-node or not
    rep = read_babelstream(tmp_path, machine="v100-isambard", workers=1, one_node=True)
    assert [Path(r.path).name for r in rep.rejected] == ["cpu.out"]
    assert "'v100-isambard' with its gpu only" in rep.rejected[0].reason


@pytest.mark.parametrize(
    "edit, record, rule",
    [
        (lambda t: t.replace("0.00060     0.00061     0.00060\nDot", "0.00060     0.00061     0.00000\nDot"), "line 14 (Triad)", "min <= average <= max"),  # noqa: E501
        (lambda t: t.replace("0.00041     0.00040\n", "0.00041     0.00400\n", 1), "line 11 (Copy)", "min <= average <= max"),  # noqa: E501
        (lambda t: t[: t.rindex("0.00040")] + "0.000", "line 15 (Dot)", "cut"),
        (lambda t: t.replace("Mul         1342177.280", "Mul         13421#7.280"), "line 12 (Mul)", "as BabelStream prints it"),  # noqa: E501
        (lambda t: t.replace("Add         1342177.280  0.00060     0.00061     0.00060\n", ""), "line 1 (Add)", "has no Add line"),  # noqa: E501
    ],
)  # fmt: skip
def test_a_babelstream_line_that_cannot_be_vouched_for_is_refused_by_name(
    tmp_path, edit, record, rule
):
    from xamm_ingest import read_babelstream

    (tmp_path / "s.out").write_text(edit(STREAM.format(device="NVIDIA A100")))
    rep = read_babelstream(tmp_path, machine="box", workers=1)
    assert [d for d in rep.dropped if d.record == record and rule in d.rule], rep.dropped
    assert rep.frame.height == 4  # the other kernels are kept


def test_a_repeated_caliper_record_is_refused_not_doubled(tmp_path):
    from xamm_data.tables.regions import RegionProfileError
    from xamm_ingest.regions import read_regions

    f = write_cali(tmp_path / "p.cali", [(["main"], {TIME: 5.5}), (["main", "solve"], {TIME: 5.0})],
                   {"cluster": "quartz"}, units={TIME: "sec"})  # fmt: skip
    assert read_regions(f).runtime_s == pytest.approx(5.5)
    lines = f.read_bytes().split(b"\n")
    i = next(i for i, ln in enumerate(lines) if ln.startswith(b"__rec=ctx"))
    f.write_bytes(b"\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]]))
    with pytest.raises(RegionProfileError, match="p.cali: region .* the same record appears twice"):
        read_regions(f)


def test_predict_holds_tables_to_the_bounds_ingest_holds_runs_to(tmp_path, capsys):
    pytest.importorskip("xgboost", reason="the models extra is not installed")
    from xamm_data.cli.commands import main as xamm

    t = tmp_path / "regions.csv"
    t.write_text("region,exclusive_s,inclusive_s\nmain,1e302,1e302\n")
    assert xamm(["predict", str(t), "--source", "quartz:cpu"]) == 1
    err = capsys.readouterr().err.strip()
    assert "regions.csv" in err and "outside the plausible range" in err and "\n" not in err


def test_predict_names_a_missing_path_and_writes_out_by_suffix(tmp_path, capsys, shared_data):
    pytest.importorskip("xgboost", reason="the models extra is not installed")
    from xamm_data.cli.commands import main as xamm

    assert xamm(["predict", str(tmp_path / "nope.cali")]) == 1
    assert f"{tmp_path / 'nope.cali'}: no such file" in capsys.readouterr().err
    prof = shared_data / "LLNL+thicket-tutorial/data/lulesh/230906-105532_880456_M8YbWSOYgGWa.cali"
    assert xamm(["predict", str(prof), "--out", str(tmp_path / "pred")]) == 0
    out = capsys.readouterr().out
    assert "predicted time per target" in out  # the table is shown, not hidden behind the file
    assert pl.read_parquet(tmp_path / "pred.parquet").height > 0
    assert xamm(["predict", str(prof), "--out", str(tmp_path / "pred.csv")]) == 0
    assert pl.read_csv(tmp_path / "pred.csv").height > 0
    assert xamm(["predict", str(prof), "--out", str(tmp_path / "pred.txt")]) == 1
    assert "expected a file ending in .parquet, .pq, .csv, .json" in capsys.readouterr().err


def test_history_is_a_table_of_commits_and_json_keeps_every_source(tmp_path, capsys, shared_data):
    from xamm_data.cli.commands import main as xamm

    runs = shared_data / "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane"
    store = tmp_path / "s"
    assert ingest(["rajaperf", str(runs), "--store", str(store), "--no-progress", "-q"]) == 0
    capsys.readouterr()
    assert xamm(["datasets", "history", "dane", "--store", str(store), "--json"]) == 0
    (commit,) = json.loads(capsys.readouterr().out)
    assert commit["xamm"]["n_sources"] == 5 and len(commit["xamm"]["sources"]) == 5
    assert xamm(["datasets", "history", "dane", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "5: clang14.0.6_8388608/O3/1/Base_Seq-default.cali (+4 more)" in out
    assert "O3/2/" not in out  # one line per commit, not every file name


def test_app_profiles_missing_from_the_store_points_at_the_profile_ingest(tmp_path):
    from xamm_data.hub.datasets import load_dataset

    with pytest.raises(FileNotFoundError, match="xamm-ingest caliper DIR --app APP"):
        load_dataset("quartz", "app_profiles", store=tmp_path / "s")
