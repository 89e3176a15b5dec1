"""Few-shot adaptation: the alignment across renamed, permuted, rescaled
features, seeded by names that resolve through the counter table, and the controlled stand-in's
curve on real runs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

pytest.importorskip("torch", reason="the models extra is not installed")

from xamm_models.predictors.adapted.alignment import SourceModel, ridge_from_scratch  # noqa: E402


def _law(z: np.ndarray) -> np.ndarray:
    return 0.8 * z[:, 0] - 0.5 * z[:, 1] + 0.6 * np.maximum(z[:, 2], 0) * z[:, 3]


@pytest.fixture(scope="module")
def worlds():
    rng = np.random.default_rng(0)
    zs, zt = rng.normal(size=(400, 4)), rng.normal(size=(300, 4))
    source = SourceModel(["PAPI_TOT_INS", "PAPI_TOT_CYC", "a", "b"], seed=0).fit(zs, _law(zs))
    # other order, units and names
    xt = np.column_stack([zt[:, 2] * 10 + 3, zt[:, 1] * 2, zt[:, 3], zt[:, 0]])
    # and the platform runs slower
    return source, xt, _law(zt) + 0.7, ["c_scaled", "cycles", "d", "instructions"]


def test_names_that_resolve_through_the_counter_table_seed_the_alignment(worlds):
    source, _, _, names = worlds
    m = source.name_matches(names)
    # PAPI_TOT_INS = instructions, ...
    assert m[0].tolist() == [0, 0, 0, 1] and m[1].tolist() == [0, 1, 0, 0]
    assert m[2:].sum() == 0


def test_ten_labelled_samples_adapt_better_than_ridge_from_scratch(worlds):
    """With 10 labelled target samples (and the unlabelled features), the frozen source read through
    the learned alignment and residual errs less than ridge trained on the same 10, and name seeding
    helps; seeded: same bytes."""
    source, xt, yt, names = worlds
    lab, test = np.arange(10), slice(100, 300)

    def err(pred):
        return float(np.median(np.abs(pred - yt[test])))

    before = [p.detach().clone() for p in source.net.parameters()]
    seeded = source.adapt(xt[lab], yt[lab], names, unlabelled=xt)
    blind = source.adapt(xt[lab], yt[lab], names, unlabelled=xt, use_names=False)
    scratch = ridge_from_scratch(xt[lab], yt[lab])(xt[test])
    assert err(seeded.predict(xt[test])) < err(blind.predict(xt[test])) < err(scratch)
    again = source.adapt(xt[lab], yt[lab], names, unlabelled=xt)
    assert np.array_equal(again.predict(xt[test]), seeded.predict(xt[test]))
    assert all(
        np.array_equal(a.numpy(), p.detach().numpy())
        for a, p in zip(before, source.net.parameters(), strict=True)
    )


@pytest.mark.slow
def test_the_controlled_stand_in_curve_on_real_runs(xplat_dataset):
    """Every method is scored on the same held-out kernels at every fraction; the table has the
    seed's fractions."""
    from xamm_models.studies.adaptation import (
        FRACTIONS,
        curve_predictions,
        curve_table,
        target_space,
    )

    ds = xplat_dataset
    preds = curve_predictions(ds, "mi300a-spx:cpu", repeats=1, fractions=(0.05, 1.0))
    keys = preds.group_by("method", "fraction").agg(pl.col("sample").sort().hash().alias("h"))
    assert keys.get_column("h").n_unique() == 1  # the same test rows for everyone
    table = curve_table(preds, n_boot=50)
    assert set(table.get_column("method")) == {
        "adapted",
        "scratch-ridge",
        "scratch-mlp",
        "full",
        "target-median",
    }
    # the trivial baseline is one relR per target and fraction: the median of labelled pairs
    med = preds.filter(pl.col("method") == "target-median")
    assert (
        med.group_by("target", "fraction", "repeat")
        .agg(pl.col("y_pred").n_unique())
        .get_column("y_pred")
        .max()
        == 1
        and (med.get_column("y_pred") > 0).all()
    )
    assert (table.get_column("within_2_lo") <= table.get_column("within_2")).all()
    _, names = target_space(np.zeros((1, 6)))
    # two names kept
    assert len(names) == 6 and {"f_arith_intensity", "f_log_iters_per_rep"} <= set(names)
    assert FRACTIONS == (0.01, 0.02, 0.05, 0.1, 0.25, 1.0)


@pytest.mark.slow
def test_the_public_stand_in_source_has_counters_the_targets_lack(xplat_dataset, rajaperf_sets):
    """thicket-tutorial quartz: workload and top-down counters (20 columns); the targets: the 6
    workload columns a RAJAPerf CSV gives. The 6 shared names seed the alignment; every method is
    scored on the same test rows."""
    from xamm_ingest import read_rajaperf
    from xamm_models.studies.adaptation import (
        SOURCE_FEATURES,
        TOPDOWN,
        counter_runs,
        public_curve_predictions,
    )

    runs = read_rajaperf(
        rajaperf_sets["tutorial_quartz"] / "GCC_10.3.1_BaseSeq_08388608", workers=1
    ).frame
    src = counter_runs(runs)
    assert (
        src.height == runs.height and src.select(TOPDOWN).null_count().sum_horizontal().item() == 0
    )
    assert SourceModel([*SOURCE_FEATURES, *TOPDOWN]).name_matches(SOURCE_FEATURES).sum() == len(
        SOURCE_FEATURES
    )
    preds = public_curve_predictions(runs, xplat_dataset, repeats=1, fractions=(0.1,))
    per = preds.group_by("method").agg(
        pl.len().alias("n"), pl.col("y_true").sum().round(9).alias("t")
    )
    assert per.get_column("n").n_unique() == 1 and per.get_column("t").n_unique() == 1


def test_the_residual_penalty_is_chosen_over_whole_groups():
    """A real signal gets a small penalty, pure noise the largest (no residual), and fewer than two
    groups the fallback; a group's rows never validate each other."""
    from xamm_models.predictors.adapted.alignment import ALPHAS, choose_alpha

    rng = np.random.default_rng(0)
    a, groups = rng.normal(size=(60, 3)), np.repeat(np.arange(12), 5)
    assert choose_alpha(
        a, a @ np.array([1.0, -2.0, 0.5]) + 0.01 * rng.normal(size=60), groups
    ) == min(ALPHAS)
    assert choose_alpha(a, rng.normal(size=60), groups) >= 1e3
    assert choose_alpha(a, a[:, 0], np.zeros(60)) == max(ALPHAS)


def test_every_method_at_a_fraction_is_scored_on_the_same_rows():
    """A method that cannot answer some rows (scratch-mlp with one label) makes every method at
    that fraction leave those rows out, counted; other fractions keep all theirs."""
    from xamm_models.studies.adaptation import common_rows, curve_table

    rows = []
    for method in ("adapted", "scratch-ridge", "scratch-mlp"):
        for fraction in (0.02, 0.1):
            for target in ("a:cpu", "b:gpu"):
                if method == "scratch-mlp" and fraction == 0.02 and target == "b:gpu":
                    continue  # one label on b: no MLP
                for k in range(5):
                    rows.append(
                        {
                            "sample": f"K{k}|{{}}",
                            "app": f"G_K{k}",
                            "source": "s:cpu",
                            "target": target,
                            "y_true": 1.0 + k,
                            "y_pred": 1.5 + k,
                            "method": method,
                            "fraction": fraction,
                            "repeat": 0,
                        }
                    )
    preds = pl.DataFrame(rows)
    kept, lost = common_rows(preds)
    at = kept.filter(pl.col("fraction") == 0.02)
    assert set(at.get_column("target")) == {"a:cpu"} and at.height == 15
    assert kept.filter(pl.col("fraction") == 0.1).height == 30
    table = curve_table(preds, n_boot=20)
    low = table.filter(pl.col("fraction") == 0.02)
    assert low.get_column("n").to_list() == [5, 5, 5]
    assert dict(zip(low["method"], low["left_out"], strict=True)) == {
        "adapted": 5,
        "scratch-mlp": 0,
        "scratch-ridge": 5,
    }
    assert table.filter(pl.col("fraction") == 0.1).get_column("left_out").to_list() == [0, 0, 0]
