"""The benchmark's baselines, each against a hand computation."""

from __future__ import annotations

import math

import polars as pl
import pytest

from xamm_models.benchmark import baselines as B


def pairs(rows, extra=None):
    cols = ["source", "target", "size_bucket", "relR", "f1"]
    df = pl.DataFrame(rows, schema=cols, orient="row")
    return df.with_columns(**(extra or {}))


TRAIN = pairs(
    [
        ("a:cpu", "b:gpu", 20, 1.0, 0.0),
        ("a:cpu", "b:gpu", 20, 2.0, 1.0),
        ("a:cpu", "b:gpu", 21, 8.0, 5.0),
        ("a:cpu", "c:cpu", 20, 0.5, 0.0),
    ]
)


def test_pair_median_falls_back_to_the_scenario_then_everything():
    test = pairs(
        [
            ("a:cpu", "b:gpu", 20, 1.0, 0.0),
            ("d:cpu", "e:gpu", 20, 1.0, 0.0),
            ("d:gpu", "e:gpu", 20, 1.0, 0.0),
        ]
    )
    got = B.pair_median(TRAIN, test)
    assert got[0] == pytest.approx(2.0)  # median of 1, 2, 8
    # unseen pair: the CPU->GPU scenario's median (the same three)
    assert got[1] == pytest.approx(2.0)
    # GPU->GPU never seen: the median log of all four (0.5, 1, 2, 8)
    assert got[2] == pytest.approx(math.sqrt(2.0))


def test_pair_size_median_uses_the_bucket_else_the_pair():
    test = pairs(
        [
            ("a:cpu", "b:gpu", 20, 1.0, 0.0),
            ("a:cpu", "b:gpu", 21, 1.0, 0.0),
            ("a:cpu", "b:gpu", 25, 1.0, 0.0),
        ]
    )
    got = B.pair_size_median(TRAIN, test)
    assert got[0] == pytest.approx(math.sqrt(2.0))  # geometric middle of 1 and 2 (median of logs)
    assert got[1] == pytest.approx(8.0) and got[2] == pytest.approx(2.0)


def _runs(target, rows):
    return [
        {"target": target, "time_per_rep_s": t, "bytes_per_rep": b, "flops_per_rep": f}
        for t, b, f in rows
    ]


def test_roofline_is_the_plain_roofline_from_each_machines_own_runs():
    """Worked by hand: the overhead is the cheapest launches' time; the bandwidth comes from
    streaming kernels (below 1 flop/byte) whose working set is at least the machine's median
    (s:cpu's 0.1 s kernel would say 1e9 B/s), never above what a run achieved; the flop rate from
    kernels of at least 1 flop/byte, and a machine with fewer than three (t:gpu) borrows its device
    kind's (u:gpu's); relR is the ratio of modelled times."""
    tiny = [(1e-6, 1e3, 0.0)] * 2
    s = tiny + [(0.1 + 1e-6, 1e8, 0.0), (1 + 1e-6, 2e9, 1e9), (2 + 1e-6, 4e9, 2e9)]
    s += [(1 + 1e-6, 1e9, 4e9), (2 + 1e-6, 2e9, 8e9), (4 + 1e-6, 4e9, 16e9)]
    t = [(1e-5, 1e3, 0.0)] * 2 + [(1e-3 + 1e-5, 1e9, 5e8)] * 2
    u = [(1e-5, 1e3, 0.0)] * 2 + [(1e-3 + 1e-5, 1e9, 1e9)] * 3
    samples = pl.DataFrame(_runs("s:cpu", s) + _runs("t:gpu", t) + _runs("u:gpu", u)).with_columns(
        pl.lit(1.0).alias("kernels_per_rep")
    )
    figs = B.machine_figures(samples).rows_by_key("target", named=True, unique=True)
    assert figs["s:cpu"]["overhead"] == pytest.approx(1e-6)
    assert figs["s:cpu"]["bw"] == pytest.approx(2e9, rel=1e-5)
    assert figs["s:cpu"]["flops"] == pytest.approx(4e9, rel=1e-5)
    # 1e9 B in 1e-3 s once the 1e-5 s overhead is out: capped at the best run, overhead included
    best = 1e9 / (1e-3 + 1e-5)
    assert figs["t:gpu"]["bw"] == pytest.approx(best) and figs["u:gpu"]["flops"] == pytest.approx(
        best
    )
    assert figs["t:gpu"]["flops"] == pytest.approx(best)  # borrowed: it has no dense kernel
    test = pl.DataFrame(
        {
            "source": ["s:cpu"],
            "target": ["t:gpu"],
            "relR": [1.0],
            "size_bucket": [20],
            "f1": [0.0],
            "bytes_per_rep": [2e9],
            "flops_per_rep": [4e9],
            "kernels_per_rep": [3.0],
            "iterations_per_rep": [1e6],
        }
    )
    fs, ft = figs["s:cpu"], figs["t:gpu"]
    t_s = max(2e9 / fs["bw"], 4e9 / fs["flops"]) + fs["overhead"] * 3
    t_t = max(2e9 / ft["bw"], 4e9 / ft["flops"]) + ft["overhead"] * 3
    assert B.roofline(TRAIN, test, samples=samples)[0] == pytest.approx(t_t / t_s)
    assert ft["overhead"] == pytest.approx(1e-5)


def test_knn_averages_the_nearest_training_rows_of_the_same_pair():
    test = pairs(
        [
            ("a:cpu", "b:gpu", 20, 1.0, 0.9),
            ("a:cpu", "b:gpu", 20, 1.0, 4.0),
            ("q:cpu", "b:gpu", 20, 1.0, 0.0),
        ]
    )
    got = B.knn(TRAIN, test, features=["f1"], k=1)
    assert got[0] == pytest.approx(2.0) and got[1] == pytest.approx(8.0)
    assert got[2] == pytest.approx(B.pair_median(TRAIN, test)[2])  # no training row of that pair
    two = B.knn(TRAIN, test, features=["f1"], k=2)
    assert two[0] == pytest.approx(math.sqrt(2.0))  # geometric mean of the two nearest (1 and 2)


def test_a_baseline_added_by_decorator_is_a_predictor_method_and_unknown_names_are_refused():
    from pydantic import ValidationError

    from xamm_models.predictors.baseline import BaselinePredictor

    @B.register_baseline("twice", needs=("size_bucket",))
    def twice(train, test, **_):
        return 2.0 * test["size_bucket"].to_numpy()

    try:
        m = BaselinePredictor(method="twice")
        m.pairs, m.figures = TRAIN, pl.DataFrame({"target": ["a:cpu", "b:gpu"]})
        ask = pl.DataFrame({"source": ["a:cpu"], "target": ["b:gpu"], "size_bucket": [3.0]})
        assert m.predict_pairs(ask)["relR"].to_list() == [6.0]
        with pytest.raises(ValueError, match=r"lacks the columns \['size_bucket'\]"):
            m.predict_pairs(ask.drop("size_bucket"))
    finally:
        B.BASELINES.remove("twice")
    with pytest.raises(ValidationError, match="unknown baseline 'twice'.*Known: knn"):
        BaselinePredictor(method="twice")
