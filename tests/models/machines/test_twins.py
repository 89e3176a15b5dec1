"""Twins: a new machine its benchmark runs cannot tell from a known one is answered as that one.

Synthetic machines (tests/synthetic_world.py's known law) test the rule and the code paths; what
it does on the real data (the evaluation's held-out MI300A node) is in
tests/models/benchmark/test_evaluation.py and the README.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

pytest.importorskip("xgboost", reason="the models extra is not installed")

from synthetic_world import world  # noqa: E402

import xamm_models.predictors.default.model as dm  # noqa: E402
from xamm_data.hub_files import write_manifest  # noqa: E402
from xamm_models.machines.physics import distance, physics_signatures  # noqa: E402
from xamm_models.machines.twins import noise_by_target, signature_noise, twins  # noqa: E402
from xamm_models.predictors.default.model import StackedConfig, StackedPredictor  # noqa: E402


def remeasured(
    samples: pl.DataFrame, of: str, name: str, seed: int = 5, sd: float = 0.03
) -> pl.DataFrame:
    """``of``'s benchmark samples measured again under another name, each time off by a few
    percent."""
    own = samples.filter(pl.col("target") == of)
    jitter = 10 ** np.random.default_rng(seed).normal(0, sd, own.height)
    return own.with_columns(
        pl.lit(name).alias("target"),
        pl.col("time_per_rep_s") * pl.Series(jitter),
        pl.col("runtime_s") * pl.Series(jitter),
    )


@pytest.fixture(scope="module")
def fitted():
    pairs, samples = world(0)
    return StackedPredictor(seed=0).fit(*_training(pairs, samples)), pairs, samples


def test_signature_noise_is_seeded_positive_and_undefined_for_one_kernel():
    _, samples = world(0)
    sigs = physics_signatures(samples)
    ref = {t: s for t, s in sigs.items() if t != "a:cpu"}
    a = signature_noise(samples, "a:cpu", ref, draws=50, seed=3)
    assert a == signature_noise(samples, "a:cpu", ref, draws=50, seed=3) and a > 0
    assert a != signature_noise(samples, "a:cpu", ref, draws=50, seed=4)
    one = samples.filter(pl.col("app") == samples["app"][0])
    assert np.isnan(signature_noise(one, "a:cpu"))


def test_signature_noise_is_the_bootstrap_over_kernels_it_defines():
    """The resampling works on arrays; here it is recomputed as defined: each draw joins the drawn
    kernels (with repeats) to their samples and measures the signature from that frame."""
    _, samples = world(0)
    sigs = physics_signatures(samples)
    ref = {t: s for t, s in sigs.items() if t != "b:gpu"}
    own = samples.filter(pl.col("target") == "b:gpu")
    apps = np.sort(own["app"].unique().to_numpy())
    base = physics_signatures(own, ref)["b:gpu"]
    rng = np.random.default_rng(7)
    moved = [
        distance(
            physics_signatures(
                pl.DataFrame({"app": rng.choice(apps, len(apps))}).join(own, on="app"), ref
            )["b:gpu"],
            base,
        )
        for _ in range(40)
    ]
    assert signature_noise(samples, "b:gpu", ref, draws=40, seed=7) == float(
        np.quantile(moved, 0.9)
    )
    assert len(set(moved)) > 10  # the draws differ: the quantile is not of a constant


def test_a_remeasured_machine_is_a_twin_and_a_different_one_is_not():
    _, samples = world(0)
    known = physics_signatures(samples.filter(pl.col("target") != "d:cpu"))
    noise = noise_by_target(samples.filter(pl.col("target") != "d:cpu"), known)
    bench = pl.concat(
        [remeasured(samples, "a:cpu", "e:cpu"), samples.filter(pl.col("target") == "d:cpu")]
    )
    new = physics_signatures(bench, reference=known)
    own = {t: signature_noise(bench, t, known) for t in new}
    assert distance(new["e:cpu"], known["a:cpu"]) < noise["a:cpu"]
    # d:cpu has twice a:cpu's bandwidth, flop rate and overhead: further from a:cpu than a:cpu's
    # runs move it
    assert distance(new["d:cpu"], known["a:cpu"]) > noise["a:cpu"]
    assert twins(new, known, noise, own.get) == {"e:cpu": "a:cpu"}
    # a GPU is never a CPU's twin, however close; an unknown (NaN) noise recognises none
    gpu = {"e:gpu": new["e:cpu"].model_copy(update={"target": "e:gpu"})}
    assert twins(gpu, {"a:cpu": known["a:cpu"]}, noise, lambda t: 99.0) == {}
    assert twins(new, known, {**noise, "a:cpu": float("nan")}, own.get) == {}
    # both noises must allow the distance: a tight noise on either side rules the twin out
    assert twins(new, known, noise, lambda t: 0.0) == {}
    assert twins(new, known, {**noise, "a:cpu": 0.0}, lambda t: 99.0) == {}


def test_a_twin_target_is_answered_as_its_known_twin_with_the_wider_interval(fitted):
    model, pairs, samples = fitted
    bench = remeasured(samples, "a:cpu", "e:cpu")
    rows = pairs.filter(pl.col("source") == "b:gpu", pl.col("target") == "a:cpu")
    p = model.predict_pairs(
        rows.with_columns(pl.lit("e:cpu").alias("target")), target_benchmarks=bench
    )
    same = model.predict_pairs(rows)
    assert (p["regime"] == "twin").all()
    assert p["relR"].to_numpy() == pytest.approx(same["relR"].to_numpy())
    # what the candidates were asked: the twin in place of the new target, the new machine's
    # signature measured
    sigs, asked = model.asked(
        rows.with_columns(pl.lit("e:cpu").alias("target")), target_benchmarks=bench
    )
    assert asked.get_column("target").to_list() == ["a:cpu"] * rows.height and "e:cpu" in sigs
    assert asked.drop("target").equals(rows.drop("target"))
    half = np.log10(p["relR_hi"].to_numpy() / p["relR"].to_numpy())
    # answered through the regime the known pair would use (its kernel group is in training:
    # siblings)
    assert (same["regime"] == "siblings").all()
    want = max(
        model.calibration[r].halfwidth.get("GPU->CPU", model.calibration[r].halfwidth["all"])
        for r in ("siblings", "new")
    )
    assert half == pytest.approx(np.full(len(half), want))
    lone = model.predict_pairs(
        rows.drop("group").with_columns(pl.lit("e:cpu").alias("target")), target_benchmarks=bench
    )
    assert (lone["regime"] == "twin").all()
    assert lone["relR"].to_numpy() == pytest.approx(
        model.predict_pairs(rows.drop("group"))["relR"].to_numpy()
    )
    want = max(
        model.calibration[r].halfwidth.get("GPU->CPU", model.calibration[r].halfwidth["all"])
        for r in ("seen", "new")
    )
    assert np.log10(lone["relR_hi"].to_numpy() / lone["relR"].to_numpy()) == pytest.approx(
        np.full(len(half), want)
    )
    # the twin of the source itself: relR 1
    own = model.predict_pairs(
        rows.with_columns(pl.lit("a:cpu").alias("source"), pl.lit("e:cpu").alias("target")).head(3),
        target_benchmarks=bench,
    )
    assert (own["regime"] == "twin").all() and (own["relR"] == 1.0).all()
    # a known machine asked against itself: relR 1 too, not a model's guess
    itself = model.predict_pairs(rows.with_columns(pl.col("target").alias("source")).head(3))
    assert (itself["regime"] == "siblings").all() and (itself["relR"] == 1.0).all()


def test_a_twin_source_too_and_a_machine_unlike_all_stays_new(fitted):
    model, pairs, samples = fitted
    bench = pl.concat(
        [remeasured(samples, "b:gpu", "e:gpu"), samples.filter(pl.col("target") == "d:cpu")]
    )
    rows = pairs.filter(pl.col("source") == "b:gpu", pl.col("target") == "a:cpu")
    p = model.predict_pairs(
        rows.with_columns(pl.lit("e:gpu").alias("source")), target_benchmarks=bench
    )
    assert (p["regime"] == "twin").all()
    assert p["relR"].to_numpy() == pytest.approx(model.predict_pairs(rows)["relR"].to_numpy())
    d = model.predict_pairs(
        pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "d:cpu"),
        target_benchmarks=bench,
    )
    assert (d["regime"] == "new").all()


def test_twins_can_be_switched_off_and_survive_saving(fitted, tmp_path):
    model, pairs, samples = fitted
    bench = remeasured(samples, "a:cpu", "e:cpu")
    rows = pairs.filter(pl.col("source") == "b:gpu", pl.col("target") == "a:cpu").with_columns(
        pl.lit("e:cpu").alias("target")
    )
    off = StackedPredictor(StackedConfig(twins=False)).fit(*_training(pairs, samples))
    assert (
        off.noise == {}
        and (off.predict_pairs(rows, target_benchmarks=bench)["regime"] == "new").all()
    )
    model.save_pretrained(tmp_path / "m")
    back = StackedPredictor.from_pretrained(str(tmp_path / "m"))
    assert back.noise == pytest.approx(model.noise)
    assert back.predict_pairs(rows, target_benchmarks=bench).equals(
        model.predict_pairs(rows, target_benchmarks=bench)
    )
    # a predictor saved before twins existed has no noise: it recognises none
    info = tmp_path / "m" / "stacked_predictor.json"
    data = json.loads(info.read_text())
    # saved before formats were versioned (version 0), and before twins
    del data["noise"], data["format"]
    info.write_text(json.dumps(data))
    write_manifest(tmp_path / "m")  # as that older xamm saved it
    old = StackedPredictor.from_pretrained(str(tmp_path / "m"))
    assert (old.predict_pairs(rows, target_benchmarks=bench)["regime"] == "new").all()


def _training(pairs: pl.DataFrame, samples: pl.DataFrame):
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    return known, samples.filter(~pl.col("target").str.starts_with("d:"))


def test_a_new_machine_at_both_ends_is_bootstrapped_once(fitted, monkeypatch):
    model, pairs, samples = fitted
    calls = []
    real = dm.signature_noise
    monkeypatch.setattr(
        dm, "signature_noise", lambda bench, t, *a, **k: calls.append(t) or real(bench, t, *a, **k)
    )
    bench = remeasured(samples, "b:gpu", "e:gpu")
    rows = pl.concat(
        [
            pairs.filter(pl.col("source") == "b:gpu", pl.col("target") == "a:cpu")
            .head(3)
            .with_columns(pl.lit("e:gpu").alias("source")),
            pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "b:gpu")
            .head(3)
            .with_columns(pl.lit("e:gpu").alias("target")),
        ]
    )
    p = model.predict_pairs(rows, target_benchmarks=bench)
    assert (p["regime"] == "twin").all() and calls == ["e:gpu"]
