"""xamm's default predictor: variant chosen on inner folds, conformal intervals, refusal, rankings,
persistence.

Synthetic machines test the code paths (a known law, so the right answers are known); the real
data's figures are in the evaluation (tests/models/benchmark/test_evaluation.py).
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

pytest.importorskip("xgboost", reason="the models extra is not installed")

from synthetic_world import GROUPS, world  # noqa: E402

from xamm_data.hub_files import write_manifest  # noqa: E402
from xamm_models.errors import UnknownSourceError, UnknownTargetError  # noqa: E402
from xamm_models.machines.physics import modelled_time, physics_signature  # noqa: E402
from xamm_models.predictors.default.model import StackedPredictor  # noqa: E402


@pytest.fixture(scope="module")
def fitted():
    pairs, samples = world(0)
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    return (
        StackedPredictor(seed=0).fit(
            known, samples.filter(~pl.col("target").str.starts_with("d:"))
        ),
        pairs,
        samples,
    )


def test_the_residual_is_chosen_when_the_source_efficiency_carries_signal(fitted):
    model, _, _ = fitted
    cal = model.calibration["seen"]
    # the hidden efficiency is visible in the source's time; the residual learns it
    assert cal.variant != "prior"
    assert cal.inner_within_2[cal.variant] > cal.inner_within_2["prior"]
    assert set(model.calibration) == {"seen", "siblings", "new"}


def test_intervals_cover_about_as_often_as_stated_on_new_kernels(fitted):
    model, _, _ = fitted
    pairs, _ = world(1)  # fresh kernels from the same law
    pairs = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    p = model.predict_pairs(pairs)
    y = pairs["relR"].to_numpy()
    cov = np.mean((y >= p["relR_lo"].to_numpy()) & (y <= p["relR_hi"].to_numpy()))
    assert 0.7 <= cov <= 0.9
    assert (p["relR_lo"] < p["relR"]).all() and (p["relR"] < p["relR_hi"]).all()


def test_an_unknown_target_or_source_is_refused_with_the_known_ones_named(fitted):
    model, pairs, _ = fitted
    rows = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "d:cpu")
    with pytest.raises(
        UnknownTargetError, match=r"(?i)d:cpu.*known: a:cpu, b:gpu, c:gpu.*target_benchmarks"
    ):
        model.predict_pairs(rows)
    with pytest.raises(UnknownTargetError, match="(?i)did you mean .b:gpu."):
        model.predict_pairs(rows.with_columns(pl.lit("b:gpuu").alias("target")))
    with pytest.raises(UnknownSourceError):
        model.predict_pairs(pairs.filter(pl.col("source") == "d:cpu", pl.col("target") == "a:cpu"))


def test_a_new_machine_gets_its_signature_from_its_benchmark_samples(fitted):
    model, pairs, samples = fitted
    rows = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "d:cpu")
    d = samples.filter(pl.col("target") == "d:cpu")
    p = model.predict_pairs(rows, target_benchmarks=d)
    assert (p["regime"] == "new").all()
    sig = physics_signature("d:cpu", d)
    want = modelled_time(sig, rows) / modelled_time(model.signatures["a:cpu"], rows)
    if model.calibration["new"].choice("CPU->CPU") == "prior":
        assert p["relR"].to_numpy() == pytest.approx(want)
    err = np.median(np.abs(np.log10(p["relR"].to_numpy() / rows["relR"].to_numpy())))
    assert err < 0.3  # the physics carries over to a machine never trained on


def test_rank_targets_orders_by_prediction_and_gives_probabilities(fitted):
    model, _, samples = fitted
    prof = samples.filter(pl.col("target") == "a:cpu").head(5)
    r = model.rank_targets(prof, "a:cpu", ["b:gpu", "c:gpu"])
    assert r.columns[:4] == ["row", "app", "source", "target"]
    assert r.group_by("row").agg(pl.col("p_fastest").sum())[
        "p_fastest"
    ].to_numpy() == pytest.approx(1.0, abs=1e-9)
    for _, part in r.group_by("row"):
        assert part["relR"].is_sorted() and part["rank"].to_list() == [1, 2]
        # the predicted fastest is the likelier fastest (symmetric intervals)
        assert part["p_fastest"][0] >= 0.5
    assert r.equals(model.rank_targets(prof, "a:cpu", ["b:gpu", "c:gpu"]))  # seeded


def test_save_and_load_give_the_same_predictions(fitted, tmp_path):
    model, pairs, _ = fitted
    rows = pairs.filter(
        ~pl.col("target").str.starts_with("d:") & ~pl.col("source").str.starts_with("d:")
    ).head(50)
    model.save_pretrained(tmp_path / "m")
    back = StackedPredictor.from_pretrained(str(tmp_path / "m"))
    assert back.predict_pairs(rows).equals(model.predict_pairs(rows))
    card = (tmp_path / "m" / "README.md").read_text()
    assert "pipeline_tag: tabular-regression" in card and model.calibration["seen"].variant in card


def test_xamm_predict_rank_json_names_the_applications(fitted, tmp_path, capsys):
    import json

    from xamm_data.cli import main as xamm

    model, _, samples = fitted
    model.save_pretrained(tmp_path / "m")
    samples.filter(pl.col("target") == "a:cpu").head(3).write_parquet(tmp_path / "p.parquet")
    argv = [
        "predict",
        str(tmp_path / "p.parquet"),
        "--source",
        "a:cpu",
        "--model",
        str(tmp_path / "m"),
    ]
    capsys.readouterr()
    assert xamm([*argv, "--target", "b:gpu", "--target", "c:gpu", "--rank", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 6 and {r["app"] for r in rows} == set(
        samples.filter(pl.col("target") == "a:cpu").head(3)["app"]
    )
    assert {"rank", "p_fastest", "relR_lo", "relR_hi"} <= set(rows[0])
    assert xamm([*argv, "--target", "b:gpuu"]) == 1
    assert "Did you mean 'b:gpu'" in capsys.readouterr().err


def test_push_and_pull_through_the_hub_pinned_and_unpinned(
    fitted, local_hub, tmp_path, monkeypatch
):
    from xamm_models.predictors.default.model import load_predictor

    model, pairs, _ = fitted
    rows = pairs.filter(
        ~pl.col("target").str.starts_with("d:") & ~pl.col("source").str.starts_with("d:")
    ).head(20)
    info = model.push_to_hub("xamm-test/default-model", token="hf_xamm_test_token")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "fresh"))
    sha = info.oid if hasattr(info, "oid") else str(info).rsplit("/", 1)[-1]
    for back in (
        StackedPredictor.from_pretrained("xamm-test/default-model"),
        StackedPredictor.from_pretrained("xamm-test/default-model", revision=sha),
        load_predictor("xamm-test/default-model"),
    ):
        assert back.predict_pairs(rows).equals(model.predict_pairs(rows))


def test_pair_offset_falls_back_from_the_pair_to_its_scenario_to_everything():
    from xamm_models.predictors.default.candidates import PairOffset

    train = pl.DataFrame(
        {
            "source": ["a:cpu", "a:cpu", "a:cpu", "b:gpu"],
            "target": ["b:gpu", "b:gpu", "b:gpu", "c:gpu"],
            "relR": [0.1, 0.2, 0.4, 3.0],
        }
    )
    m = PairOffset("pair-median").fit({}, train)
    test = pl.DataFrame(
        {
            "source": ["a:cpu", "d:cpu", "b:gpu", "a:cpu"],
            "target": ["b:gpu", "c:gpu", "c:gpu", "d:cpu"],
        }
    )
    got = m.predict({}, test)
    overall = np.exp(np.median(np.log([0.1, 0.2, 0.4, 3.0])))
    # pair; CPU->GPU scenario; pair; nothing known -> all
    assert got == pytest.approx([0.2, 0.2, 3.0, overall])
    back = PairOffset("pair-median")
    back.load_state(json_roundtrip(m.state()))
    assert back.predict({}, test) == pytest.approx(got)


def test_split_carries_the_square_root_of_the_source_slowdown_and_nothing_is_fitted():
    """``split``: relR = (modelled target time / modelled source time) / sqrt(measured / modelled
    source time), checked against modelled_time computed here: a sample at its source's roofline
    gets the prior, one 4x slower than modelled half the prior's relR, one 4x faster twice it; the
    share is saved and a different one refused."""
    from xamm_models.machines.physics import physics_signatures
    from xamm_models.predictors.default.candidates import SplitSlowdown

    pairs, samples = world(0)
    sigs = physics_signatures(samples)
    rows = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "b:gpu").head(6)
    m_s, m_t = modelled_time(sigs["a:cpu"], rows), modelled_time(sigs["b:gpu"], rows)
    slow = np.array([1.0, 4.0, 0.25, 1.0, 4.0, 0.25])
    rows = rows.with_columns(
        pl.Series("runtime_source", m_s * slow / rows["iterations_per_rep"].to_numpy())
    )
    split = SplitSlowdown().fit(sigs, pairs.head(0))  # fitting learns nothing, even from no pairs
    assert split.predict(sigs, rows) == pytest.approx(
        m_t / m_s * np.array([1.0, 0.5, 2.0, 1.0, 0.5, 2.0])
    )
    back = SplitSlowdown()
    back.load_state(json_roundtrip(split.state()))
    assert back.predict(sigs, rows) == pytest.approx(split.predict(sigs, rows))
    with pytest.raises(ValueError, match="share 0.3"):
        back.load_state({"share": 0.3})


def json_roundtrip(obj):
    import json

    return json.loads(json.dumps(obj))


def test_most_similar_answers_a_new_machine_as_its_nearest_known_one(fitted):
    from xamm_models.machines.physics import physics_signatures
    from xamm_models.predictors.default.candidates import MostSimilar

    _, pairs, samples = fitted
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    sigs = physics_signatures(samples)
    m = MostSimilar(seed=0).fit(sigs, known)
    assert m.stand_ins(sigs, pairs, "target") == {"d:cpu": "a:cpu"}  # the only known CPU
    rows = pairs.filter(
        pl.col("target") == "d:cpu", pl.col("source").is_in(["a:cpu", "b:gpu"])
    ).sort("source")
    got = m.predict(sigs, rows)
    as_a = m.base.predict(
        sigs, rows.filter(pl.col("source") == "b:gpu").with_columns(pl.lit("a:cpu").alias("target"))
    )
    # the stand-in is the source itself
    assert got[rows["source"].to_numpy() == "a:cpu"] == pytest.approx(1.0)
    assert got[rows["source"].to_numpy() == "b:gpu"] == pytest.approx(as_a)
    seen = known.head(30)
    # on known pairs: the residual model
    assert m.predict(sigs, seen) == pytest.approx(m.base.predict(sigs, seen))


def test_choices_are_per_scenario_and_scarce_evidence_keeps_the_simplest():
    pairs, samples = world(0)
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    s = samples.filter(~pl.col("target").str.starts_with("d:"))
    strict = StackedPredictor(seed=0, min_units=99).fit(known, s)
    for regime, cal in strict.calibration.items():
        # no scenario has 99 inner folds
        assert set(cal.variants.values()) == {strict.config.candidates[regime][0]}
        assert set(cal.inner_by_scenario) == set(cal.variants)
    loose = StackedPredictor(seed=0).fit(known, s).calibration["seen"]
    # pooled over scenarios a residual wins here, yet a scenario never seen gets the prior
    assert loose.variant != "prior"
    assert loose.choice("a scenario the inner folds never held") == loose.fallback == "prior"
    # each regime's simplest; nothing else is ever asked to predict
    assert set(strict.models) == {"prior", "pair-median"}


def test_every_candidate_survives_save_and_load(fitted, tmp_path):
    model, pairs, _ = fitted
    rows = pairs.filter(
        ~pl.col("target").str.starts_with("d:") & ~pl.col("source").str.starts_with("d:")
    ).head(60)
    m = StackedPredictor.from_pretrained(str(_saved(model, tmp_path / "a")))
    scen = ["CPU->GPU", "GPU->CPU", "GPU->GPU", "CPU->CPU"]
    for cal, names in (
        (m.calibration["seen"], ["pair-median", "pair-prior", "physics", "similar"]),
        (m.calibration["new"], ["similar", "pair-prior", "residual", "split"]),
    ):
        cal.variants = dict(zip(scen, names, strict=True))
    from xamm_models.predictors.default.model import fit_candidates

    m.models = fit_candidates(
        sorted(set().union(*(c.used() for c in m.calibration.values()))),
        m.signatures,
        pairs.filter(
            ~pl.col("target").str.starts_with("d:") & ~pl.col("source").str.starts_with("d:")
        ),
        0,
    )
    back = StackedPredictor.from_pretrained(str(_saved(m, tmp_path / "b")))
    assert set(back.models) == set(m.models)
    assert back.predict_pairs(rows).equals(m.predict_pairs(rows))


def test_a_pair_with_few_training_kernels_gets_the_prior_in_every_candidate_and_after_loading(
    tmp_path,
):
    """``min_pair_kernels``: a machine pair trained on fewer distinct kernels gets no learned
    residual, from the residual candidates and from the most-similar stand-in alike; the gate is
    saved with the predictor."""
    from xamm_models.predictors.default.model import fit_candidates
    from xamm_models.predictors.default.stacked import log_prior

    pairs, samples = world(0)
    pairs = pairs.filter(
        ~pl.col("target").str.starts_with("d:") & ~pl.col("source").str.starts_with("d:")
    )
    few = sorted(pairs["app"].unique())[:6]
    thin = (pl.col("source") == "a:cpu") & (pl.col("target") == "b:gpu")
    train = pairs.filter(~thin | pl.col("app").is_in(few))
    m = StackedPredictor(seed=0, min_pair_kernels=10).fit(train, samples)
    for cal in m.calibration.values():
        cal.variants = dict.fromkeys(cal.variants, "physics")
    used = set().union(*(c.used() for c in m.calibration.values()))
    m.models = fit_candidates(
        sorted({"prior", "residual", "physics", "similar"} | used), m.signatures, train, 0, 10
    )
    rows = pairs.filter(thin).head(20)
    prior = np.exp(log_prior(m.signatures, rows))
    for v in ("residual", "physics", "similar"):
        assert m.models[v].predict(m.signatures, rows) == pytest.approx(prior), v
    other = pairs.filter((pl.col("source") == "b:gpu") & (pl.col("target") == "a:cpu")).head(20)
    assert not np.allclose(
        m.models["physics"].predict(m.signatures, other), np.exp(log_prior(m.signatures, other))
    )
    back = StackedPredictor.from_pretrained(str(_saved(m, tmp_path / "m")))
    assert back.config.min_pair_kernels == 10
    assert back.predict_pairs(rows)["relR"].to_numpy() == pytest.approx(prior)
    assert back.predict_pairs(other).equals(m.predict_pairs(other))


def _saved(model, path):
    model.save_pretrained(path)
    return path


def test_the_selection_rules_the_config_offers():
    from xamm_models.predictors.default.model import (
        _best,
        _per_unit_hits,
        _simplest_unless_clearly_beaten,
    )

    hits = {
        "prior": np.array([0.5, 0.5, 0.5]),
        "residual": np.array([0.6, 0.4, 0.6]),
        "physics": np.array([0.5, 0.5, 0.5]),
    }
    cands = ["prior", "residual", "physics"]
    assert _best(hits, cands, 0) == "residual"  # highest mean
    # one unit where it loses: not clearly better
    assert _simplest_unless_clearly_beaten(hits, cands, 0) == "prior"
    # tie
    assert (
        _best({"prior": hits["prior"], "physics": hits["physics"]}, ["prior", "physics"], 0)
        == "prior"
    )
    # per unit: each unit (fold or kernel) counts once, however many rows it has
    resid = np.array([0.0, 0.0, 0.0, 1.0])  # unit a: 3 rows within 2x; unit b: 1 row outside
    assert _per_unit_hits(resid, np.array(["a", "a", "a", "b"])).tolist() == [1.0, 0.0]
    # between label-free candidates (prior, split) the better inner mean stands first, clear win or
    # not; a fitted
    # candidate must still beat it clearly, and a fitted first candidate (the pair median) keeps its
    # place
    hits = {
        "prior": np.array([0.5, 0.5, 0.5]),
        "split": np.array([0.6, 0.4, 0.6]),
        "residual": np.array([0.7, 0.3, 0.7]),
        "physics": np.array([0.8, 0.7, 0.8]),
        "pair-median": np.array([0.5, 0.5, 0.5]),
    }
    assert _simplest_unless_clearly_beaten(hits, ["prior", "split", "residual"], 0) == "split"
    # a higher mean, not clearly
    assert _simplest_unless_clearly_beaten(hits, ["prior", "residual"], 0) == "prior"
    # clearly
    assert (
        _simplest_unless_clearly_beaten(hits, ["prior", "split", "residual", "physics"], 0)
        == "physics"
    )
    # tie
    assert (
        _simplest_unless_clearly_beaten({**hits, "split": hits["prior"]}, ["prior", "split"], 0)
        == "prior"
    )
    assert (
        _simplest_unless_clearly_beaten(hits, ["pair-median", "prior", "split"], 0) == "pair-median"
    )


def test_the_interval_rule_is_chosen_on_inner_folds_saved_and_can_be_fixed(fitted, tmp_path):
    """``interval="auto"``: each regime's rule is the one whose leave-one-inner-fold-out coverage is
    nearest 0.8, and its half-widths are that rule's; a fixed rule is used as given; a calibration
    saved before the choice existed reads as the group rule it was sized by."""
    import json

    from xamm_models.predictors.default.conformal import RULES, rule_names
    from xamm_models.predictors.default.model import Calibration

    model, pairs, samples = fitted
    for cal in model.calibration.values():
        cov = cal.interval_coverage
        assert set(cov) == set(RULES) and cal.interval in RULES
        assert abs(cov[cal.interval] - 0.8) == min(
            abs(c - 0.8) for c in cov.values() if c is not None
        )
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    chosen = model.calibration["seen"].interval
    fixed = StackedPredictor(seed=0, interval=chosen).fit(
        known, samples.filter(~pl.col("target").str.starts_with("d:"))
    )
    for regime, cal in fixed.calibration.items():
        assert cal.interval == chosen and cal.interval_coverage == {}
        # the rule sizes intervals, it chooses nothing else
        assert cal.variants == model.calibration[regime].variants
    # the chosen rule's widths
    assert fixed.calibration["seen"].halfwidth == model.calibration["seen"].halfwidth
    back = StackedPredictor.from_pretrained(str(_saved(model, tmp_path / "m")))
    assert {r: c.interval for r, c in back.calibration.items()} == {
        r: c.interval for r, c in model.calibration.items()
    }
    seen = model.calibration["seen"]
    rule = (
        f"| {seen.interval} ("
        + ", ".join(f"{r} {seen.interval_coverage[r]:.2f}" for r in rule_names())
        + ") |"
    )
    assert rule in (tmp_path / "m" / "README.md").read_text() and rule in str(back.card())
    old = json.loads(
        model.calibration["seen"].model_dump_json(exclude={"interval", "interval_coverage"})
    )
    assert Calibration(**old).interval == "group"
    # a rule xamm does not have is refused with the ones it has
    with pytest.raises(ValueError, match="fold-mean"):
        StackedPredictor(seed=0, interval="median")
    # a saved calibration naming an unknown rule is refused
    with pytest.raises(ValueError, match="interval"):
        Calibration(**{**old, "interval": "median"})


def test_with_one_training_machine_pair_a_new_machine_gets_no_finite_interval(fitted):
    """No inner fold can hold out a machine when training has one (source, target) pair: the ``new``
    regime borrows no width and says so (rule ``none``), while the ``seen`` regime is still
    calibrated."""
    _, pairs, samples = fitted
    one = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "b:gpu")
    m = StackedPredictor(seed=0).fit(
        one, samples.filter(pl.col("target").is_in(["a:cpu", "b:gpu"]))
    )
    new = m.calibration["new"]
    assert (
        new.interval == "none"
        and new.halfwidth == {"all": float("inf")}
        and new.interval_coverage == {}
    )
    assert (
        np.isfinite(m.calibration["seen"].halfwidth["all"])
        and m.calibration["seen"].interval != "none"
    )
    rows = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "c:gpu").head(3)
    p = m.predict_pairs(rows, target_benchmarks=samples.filter(pl.col("target") == "c:gpu"))
    assert (
        (p["regime"] == "new").all()
        and (p["relR_hi"] == float("inf")).all()
        and (p["relR_lo"] == 0).all()
    )


def test_siblings_inner_folds_hold_each_kernel_once_with_its_group_kept_in_the_fit():
    """The ``siblings`` regime's inner folds: training kernels split at random (seeded), each held
    kernel's group still in the fit part, as when one RAJAPerf kernel is left out of training."""
    from xamm_models.predictors.default.model import _kernel_folds

    pairs, samples = world(0)
    # a group of one kernel
    lone = pairs.filter(pl.col("app") == "G1_K0").with_columns(pl.lit("Solo").alias("group"))
    pairs = pl.concat([pairs.filter(pl.col("app") != "G1_K0"), lone])
    folds = list(_kernel_folds(pairs, samples, 5, 0))
    assert len(folds) == 5
    held = [set(h["app"]) for _, _, h in folds]
    for (_, fit, h), apps in zip(folds, held, strict=True):
        assert not apps & set(fit["app"]) and set(h["group"]) <= set(fit["group"])
    # once each; "Solo" never
    assert sorted(a for apps in held for a in apps) == sorted(set(pairs["app"]) - {"G1_K0"})
    again = [set(h["app"]) for _, _, h in _kernel_folds(pairs, samples, 5, 0)]
    assert (
        again == held and [set(h["app"]) for _, _, h in _kernel_folds(pairs, samples, 5, 1)] != held
    )


def test_an_application_of_a_training_kernel_group_is_answered_by_the_siblings_regime(
    fitted, tmp_path
):
    """Rows whose ``group`` is among the training groups use the siblings regime's choice and
    interval; rows of another group, or without one (a profile), the seen regime's; a save keeps the
    groups, an older save (no groups) knows no siblings."""
    model, pairs, _ = fitted
    rows = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "b:gpu").head(12)
    sib, cal = model.predict_pairs(rows), model.calibration["siblings"]
    assert (sib["regime"] == "siblings").all()
    assert sib["relR"].to_numpy() == pytest.approx(
        model.models[cal.choice("CPU->GPU")].predict(model.signatures, rows)
    )
    assert np.log10(sib["relR_hi"] / sib["relR"]).to_numpy() == pytest.approx(
        cal.halfwidth.get("CPU->GPU", cal.halfwidth["all"])
    )
    seen_cal = model.calibration["seen"]
    for other in (rows.with_columns(pl.lit("New").alias("group")), rows.drop("group")):
        p = model.predict_pairs(other)
        assert (p["regime"] == "seen").all()
        assert p["relR"].to_numpy() == pytest.approx(
            model.models[seen_cal.choice("CPU->GPU")].predict(model.signatures, rows)
        )
    back = StackedPredictor.from_pretrained(str(_saved(model, tmp_path / "m")))
    assert back.groups == model.groups == list(GROUPS) and back.predict_pairs(rows).equals(sib)
    info = json.loads((tmp_path / "m" / "stacked_predictor.json").read_text())
    del info["groups"], info["format"]
    (tmp_path / "m" / "stacked_predictor.json").write_text(json.dumps(info))
    # as xamm saved it before formats were versioned (version 0), and before siblings
    write_manifest(tmp_path / "m")
    assert (
        StackedPredictor.from_pretrained(str(tmp_path / "m")).predict_pairs(rows)["regime"]
        == "seen"
    ).all()


def test_the_siblings_selection_resamples_kernels_not_its_random_folds():
    """With ``min_units=6`` the seen regime's five group folds are too few to choose by (the
    simplest, the prior, everywhere), while the siblings regime's 60 kernels are enough: there a
    residual that reads the source's own efficiency beats the pair median somewhere."""
    pairs, samples = world(0)
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    m = StackedPredictor(seed=0, min_units=6).fit(
        known, samples.filter(~pl.col("target").str.starts_with("d:"))
    )
    assert set(m.calibration["seen"].variants.values()) == {"prior"}
    assert set(m.calibration["siblings"].variants.values()) - {"pair-median"}


def test_without_siblings_candidates_every_seen_target_is_seen_and_seen_and_new_are_required():
    from pydantic import ValidationError

    from xamm_models.predictors.default.model import StackedConfig

    pairs, samples = world(0)
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    two = {"seen": ["prior", "pair-median"], "new": ["prior"]}
    m = StackedPredictor(seed=0, candidates=two).fit(
        known, samples.filter(~pl.col("target").str.starts_with("d:"))
    )
    assert set(m.calibration) == {"seen", "new"}
    assert (m.predict_pairs(known.head(20))["regime"] == "seen").all()
    for bad in ({"seen": ["prior"]}, {**two, "siblings": []}, {**two, "other": ["prior"]}):
        with pytest.raises(ValidationError, match="seen and new"):
            StackedConfig(candidates=bad)


def test_when_no_training_group_holds_two_kernels_there_is_no_siblings_regime():
    """Every kernel its own group: no inner fold can keep a held kernel's sibling, so the predictor
    has no siblings regime (rather than an uncalibrated one) and answers those applications as
    seen."""
    pairs, samples = world(0)
    pairs = pairs.with_columns(pl.col("app").alias("group"))
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    m = StackedPredictor(seed=0).fit(known, samples.filter(~pl.col("target").str.starts_with("d:")))
    assert set(m.calibration) == {"seen", "new"}
    p = m.predict_pairs(known.head(20))
    assert (p["regime"] == "seen").all() and np.isfinite(p["relR_hi"].to_numpy()).all()


def test_a_candidate_added_by_one_decorated_class_is_chosen_where_the_law_is_its_own():
    """Adding a candidate is one class in one file: registered here, it joins the default lists
    and wins where the labels follow it (relR set by the kernel's parity, which no other candidate
    sees)."""
    from xamm_models.predictors.default.candidates import CANDIDATES, register_candidate

    @register_candidate("parity", simplicity=9)
    class Parity:
        model = None

        def __init__(self, name, seed=0, **_):
            self.name = name

        def fit(self, sigs, pairs):
            return self

        def predict(self, sigs, pairs):
            odd = pairs["app"].str.extract(r"K(\d+)$").cast(pl.Int64).to_numpy() % 2
            return np.where(odd == 1, 3.0, 1 / 3.0)

        def state(self):
            return {}

        def load_state(self, state):
            pass

    try:
        pairs, samples = world(0, n_kernels=40)
        odd = pairs["app"].str.extract(r"K(\d+)$").cast(pl.Int64) % 2 == 1
        pairs = pairs.with_columns(pl.when(odd).then(3.0).otherwise(1 / 3.0).alias("relR"))
        model = StackedPredictor(seed=0, kernel_folds=3).fit(pairs, samples)
        for regime in ("seen", "siblings"):
            assert model.config.candidates[regime][-1] == "parity"
            assert set(model.calibration[regime].variants.values()) == {"parity"}
        rows = pairs.head(20)
        assert np.allclose(model.predict_pairs(rows)["relR"], rows["relR"])
    finally:
        CANDIDATES.remove("parity")
    assert "parity" not in StackedPredictor().config.candidates["seen"]
