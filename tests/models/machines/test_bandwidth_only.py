"""A signature from bandwidth-only runs claims only what they measure."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from conftest import REPO
from xamm_ingest import read_babelstream

from xamm_data import snapshot
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
    runs = pl.concat([snapshot.read("benchmark_runs", m) for m in snapshot.machines()])
    for target, sig in physics_signatures(samples_from_runs(runs)).items():
        assert sig.overhead_from == "measured" and sig.overhead_s > 0, target
        # a measured overhead is the default and stays out of the JSON
        assert "overhead_from" not in json.loads(sig.model_dump_json())
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
    assert stream.height == 2  # lassen and quartz ran RAJAPerf's Stream group
    assert (stream["median abs(log10 bw-only / full)"] < 0.15).all()
