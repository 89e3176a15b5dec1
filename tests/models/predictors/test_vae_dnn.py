"""VAE-DNN: vector samples, the VAE-DNN papers' metrics (hand-computed), the VAE-DNN's switches,
persistence."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

pytest.importorskip("torch", reason="the models extra is not installed")

from xamm_models.features import FEATURES  # noqa: E402
from xamm_models.predictors.vae_dnn import VaeDnn, split_80_20, vector_samples  # noqa: E402
from xamm_models.studies.vae_dnn import as_pairs, vector_metrics  # noqa: E402

SMALL = {"vae_epochs": 20, "dnn_epochs": 30, "joint_epochs": 5, "dnn_hidden": 32}


def pairs_frame(n=60, seed=0) -> pl.DataFrame:
    """Samples measured on two sources; relR to three targets follows the first feature (a known
    law)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        f = rng.normal(size=len(FEATURES))
        for src in ("a:cpu", "b:gpu"):
            for tgt, k in (("a:cpu", 0.0), ("b:gpu", -1.0), ("c:gpu", -0.5)):
                if tgt != src and not (i % 7 == 0 and tgt == "c:gpu"):  # some vectors miss a target
                    rows.append(
                        {
                            "sample": f"K{i}|{{}}",
                            "app": f"G_K{i}",
                            "group": "G",
                            "source": src,
                            "target": tgt,
                            "relR": float(
                                np.exp(k * (1 + 0.3 * f[0]) + (0.5 if src == "b:gpu" else 0.0))
                            ),
                            **dict(zip(FEATURES, f.tolist(), strict=True)),
                        }
                    )
    return pl.DataFrame(rows)


def test_vector_samples_pivot_and_mask():
    p = pairs_frame(10)
    v = vector_samples(p)
    assert v.height == 20 and {"y_a:cpu", "y_b:gpu", "y_c:gpu"} <= set(v.columns)
    row = v.filter(pl.col("sample") == "K1|{}", pl.col("source") == "a:cpu").row(0, named=True)
    want = p.filter(
        pl.col("sample") == "K1|{}", pl.col("source") == "a:cpu", pl.col("target") == "b:gpu"
    )["relR"][0]
    # no relR to itself
    assert row["y_b:gpu"] == pytest.approx(np.log(want)) and row["y_a:cpu"] is None
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
    # ROC over the 3 full vectors: positive = (x, y, z) (2 of 3); margins: row0 1.1-0 -> min(1.1,
    # 1.1)=1.1,
    # row1 min(0.8, -0.2) = -0.2, row2 is negative with margin min(2.0, -0.5) = -0.5 -> AUC = 1.0
    # (1.1 and -0.2 > -0.5)
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
    assert (tmp_path / "m" / "model.safetensors").is_file() and (
        tmp_path / "m" / "config.json"
    ).is_file()
    back = VaeDnn.from_pretrained(str(tmp_path / "m"))
    assert np.array_equal(back.predict_vector(test), a.predict_vector(test))
    assert back.provenance == a.provenance and back.provenance["vectors"] == int(tr.sum())
    with pytest.raises(ValueError, match="not seen in training"):
        a.predict_vector(test.head(1).with_columns(pl.lit("z:cpu").alias("source")))


def test_each_switch_changes_training():
    v = vector_samples(pairs_frame(40))
    targets, sources = ["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"]
    base = VaeDnn(targets, sources, seed=0, **SMALL).fit(v).latent(v)
    for sw in (
        {"calibrated": False},
        {"cpu_first": False},
        {"kl_schedule": False},
        {"joint_epochs": 0},
    ):
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


@pytest.fixture(scope="module")
def trained():
    v = vector_samples(pairs_frame(60))
    return VaeDnn(["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"], seed=0, **SMALL).fit(
        v, dataset="synthetic"
    ), v


def test_predict_and_rank_answer_every_target_from_one_vector_like_the_other_predictors(trained):
    from xamm_models.errors import UnknownSourceError, UnknownTargetError

    m, v = trained
    prof = v.filter(pl.col("source") == "a:cpu").head(4).drop("source")
    p = m.predict(prof, "a:cpu")
    # the two other targets each
    assert (
        p.columns == ["row", "app", "source", "target", "relR", "relR_lo", "relR_hi", "regime"]
        and p.height == 8
    )
    P = m.predict_vector(prof.with_columns(pl.lit("a:cpu").alias("source")))
    for r, t, rel in p.select("row", "target", "relR").iter_rows():
        assert rel == pytest.approx(np.exp(P[r, m.targets.index(t)]), rel=1e-12)
    ranked = m.rank_targets(prof, "a:cpu", ["b:gpu", "c:gpu"])
    for _, part in ranked.group_by("row"):
        assert part["relR"].is_sorted() and part["rank"].to_list() == [1, 2]
    with pytest.raises(UnknownTargetError, match="Did you mean 'c:gpu'.*retrain"):
        m.predict(prof, "a:cpu", ["c:gpuu"])
    with pytest.raises(UnknownTargetError, match="target_benchmarks"):
        m.predict(prof, "a:cpu", ["b:gpu"], target_benchmarks=prof)
    with pytest.raises(UnknownSourceError, match="Known: a:cpu, b:gpu"):
        m.predict(prof, "z:cpu")


def test_a_profile_with_a_missing_or_non_finite_feature_is_refused_naming_the_row(trained):
    """Nulls were once filled with 0 and NaN passed through: the VAE-DNN would answer for a profile
    it cannot read."""
    from xamm_models.profile_input import ProfileInputError

    m, v = trained
    prof = v.filter(pl.col("source") == "a:cpu").head(4).drop("source")
    f = m.feature_names[0]
    for bad in (None, float("nan"), float("inf")):
        broken = prof.with_columns(
            pl.when(pl.int_range(pl.len()) == 2).then(bad).otherwise(pl.col(f)).alias(f)
        )
        with pytest.raises(
            ProfileInputError, match=rf"column {f} .*must be finite; it is not in row 2 \(1 of 4\)"
        ):
            m.predict(broken, "a:cpu")
    with pytest.raises(ProfileInputError, match=f"lacks {f}"):
        m.predict(prof.drop(f), "a:cpu")


def test_the_zoo_knows_a_saved_vae_dnn_by_its_marker_and_its_card(trained, tmp_path):
    from xamm_models.predictors.default.model import load_predictor
    from xamm_models.predictors.kinds import MODELS, list_models, load_model

    m, v = trained
    m.save_pretrained(tmp_path / "m")
    assert {p.name for p in (tmp_path / "m").iterdir()} == {
        "model.safetensors",
        "config.json",
        "vae_dnn.json",
        "README.md",
        "xamm-files.json",
    }
    card = (tmp_path / "m" / "README.md").read_text()
    assert (
        "pipeline_tag: tabular-regression" in card
        and "synthetic" in card
        and "calibrated True" in card
    )
    assert list_models() == ["adapted", "baseline", "stacked", "vae-dnn", "xamm"] and list_models(
        "vae*"
    ) == ["vae-dnn"]
    for back in (load_model(str(tmp_path / "m")), load_predictor(str(tmp_path / "m"))):
        assert type(back) is VaeDnn and back.provenance["dataset"] == "synthetic"
        assert np.array_equal(back.predict_vector(v), m.predict_vector(v))
    with pytest.raises(KeyError, match="Did you mean 'vae-dnn'"):
        MODELS.get("vae_dnn")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="vae_dnn.json"):
        load_model(str(tmp_path / "empty"))


def test_push_and_pull_through_the_hub(trained, local_hub, tmp_path, monkeypatch):
    from xamm_models.predictors.kinds import load_model

    m, v = trained
    m.push_to_hub("xamm-test/vae-dnn", token="hf_xamm_test_token")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "fresh"))
    back = load_model("xamm-test/vae-dnn")
    assert type(back) is VaeDnn and np.array_equal(back.predict_vector(v), m.predict_vector(v))


def test_xamm_run_trains_and_tests_a_vae_dnn_and_predict_ranks_with_it(
    rajaperf_sets, tmp_path, capsys, monkeypatch
):
    import json

    from xamm_data.cli.commands import main as xamm
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_rajaperf

    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    st = Store(tmp_path / "store")
    ingest_rajaperf([rajaperf_sets["h100_tier1"]], machine="h100-node", store=st, workers=2)
    ingest_rajaperf([rajaperf_sets["mi300a_tier1"]], machine="mi300a-spx", store=st, workers=2)
    cfg = tmp_path / "c.yml"
    cfg.write_text(
        f"func: train\nmodel: vae-dnn\napp_train_data_path: {st.root}\noutput: {tmp_path / 'm'}\n"
        "epochs: 8\n"  # what is checked is the command and its files, not the fit
    )
    assert xamm(["run", str(cfg)]) == 0
    saved = json.loads((tmp_path / "m" / "vae_dnn.json").read_text())
    assert (
        saved["training"]["data_version"] == st.version("benchmark_runs")
        and len(saved["targets"]) == 4
    )
    # the config's epochs size the VAE-DNN (the joint phase within the VAE's epochs)
    assert {k: saved["switches"][k] for k in ("vae_epochs", "dnn_epochs", "joint_epochs")} == {
        "vae_epochs": 8,
        "dnn_epochs": 16,
        "joint_epochs": 2,
    }
    cfg.write_text(
        f"func: test\napp_test_data_path: {st.root}\nsrc_model_path: {tmp_path / 'm'}\n"
        f"output: {tmp_path / 'p.parquet'}\n"
    )
    capsys.readouterr()
    assert xamm(["run", str(cfg)]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out[out.index("{") :])
    preds = pl.read_parquet(tmp_path / "p.parquet")
    j = preds.filter(pl.col("relR_true").is_not_null())
    err = (j["relR"] / j["relR_true"]).log10().abs()
    assert summary["evaluated_pairs"] == j.height > 100
    assert summary["within_2"] == pytest.approx(
        float((err <= np.log10(2) + 1e-12).mean()), abs=1e-4
    )
    assert set(preds["target"]) == set(saved["targets"])
    prof = tmp_path / "prof.parquet"
    from xamm_models.features import kernel_app_samples

    kernel_app_samples(st.scan("benchmark_runs").collect()).filter(
        pl.col("machine") == "h100-node", pl.col("device") == "gpu"
    ).head(3).write_parquet(prof)
    capsys.readouterr()
    assert (
        xamm(
            [
                "predict",
                str(prof),
                "--source",
                "h100-node:gpu",
                "--target",
                "mi300a-spx:gpu",
                "--target",
                "mi300a-spx:cpu",
                "--model",
                str(tmp_path / "m"),
                "--rank",
                "--json",
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    rows = json.loads(printed.out or "null")  # stdout is exactly the JSON
    assert rows, printed.err
    assert len(rows) == 6 and {r["rank"] for r in rows} == {1, 2} and "app" in rows[0]


def test_leave_one_kernel_out_tests_every_kernel_exactly_once_and_is_added_to_the_results(tmp_path):
    import json
    from types import SimpleNamespace

    from xamm_models.studies.vae_dnn import add_loko, markdown

    # what is checked is the folds, not the fit: 8 kernels (one missing a target), few epochs
    pairs = pairs_frame(8)
    kernels = sorted(set(pairs["app"]))
    ds = SimpleNamespace(
        pairs=pairs,
        get_idx_split=lambda scheme: [SimpleNamespace(test_kernels=(k,)) for k in kernels],
    )
    base = {
        "dataset": {"version": "v", "vectors": 24, "targets": ["a:cpu", "b:gpu", "c:gpu"]},
        "split_80_20": {},
        "kernel_group_pooled": {},
    }
    (tmp_path / "results.json").write_text(json.dumps(base))
    few = {**SMALL, "vae_epochs": 8, "dnn_epochs": 8, "joint_epochs": 2, "rf_trees": 10}
    res = add_loko(ds, tmp_path, n_boot=50, workers=1, progress=lambda *_: None, **few)
    assert set(res["kernel_pooled"]) == {"vae-dnn", "random-forest", "pair-median"}
    for r in res["kernel_pooled"].values():
        # every pair tested once, by the model trained without its kernel
        assert r["pairs"] == pairs.height
        assert r["within_2"]["lo"] <= r["within_2"]["value"] <= r["within_2"]["hi"]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved == res
    assert (tmp_path / "results.md").read_text() == markdown(
        saved
    ) and "Leave one kernel out" in markdown(saved)


def test_the_pair_median_is_each_sources_median_and_joins_the_results(tmp_path):
    """The trivial baseline under the papers' definitions: each source's median log relR per target,
    relR 1 where it has none; ``add_pair_median`` adds it to a results file of the same data set
    version (with the 80/20 test vectors' lengths) and refuses another version."""
    import json
    from types import SimpleNamespace

    from xamm_models.studies.vae_dnn import PairMedianVector, add_pair_median, vector_lengths

    rows = pl.DataFrame(
        {
            "source": ["a:cpu", "a:cpu", "a:cpu", "b:gpu"],
            "y_a:cpu": [0.0, 0.0, 0.0, None],
            "y_b:gpu": [1.0, 3.0, None, 0.0],
            "y_c:gpu": [None, None, None, 2.0],
        }
    )
    m = PairMedianVector(["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"]).fit(rows)
    got = m.predict_vector(pl.DataFrame({"source": ["a:cpu", "b:gpu", "z:cpu"]}))
    assert got.tolist() == [[0.0, 2.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
    # measured targets other than the source: 1, 1, 0 and 1
    assert vector_lengths(rows, ["a:cpu", "b:gpu", "c:gpu"]) == {"0": 1, "1": 3}

    # what is checked is the folds, not the fit: 8 kernels (one missing a target), few epochs
    pairs = pairs_frame(8)
    kernels = sorted(set(pairs["app"]))
    ds = SimpleNamespace(
        pairs=pairs,
        version="v",
        get_idx_split=lambda scheme: [SimpleNamespace(name=k, test_kernels=(k,)) for k in kernels],
    )
    base = {
        "dataset": {"version": "v", "vectors": 24, "targets": ["a:cpu", "b:gpu", "c:gpu"]},
        "split_80_20": {"all switches on": {}},
        "kernel_pooled": {},
    }
    (tmp_path / "results.json").write_text(json.dumps(base))
    res = add_pair_median(ds, tmp_path, n_boot=50)
    assert res["split_80_20"]["all switches on"]["pair-median"]["r2_seed"] is not None
    assert res["kernel_pooled"]["pair-median"]["pairs"] == pairs.height
    assert sum(res["dataset"]["test_vector_lengths_80_20"].values()) > 0
    ds.version = "w"
    with pytest.raises(ValueError, match="version v, not w"):
        add_pair_median(ds, tmp_path, n_boot=50)


def test_dnn_steps_bound_the_minibatches_and_match_epochs_when_equal(monkeypatch):
    """``dnn_steps`` is a minibatch budget: the budget of whole epochs trains exactly as
    ``dnn_epochs`` does (same weights), and a smaller budget takes that many steps, no more."""
    import torch

    from xamm_models.predictors import vae_dnn as mod

    v = vector_samples(pairs_frame(300))  # 600 vectors: 3 minibatches of 256 an epoch
    kw = {**SMALL, "dnn_epochs": 4}
    by_epochs = VaeDnn(["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"], **kw).fit(v)
    by_steps = VaeDnn(["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"], dnn_steps=12, **kw).fit(v)
    for a, b in zip(by_epochs.dnn.parameters(), by_steps.dnn.parameters(), strict=True):
        assert torch.equal(a, b)
    calls = []
    real = mod.masked_mse
    monkeypatch.setattr(mod, "masked_mse", lambda *a: calls.append(1) or real(*a))
    m = VaeDnn(
        ["a:cpu", "b:gpu", "c:gpu"], ["a:cpu", "b:gpu"], dnn_steps=5, **{**kw, "joint_epochs": 0}
    )
    m.fit(v)
    assert len(calls) == 5  # the joint epochs are off: every masked loss is a DNN minibatch's
    assert "5 DNN minibatches" in m._card_body()[1]
