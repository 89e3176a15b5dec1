"""A target's signature is built per programming-model family, never the fastest across families:
a full run and its matching-family subset give the same predictions (xamm_models.predictors.
configurations; issue: a full RAJAPerf run as target benchmarks gave confident wrong answers)."""

from __future__ import annotations

import polars as pl
import pytest
from rajaperf_writer import sim_run, write_caliper

from xamm_data.machines.families import family_expr, profile_family
from xamm_data.tables.regions import ProfileMeta, RegionProfile, conform_regions
from xamm_models.errors import ProfileInputError
from xamm_models.predictors.composed import predict_profile
from xamm_models.predictors.configurations import mixed_runs, one_family
from xamm_models.predictors.kinds import load_model

FCR = "llnl+RAJAPerf-Benchmark/2026-FCR/data"
MIXED = (
    ("Base_Seq", "default"),
    ("RAJA_Seq", "default"),
    ("Base_OpenMP", "default"),
    ("RAJA_OpenMP", "default"),
)


@pytest.fixture(scope="module")
def model():
    return load_model("xamm/default")


@pytest.fixture(scope="module")
def newbox(tmp_path_factory) -> pl.DataFrame:
    """A run RAJAPerf writes (v2024.07.0 Caliper files) with Base/RAJA x Seq/OpenMP variants on
    one made-up machine, the OpenMP variants 30x faster on 56 threads: read as a centre would."""
    from xamm_ingest import read_rajaperf

    d = tmp_path_factory.mktemp("newbox")
    run = sim_run(1, seed=5, variants=MIXED, omp_max_threads=56, speedup={"OpenMP": 1 / 30})
    write_caliper(run, d, "v2024.07.0", cluster="newbox")
    rep = read_rajaperf([d], workers=1)
    assert rep.rejected == [] and set(rep.frame["variant"]) == {v for v, _ in MIXED}
    return rep.frame


def _profile(source: str, family: str) -> RegionProfile:
    """Two compute regions with work and one time-only region, measured on ``source`` as a
    ``family`` build."""
    regions = conform_regions(
        pl.DataFrame(
            {
                "region": ["main", "main/stream", "main/solve", "main/MPI_Allreduce"],
                "name": ["main", "stream", "solve", "MPI_Allreduce"],
                "parent": [None, "main", "main", "main"],
                "exclusive_s": [0.2, 2.0, 1.0, 0.1],
                "bytes": [None, 4e9, 1e8, None],
                "flops": [None, 5e8, 4e10, None],
                "work_from": ["table"] * 4,
                "category": ["compute", "compute", "compute", "communication"],
            }
        )
    )
    config = {
        "sequential": {"ranks": 1, "threads": 1, "programming_model": "MPI"},
        "threaded": {"ranks": 1, "threads": 36, "programming_model": "OpenMP"},
        "gpu": {"ranks": 4, "threads": 1, "gpus": 4, "programming_model": "CUDA"},
    }[family]
    meta = ProfileMeta(path="p", format="t", app="a", source=source, **config)
    return RegionProfile(meta, regions)


def _relr(pred, target: str) -> pl.DataFrame:
    return pred.regions.filter(pl.col("target") == target).select("region", "relR", "relR_lo")


def test_a_mixed_run_is_refused_by_the_predictor_and_one_family_is_its_family(model, newbox):
    mixed = mixed_runs(newbox)
    assert len(mixed) == 1 and "sequential" in mixed[0] and "threaded" in mixed[0]
    assert "Base_OpenMP, RAJA_OpenMP: ? ranks x 56 threads" in mixed[0]
    # streaming: the run's bandwidth binds, not a flop rate both families borrow alike
    prof = pl.DataFrame(
        {"bytes_per_rep": [4e9], "flops_per_rep": [5e6], "iterations_per_rep": [1e9],
         "runtime_s": [2e-9], "f_log_s_per_iter": [-8.7], "f_arith_intensity": [0.00125],
         "f_log_problem_size": [8.7]}
    )  # fmt: skip
    with pytest.raises(ProfileInputError, match="newbox:cpu's runs hold.*one_family"):
        model.predict(prof, "quartz:cpu", ["newbox:cpu"], target_benchmarks=newbox)
    for family, backend in (("sequential", "Seq"), ("threaded", "OpenMP")):
        # one family, and in it one variant kind: Base where the profile names none
        picked = one_family(newbox, family)
        assert set(picked["variant"]) == {f"Base_{backend}"} and picked.height == newbox.height // 4
        subset = newbox.filter(pl.col("variant") == f"Base_{backend}")
        a = model.predict(prof, "quartz:cpu", ["newbox:cpu"], target_benchmarks=picked)
        b = model.predict(prof, "quartz:cpu", ["newbox:cpu"], target_benchmarks=subset)
        assert a.equals(b)
    seq, thr = (
        model.predict(prof, "quartz:cpu", ["newbox:cpu"], target_benchmarks=one_family(newbox, f))
        for f in ("sequential", "threaded")
    )
    # 56 threads against one: the families are different machines' worth of figures
    assert seq["relR"][0] > 5 * thr["relR"][0]


@pytest.mark.parametrize("family,backend", [("sequential", "Seq"), ("threaded", "OpenMP")])
def test_the_full_run_and_the_matching_family_give_the_same_profile_prediction(
    model, newbox, family, backend
):
    prof = _profile("quartz:cpu", family)
    full = predict_profile(prof, model, targets=["newbox:cpu"], target_benchmarks=newbox)
    subset = newbox.filter(pl.col("variant") == f"Base_{backend}")
    alone = predict_profile(prof, model, targets=["newbox:cpu"], target_benchmarks=subset)
    assert _relr(full, "newbox:cpu").equals(_relr(alone, "newbox:cpu"))
    row = full.programs.filter(pl.col("target") == "newbox:cpu").row(0, named=True)
    assert row["target_configuration"].endswith(f"Base_{backend}")
    assert "its RAJA variants are not used" in row["runs_left_out"]
    other = "threaded" if family == "sequential" else "sequential"
    assert f"its {other} runs are not used" in row["runs_left_out"]
    assert row["target_from"] == "given"


def test_real_gpu_and_cpu_families_of_one_node_stay_apart(model, shared_data):
    """The H100 and MI300A nodes' runs hold Base_Seq on their CPUs and CUDA/HIP on their GPUs: a
    full run and the matching family give the same predictions, for a GPU profile and a CPU
    one."""
    from xamm_ingest import read_rajaperf

    names = (("H100", ""), ("MI300A", "-SPX"))
    paths = [shared_data / FCR / f"RPBenchmark_{m}_tier1{s}" for m, s in names]
    runs = pl.concat(
        [
            read_rajaperf([p], machine=m, workers=2).frame
            for p, m in zip(paths, ("newh100", "newmi300a"))
        ]  # fmt: skip
    ).with_columns(family_expr())
    assert set(runs["family"]) == {"sequential", "gpu"}
    for family, targets in (("gpu", ["newh100:gpu"]), ("sequential", ["newh100:cpu"])):
        prof = _profile("mi300a-spx:gpu" if family == "gpu" else "quartz:cpu", family)
        full = predict_profile(prof, model, targets=targets, target_benchmarks=runs.drop("family"))
        subset = runs.filter(pl.col("family") == family).drop("family")
        alone = predict_profile(prof, model, targets=targets, target_benchmarks=subset)
        assert _relr(full, targets[0]).equals(_relr(alone, targets[0]))


def test_a_cpu_build_onto_a_gpu_is_labelled_a_port_with_the_cpu_to_gpu_interval(model):
    prof = _profile("quartz:cpu", "sequential")
    pred = predict_profile(prof, model, targets=["h100-node:gpu", "dane:cpu"])
    by = {r["target"]: r for r in pred.programs.iter_rows(named=True)}
    assert by["h100-node:gpu"]["assumes"] == "a port to the GPU"
    assert by["dane:cpu"]["assumes"] == "" and by["quartz:cpu"]["assumes"] == ""
    # the interval of a port is the CPU->GPU scenario's: wider than CPU->CPU's for the same regions
    cal = model.choice.factor
    assert cal["CPU->GPU"] > cal["CPU->CPU"]
    work = pred.regions.filter(pl.col("region") == "main/stream")
    spread = {
        t: r["relR_hi"] / r["relR"] for t, r in zip(work["target"], work.iter_rows(named=True))
    }
    assert spread["h100-node:gpu"] == pytest.approx(10 ** cal["CPU->GPU"])


def test_a_profiles_family_comes_from_what_it_says():
    assert profile_family("CUDA", 1, None, "cpu")[0] == "gpu"
    assert profile_family(None, 5, None, "cpu") == ("threaded", "5 threads a rank")
    assert profile_family("MPI", 1, None, "cpu")[0] == "sequential"
    assert profile_family("OpenMP", None, None, None)[0] == "threaded"
    assert profile_family(None, None, 4, None)[0] == "gpu"
