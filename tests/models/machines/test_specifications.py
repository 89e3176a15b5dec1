"""Signatures from specifications: per-unit peaks from the registry file, efficiencies as medians,
the shipped calibration reproduced from the embedded snapshot, the evaluation's and the
prediction's answers against independent compositions, and a measured signature superseding one
from specifications in a registry's history."""

from __future__ import annotations

import json
import tomllib
from statistics import median

import numpy as np
import polars as pl
import pytest

from xamm_data.machines import registry as machines
from xamm_models.machines.specifications import (
    CALIBRATION_FILE,
    Calibration,
    Efficiency,
    calibrate,
    peaks,
    shipped_calibration,
    specification_figures,
    specification_signature,
)


def _toml() -> dict:
    return tomllib.loads(machines.SHIPPED.read_text())["machines"]


def test_a_units_peaks_are_the_registry_files_figures_over_its_cores_or_one_gpu():
    raw = _toml()
    q = raw["quartz"]  # a node's figures over its cores
    assert peaks("quartz:cpu") == pytest.approx(
        {
            "bandwidth": q["memory_bandwidth_gbs"] * 1e9 / q["cores_per_node"],
            "flop_rate": q["peak_gflops"] * 1e9 / q["cores_per_node"],
        }
    )
    e = raw["epyc-7742"]  # one processor's, where the paper names no node
    assert peaks("epyc-7742:cpu") == pytest.approx(
        {
            "bandwidth": e["processor_memory_bandwidth_gbs"] * 1e9 / e["processor_cores"],
            "flop_rate": e["processor_peak_gflops"] * 1e9 / e["processor_cores"],
        }
    )
    c = raw["corona"]  # one GPU's
    assert peaks("corona:gpu") == pytest.approx(
        {"bandwidth": c["gpu_memory_bandwidth_gbs"] * 1e9, "flop_rate": c["gpu_peak_gflops"] * 1e9}
    )
    # no figure guessed: a processor without a model, a CPU without one, an unknown machine
    assert peaks("xeon-gold:cpu") is None and peaks("corona:cpu") is None
    assert peaks("h100-node:gpu") is None and peaks("nosuch:cpu") is None


def test_the_paper_machines_with_peaks_cite_a_specification_and_the_others_say_why():
    raw = _toml()
    paper = {k: v for k, v in raw.items() if v.get("in_paper")}
    assert len(paper) == 16
    with_peaks = {k for k in paper for d in ("cpu", "gpu") if peaks(f"{k}:{d}") is not None}
    assert with_peaks == {"quartz", "ruby", "lassen", "corona", "epyc-7742", "xeon-e5-2695-v2",
                          "xeon-gold-6140"}  # fmt: skip
    for k in with_peaks:
        assert "specification" in paper[k]["source"], k


def _figs(rows) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"target": pl.String, "bw": pl.Float64, "flops": pl.Float64, "overhead": pl.Float64},
        orient="row",
    )


def test_efficiencies_are_medians_of_measured_over_peak_never_of_a_borrowed_rate():
    figs = _figs(
        [
            ("quartz:cpu", 8e9, 10e9, 0.0),
            ("ruby:cpu", 20e9, None, 0.0),  # no flop rate measured: not in the flop median
            ("dane:cpu", 6e9, 6.4e9, 0.0),
            ("lassen:gpu", 800e9, 2e12, 1e-5),
            ("vm:cpu", 5e9, 5e9, 0.0),  # no peaks recorded: calibrates nothing
        ]
    )
    eff = calibrate(figs)
    bw = [8e9 / peaks("quartz:cpu")["bandwidth"], 20e9 / peaks("ruby:cpu")["bandwidth"],
          6e9 / peaks("dane:cpu")["bandwidth"]]  # fmt: skip
    fl = [10e9 / peaks("quartz:cpu")["flop_rate"], 6.4e9 / peaks("dane:cpu")["flop_rate"]]
    assert eff["cpu"].bandwidth == pytest.approx(median(bw))
    assert eff["cpu"].flop_rate == pytest.approx(median(fl))
    assert eff["cpu"].machines == ["dane:cpu", "quartz:cpu", "ruby:cpu"]
    assert eff["gpu"].overhead_s == pytest.approx(1e-5)
    # the machine answered never calibrates itself
    assert calibrate(figs, exclude=("quartz",))["cpu"].machines == ["dane:cpu", "ruby:cpu"]
    assert "gpu" not in calibrate(figs, exclude=("lassen",))
    spec = specification_figures(["epyc-7742:cpu", "xeon-gold:cpu", "corona:gpu"], eff)
    assert spec.get_column("target").to_list() == ["corona:gpu", "epyc-7742:cpu"]
    row = spec.row(1, named=True)
    assert row["bw"] == pytest.approx(peaks("epyc-7742:cpu")["bandwidth"] * eff["cpu"].bandwidth)
    assert row["flops"] == pytest.approx(peaks("epyc-7742:cpu")["flop_rate"] * eff["cpu"].flop_rate)


def test_a_signature_from_specifications_claims_no_measurement():
    cal = Calibration(
        efficiencies={
            "cpu": Efficiency(
                kind="cpu", bandwidth=2.0, flop_rate=0.25, overhead_s=0.0, machines=["quartz:cpu"]
            )  # fmt: skip
        }
    )
    sig = specification_signature("epyc-7742:cpu", cal)
    p = peaks("epyc-7742:cpu")
    assert sig.measures == () and sig.flop_rate_from == "specifications"
    assert sig.sustained_bandwidth == pytest.approx(2.0 * p["bandwidth"])
    assert sig.bandwidth(np.array([1.0, 2.0**40])) == pytest.approx([2.0 * p["bandwidth"]] * 2)
    assert sig.flop_rate == pytest.approx(0.25 * p["flop_rate"])
    assert specification_signature("corona:gpu", cal) is None  # its kind is not calibrated


@pytest.fixture(scope="module")
def snapshot_set():
    from xamm_data import load_dataset
    from xamm_data.hub import snapshot
    from xamm_models.benchmark.dataset import XplatDataset

    runs = pl.concat([load_dataset(m) for m in snapshot.machines()], how="diagonal_relaxed")
    return XplatDataset(runs)


def test_the_shipped_calibration_is_the_study_run_on_the_embedded_snapshot(snapshot_set):
    from xamm_models.predictors.specifications import left_out_errors
    from xamm_models.studies.specifications import calibration

    ds = snapshot_set
    got = calibration(ds.samples, ds.pairs, ds.version)
    shipped = json.loads(CALIBRATION_FILE.read_text())
    assert shipped["data_version"] == ds.version
    for kind, e in shipped["efficiencies"].items():
        mine = got.efficiencies[kind]
        assert mine.machines == e["machines"]
        assert [mine.bandwidth, mine.flop_rate, mine.overhead_s] == pytest.approx(
            [e["bandwidth"], e["flop_rate"], e["overhead_s"]], rel=1e-9, abs=1e-15
        )
    assert set(got.spread) == set(shipped["spread"])
    for kind, bounds in shipped["spread"].items():
        assert got.spread[kind] == pytest.approx(bounds, abs=1e-9)
    assert got.pairs == shipped["pairs"] and shipped_calibration().coverage == 0.8
    # each left-out answer is the roofline with the left-out end's figures from its peaks and the
    # other machines' efficiencies: one pair composed by hand
    errs = left_out_errors(ds.samples, ds.pairs)
    assert set(errs.get_column("machine")) == {"dane", "lassen", "mi300a-spx", "quartz", "ruby"}
    _one_left_out_pair_by_hand(ds, errs)


def _one_left_out_pair_by_hand(ds, errs) -> None:
    from xamm_models.benchmark.baselines import machine_figures

    pair = ds.pairs.filter((pl.col("target") == "quartz:cpu") & (pl.col("source") == "ruby:cpu"))
    pair = pair.filter(pl.col("flops_per_rep") > 0).row(0, named=True)
    raw = machine_figures(ds.samples, borrow=False).filter(
        pl.col("target").is_in(["dane:cpu", "ruby:cpu"])
    )
    e_bw = median(r["bw"] / peaks(r["target"])["bandwidth"] for r in raw.iter_rows(named=True))
    e_fl = median(r["flops"] / peaks(r["target"])["flop_rate"] for r in raw.iter_rows(named=True))
    src = machine_figures(ds.samples).filter(pl.col("target") == "ruby:cpu").row(0, named=True)
    p = peaks("quartz:cpu")
    b, f, n = pair["bytes_per_rep"], pair["flops_per_rep"], max(pair["kernels_per_rep"] or 1, 1)
    t_tgt = max(b / (p["bandwidth"] * e_bw), f / (p["flop_rate"] * e_fl))
    t_src = max(b / src["bw"], f / src["flops"]) + src["overhead"] * n
    want = np.log10(pair["relR"] / (t_tgt / t_src))
    got = errs.filter(pl.col("machine") == "quartz").get_column("error").to_numpy()
    assert np.isclose(got, want, rtol=1e-9).any()


def test_the_evaluation_answers_a_left_out_machine_from_its_peaks_alone(snapshot_set):
    """On a nested leave-one-machine-out fold, the left-out machine's ends are answered with
    figures from its peaks x the efficiencies of the other measured machines, both from the runs
    without the fold's kernels (composed here by hand); rows without its ends are not answered."""
    from xamm_models.benchmark.baselines import machine_figures
    from xamm_models.experiments.specifications import _fold_answers
    from xamm_models.predictors.specifications import left_out_errors

    ds = snapshot_set
    fold = next(f for f in ds.get_idx_split("machine") if f.held_out_machine == "quartz")
    part = ds.pairs[fold.test].select("sample", "source", "target")
    y, end, bounds = _fold_answers(ds, part, fold)
    touches = ((part["source"] == "quartz:cpu") | (part["target"] == "quartz:cpu")).to_numpy()
    # its interval: dane and ruby left out in turn, on the fold's kernels, quartz nowhere
    seen_pairs = ds.pairs.filter(
        ~pl.col("app").is_in(list(fold.machine_exclude))
        & (pl.col("source") != "quartz:cpu")
        & (pl.col("target") != "quartz:cpu")
    )
    errs = left_out_errors(
        ds.samples.filter(
            ~pl.col("app").is_in(list(fold.machine_exclude)) & (pl.col("target") != "quartz:cpu")
        ),
        seen_pairs,
    )
    assert set(errs.get_column("machine")) >= {"dane", "ruby"} and "quartz" not in set(
        errs.get_column("machine")
    )
    e = errs.filter(pl.col("kind") == "cpu").get_column("error").to_numpy()
    assert bounds[touches] == pytest.approx(
        np.tile(np.quantile(e[np.isfinite(e)], [0.1, 0.9]), (int(touches.sum()), 1))
    )
    assert (end[touches] == "quartz:cpu").all() and np.isfinite(y[touches]).all()
    assert np.isnan(y[~touches]).all()
    seen = ds.samples.filter(~pl.col("app").is_in(list(fold.machine_exclude)))
    raw = machine_figures(seen, borrow=False).filter(
        pl.col("target").is_in(["dane:cpu", "ruby:cpu"])
    )
    e_bw = median(r["bw"] / peaks(r["target"])["bandwidth"] for r in raw.iter_rows(named=True))
    e_fl = median(r["flops"] / peaks(r["target"])["flop_rate"] for r in raw.iter_rows(named=True))
    figs = {r["target"]: r for r in machine_figures(seen).iter_rows(named=True)}
    p = peaks("quartz:cpu")
    i = int(np.flatnonzero((part["target"] == "quartz:cpu").to_numpy())[0])
    row = ds.pairs[fold.test].row(i, named=True)
    src = figs[row["source"]]
    b, f, n = row["bytes_per_rep"], row["flops_per_rep"] or 0.0, max(row["kernels_per_rep"] or 1, 1)
    t_tgt = max(b / (p["bandwidth"] * e_bw), f / (p["flop_rate"] * e_fl))
    t_src = max(b / src["bw"], f / src["flops"]) + src["overhead"] * n
    assert y[i] == pytest.approx(t_tgt / t_src, rel=1e-9)


def test_a_signature_says_one_thing_of_where_it_comes_from():
    """A record that claims specifications with figures from runs, or runs with none, is refused
    (a file pulled from a Hub or edited by hand is read through the same model)."""
    from pydantic import ValidationError

    from xamm_models.machines.signatures import Signature, specification_record

    rec = specification_record("epyc-7742:cpu", shipped_calibration())
    doc = rec.model_dump()
    assert doc["basis"] == "specifications"
    assert Signature.model_validate(doc) == rec
    for bad in (
        {**doc, "basis": "runs"},  # no samples, figures from specifications
        {**doc, "n_samples": 5},
        {**doc, "physics": {**doc["physics"], "flop_rate_from": "measured"}},
    ):
        with pytest.raises(ValidationError):
            Signature.model_validate(bad)
    without = {k: v for k, v in doc.items() if k != "basis"}  # read as from runs: refused
    with pytest.raises(ValidationError):
        Signature.model_validate(without)
