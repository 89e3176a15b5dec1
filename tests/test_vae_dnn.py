"""Seeds 001/002: vector samples, the seeds' metrics (hand-computed), the VAE-DNN's switches, persistence."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

pytest.importorskip("torch", reason="the models extra is not installed")

from xamm_models.kernel_apps import FEATURES  # noqa: E402
from xamm_models.vae_dnn import VaeDnn, split_80_20, vector_samples  # noqa: E402
from xamm_models.vae_dnn_eval import as_pairs, vector_metrics  # noqa: E402

SMALL = {"vae_epochs": 20, "dnn_epochs": 30, "joint_epochs": 5, "dnn_hidden": 32}


def pairs_frame(n=60, seed=0) -> pl.DataFrame:
    """Samples measured on two sources; relR to three targets follows the first feature (a known law)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        f = rng.normal(size=len(FEATURES))
        for src in ("a:cpu", "b:gpu"):
            for tgt, k in (("a:cpu", 0.0), ("b:gpu", -1.0), ("c:gpu", -0.5)):
                if tgt != src and not (i % 7 == 0 and tgt == "c:gpu"):  # some vectors miss a target
                    rows.append({"sample": f"K{i}|{{}}", "app": f"G_K{i}", "group": "G", "source": src, "target": tgt,
                                 "relR": float(np.exp(k * (1 + 0.3 * f[0]) + (0.5 if src == "b:gpu" else 0.0))),
                                 **dict(zip(FEATURES, f.tolist(), strict=True))})
    return pl.DataFrame(rows)


def test_vector_samples_pivot_and_mask():
    p = pairs_frame(10)
    v = vector_samples(p)
    assert v.height == 20 and {"y_a:cpu", "y_b:gpu", "y_c:gpu"} <= set(v.columns)
    row = v.filter(pl.col("sample") == "K1|{}", pl.col("source") == "a:cpu").row(0, named=True)
    want = p.filter(pl.col("sample") == "K1|{}", pl.col("source") == "a:cpu", pl.col("target") == "b:gpu")["relR"][0]
    assert row["y_b:gpu"] == pytest.approx(np.log(want)) and row["y_a:cpu"] is None  # no relR to itself
    assert v.filter(pl.col("sample") == "K0|{}")["y_c:gpu"].null_count() == 2  # K0 lacks c:gpu


def test_the_seeds_metrics_hand_computed():
    targets = ["x", "y", "z"]
    Y = np.array([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [0.0, 2.0, 1.0], [1.0, 0.0, np.nan]])
    P = np.array([[0.0, 1.1, 2.2], [0.0, 0.8, 0.6], [0.0, 2.0, 1.5], [0.5, 0.2, 9.9]])
    M = ~np.isnan(Y)
    m = vector_metrics(np.nan_to_num(Y), P, M, targets)
    # orders: row0 right, row1 wrong (z before y), row2 right, row3 right (y before x) -> 3/4
    assert m["ordering_accuracy"] == pytest.approx(0.75)
    y, p = np.nan_to_num(Y)[M], P[M]
    assert m["r2_seed"] == pytest.approx(1 - ((y - p) ** 2).sum() / ((y - y.mean()) ** 2).sum())
    # ROC over the 3 full vectors: positive = (x, y, z) (2 of 3); margins: row0 1.1-0 -> min(1.1, 1.1)=1.1,
    # row1 min(0.8, -0.2) = -0.2, row2 is negative with margin min(2.0, -0.5) = -0.5 -> AUC = 1.0 (1.1 and -0.2 > -0.5)
    assert m["positive_order"] == ["x", "y", "z"] and m["auc"] == pytest.approx(1.0)


def test_fit_is_seeded_learns_the_law_and_round_trips_through_safetensors(tmp_path):
    v = vector_samples(pairs_frame(80))
    targets, sources = ["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"]
    tr, te = split_80_20(v, 0)
    a = VaeDnn(targets, sources, seed=1, **SMALL).fit(v.filter(pl.Series(tr)))
    b = VaeDnn(targets, sources, seed=1, **SMALL).fit(v.filter(pl.Series(tr)))
    test = v.filter(pl.Series(te))
    assert np.array_equal(a.predict_vector(test), b.predict_vector(test))  # seeded
    pairs = as_pairs(test, a.predict_vector(test), targets)
    err = np.median(np.abs(np.log10(pairs["y_pred"] / pairs["y_true"])))
    assert err < 0.15  # a known, smooth law is learned
    a.save_pretrained(tmp_path / "m")
    assert (tmp_path / "m" / "model.safetensors").is_file() and (tmp_path / "m" / "config.json").is_file()
    back = VaeDnn.from_pretrained(str(tmp_path / "m"))
    assert np.array_equal(back.predict_vector(test), a.predict_vector(test))
    ranked = back.rank_targets(test.head(2))
    assert ranked.filter(pl.col("row") == 0)["relR"].is_sorted() and set(ranked["rank"]) == {1, 2}
    with pytest.raises(ValueError, match="not seen in training"):
        a.predict_vector(test.head(1).with_columns(pl.lit("z:cpu").alias("source")))


def test_each_switch_changes_training():
    v = vector_samples(pairs_frame(40))
    targets, sources = ["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"]
    base = VaeDnn(targets, sources, seed=0, **SMALL).fit(v).latent(v)
    for sw in ({"calibrated": False}, {"cpu_first": False}, {"kl_schedule": False}, {"joint_epochs": 0}):
        other = VaeDnn(targets, sources, seed=0, **{**SMALL, **sw}).fit(v).latent(v)
        assert not np.allclose(base, other), sw


def test_predictions_stay_within_each_targets_training_range():
    v = vector_samples(pairs_frame(40))
    m = VaeDnn(["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"], seed=0, **SMALL).fit(v)
    far = v.head(5).with_columns([pl.col(f) * 1e4 for f in FEATURES])  # far off the training data
    P = m.predict_vector(far)
    for j, t in enumerate(m.targets):
        y = v[f"y_{t}"].drop_nulls().to_numpy()
        assert y.min() - 1e-6 <= P[:, j].min() and P[:, j].max() <= y.max() + 1e-6


def test_the_readme_reports_what_docs_vae_dnn_holds():
    import json
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    r = json.loads((repo / "docs" / "vae-dnn" / "results.json").read_text())
    text = (repo / "README.md").read_text()
    a, kg = r["split_80_20"]["all switches on"], r["kernel_group_pooled"]
    assert f"| R², 80/20 split | 0.81 | {a['vae-dnn']['r2_seed']:.2f} | {a['random-forest']['r2_seed']:.2f} |" in text
    assert f"| {a['vae-dnn']['ordering_accuracy']:.0%} | {a['random-forest']['ordering_accuracy']:.0%} |" in text
    w = kg["vae-dnn"]["within_2"]
    assert f"{w['value']:.2f} [{w['lo']:.2f}, {w['hi']:.2f}]" in text
    assert (repo / "docs" / "vae-dnn" / "roc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
