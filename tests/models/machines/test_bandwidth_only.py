"""A signature from bandwidth-only runs claims only what they measure."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import REPO

from xamm_data.hub import snapshot
from xamm_ingest import read_babelstream
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.machines.physics import (
    OVERHEAD_SPAN_OCTAVES,
    PhysicsSignature,
    borrow_flop_rates,
    physics_signature,
    physics_signatures,
)
from xamm_models.studies import bandwidth_only

V100 = "UoB-HPC+performance-portability/benchmarking/2019/babelstream/v100-isambard"


@pytest.fixture(scope="module")
def v100(shared_data):
    rep = read_babelstream(shared_data / V100, machine="v100-isambard", workers=1)
    assert rep.rejected == []
    return samples_from_runs(rep.frame)


def test_one_size_of_streaming_runs_measures_no_overhead_and_no_flop_rate(v100):
    sig = physics_signature("v100-isambard:gpu", v100)
    assert sig.overhead_from == "unmeasured" and sig.overhead_s == 0.0
    assert sig.flop_rate_from == "unbounded" and sig.measures == ("bandwidth",)
    # the sustained bandwidth is what the kernels achieved, not 10x it (busy time is not clipped)
    triad = v100.filter(pl.col("app") == "Stream_TRIAD")
    achieved = (triad["bytes_per_rep"] / triad["time_per_rep_s"]).max()
    ws = float(triad["bytes_per_rep"][0])
    assert sig.bandwidth(np.array([ws]))[0] == pytest.approx(achieved, rel=0.1)


def test_a_bandwidth_only_signature_borrows_no_flop_rate(v100):
    quartz = physics_signatures(samples_from_runs(snapshot.read("benchmark_runs", "quartz")))[
        "quartz:cpu"
    ]
    only = physics_signature("v100-isambard:gpu", v100)
    out = borrow_flop_rates({"v100-isambard:gpu": only}, {"quartz:cpu": quartz})
    assert out["v100-isambard:gpu"].flop_rate_from == "unbounded"


def test_every_embedded_target_spans_enough_to_measure_its_overhead():
    """GPU runs launch kernels and their overhead is measured; sequential runs launch none. ruby's
    and the VM's runs hold OpenMP variants too, and a sample is a kernel's fastest variant: their
    fork and join is measured as an overhead."""
    runs = pl.concat([snapshot.read("benchmark_runs", m) for m in snapshot.machines()])
    for target, sig in physics_signatures(samples_from_runs(runs)).items():
        if target.endswith(":gpu"):
            assert sig.overhead_from == "measured" and sig.overhead_s > 0, target
            # a measured overhead is the default and stays out of the JSON
            assert "overhead_from" not in json.loads(sig.model_dump_json())
        elif target in ("ruby:cpu", "vm:cpu"):
            assert sig.overhead_from == "measured" and 0 < sig.overhead_s < 1e-3, target
        else:  # the other embedded CPU targets ran Base_Seq only: a loop, no launch
            assert sig.overhead_from == "none" and sig.overhead_s == 0.0, target
            assert "launch overhead" in sig.measures
    assert OVERHEAD_SPAN_OCTAVES < 14.8  # the narrowest span among them (MI300A)


def test_an_unmeasured_overhead_round_trips():
    sig = PhysicsSignature(
        target="x:gpu",
        overhead_s=0.0,
        flop_rate=1e18,
        bw_log2_ws=[30.0],
        bw=[1e12],
        n_samples=5,
        flop_rate_from="unbounded",
        overhead_from="unmeasured",
    )
    back = PhysicsSignature.model_validate_json(sig.model_dump_json())
    assert back == sig and np.isfinite(back.vector(np.array([1e6]))).all()


def test_the_page_is_what_the_study_computes():
    table = bandwidth_only.compare(bandwidth_only.embedded_samples())
    page = (REPO / "docs" / "bandwidth-only.md").read_text()
    assert page == bandwidth_only.markdown(table), (
        "run python -m xamm_models.studies.bandwidth_only --out docs/bandwidth-only.md"
    )
    stream = table.filter(pl.col("kernels") == "Stream")
    # lassen, quartz, dane, ruby and the VM ran RAJAPerf's Stream group
    assert set(stream["target"]) == {"lassen:gpu", "quartz:cpu", "dane:cpu", "ruby:cpu", "vm:cpu"}
    # On the kernels it is built from, the bandwidth-only signature stays within 2x of the full
    # one; both model most Stream samples within 2x of the measured time. The full signature's
    # bins hold every streaming kernel of their working-set range, so at dane's per-rank Stream
    # sizes (between two bins) it reads a slower kernel mix than the Stream kernels alone.
    assert (stream["median abs(log10 bw-only / full)"] < np.log10(2)).all()
    assert (stream["full: within 2x of measured"] >= 0.8).all()
    assert (stream["bw-only: within 2x of measured"] >= 0.8).all()


SWEEP_CSV = (
    "function,num_times,n_elements,sizeof,max_mbytes_per_sec,min_runtime,max_runtime,avg_runtime\n"
)
SWEEP_ARRAYS = {"Copy": 2, "Mul": 2, "Add": 3, "Triad": 3, "Dot": 2}


def _sweep_run(n: int, overhead: float, cache_bw: float, mem_bw: float, cache: float) -> str:
    """One ``--csv`` run of BabelStream 5.0 at ``n`` elements (its ``src/main.cpp`` layout), timed
    by a synthetic machine: launch overhead plus bytes at the cache or memory bandwidth."""
    lines = [SWEEP_CSV]
    for fn, arrays in SWEEP_ARRAYS.items():
        nbytes = arrays * 8 * n
        t = overhead + nbytes / (cache_bw if nbytes <= cache else mem_bw)
        lines.append(f"{fn},100,{n},8,{nbytes / t * 1e-6:.6g},{t:.6g},{t * 1.01:.6g},{t:.6g}\n")
    return "".join(lines)


def test_an_array_size_sweep_gives_bandwidth_per_size_and_its_overhead(tmp_path):
    """BabelStream swept over array sizes (``--arraysize``; the UoB logs hold one size per
    platform, so the runs are written here in BabelStream's own ``--csv`` layout): the signature
    keeps bandwidth per working set, measures the launch overhead the sweep exposes, and still
    claims no flop rate."""
    overhead, cache_bw, mem_bw, cache = 4e-6, 4e12, 1e12, 32e6
    for k in range(12, 28, 2):  # 2^12 .. 2^26 elements: 14 octaves of working set
        (tmp_path / f"n{k}.csv").write_text(_sweep_run(2**k, overhead, cache_bw, mem_bw, cache))
    rep = read_babelstream(
        tmp_path, machine="sweepbox", device="gpu", implementation="CUDA", workers=1
    )
    assert rep.rejected == [] and rep.frame.get_column("problem_size").n_unique() == 8
    sig = physics_signature("sweepbox:gpu", samples_from_runs(rep.frame))
    assert sig.measures == ("bandwidth", "launch overhead")
    assert sig.flop_rate_from == "unbounded"
    assert sig.overhead_s == pytest.approx(overhead, rel=0.3)
    assert sig.sustained_bandwidth == pytest.approx(mem_bw, rel=0.1)
    # in cache (a working set the sweep measured below the cache size) it streams faster, but
    # never faster than a run achieved, its launch overhead included
    in_cache = sig.bandwidth(np.array([3 * 8 * 2.0**20]))[0]
    achieved = (rep.frame["bytes_per_rep"] / rep.frame["time_per_rep_s"]).max()
    assert 1.5 * sig.sustained_bandwidth < in_cache <= achieved
