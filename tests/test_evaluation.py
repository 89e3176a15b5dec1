"""The xplat-rajaperf data set, the Evaluator, fold leakage, and a small run of the experiments."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

torch = pytest.importorskip("torch", reason="the models extra (torch) is not installed")

from xamm_data import load_dataset  # noqa: E402
from xamm_data.store import Store  # noqa: E402
from xamm_ingest import ingest_rajaperf  # noqa: E402
from xamm_models import xplat  # noqa: E402
from xamm_models.evaluation import Evaluator  # noqa: E402
from xamm_models.experiments import EvalSettings, fold_amm_embeddings, run_experiments  # noqa: E402


def test_evaluator_metrics_hand_computed():
    ev = Evaluator()
    df = pl.DataFrame({
        "sample": ["a", "a", "b", "b"], "source": ["q:cpu"] * 4, "target": ["l:gpu", "r:cpu", "l:gpu", "r:cpu"],
        "y_true": [0.1, 2.0, 0.5, 1.0], "y_pred": [0.2, 2.0, 0.5, 0.5]})
    out = ev.eval(df)
    # APE: 100%, 0%, 0%, 50% -> MAPE 37.5, median 25
    assert out["all"]["mape"] == pytest.approx(37.5) and out["all"]["median_ape"] == pytest.approx(25.0)
    assert out["CPU->GPU"]["mape"] == pytest.approx(50.0) and out["CPU->CPU"]["mape"] == pytest.approx(25.0)
    # order of targets: sample a keeps (l, r); sample b: true (l 0.5 < r 1.0), predicted tie 0.5/0.5 -> stable order
    assert out["all"]["ordering_groups"] == 2 and out["all"]["ordering_accuracy"] == 1.0
    swapped = df.with_columns(pl.when(pl.col("sample") == "a").then(pl.col("y_pred").reverse().over("sample"))
                              .otherwise(pl.col("y_pred")).alias("y_pred"))
    assert ev.eval(swapped)["all"]["ordering_accuracy"] == 0.5
    lt = [math.log(x) for x in (0.1, 2.0, 0.5, 1.0)]
    lp = [math.log(x) for x in (0.2, 2.0, 0.5, 0.5)]
    m = sum(lt) / 4
    r2 = 1 - sum((a - b) ** 2 for a, b in zip(lt, lp)) / sum((a - m) ** 2 for a in lt)
    assert out["all"]["r2_log"] == pytest.approx(r2)
    assert "GPU->CPU" not in out


@pytest.mark.parametrize("change,msg", [
    (lambda d: d.drop("y_pred"), "lacks columns"),
    (lambda d: d.with_columns(pl.lit(-1.0).alias("y_true")), "finite and > 0"),
    (lambda d: d.with_columns(pl.lit("quartz").alias("source")), "machine:cpu"),
    (lambda d: d.with_columns(pl.col("source").alias("target")), "source == target"),
    (lambda d: d.head(0), "no rows"),
])
def test_evaluator_checks_its_input(change, msg):
    df = pl.DataFrame({"sample": ["a"], "source": ["q:cpu"], "target": ["l:gpu"], "y_true": [1.0], "y_pred": [1.0]})
    with pytest.raises(ValueError, match=msg):
        Evaluator().eval(change(df))
    assert "ordering accuracy" in Evaluator.expected_input_format


@pytest.fixture(scope="module")
def eval_store(rajaperf_sets, tmp_path_factory):
    st = Store(tmp_path_factory.mktemp("eval") / "store")
    ingest_rajaperf(rajaperf_sets["thicket"], store=st, workers=2)
    ingest_rajaperf([rajaperf_sets["h100_tier1"], rajaperf_sets["h100_tier2"]], machine="h100-node", store=st, workers=2)
    ingest_rajaperf([rajaperf_sets["mi300a_tier1"], rajaperf_sets["mi300a_tier2"]], machine="mi300a-spx", store=st, workers=2)
    return st


def test_xplat_dataset_is_loadable_versioned_and_documented(eval_store):
    df = load_dataset("xplat-rajaperf", store=eval_store)
    again = load_dataset("xplat-rajaperf", store=eval_store)
    assert xplat.version(df) == xplat.version(again) and len(xplat.version(df)) == 16
    assert set(df.get_column("machine")) == {"quartz", "lassen", "h100-node", "mi300a-spx"}
    assert df.get_column("runtime_per_iteration").all() and "group" in df.columns
    card = xplat.card(df)
    assert "Caveats" in card and "h100-node:gpu" in card and xplat.version(df) in card
    with pytest.raises(FileNotFoundError, match="benchmark_runs"):
        load_dataset("xplat-rajaperf", store=Store(eval_store.root.parent / "empty"))


def test_fold_amms_never_see_the_test_kernels(eval_store):
    runs = eval_store.scan("benchmark_runs").collect()
    test_k = sorted(set(runs.filter(pl.col("group") == "Apps").get_column("kernel")))
    embs, kernels = fold_amm_embeddings(runs, test_k, EvalSettings(epochs=2))
    assert kernels and not set(kernels) & set(test_k)
    assert "Apps_VOL3D" in test_k and "Apps_VOL3D" not in kernels
    # with the kernels kept, the same routine would have used them: the exclusion is what removes them
    _, all_k = fold_amm_embeddings(runs, [], EvalSettings(epochs=2))
    assert "Apps_VOL3D" in all_k
    # fold signatures are made as every signature is: a real data hash of the target's samples, not zeros
    from xamm_data.hashing import frame_sha256
    from xamm_models.experiments import signatures_from_embeddings

    sigs = signatures_from_embeddings(embs, kernels, "l2")
    for target, (E, part) in embs.items():
        assert sigs[target].data_sha256 == frame_sha256(part) != "0" * 64
        assert sigs[target].n_samples == part.height == len(E) and 0 < sigs[target].coverage <= 1


def test_small_run_of_the_experiments(eval_store, tmp_path):
    s = run_experiments(eval_store, experiments=(3, 4), out_dir=tmp_path,
                        settings=EvalSettings(epochs=5, loko=False, groups=("Apps",)), progress=lambda *_: None)
    res = s["results"]
    assert {"raw/xgboost", "attention+amm/xgboost", "attention-no-amm/xgboost", "attention+amm-mean/xgboost",
            "attention+amm-variance/xgboost", "held-out-machine/attention+amm/xgboost"} <= set(res)
    for name, r in res.items():
        assert math.isfinite(r["all"]["mape"]) and r["all"]["n"] > 0, name
    # every relR pair of the held-out group is scored: counted independently from the data set
    from xamm_models.relperf import pair_relative

    data = xplat.build(eval_store.scan("benchmark_runs").collect())
    apps_pairs = pair_relative(data).filter(pl.col("app").is_in(data.filter(pl.col("group") == "Apps")["app"].unique().to_list()))
    assert res["raw/xgboost"]["all"]["n"] == apps_pairs.height
    assert set(s["headline"]) == {"xgboost_mape_reduction_cpu_cpu", "xgboost_mape_reduction_cpu_gpu",
                                  "xgboost_mape_reduction_gpu_gpu", "xgboost_mape_reduction_gpu_cpu"}
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["results"] == res and saved["settings"]["seed"] == 0
    md = (tmp_path / "results.md").read_text()
    assert "| raw/xgboost |" in md and "−49.64%" in md
    assert (tmp_path / "dataset-card.md").is_file()
