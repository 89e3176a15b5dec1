"""xamm's default predictor: the half-slowdown model on physics signatures, conformal intervals per
regime and scenario, refusal, rankings, persistence.

Synthetic machines test the code paths (a known law, so the right answers are known); the real
data's figures are in the evaluation (tests/models/benchmark/test_evaluation.py).
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from synthetic_world import world

from xamm_data.hub.files import write_manifest
from xamm_data.machines.targets import scenario_expr
from xamm_models.benchmark.baselines import machine_figures
from xamm_models.errors import UnknownSourceError, UnknownTargetError
from xamm_models.machines.physics import modelled_time, physics_signatures
from xamm_models.predictors.default.model import StackedPredictor
from xamm_models.predictors.default.stacked import split_relr


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


def test_nothing_is_fitted_to_the_labels(fitted):
    """The answers depend on the signatures and the source's time only: shuffled labels give the
    same relR (the intervals, sized on the labels' residuals, may differ)."""
    model, pairs, samples = fitted
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    shuffled = known.with_columns(pl.col("relR").shuffle(seed=1))
    other = StackedPredictor(seed=0).fit(
        shuffled, samples.filter(~pl.col("target").str.starts_with("d:"))
    )
    rows = known.head(40)
    assert other.predict_pairs(rows)["relR"].equals(model.predict_pairs(rows)["relR"])


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
    """The new machine's figures are measured from its samples, and the answer is the plain
    roofline on them (written out here: max(bytes / bandwidth, flops / flop rate) + overhead x
    launches, per iteration), with the scenario's half-width chosen on inner folds."""
    model, pairs, samples = fitted
    rows = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "d:cpu")
    d = samples.filter(pl.col("target") == "d:cpu")
    p = model.predict_pairs(rows, target_benchmarks=d)
    assert (p["regime"] == "new").all() and (p["model"] == "roofline").all()
    figs = {r["target"]: r for r in machine_figures(samples).iter_rows(named=True)}

    def seconds(t):
        f = figs[t]
        b, fl = rows["bytes_per_rep"].to_numpy(), rows["flops_per_rep"].to_numpy()
        n = rows["kernels_per_rep"].fill_null(1.0).to_numpy().clip(1.0)
        return (np.maximum(b / f["bw"], fl / f["flops"]) + f["overhead"] * n) / rows[
            "iterations_per_rep"
        ].to_numpy()

    assert p["relR"].to_numpy() == pytest.approx(seconds("d:cpu") / seconds("a:cpu"))
    c = model.choice
    w = 10 ** c.factor.get("CPU->CPU", c.factor["all"])
    assert not c.scaled and (p["relR_hi"] / p["relR"]).to_numpy() == pytest.approx(w)
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
    assert "pipeline_tag: tabular-regression" in card and "×" in card


def test_a_folder_of_the_candidate_choosing_format_is_refused_by_version(fitted, tmp_path):
    model, _, _ = fitted
    model.save_pretrained(tmp_path / "m")
    f = tmp_path / "m" / "stacked_predictor.json"
    info = json.loads(f.read_text())
    info["format"]["version"] = 1
    f.write_text(json.dumps(info))
    write_manifest(tmp_path / "m")
    with pytest.raises(Exception, match=r"version 1.*reads versions \[3\]; fit and save it again"):
        StackedPredictor.from_pretrained(str(tmp_path / "m"))


def test_xamm_predict_rank_json_names_the_applications(fitted, tmp_path, capsys):
    import json

    from xamm_data.cli.commands import main as xamm

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


def test_split_carries_the_square_root_of_the_source_slowdown():
    """relR = (modelled target time / modelled source time) / sqrt(measured / modelled source
    time), checked against modelled_time computed here: a sample at its source's roofline gets the
    prior, one 4x slower than modelled half the prior's relR, one 4x faster twice it."""
    pairs, samples = world(0)
    sigs = physics_signatures(samples)
    rows = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "b:gpu").head(6)
    m_s, m_t = modelled_time(sigs["a:cpu"], rows), modelled_time(sigs["b:gpu"], rows)
    slow = np.array([1.0, 4.0, 0.25, 1.0, 4.0, 0.25])
    rows = rows.with_columns(
        pl.Series("runtime_source", m_s * slow / rows["iterations_per_rep"].to_numpy())
    )
    assert split_relr(sigs, rows) == pytest.approx(
        m_t / m_s * np.array([1.0, 0.5, 2.0, 1.0, 0.5, 2.0])
    )


def test_with_one_training_machine_pair_a_new_machine_is_answered_with_its_intervals(fitted):
    """Nothing is fitted, so one (source, target) pair in training still calibrates the intervals
    (its kernel groups left out in turn), and a machine known only from its runs gets them."""
    _, pairs, samples = fitted
    one = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "b:gpu")
    m = StackedPredictor(seed=0).fit(
        one, samples.filter(pl.col("target").is_in(["a:cpu", "b:gpu"]))
    )
    hw = m.choice.factor
    assert np.isfinite(hw["all"]) and m.choice.n["all"] == one.height
    rows = pairs.filter(pl.col("source") == "a:cpu", pl.col("target") == "c:gpu").head(3)
    p = m.predict_pairs(rows, target_benchmarks=samples.filter(pl.col("target") == "c:gpu"))
    assert (p["regime"] == "new").all()
    assert (p["relR_hi"] / p["relR"]).to_numpy() == pytest.approx(
        10 ** hw.get("CPU->GPU", hw["all"])
    )


def test_band_intervals_key_each_half_width_by_the_source_slowdown_band(fitted):
    """``band_intervals``: each pair's band is its measured source time over the roofline's there
    (below 2x, 2x-10x, beyond; written out here), the half-width is the inner folds' quantile of
    that scenario and band where they hold enough pairs, and every pair gets its cell's width."""
    from xamm_models.predictors.default.selection import (
        MIN_PER_SCENARIO,
        choose,
        inner_answers,
        slowdown_bands,
    )

    _, pairs, samples = fitted
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    bench = samples.filter(~pl.col("target").str.starts_with("d:"))
    # a third of the source times 3x and a third 30x slower: all three bands are populated
    k = np.arange(known.height) % 3
    known = known.with_columns(
        pl.Series("runtime_source", known["runtime_source"] * np.array([1, 3, 30])[k])
    )
    model = StackedPredictor(seed=0, band_intervals=True).fit(known, bench)
    figs = {r["target"]: r for r in machine_figures(bench).iter_rows(named=True)}
    f = [figs[s] for s in known["source"]]
    b, fl = known["bytes_per_rep"].to_numpy(), known["flops_per_rep"].to_numpy()
    n = known["kernels_per_rep"].fill_null(1.0).to_numpy().clip(1.0)
    roof = np.array(
        [
            max(bi / x["bw"], fi / x["flops"]) + x["overhead"] * ni
            for bi, fi, ni, x in zip(b, fl, n, f)
        ]
    )
    slow = np.log10(
        known["runtime_source"].to_numpy() * known["iterations_per_rep"].to_numpy() / roof
    )
    want = np.where(slow < np.log10(2), "at-roof", np.where(slow < 1, "off-roof", "far"))
    assert (slowdown_bands(known, machine_figures(bench)) == want).all()
    assert set(want) == {"at-roof", "off-roof", "far"}
    c = model.choice
    assert c.cells == "band"
    inner = inner_answers(known, bench, neighbours=False)
    cells = [key for key in c.factor if "|" in key]
    assert cells and all(c.n[key] >= MIN_PER_SCENARIO for key in cells)
    assert c.factor == choose(inner, by_band=True, seed=0).factor
    p = model.predict_pairs(known)
    scen = known.select(scenario_expr()).to_series().to_list()
    half = np.log10((p["relR_hi"] / p["relR"]).to_numpy())
    expect = [c.factor[c.cell_of(s, w)] for s, w in zip(scen, want)]
    assert half == pytest.approx(expect, rel=1e-9)
    assert len({round(v, 9) for v in expect}) > 1  # the bands do change the widths
    with pytest.raises(ValueError, match="one kind of interval cell"):
        StackedPredictor(regime_intervals=True, band_intervals=True)
    with pytest.raises(ValueError, match="one kind of interval cell"):
        choose(inner, by_regime=True, by_band=True)


def test_signed_intervals_are_placed_off_centre_by_their_scenarios_shift(fitted):
    """``signed_intervals``: each pair's interval is the answer plus its scenario's signed bounds
    (centre shift +- half-width), the answer itself unchanged."""
    model, pairs, samples = fitted
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    signed = StackedPredictor(seed=0, signed_intervals=True).fit(
        known, samples.filter(~pl.col("target").str.starts_with("d:"))
    )
    c = signed.choice
    assert c.shift and set(c.shift) == set(c.factor)
    p, plain = signed.predict_pairs(known), model.predict_pairs(known)
    assert p["relR"].equals(plain["relR"])
    y, lo, hi = (np.log10(p[k].to_numpy()) for k in ("relR", "relR_lo", "relR_hi"))
    scen = known.select(scenario_expr()).to_series().to_list()
    key = [c.cell_of(s) for s in scen]
    assert (lo + hi) / 2 - y == pytest.approx([c.shift[k] for k in key], abs=1e-9)
    assert (hi - lo) / 2 == pytest.approx([c.factor[k] for k in key], abs=1e-9)
    with pytest.raises(ValueError, match="one of the two"):
        StackedPredictor(signed_intervals=True, scaled_intervals=True)


def test_pair_intervals_are_each_pairs_band_of_its_kernels_changes_widened_by_a_margin(fitted):
    """``pair_intervals``: a pair's band is the 10% and 90% quantiles, over every benchmark kernel
    both machines ran, of the target's slowdown from its plain roofline minus the source's
    (written out here from the samples), widened by its scenario's margin; the answer is the
    roofline's, unchanged; the rule combines with no other."""
    from xamm_models.predictors.default.neighbours import MIN_BAND_REFERENCES

    model, pairs, samples = fitted
    known = pairs.filter(
        ~pl.col("source").str.starts_with("d:") & ~pl.col("target").str.starts_with("d:")
    )
    bench = samples.filter(~pl.col("target").str.starts_with("d:"))
    banded = StackedPredictor(seed=0, pair_intervals=True).fit(known, bench)
    c = banded.choice
    assert c.pair_bands and c.margin and set(c.margin) <= set(c.factor)
    p, plain = banded.predict_pairs(known), model.predict_pairs(known)
    assert p["relR"].equals(plain["relR"])
    figs = {r["target"]: r for r in machine_figures(bench).iter_rows(named=True)}

    def slowdown(rows):
        x = figs[rows["target"][0]]
        b, f = rows["bytes_per_rep"].to_numpy(), rows["flops_per_rep"].to_numpy()
        n = rows["kernels_per_rep"].fill_null(1.0).to_numpy().clip(1.0)
        roof = np.maximum(b / x["bw"], f / x["flops"]) + x["overhead"] * n
        t = rows["time_per_rep_s"].to_numpy()
        keys = zip(rows["app"].to_list(), rows["size_bucket"].to_list())
        return dict(zip(keys, np.log10(t / roof)))

    scen = known.select(scenario_expr()).to_series().to_list()
    y, lo, hi = (np.log10(p[k].to_numpy()) for k in ("relR", "relR_lo", "relR_hi"))
    checked = 0
    for i, (s, t) in enumerate(zip(known["source"], known["target"])):
        a = slowdown(bench.filter(pl.col("target") == s))
        b = slowdown(bench.filter(pl.col("target") == t))
        change = np.array([b[k] - a[k] for k in sorted(set(a) & set(b))])
        assert len(change) >= MIN_BAND_REFERENCES
        q = np.quantile(change, [0.1, 0.9])
        m = c.margin.get(scen[i], c.margin.get("all"))
        want = sorted([y[i] + q[0] - m, y[i] + q[1] + m])
        if want[0] + 1e-9 < want[1]:
            assert (lo[i], hi[i]) == pytest.approx(tuple(want), abs=1e-9)
            checked += 1
    assert checked > known.height // 2
    assert len({round(v, 6) for v in hi - lo}) > 1  # widths differ pair by pair
    with pytest.raises(ValueError, match="one interval rule"):
        StackedPredictor(pair_intervals=True, signed_intervals=True)


def test_the_candidates_used_answer_as_every_candidate_does_where_the_roofline_has_a_gap(
    fitted,
):
    """A prediction models the physics split only where the roofline has no answer (its
    fallback); those rows, and every other, get the same answer as when every candidate is
    modelled."""
    from xamm_models.predictors.default.neighbours import candidate_answers

    model, pairs, samples = fitted
    figs = machine_figures(samples)
    # a target with no roofline figures: the roofline has a gap there, the split fills it
    gap_target = sorted(set(pairs.get_column("target")))[0]
    figs = figs.filter(pl.col("target") != gap_target)
    sigs = physics_signatures(samples)
    every = candidate_answers(sigs, figs, None, pairs, neighbours=False)
    used = candidate_answers(sigs, figs, None, pairs, neighbours=False, used={"roofline"})
    gap = (pairs.get_column("target") == gap_target).to_numpy()
    assert gap.any() and not gap.all()
    np.testing.assert_array_equal(every.logs["roofline"], used.logs["roofline"])
    np.testing.assert_array_equal(every.logs["roofline"][gap], every.logs["split"][gap])
    assert "split" not in used.logs


def test_the_pair_constant_candidate_falls_back_to_the_roofline_without_its_columns(fitted):
    """A model whose samples lack the like-for-like columns holds them null: the candidate
    answers as the roofline there, never fails."""
    from xamm_models.predictors.default.model import _kept
    from xamm_models.predictors.default.neighbours import candidate_answers

    _, pairs, samples = fitted
    old = _kept(samples.drop("runtime_s"))
    assert old.schema["runtime_s"] == pl.Float64 and old["runtime_s"].null_count() == old.height
    figs, sigs = machine_figures(samples), physics_signatures(samples)
    ans = candidate_answers(sigs, figs, None, pairs, neighbours=False, samples=old)
    np.testing.assert_array_equal(ans.logs["pair-constant"], ans.logs["roofline"])


@pytest.mark.data
def test_the_pair_constant_candidate_answers_as_the_baseline_where_it_is_chosen(xplat_dataset):
    """The nested choice may take the per-pair constant; where it does, its answer is the
    ``baseline/pair-constant`` answer, the left-out machine's own runs giving its side. The
    constants come from the data set's own like-for-like rule, read from fewer columns."""
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.experiments.entries import ENTRIES, FoldContext
    from xamm_models.predictors.default.neighbours import CANDIDATES

    ds = xplat_dataset
    key = ["app", "app_params", "source", "target"]
    lean = xplat.like_for_like_ratios(ds.samples).sort(key)
    full = xplat.pairs(ds.samples)[0].select(*key, "relR").sort(key)
    assert lean.equals(full)
    fold = next(f for f in ds.get_idx_split("machine") if f.name == "Apps to h100-node")
    ctx = FoldContext(ds, fold)
    model, _ = ctx.default_model(candidates=CANDIDATES)
    chosen = {s for s, m in model.choice.model.items() if m == "pair-constant"} - {"all"}
    assert chosen, model.choice.model  # this fold's inner folds take it for some scenario
    y = ENTRIES.get("stacked/nested-choice").predict(ctx)[0]
    pc = ENTRIES.get("baseline/pair-constant").predict(ctx)
    rows = np.isin(ctx.test.select(scenario_expr()).to_series().to_numpy(), list(chosen))
    assert rows.any()
    np.testing.assert_allclose(y[rows], pc[rows], rtol=1e-9)
