"""The predictor contract: every kind of the zoo answers with the same columns, is saved through
the one Hub base with its format version, and loads as its own class (synthetic law: code paths
only)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

pytest.importorskip("torch", reason="the models extra (torch) is not installed")

from synthetic_world import world

from xamm_data.hub.files import write_manifest
from xamm_models.errors import ProfileInputError, SavedFormatError, WrongKindError
from xamm_models.predictors.baseline import BaselinePredictor
from xamm_models.predictors.contract import PREDICTION_COLUMNS, RANK_COLUMNS, Predictor
from xamm_models.predictors.default.model import StackedPredictor
from xamm_models.predictors.kinds import MODELS, load_model
from xamm_models.predictors.paper.predictor import XammPredictor
from xamm_models.predictors.vae_dnn import VaeDnn, vector_samples

FEATS = ["f_log_s_per_iter", "f_arith_intensity", "f_log_problem_size"]
HOOKS = ("from_pretrained", "_from_pretrained", "_save_pretrained", "card", "rank_targets")


@pytest.fixture(scope="module")
def kinds():
    pairs, samples = world(0, n_kernels=30)
    pairs = pairs.with_columns(pl.format("{}|{}", "app", "size_bucket").alias("sample"))
    machines = sorted(set(pairs.get_column("target")))
    vae = VaeDnn(machines, machines, feature_names=FEATS, vae_epochs=5, dnn_epochs=5)
    return {
        "stacked": StackedPredictor(seed=0).fit(pairs, samples),
        "baseline": BaselinePredictor(method="roofline").fit(pairs, samples),
        "xamm": XammPredictor(feature_columns=FEATS, epochs=5, regressor="xgboost").fit_pairs(
            pairs
        ),
        "vae-dnn": vae.fit(vector_samples(pairs, features=FEATS)),
    }, samples.filter(pl.col("target") == "a:cpu").head(3).drop("target")


def test_every_zoo_kind_implements_the_contract_and_overrides_no_hub_method():
    for name in MODELS:
        entry = MODELS.get(name)
        cls = entry.load_class()
        assert issubclass(cls, Predictor) and (cls.kind, cls.marker) == (name, entry.marker)
        assert cls.format_version >= 1
        assert [h for h in HOOKS if h in vars(cls)] == [], name


def test_every_kind_answers_with_the_same_columns_and_ranks_alike(kinds):
    models, prof = kinds
    want = [c for c in PREDICTION_COLUMNS if c != "app_params"]
    for name, m in models.items():
        p = m.predict(prof, "a:cpu", ["b:gpu", "c:gpu"])
        assert p.columns == want and p.height == 6, name
        # the contract's signature ends in **kw: an option no kind takes is refused, never ignored
        with pytest.raises(TypeError, match=r"takes no option 'targets_typo'"):
            m.predict(prof, "a:cpu", ["b:gpu"], targets_typo=["c:gpu"])
        assert p.schema["relR"] == p.schema["relR_lo"] == pl.Float64 and p.schema["row"] == pl.Int64
        r = m.rank_targets(prof, "a:cpu", ["b:gpu", "c:gpu"])
        assert r.columns == [*want, *RANK_COLUMNS], name
        for _, part in r.group_by("row"):
            assert part["relR"].is_sorted() and part["rank"].to_list() == [1, 2]
    # intervals, hence probabilities, only where the kind has them
    with_interval = {n for n, m in models.items() if m.interval_coverage is not None}
    assert with_interval == {"stacked"}
    ranked = models["stacked"].rank_targets(prof, "a:cpu", ["b:gpu", "c:gpu"])
    assert np.allclose(ranked.group_by("row").agg(pl.col("p_fastest").sum())["p_fastest"], 1.0)
    assert models["baseline"].rank_targets(prof, "a:cpu")["p_fastest"].null_count() == 9


def test_every_kind_reads_the_targets_and_profiles_asked_for_alike(kinds):
    """One target named alone is that target (not a list of its letters); an empty list, a target
    named twice or a number is refused (None asks for every target); profiles that are no polars
    DataFrame are refused naming their type, never an AttributeError."""
    models, prof = kinds
    for name, m in models.items():
        alone = m.predict(prof, "a:cpu", "b:gpu")
        assert alone.equals(m.predict(prof, "a:cpu", ["b:gpu"])), name
        assert set(m.predict(prof, "a:cpu").get_column("target")) == {"b:gpu", "c:gpu", "d:cpu"}
        with pytest.raises(ValueError, match="an empty list names no machine"):
            m.predict(prof, "a:cpu", [])
        with pytest.raises(ValueError, match="'b:gpu' is named twice"):
            m.rank_targets(prof, "a:cpu", ["b:gpu", "c:gpu", "b:gpu"])
        with pytest.raises(TypeError, match="targets: an int; expected a machine name"):
            m.predict(prof, "a:cpu", 5)
        for bad in (None, {"f_log_s_per_iter": [1.0]}):
            with pytest.raises(ProfileInputError, match=f"profiles: a {type(bad).__name__};"):
                m.predict(bad, "a:cpu", ["b:gpu"])


def test_every_kind_saves_its_format_and_loads_as_itself_from_its_folder(kinds, tmp_path):
    models, prof = kinds
    for name, m in models.items():
        d = tmp_path / name
        m.save_pretrained(d)
        info = json.loads((d / m.marker).read_text())
        assert info["format"] == {"kind": name, "version": type(m).format_version}
        card = (d / "README.md").read_text()
        assert card.startswith("---\nlibrary_name: xamm\n") and f"kind `{name}`" in card
        for back in (load_model(str(d)), Predictor.from_pretrained(d), type(m).from_pretrained(d)):
            assert type(back) is type(m)
            assert back.predict(prof, "a:cpu", ["b:gpu"]).equals(
                m.predict(prof, "a:cpu", ["b:gpu"])
            )
        other = StackedPredictor if name != "stacked" else BaselinePredictor
        with pytest.raises(WrongKindError, match=f"holds a '{name}' predictor"):
            other.from_pretrained(d)


def test_a_folder_of_a_newer_format_or_another_kind_is_refused_by_name(kinds, tmp_path):
    models, _ = kinds
    m = models["baseline"]
    d = tmp_path / "m"
    m.save_pretrained(d)
    info = json.loads((d / m.marker).read_text())
    for fmt, message in (
        ({"kind": "baseline", "version": 99}, "format version 99 .*upgrade xamm"),
        ({"kind": "stacked", "version": 1}, "says kind 'stacked', expected 'baseline'"),
    ):
        (d / m.marker).write_text(json.dumps({**info, "format": fmt}))
        write_manifest(d)
        with pytest.raises(SavedFormatError, match=message):
            BaselinePredictor.from_pretrained(d)
    for text, message in (
        ("{not json", "is not JSON"),
        ("[" * 100_000 + "]" * 100_000, "is not JSON .*recursion"),
        ("[1, 2]", "is not a JSON object with a format object"),
        (json.dumps({**info, "format": 5}), "is not a JSON object with a format object"),
    ):
        (d / m.marker).write_text(text)
        write_manifest(d)
        with pytest.raises(SavedFormatError, match=f"{m.marker} {message}"):
            BaselinePredictor.from_pretrained(d)
    # a folder saved before the format was recorded (version 0) still reads
    (d / m.marker).write_text(json.dumps({k: v for k, v in info.items() if k != "format"}))
    write_manifest(d)
    assert BaselinePredictor.from_pretrained(d).figures.equals(m.figures)


def _wins_by_draw(mu, sd_lo, sd_hi, noise):
    """The share of draws each target wins, one profile and one draw at a time (the reference)."""
    out = np.zeros_like(mu)
    for p in range(mu.shape[0]):
        for d in range(noise.shape[0]):
            sd = np.where(noise[d] < 0, sd_lo[p], sd_hi[p])
            out[p, int(np.argmin(mu[p] + sd * noise[d]))] += 1
    return out / noise.shape[0]


def test_p_fastest_counts_every_draw_as_the_draw_by_draw_reference_does(monkeypatch):
    from xamm_models.predictors import contract

    rng = np.random.default_rng(5)
    mu = rng.normal(0, 0.2, (23, 4))
    mu[3, 1] = mu[3, 2]  # a tie: the first target wins it, as argmin says
    sd_lo, sd_hi = rng.uniform(0.0, 0.2, (2, 23, 4))
    sd_lo[3, 1:3] = sd_hi[3, 1:3] = 0.0
    noise = rng.standard_normal((300, 4))
    want = _wins_by_draw(mu, sd_lo, sd_hi, noise)
    assert want[3, 2] == 0.0 and want.sum(axis=1) == pytest.approx(1.0)
    for chunk in (1, 5 * 300 * 4 * 8, 1 << 21):  # a profile, 5 (23 is no multiple), all at once
        monkeypatch.setattr(contract, "_CHUNK_BYTES", chunk)
        assert np.array_equal(contract._wins(mu, sd_lo, sd_hi, noise), want)
