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

from xamm_models.predictors.kinds import load_model

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


#: the registry's machines with peaks recorded and no runs (docs/machines.md)
SPECIFICATIONS_ONLY = {"corona:gpu", "epyc-7742:cpu", "xeon-e5-2695-v2:cpu", "xeon-gold-6140:cpu"}


def test_the_main_job_ranks_every_machine_for_a_real_lulesh_profile(shared_data, tmp_path):
    """A whole quartz node's LULESH run against a whole node of each machine where the registry's
    facts allow it (seconds, ranked by the chance of being fastest), per rank where they do not
    (labelled, unranked); a CPU build onto a GPU says it assumes a port."""
    from xamm_ingest import read_rajaperf

    out = run("main_job.py", "--out", str(tmp_path))
    rows = read_rajaperf(shared_data / DANE, machine="dane", workers=1).frame.height
    assert f"ingested {rows} rows" in out.stdout and f"gives {rows} rows back" in out.stdout
    progs = pl.read_parquet(tmp_path / "programs.parquet")
    # every measured machine, and the registry's machines with peaks and no runs
    want = set(load_model("xamm/default").targets) | {"dane:cpu"} | SPECIFICATIONS_ONLY
    assert set(progs["target"]) == want and progs.height == len(want)
    ranked = progs.filter(pl.col("rank").is_not_null())
    assert ranked["rank"].to_list() == list(range(1, ranked.height + 1))
    # the contenders (intervals reaching below the lowest upper bound) by P(fastest), then the
    # others by predicted relR (xamm_models.predictors.contract.rank)
    contend = ranked.filter(pl.col("relR_lo") <= ranked["relR_hi"].min())
    assert contend["rank"].to_list() == list(range(1, contend.height + 1))
    assert (contend["p_fastest"].diff().drop_nulls() <= 0).all()
    assert (ranked["relR"].tail(ranked.height - contend.height).diff().drop_nulls() >= 0).all()
    assert ranked["p_fastest"].sum() == pytest.approx(1.0)
    assert set(ranked["basis"]) <= {"node", "node, scaled", "specifications"}
    assert ranked.filter(pl.col("basis") != "specifications").height >= 5
    apart = progs.filter(pl.col("rank").is_null())
    assert set(apart["basis"]) <= {"per rank", "specifications"}
    assert apart["p_fastest"].is_null().all()
    own = progs.filter(pl.col("target") == "quartz:cpu").row(0, named=True)
    assert own["relR"] == 1.0 and own["source_configuration"] == "8 ranks x 5 threads on 1 node"
    assert own["time_s"] == pytest.approx(lulesh_seconds(shared_data / LULESH), rel=1e-9)
    dane = progs.filter(pl.col("target") == "dane:cpu").row(0, named=True)
    assert dane["target_configuration"] == "112 ranks x 1 thread, Base_Seq"
    assert dane["basis"] == "node" and dane["target_from"] == "given"
    assert dane["relR_lo"] < dane["relR"] < dane["relR_hi"]
    gpus = progs.filter(pl.col("target").str.ends_with(":gpu"))
    assert (gpus["assumes"] == "a port to the GPU").all()
    # the whole program is the sum of its regions, on every machine
    regions = pl.read_parquet(tmp_path / "regions.parquet")
    per = regions.group_by("target").agg(pl.col("time_s").sum()).sort("target")
    both = per.join(progs.select("target", pl.col("time_s").alias("p")), on="target")
    assert ((both["time_s"] - both["p"]).abs() <= 1e-9 * both["p"]).all()
    assert (tmp_path / "relR.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "predicted seconds" in out.stdout and "whole nodes" in out.stdout


def test_an_hpctoolkit_database_is_predicted_from_its_given_source(shared_data, tmp_path):
    run("predict_hpctoolkit.py", "--out", str(tmp_path / "p.parquet"))
    p = pl.read_parquet(tmp_path / "p.parquet")
    own = p.filter(pl.col("target") == "mi250x:gpu").row(0, named=True)
    assert own["relR"] == 1.0 and own["source"] == "mi250x:gpu"
    assert {"mi210:gpu", "h100-node:gpu", "quartz:cpu"} <= set(p["target"])
    # a time-only program: faster wherever the signature streams faster, GPUs ahead of CPUs
    gpus = p.filter(pl.col("target").str.ends_with(":gpu"))["rank"].max()
    assert gpus < p.filter(pl.col("target").str.ends_with(":cpu"))["rank"].min()
    # the contenders (intervals below the lowest upper bound) by P(fastest), then by relR
    first = p.filter(pl.col("relR_lo") <= pl.col("relR_hi").min()).sort("rank")
    assert first["rank"].to_list() == list(range(1, first.height + 1))
    assert (first["p_fastest"].diff().drop_nulls() <= 0).all()
    rest = p.filter(pl.col("rank") > first.height).sort("rank")
    assert rest["relR"].is_sorted()


def test_a_region_table_of_tealeaf_lands_within_2x_of_what_tealeaf_measured(shared_data, tmp_path):
    run("predict_region_table.py", "--out", str(tmp_path / "tealeaf.csv"))
    t = pl.read_parquet(tmp_path / "tealeaf.parquet")
    assert t.height == 4 and t["measured_relR"].is_not_null().all()
    ratio = t["relR"] / t["measured_relR"]
    assert ((ratio > 0.5) & (ratio < 2.0)).all()
    assert ((t["relR_lo"] <= t["measured_relR"]) & (t["measured_relR"] <= t["relR_hi"])).all()


def _region_seconds(path) -> dict[str, float]:
    """Each region's exclusive seconds per rank: its ``sum#`` records over the ranks."""
    r = caliperreader.CaliperReader()
    r.read(str(path))
    world = int(r.globals["mpi.world.size"])
    out: dict[str, float] = {}
    for rec in r.records:
        if "path" in rec:
            key = "/".join(rec["path"]) if isinstance(rec["path"], list) else rec["path"]
            out[key] = out.get(key, 0.0) + float(rec.get("sum#scale#sum#time.duration.ns", 0))
    return {k: v / world for k, v in out.items()}


def test_a_stored_application_is_its_trials_median(shared_data, tmp_path):
    """Five trials of one configuration stored; the prediction starts from each region's median
    over them (the files' own records, read apart from the ingest), summed."""
    import statistics

    run("predict_stored_app.py", "--store", str(tmp_path / "s"), "--out", str(tmp_path / "p.pq"))
    p = pl.read_parquet(tmp_path / "p.pq")
    trials = []
    for f in sorted((shared_data / LULESH).parent.glob("*.cali")):
        r = caliperreader.CaliperReader()
        r.read(str(f))
        if (r.globals.get("jobsize"), r.globals.get("problem_size")) == ("8", "30"):
            trials.append(_region_seconds(f))
    assert len(trials) == 5
    regions = set().union(*trials)
    want = sum(statistics.median([t[k] for t in trials if k in t]) for k in regions)
    own = p.filter(pl.col("target") == "quartz:cpu").row(0, named=True)
    assert own["relR"] == 1.0
    assert own["time_source_s"] == pytest.approx(want, rel=1e-6)
    assert set(load_model("xamm/default").targets) | SPECIFICATIONS_ONLY == set(p["target"])
