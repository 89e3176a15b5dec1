"""Physics machine models and the stacked model, against hand computations and a synthetic law."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from xamm_models.machines.physics import (
    modelled_per_end,
    modelled_time,
    physics_signature,
    physics_signatures,
)


def samples(rows):
    return pl.DataFrame(
        rows,
        schema=["target", "time_per_rep_s", "bytes_per_rep", "flops_per_rep", "kernels_per_rep"],
        orient="row",
    )


def machine(bw_small, bw_large, flop_rate, overhead, n=8):
    """Kernels on a made-up machine: streaming kernels at small (2^20 B) and large (2^30 B) working
    sets, compute-bound ones, and tiny launches that only pay the overhead."""
    rows = []
    for i in range(n):
        b = 2.0**20 * (1 + i / 100)
        rows.append(("m:gpu", b / bw_small + overhead, b, 0.0, 1.0))
        B = 2.0**30 * (1 + i / 100)
        rows.append(("m:gpu", B / bw_large + overhead, B, 0.0, 1.0))
        f = 1e12 * (1 + i / 100)
        rows.append(("m:gpu", f / flop_rate + overhead, 8.0, f, 1.0))
        rows.append(("m:gpu", overhead, 0.0, 0.0, 1.0))
    return samples(rows)


def test_the_signature_recovers_a_known_machine():
    sig = physics_signature(
        "m:gpu", machine(bw_small=1e10, bw_large=1e12, flop_rate=5e13, overhead=4e-6)
    )
    assert sig.overhead_s == pytest.approx(4e-6)
    # capped at the best rate a row achieved, its overhead included: 2e-4 below the true rate
    assert sig.flop_rate == pytest.approx(5e13, rel=1e-3)
    # the bandwidth curve shows two regimes (launch overhead removed before dividing)
    assert sig.bandwidth(np.array([2.0**20]))[0] == pytest.approx(1e10, rel=0.05)
    assert sig.bandwidth(np.array([2.0**30]))[0] == pytest.approx(1e12, rel=0.05)
    rows = pl.DataFrame(
        {"bytes_per_rep": [2.0**30], "flops_per_rep": [1e9], "kernels_per_rep": [3.0]}
    )
    want = max(2.0**30 / sig.bandwidth(np.array([2.0**30 / 3]))[0], 1e9 / 5e13) + 3 * 4e-6
    assert modelled_time(sig, rows)[0] == pytest.approx(want)
    assert sig.vector(np.array([2.0**30])).shape == (1, 3)


def _efficiency_pairs():
    """400 a:cpu -> b:gpu pairs, one kernel each, whose source runs ``eff`` decades below its own
    model."""
    from xamm_models.predictors.default.stacked import log_prior

    sigs = {
        "a:cpu": physics_signature("a:cpu", machine(1e10, 1e11, 1e12, 1e-6)),
        "b:gpu": physics_signature("b:gpu", machine(1e10, 1e12, 5e13, 5e-6)),
    }
    rng = np.random.default_rng(0)
    n = 400
    b = 2.0 ** rng.uniform(12, 32, n)
    f = b * 10 ** rng.uniform(-2, 1, n)
    eff = rng.uniform(0, 1, n)  # how far below the roofline the source runs the kernel
    pairs = pl.DataFrame(
        {
            "source": ["a:cpu"] * n,
            "target": ["b:gpu"] * n,
            "bytes_per_rep": b,
            "flops_per_rep": f,
            "kernels_per_rep": np.ones(n),
            "iterations_per_rep": np.full(n, 1e6),
            "f_log_s_per_iter": np.zeros(n),
            "f_arith_intensity": f / b,
            "f_log_problem_size": np.full(n, 6.0),
        }
    )
    src = np.exp(np.log(10) * eff) * np.asarray(
        [
            *map(
                float,
                (
                    np.maximum(b / sigs["a:cpu"].bandwidth(b), f / sigs["a:cpu"].flop_rate)
                    + sigs["a:cpu"].overhead_s
                ),
            )
        ]
    )
    prior = np.exp(log_prior(sigs, pairs))
    # truth: the target runs at its model; the source is eff decades slower than its own model
    rel = (
        prior
        * (
            np.maximum(b / sigs["a:cpu"].bandwidth(b), f / sigs["a:cpu"].flop_rate)
            + sigs["a:cpu"].overhead_s
        )
        / src
    )
    pairs = pairs.with_columns(
        pl.Series("runtime_source", src / 1e6),
        pl.Series("relR", rel),
        pl.format("k{}", pl.int_range(n)).alias("app"),
    )
    return sigs, pairs, prior


def test_the_stacked_prior_is_the_modelled_ratio_and_the_residual_learns_what_it_misses():
    pytest.importorskip("xgboost", reason="the models extra is not installed")
    from xamm_models.predictors.default.stacked import StackedModel

    sigs, pairs, prior = _efficiency_pairs()
    only_prior = StackedModel("prior").fit(sigs, pairs).predict(sigs, pairs)
    assert only_prior == pytest.approx(prior)
    train, test = pairs[:300], pairs[300:]
    learned = StackedModel("residual").fit(sigs, train).predict(sigs, test)
    err = lambda p: np.median(np.abs(np.log10(p / test["relR"].to_numpy())))  # noqa: E731
    # the source's efficiency is learned
    assert err(learned) < 0.1 < err(StackedModel("prior").predict(sigs, test))
    with pytest.raises(ValueError, match="unknown stacked variant"):
        StackedModel("magic")


def test_a_residual_learned_from_few_of_a_pairs_kernels_is_not_applied_to_it():
    """The gate of :mod:`xamm_models.predictors.default.stacked`: a machine pair whose training
    pairs hold fewer than ``min_pair_kernels`` distinct kernels gets the prior alone, however many
    sizes of them there are."""
    pytest.importorskip("xgboost", reason="the models extra is not installed")
    from xamm_models.predictors.default.stacked import MIN_PAIR_KERNELS, StackedModel

    sigs, pairs, prior = _efficiency_pairs()
    few = pairs.with_columns(
        pl.format("k{}", pl.int_range(pl.len()) % (MIN_PAIR_KERNELS - 1)).alias("app")
    )
    gated = StackedModel("residual").fit(sigs, few)
    assert gated.support == {"a:cpu>b:gpu": MIN_PAIR_KERNELS - 1}
    # 400 rows, but only 9 kernels: the prior
    assert gated.predict(sigs, pairs) == pytest.approx(prior)
    ungated = StackedModel("residual", min_pair_kernels=0).fit(sigs, few).predict(sigs, pairs)
    assert np.abs(np.log(ungated / prior)).max() > 0.5  # the residual itself is far from 0
    enough = pairs.with_columns(
        pl.format("k{}", pl.int_range(pl.len()) % MIN_PAIR_KERNELS).alias("app")
    )
    learned = StackedModel("residual").fit(sigs, enough)
    assert learned.predict(sigs, pairs) == pytest.approx(ungated, rel=0.3)  # 10 kernels: applied
    assert not learned.applies(
        pairs.with_columns(pl.lit("b:gpu").alias("source"), pl.lit("a:cpu").alias("target"))
    ).any()
    # the gate is saved with the candidate; a state saved before it existed applies the residual
    # everywhere
    reloaded = StackedModel("residual")
    reloaded.model = gated.model
    reloaded.load_state(gated.state())
    assert reloaded.predict(sigs, pairs) == pytest.approx(prior)
    reloaded.load_state({})
    assert reloaded.applies(pairs).all()


def test_streaming_kernels_alone_never_set_a_compute_ceiling():
    """Achieved flop rates of kernels below 1 flop/byte are bounded by bandwidth, not by the flop
    rate: taking them as the machine's compute rate would make every compute-heavy kernel look
    compute-bound."""
    from xamm_models.machines.physics import UNBOUNDED_FLOPS

    m = machine(bw_small=1e10, bw_large=1e12, flop_rate=5e13, overhead=4e-6)
    streaming = m.filter(pl.col("flops_per_rep") < pl.col("bytes_per_rep")).with_columns(
        (pl.col("bytes_per_rep") / 8).alias("flops_per_rep")
    )  # 1 flop per 8 bytes, like DAXPY
    sig = physics_signature("m:gpu", streaming)
    assert sig.flop_rate == UNBOUNDED_FLOPS
    rows = pl.DataFrame(
        {"bytes_per_rep": [2.0**30], "flops_per_rep": [2.0**34], "kernels_per_rep": [1.0]}
    )
    assert modelled_time(sig, rows)[0] == pytest.approx(
        2.0**30 / sig.bandwidth(np.array([2.0**30]))[0] + sig.overhead_s
    )
    # with dense kernels: measured
    assert physics_signature("m:gpu", m).flop_rate == pytest.approx(5e13, rel=1e-3)


def test_a_machine_without_dense_kernels_borrows_its_device_kinds_flop_rate():
    """No compute-bound evidence: the median measured flop rate of its device kind (with no peer of
    its kind, the peers' balance at its own bandwidth), never infinity while some machine was
    measured; measured ones are untouched;
    ``reference`` counts as a peer."""
    from xamm_models.machines.physics import UNBOUNDED_FLOPS, borrow_flop_rates, physics_signatures

    def as_target(df, t):
        return df.with_columns(pl.lit(t).alias("target"))

    dense = {
        t: as_target(machine(1e10, 1e12, fr, 4e-6), t)
        for t, fr in (("a:gpu", 2e13), ("b:gpu", 6e13), ("c:gpu", 1e14), ("p:cpu", 1e12))
    }
    streaming = as_target(
        machine(1e10, 1e12, 5e13, 4e-6).filter(pl.col("flops_per_rep") < pl.col("bytes_per_rep")),
        "n:gpu",
    )
    sigs = physics_signatures(pl.concat([*dense.values(), streaming]))
    assert (
        sigs["n:gpu"].flop_rate == pytest.approx(6e13, rel=1e-3)
        and sigs["n:gpu"].flop_rate_from == "borrowed"
    )
    assert {t: s.flop_rate_from for t, s in sigs.items() if t != "n:gpu"} == dict.fromkeys(
        dense, "measured"
    )
    assert sigs["a:gpu"].flop_rate == pytest.approx(2e13, rel=1e-3)
    alone = physics_signature("n:gpu", streaming)
    assert alone.flop_rate == UNBOUNDED_FLOPS and alone.flop_rate_from == "unbounded"
    # nobody to borrow from
    assert borrow_flop_rates({"n:gpu": alone})["n:gpu"].flop_rate == UNBOUNDED_FLOPS
    # no peer of its kind: not a CPU's rate but a CPU's balance (flop/s per B/s) at its own
    # bandwidth; here the two machines have the same bandwidth, so a tenth of the CPU's rate
    wide = as_target(
        machine(1e11, 1e13, 5e13, 4e-6).filter(pl.col("flops_per_rep") < pl.col("bytes_per_rep")),
        "w:gpu",
    )
    cpu_only = {"p:cpu": physics_signature("p:cpu", dense["p:cpu"])}
    balance = cpu_only["p:cpu"].flop_rate / max(cpu_only["p:cpu"].bw)
    got = borrow_flop_rates({"n:gpu": alone, "w:gpu": physics_signature("w:gpu", wide)}, cpu_only)
    assert got["n:gpu"].flop_rate == pytest.approx(balance * max(alone.bw), rel=1e-9)
    assert got["n:gpu"].flop_rate == pytest.approx(1e12, rel=0.02)
    assert got["w:gpu"].flop_rate == pytest.approx(10 * got["n:gpu"].flop_rate, rel=0.05)
    from_ref = physics_signatures(streaming, reference={t: sigs[t] for t in ("a:gpu", "c:gpu")})[
        "n:gpu"
    ]
    assert from_ref.flop_rate == pytest.approx(6e13, rel=1e-3)  # median of 2e13 and 1e14
    old = alone.model_dump(exclude={"flop_rate_from"})  # a record written before the field existed
    assert type(alone).model_validate(old).flop_rate_from == "unbounded"
    assert (
        type(alone)
        .model_validate(sigs["a:gpu"].model_dump(exclude={"flop_rate_from"}))
        .flop_rate_from
        == "measured"
    )


def test_each_pairs_modelled_time_is_its_machines_model_of_that_row():
    """modelled_per_end slices the work columns per machine; each row must get modelled_time of that
    row alone on its own machine, and a machine without a signature NaN."""
    a, b = (
        machine(1e11, 2e10, 5e11, 1e-6),
        machine(4e11, 1e11, 2e12, 5e-6).with_columns(pl.lit("n:gpu").alias("target")),
    )
    sigs = physics_signatures(pl.concat([a, b]))
    rng = np.random.default_rng(2)
    pairs = (
        pl.concat([a, b])
        .sample(fraction=1.0, shuffle=True, seed=3)
        .with_columns(
            pl.Series("source", rng.choice(["m:gpu", "n:gpu", "x:gpu"], a.height * 2)),
            pl.Series(
                "kernels_per_rep",
                [[1.0, 3.0, None][i] for i in rng.integers(0, 3, a.height * 2)],
                dtype=pl.Float64,
            ),
        )
    )
    got = modelled_per_end(sigs, pairs, "source")
    for i, row in enumerate(pairs.iter_slices(1)):
        t = row["source"][0]
        want = modelled_time(sigs[t], row)[0] if t in sigs else np.nan
        assert got[i] == want or (np.isnan(want) and np.isnan(got[i]))
    assert np.isnan(got).sum() == (pairs["source"] == "x:gpu").sum() > 0
