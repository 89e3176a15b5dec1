"""The main job and the examples, one per input kind, run as a user runs them, on real public data
(``../shared/data``), offline; their answers checked against independent readings of the files."""

from __future__ import annotations

import os
import subprocess
import sys

import caliperreader
import polars as pl
import pytest
from conftest import REPO

from xamm_models.zoo.registry import load_model

LULESH = "LLNL+thicket-tutorial/data/lulesh/230906-105532_880456_M8YbWSOYgGWa.cali"
DANE = "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608"


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out


def lulesh_seconds(path) -> float:
    """The file's total exclusive time in regions per rank: its ``sum#`` records over the ranks
    (records outside every region left out)."""
    r = caliperreader.CaliperReader()
    r.read(str(path))
    world = int(r.globals["mpi.world.size"])
    inside = (rec for rec in r.records if "path" in rec)
    return sum(float(rec.get("sum#scale#sum#time.duration.ns", 0)) for rec in inside) / world


def test_the_main_job_ranks_every_machine_for_a_real_lulesh_profile(shared_data, tmp_path):
    from xamm_ingest import read_rajaperf

    out = run("main_job.py", "--out", str(tmp_path))
    rows = read_rajaperf(shared_data / DANE, machine="dane", workers=1).frame.height
    assert f"ingested {rows} rows" in out.stdout and f"gives {rows} rows back" in out.stdout
    progs = pl.read_parquet(tmp_path / "programs.parquet")
    want = set(load_model("xamm/default").targets) | {"dane:cpu"}
    assert set(progs["target"]) == want and progs.height == len(want)
    assert progs["rank"].to_list() == list(range(1, len(want) + 1))
    assert progs["relR"].is_sorted() and progs["p_fastest"].sum() == pytest.approx(1.0)
    own = progs.filter(pl.col("target") == "quartz:cpu").row(0, named=True)
    assert own["relR"] == 1.0 and own["source_configuration"] == "8 ranks x 5 threads"
    assert own["time_s"] == pytest.approx(lulesh_seconds(shared_data / LULESH), rel=1e-9)
    dane = progs.filter(pl.col("target") == "dane:cpu").row(0, named=True)
    assert dane["target_configuration"] == "112 ranks x 1 thread, Base_Seq"
    assert dane["relR_lo"] < dane["relR"] < dane["relR_hi"]
    # the whole program is the sum of its regions, on every machine
    regions = pl.read_parquet(tmp_path / "regions.parquet")
    per = regions.group_by("target").agg(pl.col("time_s").sum()).sort("target")
    both = per.join(progs.select("target", pl.col("time_s").alias("p")), on="target")
    assert ((both["time_s"] - both["p"]).abs() <= 1e-9 * both["p"]).all()
    assert (tmp_path / "relR.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_hpctoolkit_database_is_predicted_from_its_given_source(shared_data, tmp_path):
    run("predict_hpctoolkit.py", "--out", str(tmp_path / "p.parquet"))
    p = pl.read_parquet(tmp_path / "p.parquet")
    own = p.filter(pl.col("target") == "mi250x:gpu").row(0, named=True)
    assert own["relR"] == 1.0 and own["source"] == "mi250x:gpu"
    assert {"mi210:gpu", "h100-node:gpu", "quartz:cpu"} <= set(p["target"])
    # a time-only program: faster wherever the signature streams faster, GPUs ahead of CPUs
    gpus = p.filter(pl.col("target").str.ends_with(":gpu"))["rank"].max()
    assert gpus < p.filter(pl.col("target").str.ends_with(":cpu"))["rank"].min()


def test_a_region_table_of_tealeaf_lands_within_2x_of_what_tealeaf_measured(shared_data, tmp_path):
    run("predict_region_table.py", "--out", str(tmp_path / "tealeaf.csv"))
    t = pl.read_parquet(tmp_path / "tealeaf.parquet")
    assert t.height == 4 and t["measured_relR"].is_not_null().all()
    ratio = t["relR"] / t["measured_relR"]
    assert ((ratio > 0.5) & (ratio < 2.0)).all()
    assert ((t["relR_lo"] <= t["measured_relR"]) & (t["measured_relR"] <= t["relR_hi"])).all()


def test_a_stored_application_is_its_trials_median(shared_data, tmp_path):
    """Five trials stored; the prediction starts from their median whole-program time (the
    files' own totals, read apart from the ingest)."""
    run("predict_stored_app.py", "--store", str(tmp_path / "s"), "--out", str(tmp_path / "p.pq"))
    p = pl.read_parquet(tmp_path / "p.pq")
    times = []
    for f in sorted((shared_data / LULESH).parent.glob("*.cali")):
        r = caliperreader.CaliperReader()
        r.read(str(f))
        if (r.globals.get("jobsize"), r.globals.get("problem_size")) == ("8", "30"):
            times.append(lulesh_seconds(f))
    assert len(times) == 5
    own = p.filter(pl.col("target") == "quartz:cpu").row(0, named=True)
    assert own["relR"] == 1.0
    assert own["time_source_s"] == pytest.approx(sorted(times)[2], rel=1e-3)
    assert set(load_model("xamm/default").targets) == set(p["target"])
