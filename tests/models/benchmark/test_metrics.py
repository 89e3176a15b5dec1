"""The log-scale metrics, hand-computed, and their bootstrap intervals over kernels."""

from __future__ import annotations

import math

import polars as pl
import pytest

from xamm_models.benchmark.metrics import bootstrap, compare, score


def frame(rows):
    return pl.DataFrame(
        rows, schema=["sample", "app", "source", "target", "y_true", "y_pred"], orient="row"
    )


# one sample on one source, three targets: truth 0.5 < 2 < 4; the prediction swaps the last two
THREE = frame(
    [
        ("s1", "K1", "a:cpu", "b:cpu", 2.0, 3.0),
        ("s1", "K1", "a:cpu", "c:gpu", 0.5, 0.55),
        ("s1", "K1", "a:cpu", "d:cpu", 4.0, 2.9),
    ]
)


def test_pointwise_metrics_hand_computed():
    m = score(THREE)
    # .176, .041, .140
    errs = [abs(math.log10(3 / 2)), abs(math.log10(0.55 / 0.5)), abs(math.log10(2.9 / 4))]
    assert m["within_1_25"] == pytest.approx(1 / 3) and m["within_2"] == 1.0
    assert m["median_abs_log10"] == pytest.approx(sorted(errs)[1])
    assert m["mape"] == pytest.approx((0.5 + 0.1 + 0.275) / 3 * 100)
    # pairs of targets: (b,c) right, (b,d) wrong, (c,d) right -> 2/3; the fastest (c) is predicted
    # fastest
    assert m["ranking_accuracy"] == pytest.approx(2 / 3) and m["top1_accuracy"] == 1.0
    assert m["r2_log_within_pair"] is None  # one row per machine pair: no within-pair spread


def test_ties_in_the_prediction_count_half_and_ties_in_the_truth_are_skipped():
    tied = frame(
        [
            ("s", "K", "a:cpu", "b:cpu", 1.0, 2.0),
            ("s", "K", "a:cpu", "c:cpu", 3.0, 2.0),
            ("s", "K", "a:cpu", "d:cpu", 3.0, 9.0),
        ]
    )
    # (b,c): predicted tie -> 0.5; (b,d): right -> 1; (c,d): true tie -> skipped
    assert score(tied)["ranking_accuracy"] == pytest.approx(0.75)


def test_r2_is_taken_within_each_machine_pair():
    rows = []
    for i, (t, p) in enumerate([(1, 1.1), (2, 1.8), (4, 4.4), (8, 7.0)]):
        rows.append((f"s{i}", f"K{i}", "a:cpu", "b:gpu", 100.0 * t, 100.0 * p))  # pair offset 100x
        # perfect inside its pair
        rows.append((f"s{i}", f"K{i}", "a:cpu", "c:cpu", 0.1 * t, 0.1 * t * 1.0))
    m = score(frame(rows))
    lt = [math.log(t) for t in (1, 2, 4, 8)]
    lp = [math.log(p) for p in (1.1, 1.8, 4.4, 7.0)]
    mean = sum(lt) / 4
    r2_ab = 1 - sum((a - b) ** 2 for a, b in zip(lt, lp)) / sum((a - mean) ** 2 for a in lt)
    assert m["r2_log_within_pair"] == pytest.approx((r2_ab + 1.0) / 2)


def test_mape_rewards_a_tiny_constant_the_log_metrics_do_not():
    truth = [0.3, 2.0, 5.0, 40.0]
    honest = frame([(f"s{i}", f"K{i}", "a:cpu", "b:cpu", t, t * 3) for i, t in enumerate(truth)])
    constant = frame([(f"s{i}", f"K{i}", "a:cpu", "b:cpu", t, 1e-6) for i, t in enumerate(truth)])
    assert score(constant)["mape"] < score(honest)["mape"]  # the flaw the module docstring states
    assert (
        score(constant)["within_2"]
        == 0
        < score(constant)["median_abs_log10"]
        > score(honest)["median_abs_log10"]
    )


def _kernels(n: int, factor: float) -> pl.DataFrame:
    return frame(
        [
            (f"s{i}", f"K{i}", "a:cpu", "b:cpu", 1.0 + i, (1.0 + i) * (factor if i % 2 else 1.0))
            for i in range(n)
        ]
    )


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    df = _kernels(30, 3.0)  # half exact, half 3x off
    a, b = bootstrap(df, n=200, seed=1), bootstrap(df, n=200, seed=1)
    assert a == b
    w = a["within_2"]
    assert (
        w["value"] == pytest.approx(0.5) and w["lo"] <= 0.5 <= w["hi"] and w["hi"] - w["lo"] > 0.05
    )
    assert bootstrap(df, n=200, seed=2)["within_2"] != w  # the seed is used


def test_compare_reports_the_paired_difference():
    exact = _kernels(30, 1.0)
    off = _kernels(30, 3.0)
    same = compare(exact, exact, n=100)
    assert same["within_2"] == {"difference": 0.0, "lo": 0.0, "hi": 0.0, "better": "neither"}
    c = compare(exact, off, n=200)
    assert c["within_2"]["difference"] == pytest.approx(0.5) and c["within_2"]["better"] == "a"
    # half the kernels exact: the median error flips between 0 and log10(3) across resamples, so no
    # verdict
    assert c["median_abs_log10"]["difference"] < 0 and c["median_abs_log10"]["better"] == "neither"
    all_off = exact.with_columns(pl.col("y_pred") * 3)
    d = compare(exact, all_off, n=100)["median_abs_log10"]
    # lower is better
    assert d["difference"] == pytest.approx(-math.log10(3)) and d["better"] == "a"
    with pytest.raises(ValueError, match="different rows"):
        compare(exact, off.head(10))


def test_the_vectorised_resample_equals_scoring_the_resampled_frame():
    """A draw's metrics from kernel weights equal score() on the frame that draw builds (duplicated
    kernels keep distinct sample ids, so their ranking groups count once per draw)."""
    import numpy as np

    from xamm_models.benchmark.metrics import _KernelStats

    rng = np.random.default_rng(3)
    rows = [
        (f"s{i}", f"K{i % 7}", src, tgt, float(rng.lognormal(0, 1)), float(rng.lognormal(0, 1)))
        for i in range(40)
        for src, tgt in (("a:cpu", "b:gpu"), ("a:cpu", "c:cpu"), ("b:gpu", "c:cpu"))
    ]
    df = frame(rows)
    st = _KernelStats(df)
    counts = np.array([2, 0, 1, 3, 0, 1, 0], dtype=float)
    parts = [
        df.filter(pl.col("app") == a).with_columns(
            pl.concat_str("sample", pl.lit(f"#{j}")).alias("sample")
        )
        for i, a in enumerate(st.apps)
        for j in range(int(counts[i]))
    ]
    want = score(pl.concat(parts))
    got = st.values(counts[None, :])
    for m in (
        "within_1_25",
        "within_2",
        "median_abs_log10",
        "r2_log_within_pair",
        "ranking_accuracy",
        "top1_accuracy",
        "mape",
    ):
        assert got[m][0] == pytest.approx(want[m], rel=1e-9), m
    point = st.values(np.ones((1, len(st.apps))))
    assert point["median_abs_log10"][0] == pytest.approx(score(df)["median_abs_log10"])


def test_coverage_counts_truths_inside_the_interval_and_is_never_compared():
    with_iv = THREE.with_columns(
        pl.Series("y_lo", [1.0, 0.6, 3.0]), pl.Series("y_hi", [2.0, 1.0, 5.0])
    )
    # 2.0 in [1, 2] (edges count), 0.5 not in [0.6, 1], 4.0 in [3, 5]
    assert score(with_iv)["coverage"] == pytest.approx(2 / 3)
    assert score(THREE)["coverage"] is None  # no interval, no coverage
    b = bootstrap(with_iv, n=50)
    assert b["coverage"]["value"] == pytest.approx(2 / 3)
    c = compare(with_iv, with_iv.with_columns(pl.col("y_hi") * 10))
    assert c["coverage"]["better"] == "neither"  # coverage has no better direction


def _ranking_by_hand(rows) -> tuple[float, float]:
    """Ranking and top-1 accuracy over every (sample, source), in plain Python."""
    groups: dict = {}
    for s, _, src, tgt, yt, yp in rows:
        groups.setdefault((s, src), []).append((tgt, yt, yp))
    hit = n = top_hit = top_n = 0
    for g in groups.values():
        for i, (ta, ya, pa) in enumerate(g):
            for tb, yb, pb in g[i + 1 :]:
                if ta == tb or ya == yb:
                    continue
                n += 1
                hit += 0.5 if pa == pb else float((ya < yb) == (pa < pb))
        if len(g) >= 2:
            top_n += 1
            top_hit += min(g, key=lambda r: r[1])[0] == min(g, key=lambda r: r[2])[0]
    return hit / n, top_hit / top_n


def test_ranking_and_top1_equal_a_plain_python_count_on_seeded_groups():
    """Groups of 1 to 7 targets, ties in truth and prediction drawn on purpose, kernels shared
    across groups: the vectorised counts equal the nested loops."""
    import random

    rng = random.Random(7)
    rows = []
    for s in range(300):
        targets = rng.sample([f"m{i}:cpu" for i in range(9)], rng.randint(1, 7))
        for t in targets:
            yt = rng.choice([0.5, 1.0, 2.0, rng.lognormvariate(0, 1)])
            yp = rng.choice([1.0, rng.lognormvariate(0, 1)])
            rows.append((f"s{s}", f"K{s % 23}", f"src{s % 3}:gpu", t, yt, yp))
    got = score(frame(rows))
    want_rank, want_top = _ranking_by_hand(rows)
    assert got["ranking_accuracy"] == pytest.approx(want_rank, abs=1e-12)
    assert got["top1_accuracy"] == pytest.approx(want_top, abs=1e-12)
