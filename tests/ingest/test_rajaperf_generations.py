"""Every RAJAPerf generation read correctly: Caliper time per rep equals the CSV's, for 1, 2 and 3
passes.

Fixtures come from :mod:`rajaperf_writer`, which writes what each RAJAPerf generation writes
(layouts derived from RAJAPerf's source; see its docstring and docs/formats.md). The CSV values are
checked against an independent parse with the ``csv`` module, and both against the simulated truth.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import polars as pl
import pytest
from cali_writer import rajaperf_cali
from rajaperf_writer import GENERATIONS, sim_run, write_caliper, write_csv

from xamm_ingest import read_rajaperf
from xamm_ingest.formats.rajaperf import TIMER_METRIC

CALIPER_GENERATIONS = [g for g in GENERATIONS if g != "v2026.04"]


def csv_time_per_rep(d: Path) -> dict[tuple[str, str, str], tuple[float, float]]:
    """{(kernel, variant, tuning): (time per rep, printed resolution per rep)} parsed with the csv
    module alone."""

    def rows(name):
        with open(d / name, newline="", encoding="utf-8-sig") as f:
            return [[c.strip() for c in r] for r in csv.reader(f)]

    if (d / "RAJAPerf-kernel-run-data.csv").exists():
        body = rows("RAJAPerf-kernel-run-data.csv")
        h = body[1]
        out = {}
        for r in body[2:]:
            text = r[h.index("Mean time per rep (sec.)")]
            mant, _, exp = text.partition("e")
            res = 0.5 * 10 ** ((int(exp) if exp else 0) - len(mant.split(".")[1]))
            out[(r[0], r[1], r[2])] = (float(text), res)
        return out
    kern = rows("RAJAPerf-kernels.csv")
    reps = {r[0]: int(r[kern[1].index("Reps")]) for r in kern[2:]}
    t = rows("RAJAPerf-timing-Average.csv")
    variants, tunings = t[1][1:], t[2][1:]
    return {
        (r[0], v, tu): (float(c) / reps[r[0]], 5e-7 / reps[r[0]])
        for r in t[3:]
        for v, tu, c in zip(variants, tunings, r[1:])
        if c != "Not run"
    }


def _truth(run) -> dict:
    return {
        (k.name, v, t): math.fsum(k.times[(v, t)]) / (run.npasses * k.reps)
        for k in run.kernels
        for v, t in run.variants
    }


@pytest.mark.parametrize("gen", CALIPER_GENERATIONS)
@pytest.mark.parametrize("npasses", [1, 2, 3])
def test_caliper_time_per_rep_equals_the_csv(tmp_path, gen, npasses):
    run = sim_run(npasses, seed=npasses)
    write_csv(run, tmp_path, gen)
    write_caliper(run, tmp_path, gen)
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    assert rep.rejected == [] and rep.dropped == [] and rep.merged_rows == 8
    independent, truth = csv_time_per_rep(tmp_path), _truth(run)
    for r in rep.frame.iter_rows(named=True):
        key = (r["kernel"], r["variant"], r["tuning"])
        # the Caliper row was kept, its time checked
        assert r["source_format"].startswith("caliper")
        t_csv, res = independent[key]
        assert r["time_per_rep_s"] == pytest.approx(t_csv, rel=1e-4, abs=res)
        assert r["time_per_rep_s"] == pytest.approx(truth[key], rel=1e-9)
        assert r["npasses"] == npasses and r["reps"] == next(
            k.reps for k in run.kernels if k.name == key[0]
        )


@pytest.mark.parametrize("npasses", [2, 3])
def test_per_pass_records_of_the_pre_release_branch_are_summed(tmp_path, npasses):
    """Pass 1 and passes 2..N are two records of one kernel; averaging them halved the time (the old
    bug)."""
    run = sim_run(npasses, seed=7)
    (cali,) = [p for p in write_caliper(run, tmp_path, "pre-release") if p.name == "Base_Seq.cali"]
    import caliperreader

    reader = caliperreader.CaliperReader()
    reader.read(str(cali))
    daxpy = [r for r in reader.records if r.get("path") == ["Base_Seq", "Basic", "Basic_DAXPY"]]
    assert len(daxpy) == 2  # the layout under test: one record per distinct group-by key
    total = sum(float(r["avg#inclusive#sum#time.duration"]) for r in daxpy)
    rep = read_rajaperf(cali, machine="sim-node", workers=1)
    row = rep.frame.filter(pl.col("kernel") == "Basic_DAXPY").row(0, named=True)
    assert row["time_per_rep_s"] == pytest.approx(total / (500 * npasses), rel=1e-12)
    assert row["time_per_rep_s"] == pytest.approx(
        _truth(run)[("Basic_DAXPY", "Base_Seq", "default")], rel=1e-9
    )
    assert row["problem_size"] == 1_000_000 and row["reps"] == 500


@pytest.mark.parametrize("gen", ["v2023.06.0", "v2024.07.0", "develop-2024.10"])
def test_figures_leaked_from_the_last_kernel_are_not_trusted_without_the_csv(tmp_path, gen):
    run = sim_run(2, seed=3)
    write_caliper(run, tmp_path, gen)
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    assert rep.rejected == [] and rep.dropped
    assert all("may be another kernel's" in d.rule and "--npasses 1" in d.rule for d in rep.dropped)
    kept = set(rep.frame.get_column("kernel"))
    # split records reveal their own figures; the last kernel's are its own
    if gen == "develop-2024.10":
        assert kept == {"Apps_ENERGY"}
        row = rep.frame.filter(pl.col("variant") == "Base_Seq").row(0, named=True)
        assert row["problem_size"] == 1_000_000 and row["reps"] == 130
        assert row["time_per_rep_s"] == pytest.approx(
            _truth(run)[("Apps_ENERGY", "Base_Seq", "default")], rel=1e-9
        )
    else:
        assert kept == set()


@pytest.mark.parametrize("gen", GENERATIONS)
def test_csv_alone_is_read_for_every_generation(tmp_path, gen):
    run = sim_run(2, seed=11)
    write_csv(run, tmp_path, gen)
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    assert rep.rejected == [] and rep.dropped == [] and rep.frame.height == 8
    independent = csv_time_per_rep(tmp_path)
    for r in rep.frame.iter_rows(named=True):
        t, res = independent[(r["kernel"], r["variant"], r["tuning"])]
        # "Kernels run without MPI"
        assert r["time_per_rep_s"] == pytest.approx(t, rel=1e-12) and r["ranks"] == 1


@pytest.mark.parametrize("gen", CALIPER_GENERATIONS)
@pytest.mark.parametrize("npasses", [1, 2])
def test_two_timers_with_real_same_run_noise_merge_and_keep_both_times(tmp_path, gen, npasses):
    """Caliper's timer differs from RAJAPerf's as in real same-run outputs: every record of a one-
    or two-pass run merges (100% of rows stored), the row keeps Caliper's time and RAJAPerf's beside
    it, each equal to an independent parse of its own file."""
    import random

    run = sim_run(npasses, seed=7)
    write_csv(run, tmp_path, gen)
    cali = write_caliper(run, tmp_path, gen, skew=random.Random(7))
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    assert rep.rejected == [] and rep.dropped == [] and rep.merged_rows == rep.frame.height == 8
    csv_times = csv_time_per_rep(tmp_path)
    cali_times = {}
    for f in cali:
        for kv, t in _cali_time_per_rep(f, run).items():
            cali_times[kv] = t
    skews = []
    for r in rep.frame.iter_rows(named=True):
        key = (r["kernel"], r["variant"], r["tuning"])
        timer = {m["name"]: m["value"] for m in r["extra_metrics"]}[TIMER_METRIC]
        assert r["time_per_rep_s"] == pytest.approx(cali_times[key] / npasses, rel=1e-9)
        assert timer == pytest.approx(csv_times[key][0], rel=1e-12)
        skews.append(abs(r["time_per_rep_s"] / timer - 1))
    assert max(skews) > 1e-4  # the two timers really differ beyond the old 1e-4 tolerance


def _cali_time_per_rep(f: Path, run) -> dict:
    """{(kernel, variant, tuning): time of all passes per rep} of one RAJAPerf .cali, read with
    caliperreader (a region's records are parts of one total: summed)."""
    import caliperreader

    r = caliperreader.CaliperReader()
    r.read(str(f))
    reps = {k.name: k.reps for k in run.kernels}
    out = {}
    for rec in r.records:
        p = rec.get("path")
        if not isinstance(p, list):
            continue
        # RAJAPerf -> Group -> Kernel, one variant-tuning per file
        if p[-1] in reps and "tuning" in r.globals:
            key, kernel = (p[-1], r.globals["variant"], r.globals["tuning"]), p[-1]
        # the pre-release branch: Variant -> Group -> Kernel -> Kernel.tuning
        elif len(p) == 4 and p[2] in reps:
            key, kernel = (p[2], p[0], p[3].split(".", 1)[1]), p[2]
        else:
            continue
        out[key] = out.get(key, 0.0) + float(rec["avg#inclusive#sum#time.duration"]) / reps[kernel]
    return out


@pytest.mark.parametrize("gen", CALIPER_GENERATIONS)
def test_a_gross_disagreement_refuses_that_record_only_naming_both_values(tmp_path, gen):
    """A pass count applied twice (2x) is no timer noise: that kernel-variant-tuning is refused in
    both files, and every other record of both files is kept."""
    run = sim_run(1, seed=5)
    write_caliper(run, tmp_path, gen)
    cali_t = _truth(run)[("Stream_TRIAD", "Base_Seq", "default")]
    run.kernels[1].times[("Base_Seq", "default")] = [
        t * 2 for t in run.kernels[1].times[("Base_Seq", "default")]
    ]
    write_csv(run, tmp_path, gen)
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    assert rep.rejected == []
    assert len(rep.dropped) == 2  # one per side of the pair
    for d in rep.dropped:
        assert "Stream_TRIAD" in d.record or "Stream_TRIAD" in d.rule
        assert (
            f"{cali_t:.6g}"[:5] in d.rule
            and f"{2 * cali_t:.6g}"[:5] in d.rule
            and "--rtol" in d.rule
        )
    assert {Path(d.path).suffix for d in rep.dropped} == {".cali", ".csv"}
    keys = set(rep.frame.select("kernel", "variant").iter_rows())
    assert ("Stream_TRIAD", "Base_Seq") not in keys and len(keys) == 7 and rep.merged_rows == 7


def test_with_a_looser_rtol_the_same_pair_merges(tmp_path):
    run = sim_run(1, seed=5)
    write_caliper(run, tmp_path, "v2024.07.0")
    run.kernels[1].times[("Base_Seq", "default")] = [
        t * 1.3 for t in run.kernels[1].times[("Base_Seq", "default")]
    ]
    write_csv(run, tmp_path, "v2024.07.0")
    assert len(read_rajaperf(tmp_path, machine="sim-node", workers=1).dropped) == 2
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1, rtol=0.5)
    assert rep.dropped == [] and rep.merged_rows == 8


def test_v2024_nan_block_size_and_features(tmp_path):
    run = sim_run(1, seed=2)
    write_caliper(run, tmp_path, "v2024.07.0")
    df = read_rajaperf(tmp_path, machine="sim-node", workers=1).frame
    seq, gpu = (
        df.filter(pl.col("variant") == "Base_Seq"),
        df.filter(pl.col("variant") == "Base_CUDA"),
    )
    assert seq.get_column("block_size").null_count() == 4 and set(gpu.get_column("block_size")) == {
        256
    }
    extra = seq.get_column("extra_metrics").to_list()[0]
    assert {"name": "FeatureForall", "value": 1.0} in extra


def test_nan_inf_and_empty_optional_metadata_become_null(tmp_path):
    ks = {"Basic_DAXPY": {"time": 0.5, "reps": 500, "size": 1000, "bytes": 24000, "flops": 2000}}
    f = rajaperf_cali(
        tmp_path / "Base_OpenMP-default.cali",
        ks,
        variant="Base_OpenMP",
        cluster="sim-node",
        extra_globals={"omp_max_threads": "nan", "ProblemSizeRunParam": "inf", "launchdate": ""},
    )
    rep = read_rajaperf(f, workers=1)
    assert rep.rejected == [] and rep.dropped == []
    r = rep.frame.row(0, named=True)
    assert r["omp_max_threads"] is None and r["threads"] is None and r["problem_size_param"] is None
    assert r["run_date"] is None and r["time_per_rep_s"] == pytest.approx(1e-3)


def test_unknown_caliper_metrics_are_kept(tmp_path):
    from cali_writer import write_cali

    path = ["RAJAPerf", "Basic", "Basic_DAXPY"]
    m = {
        "inclusive#sum#time.duration": 0.5,
        "any#ProblemSize": 1000.0,
        "any#Reps": 500.0,
        "any#topdown.retiring": 0.4,
        "any#topdown.heavy_operations": 0.1,
        "any#NewPerKernelMetric": 7.0,
    }
    f = write_cali(
        tmp_path / "Base_Seq-default.cali",
        [(path, m)],
        {"cluster": "sim-node", "variant": "Base_Seq", "tuning": "default"},
        units={"inclusive#sum#time.duration": "sec"},
    )
    r = read_rajaperf(f, workers=1).frame.row(0, named=True)
    assert r["topdown_retiring"] == pytest.approx(0.4)
    names = {e["name"]: e["value"] for e in r["extra_metrics"]}
    assert names == {"any#topdown.heavy_operations": 0.1, "any#NewPerKernelMetric": 7.0}


def test_csv_files_take_the_machine_the_caliper_files_beside_them_name(tmp_path):
    run = sim_run(1, seed=9)
    write_csv(run, tmp_path / "a", "v2024.07.0")
    write_caliper(run, tmp_path / "a", "v2024.07.0", cluster="Quartz")
    write_csv(run, tmp_path / "b", "v2024.07.0")  # a run without Caliper files: no machine to take
    rep = read_rajaperf(tmp_path, workers=1)
    assert set(rep.frame.get_column("machine")) == {"quartz"} and rep.merged_rows == 8
    (why,) = [r.reason for r in rep.rejected]
    assert "b/RAJAPerf" in why and "no Caliper file of the same run lies beside them" in why


def test_caliper_files_naming_different_clusters_leave_the_csv_without_a_machine(tmp_path):
    run = sim_run(1, seed=9)
    write_csv(run, tmp_path, "v2024.07.0")
    one, two = write_caliper(run, tmp_path, "v2024.07.0", cluster="node-a")
    two.write_text(two.read_text().replace("node-a", "node-b"))
    rep = read_rajaperf(tmp_path, workers=1)
    csv_reason = next(r.reason for r in rep.rejected if ".csv" in r.path)
    assert "name different clusters: node-a" in csv_reason and "node-b" in csv_reason
