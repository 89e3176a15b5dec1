"""Inputs that were once read silently wrong or accepted without a word: each is now a correct read
or a named refusal."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from rajaperf_writer import sim_run, write_csv

from xamm_ingest import read_profiles, read_rajaperf
from xamm_ingest.cli import main
from xamm_ingest.readers.profile_common import SampleSpec

MAPPING = '[columns]\napp = "app"\nmachine = "machine"\nruntime_s = "runtime_s"\n'


def test_a_timing_matrix_without_its_tuning_row_is_refused_not_relabelled(tmp_path):
    run = sim_run(1, seed=3)
    write_csv(run, tmp_path, "v2024.07.0")
    f = tmp_path / "RAJAPerf-timing-Average.csv"
    lines = f.read_text().splitlines()
    # the title, the variant row, then the data
    f.write_text("\n".join(lines[:2] + lines[3:]) + "\n")
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    assert rep.frame.is_empty()
    (why,) = [r.reason for r in rep.rejected]
    assert "no Tuning header row under the Variant row" in why and "timing-Average" in why


def test_a_non_integer_count_in_a_table_is_refused_not_truncated(tmp_path):
    (tmp_path / "t.csv").write_text(
        "app,machine,runtime_s,nthreads\nA,quartz,1.5,2.5\nA,quartz,2.0,4\n"
    )
    (tmp_path / "m.toml").write_text(MAPPING + 'threads = "nthreads"\n')
    rep = read_profiles("table", tmp_path / "t.csv", mapping=tmp_path / "m.toml")
    assert rep.frame.get_column("threads").to_list() == [4]
    (d,) = rep.dropped
    assert d.record == "row 2" and d.value == "2.5" and "whole number" in d.rule


@pytest.mark.parametrize("runtime", ["1e302", "1e-303", "-1", "inf"])
def test_implausible_application_runtimes_are_refused_by_record(tmp_path, runtime):
    (tmp_path / "t.csv").write_text(f"app,machine,runtime_s\nA,quartz,{runtime}\nA,quartz,2.0\n")
    (tmp_path / "m.toml").write_text(MAPPING)
    rep = read_profiles("table", tmp_path / "t.csv", mapping=tmp_path / "m.toml")
    assert rep.frame.get_column("runtime_s").to_list() == [2.0]
    (d,) = rep.dropped
    assert d.record == "row 2" and d.field == "runtime_s"


def test_the_runtime_bound_is_configurable(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("app,machine,runtime_s\nA,quartz,2e7\n")
    (tmp_path / "m.toml").write_text(MAPPING)
    args = [
        "table",
        str(tmp_path / "t.csv"),
        "--mapping",
        str(tmp_path / "m.toml"),
        "--dry-run",
        "--json",
    ]
    assert (
        main(args) == 1
        and "max_runtime_s" in json.loads(capsys.readouterr().out)["dropped_records"][0]["rule"]
    )
    assert main([*args, "--bound", "max_runtime_s=1e8"]) == 0


def test_a_caliper_profile_with_an_implausible_root_time_is_refused(tmp_path):
    from cali_writer import write_cali

    write_cali(
        tmp_path / "p.cali",
        [(["main"], {"inclusive#sum#time.duration": 1e302})],
        {"cluster": "quartz"},
        units={"inclusive#sum#time.duration": "sec"},
    )
    rep = read_profiles("caliper", tmp_path, SampleSpec(app="A"))
    assert rep.frame.is_empty() and "plausible range" in rep.rejected[0].reason


def test_bytes_per_rep_minus_one_is_null_and_said(tmp_path):
    run = sim_run(1, seed=3)
    run.kernels[0].bytes = -1  # RAJAPerf's initial value: never set by the kernel
    write_csv(run, tmp_path, "v2024.07.0")
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    daxpy = rep.frame.filter(pl.col("kernel") == "Basic_DAXPY")
    assert daxpy.height == 2 and daxpy.get_column("bytes_per_rep").null_count() == 2
    assert any(
        "-1 ('not set') stored as null for bytes_per_rep in 2 record(s)" in n for n in rep.notes
    )


def _hpctoolkit(shared_data, name):
    return (
        shared_data / "LLNL+hatchet" / "hatchet" / "tests" / "data" / f"hpctoolkit-{name}-database"
    )


def test_a_truncated_old_metric_db_is_refused(shared_data, tmp_path):
    db = tmp_path / "db"
    shutil.copytree(_hpctoolkit(shared_data, "cpi"), db)
    f = sorted(db.glob("*.metric-db"))[0]
    f.write_bytes(f.read_bytes()[:-8])
    rep = read_profiles("hpctoolkit", db, SampleSpec(app="cpi", machine="quartz"))
    assert (
        rep.frame.is_empty()
        and "truncated" in rep.rejected[0].reason
        and f.name in rep.rejected[0].reason
    )


@pytest.mark.parametrize("name", ["meta.db", "profile.db"])
def test_a_truncated_new_format_file_is_refused(shared_data, tmp_path, name):
    db = tmp_path / "db"
    shutil.copytree(
        shared_data
        / "HPCToolkit+hpcviewer.e4"
        / "tests"
        / "resources"
        / "metadb"
        / "loop-fork-cycles",
        db,
    )
    (db / name).write_bytes((db / name).read_bytes()[:-100])
    rep = read_profiles("hpctoolkit", db, SampleSpec(app="loop", machine="quartz"))
    assert (
        rep.frame.is_empty()
        and "truncated" in rep.rejected[0].reason
        and name in rep.rejected[0].reason
    )


def test_a_registry_alias_is_shown_in_the_summary(tmp_path, capsys):
    run = sim_run(1, seed=3)
    write_csv(run, tmp_path, "v2024.07.0")
    (tmp_path / "xamm.toml").write_text('machine = "M1"\n')
    assert (
        main(["rajaperf", str(tmp_path), "--dry-run", "--no-progress", "--workers", "1", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["machines"] == ["quartz"] and out["machine_aliases"] == {"M1": "quartz"}
    assert (
        main(
            [
                "rajaperf",
                str(tmp_path),
                "--dry-run",
                "--no-progress",
                "--workers",
                "1",
                "--machine",
                "m1",
            ]
        )
        == 0
    )
    assert "m1 \u2192 quartz" in capsys.readouterr().out


def _edit_cell(path, kernel: str, column: int, value: str) -> None:
    lines = path.read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith(kernel))
    cells = lines[i].split(",")
    cells[column] = f" {value} "
    lines[i] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")


def test_an_empty_timing_cell_drops_that_record_by_name_not_as_not_run(tmp_path):
    write_csv(sim_run(1, seed=3), tmp_path, "v2024.07.0")
    # the Base_CUDA column
    _edit_cell(tmp_path / "RAJAPerf-timing-Average.csv", "Stream_TRIAD", 2, "")
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    triad = rep.frame.filter(pl.col("kernel") == "Stream_TRIAD")
    assert triad.get_column("variant").to_list() == ["Base_Seq"]
    (d,) = rep.dropped
    assert (
        "Stream_TRIAD" in d.record and "empty cell" in d.rule and d.field == "Base_CUDA/block_256"
    )


@pytest.mark.parametrize("role", ["Minimum", "Maximum"])
def test_an_implausible_minimum_or_maximum_drops_the_record(tmp_path, role):
    write_csv(sim_run(1, seed=3), tmp_path, "v2024.07.0")
    _edit_cell(tmp_path / f"RAJAPerf-timing-{role}.csv", "Basic_DAXPY", 1, "1e300")
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    assert rep.frame.filter(
        (pl.col("kernel") == "Basic_DAXPY") & (pl.col("variant") == "Base_Seq")
    ).is_empty()
    (d,) = rep.dropped
    assert d.field == f"time_per_rep_{role[:3].lower()}_s" and "plausible range" in d.rule
