"""relR targets, the predictor, its regressors, the config pipeline and the model zoo round trip."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

torch = pytest.importorskip("torch", reason="the models extra (torch) is not installed")

from xamm_data.store.store import Store  # noqa: E402
from xamm_ingest import ingest_rajaperf  # noqa: E402
from xamm_models.errors import FeatureSchemaError, UnknownSourceError, UnknownTargetError
from xamm_models.features import FEATURES, kernel_app_samples  # noqa: E402
from xamm_models.machines.attention import build_signatures  # noqa: E402
from xamm_models.machines.signatures import SignatureRegistry  # noqa: E402
from xamm_models.predictors.paper import regressors as R  # noqa: E402
from xamm_models.predictors.paper.predictor import XammPredictor  # noqa: E402
from xamm_models.predictors.paper.relperf import drop_invalid, pair_relative  # noqa: E402

EPOCHS = 30
TEST_APPS = ["Apps_ENERGY", "Apps_VOL3D", "Basic_DAXPY", "Stream_TRIAD"]


@pytest.fixture(scope="module")
def world(rajaperf_sets, tmp_path_factory):
    home = tmp_path_factory.mktemp("pred")
    mp = pytest.MonkeyPatch()
    mp.setenv("XAMM_HOME", str(home / "home"))
    st = Store(home / "store")
    ingest_rajaperf(rajaperf_sets["thicket"], store=st, workers=2)
    ingest_rajaperf(
        [rajaperf_sets["h100_tier1"], rajaperf_sets["h100_tier2"]],
        machine="h100-node",
        store=st,
        workers=2,
    )
    ingest_rajaperf(
        [rajaperf_sets["mi300a_tier1"], rajaperf_sets["mi300a_tier2"]],
        machine="mi300a-spx",
        store=st,
        workers=2,
    )
    runs = st.scan("benchmark_runs").collect()
    sigs = build_signatures(store=st, registry=SignatureRegistry.default(), epochs=EPOCHS)
    apps = kernel_app_samples(runs)
    train = apps.filter(~pl.col("app").is_in(TEST_APPS))
    test = apps.filter(pl.col("app").is_in(TEST_APPS))
    pred = XammPredictor(feature_columns=list(FEATURES), epochs=EPOCHS).fit(
        train, sigs, dataset="test-store", embedders_dir=SignatureRegistry.default().embedders_dir
    )
    yield {
        "store": st,
        "runs": runs,
        "sigs": sigs,
        "apps": apps,
        "train": train,
        "test": test,
        "pred": pred,
        "home": home,
    }
    mp.undo()


def test_relR_pairing_on_real_rows(world):
    apps = world["apps"]
    pairs = pair_relative(apps, carry=list(FEATURES))
    row = pairs.filter(
        pl.col("app") == "Apps_VOL3D",
        pl.col("source") == "quartz:cpu",
        pl.col("target") == "h100-node:gpu",
    ).row(0, named=True)
    q = (
        apps.filter(
            pl.col("app") == "Apps_VOL3D",
            pl.col("machine") == "quartz",
            pl.col("app_params") == row["app_params"],
        )
        .get_column("runtime_s")
        .item()
    )
    h = (
        apps.filter(
            pl.col("app") == "Apps_VOL3D",
            pl.col("machine") == "h100-node",
            pl.col("device") == "gpu",
            pl.col("app_params") == row["app_params"],
        )
        .get_column("runtime_s")
        .item()
    )
    # direction: target / source; GPU faster
    assert row["relR"] == pytest.approx(h / q) and row["relR"] < 1
    back = (
        pairs.filter(
            pl.col("app") == "Apps_VOL3D",
            pl.col("source") == "h100-node:gpu",
            pl.col("target") == "quartz:cpu",
            pl.col("app_params") == row["app_params"],
        )
        .get_column("relR")
        .item()
    )
    assert back == pytest.approx(1 / row["relR"])
    assert pairs.filter(pl.col("source") == pl.col("target")).is_empty()
    # only matching configurations pair: another size bucket never pairs with this one
    # both ends of every pair were measured at that app and parameters
    for end in ("source", "target"):
        ends = apps.with_columns(pl.concat_str("machine", pl.lit(":"), "device").alias(end))
        assert pairs.join(ends, on=["app", "app_params", end], how="anti").is_empty()
    sizes = pairs.group_by("app", "app_params", "source", "target").len()
    assert sizes.get_column("len").max() == 1  # one pair per configuration and machine pair
    assert apps.get_column("runtime_per_iteration").all()


def test_pairing_needs_equal_keys_and_drop_report():
    df = pl.DataFrame(
        {
            "app": ["a", "a", "a", "b"],
            "app_params": ["{}", "{}", "{}", "{}"],
            "threads": [4, 4, 8, 4],
            "ranks": [None, None, None, None],
            "machine": ["m1", "m2", "m2", "m1"],
            "device": ["cpu"] * 4,
            "runtime_s": [2.0, 1.0, 0.5, -1.0],
            "f": [1.0, 2.0, None, 3.0],
        }
    )
    pairs = pair_relative(df)
    # threads=8 has no partner
    assert pairs.height == 2 and set(pairs.get_column("relR")) == {0.5, 2.0}
    clean, rep = drop_invalid(df, ["f"])
    assert clean.height == 2 and rep["dropped"] == 2
    assert rep["runtime_s missing or <= 0"] == 1 and rep["f missing or not finite"] == 1


def test_amms_flow_into_the_inputs(world):
    pred, test = world["pred"], world["test"]
    src = test.filter(pl.col("machine") == "quartz")
    a = pred.predict(src, "quartz:cpu", ["h100-node:gpu", "mi300a-spx:cpu"])
    assert (a.get_column("regime") == "amm").all() and a.height == 2 * src.height
    # catboost's input width: embedding + AMM(source) + AMM(target)
    assert len(pred.models["amm"].get_feature_importance()) == pred.config.embed_dim + 2 * len(
        world["sigs"][0].vector
    )
    assert len(pred.models["noamm"].get_feature_importance()) == pred.config.embed_dim + 2 * len(
        pred.targets
    )
    # swapping the target's AMM changes the prediction: the regressor reads it
    fake = world["sigs"][0].model_copy(
        update={"machine": "h100-node", "device": "gpu", "vector": [0.0] * 8}
    )
    b = pred.predict(
        src, "quartz:cpu", ["h100-node:gpu"], target_signatures={"h100-node:gpu": fake}
    )
    assert not np.allclose(
        b.get_column("relR").to_numpy(),
        a.filter(pl.col("target") == "h100-node:gpu").get_column("relR").to_numpy(),
    )
    c = pred.predict(src, "quartz:cpu", ["h100-node:gpu"], use_amm=False)
    assert (c.get_column("regime") == "embedding").all()


def test_unseen_target_from_its_benchmark_data(world):
    pred, runs, test = world["pred"], world["runs"], world["test"]
    lassen = runs.filter(pl.col("machine") == "lassen").with_columns(
        pl.lit("newgpu").alias("machine")
    )
    src = test.filter(pl.col("machine") == "quartz")
    out = pred.predict(src, "quartz:cpu", ["newgpu:gpu"], target_benchmarks=lassen)
    assert (out.get_column("regime") == "amm").all()
    ref = pred.predict(src, "quartz:cpu", ["lassen:gpu"])
    # the AMM built on the fly from lassen's data equals the registered one, so the predictions
    # agree
    assert np.allclose(out.get_column("relR").to_numpy(), ref.get_column("relR").to_numpy())


def test_refusals(world):
    pred, test = world["pred"], world["test"]
    src = test.filter(pl.col("machine") == "quartz")
    with pytest.raises(UnknownSourceError, match="not seen in training"):
        pred.predict(src, "ruby:cpu", ["quartz:cpu"])
    with pytest.raises(UnknownSourceError, match="Did you mean 'quartz:cpu'"):
        pred.predict(src, "quarts:cpu", ["lassen:gpu"])
    # a typo of a target, and a target with neither training data nor benchmark runs, are refused
    with pytest.raises(UnknownTargetError, match="Did you mean 'lassen:gpu'.*target_benchmarks"):
        pred.predict(src, "quartz:cpu", ["lasen:gpu"])
    with pytest.raises(UnknownTargetError, match="unknown target 'newgpu:gpu'"):
        pred.predict(src, "quartz:cpu", ["lassen:gpu", "newgpu:gpu"], use_amm=False)
    with pytest.raises(FeatureSchemaError, match="f_log_bandwidth"):
        pred.predict(src.drop("f_log_bandwidth"), "quartz:cpu", ["lassen:gpu"])
    with pytest.raises(FeatureSchemaError, match="not numeric"):
        pred.predict(
            src.with_columns(pl.col("f_log_bandwidth").cast(pl.String)),
            "quartz:cpu",
            ["lassen:gpu"],
        )


def test_rank_targets_fastest_first(world):
    pred, test = world["pred"], world["test"]
    src = test.filter(pl.col("machine") == "quartz").head(3)
    r = pred.rank_targets(src, "quartz:cpu", ["lassen:gpu", "h100-node:cpu", "mi300a-spx:gpu"])
    for _, part in r.group_by("row"):
        assert part.get_column("relR").is_sorted() and part.get_column("rank").to_list() == [
            1,
            2,
            3,
        ]


@pytest.mark.parametrize("name", R.list_regressors())
def test_every_downstream_model_trains_and_predicts(world, name, tmp_path):
    train = world["train"].filter(
        pl.col("app").is_in(sorted(set(world["train"].get_column("app")))[:12])
    )
    p = XammPredictor(feature_columns=list(FEATURES), regressor=name, epochs=5).fit(
        train, world["sigs"]
    )
    src = world["test"].filter(pl.col("machine") == "quartz")
    out = p.predict(src, "quartz:cpu", ["lassen:gpu"])
    assert out.height == src.height and np.isfinite(out.get_column("relR").to_numpy()).all()
    assert out.get_column("relR").n_unique() > 1  # it tells kernels apart, rather than one constant
    p.save_pretrained(tmp_path / name)
    # no pickles
    assert not [
        f for f in (tmp_path / name).rglob("*") if f.suffix in (".pkl", ".pickle", ".joblib")
    ]
    back = XammPredictor.from_pretrained(str(tmp_path / name))
    assert back.predict(src, "quartz:cpu", ["lassen:gpu"]).equals(out)


def test_a_profile_with_a_non_finite_feature_is_refused_before_the_model_runs(world):
    from xamm_models.profile_input import ProfileInputError

    src = world["test"].filter(pl.col("machine") == "quartz").head(3)
    f = FEATURES[0]
    broken = src.with_columns(
        pl.when(pl.int_range(pl.len()) == 1).then(float("nan")).otherwise(pl.col(f)).alias(f)
    )
    with pytest.raises(
        ProfileInputError, match=rf"column {f} .*must be finite; it is not in row 1 \(1 of 3\)"
    ):
        world["pred"].predict(broken, "quartz:cpu", ["lassen:gpu"])


def test_log_target_is_an_option_and_deterministic(world):
    train = world["train"].filter(
        pl.col("app").is_in(sorted(set(world["train"].get_column("app")))[:12])
    )
    a = XammPredictor(feature_columns=list(FEATURES), log_target=False, epochs=5).fit(
        train, world["sigs"]
    )
    b = XammPredictor(feature_columns=list(FEATURES), log_target=False, epochs=5).fit(
        train, world["sigs"]
    )
    src = world["test"].filter(pl.col("machine") == "quartz")
    assert a.predict(src, "quartz:cpu", ["lassen:gpu"]).equals(
        b.predict(src, "quartz:cpu", ["lassen:gpu"])
    )


def test_push_pull_round_trip_identical_predictions(world, local_hub, tmp_path, monkeypatch):
    pred, test = world["pred"], world["test"]
    src = test.filter(pl.col("machine") == "quartz")
    before = pred.predict(src, "quartz:cpu", ["lassen:gpu", "h100-node:gpu"])
    commit = pred.push_to_hub("xamm-test/predictor")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "fresh"))
    import huggingface_hub.constants as C

    monkeypatch.setattr(C, "HF_HUB_CACHE", str(tmp_path / "fresh" / "hub"))
    rev = commit.oid if hasattr(commit, "oid") else None
    back = XammPredictor.from_pretrained("xamm-test/predictor", revision=rev)
    assert back.predict(src, "quartz:cpu", ["lassen:gpu", "h100-node:gpu"]).equals(before)
    card = tmp_path / "card.md"
    back.card().save(card)
    text = card.read_text()
    assert (
        "Intended use" in text
        and "quartz:cpu@1" in text
        and "Limitations" in text
        and "test-store" in text
    )


def test_config_errors_name_the_field(tmp_path):
    from xamm_models.predictors.paper.pipeline import ConfigError, load_config

    cases = {
        "func: tset\n": "field 'func'",
        "func: train\n": "needs app_train_data_path",
        "func: test\napp_test_data_path: x.parquet\n": "needs app_train_data_path",
        "func: amm\nmachine_data_path: x\nbogus: 1\n": "field 'bogus'",
        "func: train\napp_train_data_path: a\nsrc_model_path: m\nepochs: 0\n": "field 'epochs'",
        "- just\n- a list\n": "expected a mapping",
        # an empty path would be the config's own folder
        "func: train\napp_train_data_path: a\noutput: ''\n": "field 'output': .*empty",
        "func: amm\nmachine_data_path: ' '\n": "field 'machine_data_path': .*empty",
        # a misspelt name is found as the file is read, not after the AMMs are trained
        "func: train\napp_train_data_path: a\noutput: o\nregressor: catbost\n": (
            "field 'regressor': unknown regressor 'catbost'. Did you mean 'catboost'"
        ),
        "func: amm\nmachine_data_path: s\nembedder: atention\n": "field 'embedder': .*'attention'",
    }
    for text, msg in cases.items():
        f = tmp_path / "c.yml"
        f.write_text(text)
        with pytest.raises(ConfigError, match=msg):
            load_config(f)


def test_end_to_end_run_on_store_data(world, tmp_path, capsys):
    from xamm_data.cli.commands import main as xamm

    cfg = tmp_path / "config.yml"
    cfg.write_text(
        "func: test\nmachine_data_path: "
        f"{world['store'].root}\napp_train_data_path: {world['store'].root}\n"
        f"app_test_data_path: {world['store'].root}\nsrc_model_path: {tmp_path / 'model'}\n"
        f"epochs: {EPOCHS}\nsrc_machine_amm: "
        "quartz:cpu\ntarget_machine_amm: lassen:gpu\n"
        f"output: {tmp_path / 'preds.parquet'}\n"
    )
    assert xamm(["run", str(cfg)]) == 0
    preds = pl.read_parquet(tmp_path / "preds.parquet")
    assert (tmp_path / "model" / "predictor.json").is_file() and (
        tmp_path / "model" / "README.md"
    ).is_file()
    info = json.loads((tmp_path / "model" / "predictor.json").read_text())
    version = world["store"].version("benchmark_runs")
    # the table version it read, to reload exactly that data
    assert info["training"]["data_version"] == version
    assert {s["data_version"] for s in info["signatures"].values()} == {version}
    assert (
        set(preds.get_column("target")) == {"lassen:gpu"}
        and (preds.get_column("regime") == "amm").all()
    )
    assert preds.get_column("relR_true").drop_nulls().len() > 0
    out = capsys.readouterr().out
    summary = json.loads(out[out.index("{") :])
    j = preds.filter(pl.col("relR_true").is_not_null())
    independent = float((((j["relR"] - j["relR_true"]).abs() / j["relR_true"]).mean()) * 100)
    assert summary["evaluated_pairs"] == j.height and summary["mape_percent"] == pytest.approx(
        independent, abs=1e-3
    )
    # predict command with the saved model
    prof = tmp_path / "p.parquet"
    world["test"].filter(pl.col("machine") == "quartz").write_parquet(prof)
    assert (
        xamm(
            [
                "predict",
                str(prof),
                "--source",
                "quartz:cpu",
                "--target",
                "lassen:gpu",
                "--model",
                str(tmp_path / "model"),
                "--out",
                str(tmp_path / "o.parquet"),
            ]
        )
        == 0
    )
    assert (
        pl.read_parquet(tmp_path / "o.parquet").height
        == world["test"].filter(pl.col("machine") == "quartz").height
    )
    assert (
        xamm(
            [
                "predict",
                str(prof),
                "--source",
                "ruby:cpu",
                "--target",
                "lassen:gpu",
                "--model",
                str(tmp_path / "model"),
            ]
        )
        == 1
    )
    assert math.isfinite(pl.read_parquet(tmp_path / "o.parquet").get_column("relR").sum())


def test_skops_file_with_a_foreign_type_is_refused(tmp_path):
    import os

    import skops.io as sio
    from sklearn.preprocessing import FunctionTransformer

    # a file that would call a function
    sio.dump(FunctionTransformer(func=os.getcwd), tmp_path / "m.skops")
    with pytest.raises(PermissionError, match="posix.getcwd"):
        R.load_regressor("random_forest", tmp_path / "m")


def test_xamm_predict_exits_1_on_an_unknown_target(world, tmp_path, capsys):
    from xamm_data.cli.commands import main as xamm

    pred, test = world["pred"], world["test"]
    pred.save_pretrained(tmp_path / "model")
    test.filter(pl.col("machine") == "quartz").write_parquet(tmp_path / "p.parquet")
    argv = [
        "predict",
        str(tmp_path / "p.parquet"),
        "--source",
        "quartz:cpu",
        "--model",
        str(tmp_path / "model"),
    ]
    assert xamm([*argv, "--target", "lasen:gpu"]) == 1
    err = capsys.readouterr().err
    assert "Did you mean 'lassen:gpu'" in err and "--target-benchmarks" in err
    assert xamm([*argv, "--target", "lassen:gpu", "--json"]) == 0
    # stdout is exactly the JSON (no "Loading weights..." line)
    rows = json.loads(capsys.readouterr().out)
    assert (
        len(rows) == test.filter(pl.col("machine") == "quartz").height
        and rows[0]["target"] == "lassen:gpu"
    )
