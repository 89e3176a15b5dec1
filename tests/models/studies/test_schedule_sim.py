"""``xamm schedule-sim``: the dispatch simulation checked by hand, and jobs built from held-out
kernels' real runs."""

from __future__ import annotations

import numpy as np
import pytest

from xamm_models.studies.scheduling_sim import Job, arrivals, compare, simulate

NODES = {"fast": 1, "slow": 1}


def _jobs(believed_fast: float = 1.0) -> list[Job]:
    return [
        Job(
            arrival=t,
            true={"fast": 1.0, "slow": 10.0},
            believed={"predicted": {"fast": believed_fast, "slow": 10.0}},
        )
        for t in (0.0, 0.1, 0.2)
    ]


def test_the_oracle_schedule_by_hand():
    """Three 1 s jobs (10 s on the slow machine) at 0, 0.1, 0.2: all go to the fast one, ending at
    1, 2, 3."""
    got = simulate(_jobs(), NODES, "oracle")
    assert got["mean_turnaround_s"] == pytest.approx(((1 - 0) + (2 - 0.1) + (3 - 0.2)) / 3)
    assert got["makespan_s"] == pytest.approx(3.0)


def test_predictions_are_only_as_good_as_they_are():
    """Right predictions schedule as the oracle; a fast machine believed 20x slower is avoided, and
    it costs."""
    assert simulate(_jobs(), NODES, "predicted") == simulate(_jobs(), NODES, "oracle")
    wrong = simulate(_jobs(believed_fast=20.0), NODES, "predicted")
    assert wrong["mean_turnaround_s"] > simulate(_jobs(), NODES, "oracle")["mean_turnaround_s"] * 3


def test_seeded_and_every_policy_reported():
    rng = np.random.default_rng(1)
    jobs = [
        Job(
            arrival=float(t),
            true={"fast": float(d), "slow": float(10 * d)},
            believed={"predicted": {"fast": float(d), "slow": float(10 * d)}},
        )
        for t, d in zip(np.cumsum(rng.exponential(0.5, 300)), rng.uniform(0.5, 1.5, 300))
    ]
    nodes = {"fast": 2, "slow": 4}
    a, b = compare(jobs, nodes, seed=3), compare(jobs, nodes, seed=3)
    assert a == b and [r["policy"] for r in a] == ["oracle", "predicted", "least-loaded", "random"]
    assert compare(jobs, nodes, seed=4)[-1] != a[-1]  # the random policy follows its seed


def test_arrivals_offer_the_load_asked():
    t = arrivals(20000, np.full(20000, 2.0), {"a": 3, "b": 1}, 0.5, seed=0)
    rate = len(t) / t[-1]
    assert rate == pytest.approx(0.5 * 4 / 2.0, rel=0.03)  # load x nodes / mean best duration


@pytest.mark.slow
def test_jobs_are_held_out_kernels_with_their_measured_times(xplat_dataset):
    """Every job is a sample of a kernel its fold held out, its true durations the measured relR
    times the source's."""
    import polars as pl

    from xamm_models.studies.scheduling_jobs import REPS, fold_predictions, make_jobs

    ds = xplat_dataset
    preds = fold_predictions(ds, "mi300a-spx:cpu")
    assert preds.get_column("sample").is_unique().sum() < preds.height  # a sample, several targets
    truth = ds.pairs.filter(pl.col("source") == "mi300a-spx:cpu").select(
        "sample", "target", pl.col("relR").alias("m")
    )
    joined = preds.join(truth, on=["sample", "target"])
    assert (
        joined.height == preds.height
        and (joined.get_column("relR") == joined.get_column("m")).all()
    )
    nodes = {"h100-node:gpu": 2, "quartz:cpu": 4, "mi300a-spx:cpu": 2}
    jobs = make_jobs(preds, nodes, n_jobs=200, load=0.5, seed=0)
    assert all(set(j.true) == set(nodes) for j in jobs)
    ratio = jobs[0].true["quartz:cpu"] / jobs[0].true["mi300a-spx:cpu"]
    assert ratio in set(preds.filter(pl.col("target") == "quartz:cpu").get_column("relR").to_list())
    assert REPS == 1000
    # the device kind alone: one belief per fold and device scenario, the training pairs' median
    kinds = preds.with_columns(pl.col("target").str.ends_with(":gpu").alias("gpu"))
    assert kinds.group_by("gpu").agg(pl.col("relR_device-kind").n_unique()).get_column(
        "relR_device-kind"
    ).max() <= len(ds.get_idx_split("kernel-group"))
    res = {r["policy"]: r["mean_turnaround_s"] for r in compare(jobs, nodes)}
    assert {"roofline", "device-kind", "adapted", "predicted"} <= set(res)
    # on these runs: the margins are wide (see the README)
    assert res["oracle"] < res["predicted"] < res["random"]


def test_the_command_line_refuses_what_it_cannot_simulate(tmp_path, capsys):
    from xamm_data.cli.commands import main as xamm

    with pytest.raises(SystemExit) as e:
        # no node count
        xamm(["schedule-sim", "--store", str(tmp_path), "--nodes", "h100-node:gpu"])
    assert e.value.code == 2 and "MACHINE:DEVICE=NODES" in capsys.readouterr().err


def test_fold_predictions_are_computed_once_per_data_set_source_and_seed(monkeypatch):
    """Simulations of other clusters reuse a process's fold predictions; another data set (by
    content), source or seed computes them again."""
    from types import SimpleNamespace

    import polars as pl

    from xamm_models.studies import scheduling_jobs as sj

    calls = []

    def fake(ds, source, fraction, seed):
        calls.append((source, seed))
        return pl.DataFrame({"source": [source], "seed": [seed]})

    monkeypatch.setattr(sj, "_fold_predictions", fake)
    monkeypatch.setattr(sj, "_KEPT", {})
    ds = SimpleNamespace(version="v1", samples=pl.DataFrame({"a": [1.0]}))
    first = sj.fold_predictions(ds, "m:cpu")
    assert sj.fold_predictions(ds, "m:cpu") is first and calls == [("m:cpu", 0)]
    sj.fold_predictions(ds, "m:cpu", seed=1)
    sj.fold_predictions(ds, "n:gpu")
    other = SimpleNamespace(version="v1", samples=pl.DataFrame({"a": [2.0]}))  # other samples
    sj.fold_predictions(other, "m:cpu")
    assert calls == [("m:cpu", 0), ("m:cpu", 1), ("n:gpu", 0), ("m:cpu", 0)]
    for s in range(sj.KEEP + 2):  # at most KEEP kept
        sj.fold_predictions(ds, "m:cpu", seed=10 + s)
    assert len(sj._KEPT) == sj.KEEP
