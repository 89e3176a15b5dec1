"""The few-shot adaptation curve on a controlled stand-in: error against the fraction of target
samples used.

**The stand-in** (stated as such): every platform's samples are RAJAPerf kernels of
``xplat-rajaperf``. The source platform describes a sample by :data:`SOURCE_FEATURES`; every target
platform describes it in a
*controlled* other space (:func:`target_space`): bytes per iteration split into a read and a write
part (60/40), flops in GFLOP, the problem size dropped, columns renamed and permuted; two columns
keep their names. The label is the platform's own log10 seconds per iteration; errors are scored as
relR (predicted target time over the measured source time) by the benchmark's
:class:`~xamm_models.benchmark.evaluate.Evaluator`, on kernels no method saw labelled.

Per target and repeat, 30% of the kernels are held out; of the rest (the pool), a fraction of the
samples is labelled; every pool and test sample's *features* may be read (test-time adaptation).
Compared on the same samples: (a) adaptation of the source model
(:mod:`xamm_models.predictors.adapted.alignment`), (b) from scratch on the same labelled samples
(ridge, and the source model's MLP), (c) full supervision (the MLP on the whole labelled pool).

    python -m xamm_models.studies.adaptation --store STORE [--source mi300a-spx:cpu] [--repeats 3]
    python -m xamm_models.studies.adaptation --store STORE --predictor
    ../shared/data/LLNL+thicket-tutorial/data/quartz
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import polars as pl

from xamm_data.plugins import load
from xamm_models.benchmark.dataset import XplatDataset
from xamm_models.benchmark.evaluate import Evaluator
from xamm_models.features import FEATURES
from xamm_models.predictors.adapted.alignment import SourceModel, ridge_from_scratch
from xamm_models.predictors.adapted.standin import (
    COUNTER_SOURCE,
    PLATFORM,
    PLATFORM_FEATURES,
    SOURCE_FEATURES,
    TOPDOWN,
    counter_runs,
    platform_pairs,
)

FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.25, 1.0)
METHODS = ("adapted", "scratch-ridge", "scratch-mlp", "full")


def with_features(samples: pl.DataFrame) -> pl.DataFrame:
    """Samples with :data:`SOURCE_FEATURES` (launches per rep as log10)."""
    return samples.with_columns(
        pl.col("kernels_per_rep").fill_null(1.0).clip(1.0).log10().alias("f_log_kernels")
    )


def target_space(x: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The controlled target feature space of samples described by :data:`SOURCE_FEATURES` (module
    docstring)."""
    cols = {
        "log_read_bytes": x[:, 0] + np.log10(0.6),
        "log_write_bytes": x[:, 0] + np.log10(0.4),
        "log_gflops_per_iter": x[:, 1] - 9.0,
        "f_log_iters_per_rep": x[:, 2],
        "f_arith_intensity": x[:, 3],
        "log_launches": x[:, 5],
    }
    # one fixed shuffle, as another tool's column order
    order = np.random.default_rng(100).permutation(len(cols))
    names = [list(cols)[i] for i in order]
    return np.column_stack([cols[n] for n in names]), names


def _split(st: pl.DataFrame, rng) -> tuple[pl.DataFrame, pl.DataFrame]:
    kernels = np.array(sorted(set(st.get_column("app"))))
    held = list(rng.choice(kernels, size=max(1, len(kernels) * 3 // 10), replace=False))
    return st.filter(~pl.col("app").is_in(held)), st.filter(pl.col("app").is_in(held))


def _scored(pairs: pl.DataFrame, test: pl.DataFrame, log_t: np.ndarray, **labels) -> pl.DataFrame:
    """Test predictions (log10 s/iter on the target) as relR rows for the evaluator."""
    # a few labels can send a model far off: bounded to 1e-12..1e3 s per iteration, outside every
    # real run (a miss either way; within 2x does not change, and no infinity reaches the evaluator)
    at = test.select("app", "size_bucket").with_columns(
        pl.Series("_t", 10.0 ** np.clip(np.asarray(log_t, dtype=float), -12.0, 3.0))
    )
    got = pairs.join(at, on=["app", "size_bucket"], how="inner")
    return _evaluator_rows(got, pl.col("_t") / pl.col("runtime_source"), labels)


def _evaluator_rows(got: pl.DataFrame, y_pred: pl.Expr, labels: dict) -> pl.DataFrame:
    """Pair rows as the evaluator reads them, with the run's labels (method, fraction, repeat)."""
    return got.select(
        "sample",
        "app",
        "source",
        "target",
        pl.col("relR").alias("y_true"),
        y_pred.alias("y_pred"),
        *(pl.lit(v).alias(k) for k, v in labels.items()),
    )


def _median_scored(pairs: pl.DataFrame, lab: pl.DataFrame, test: pl.DataFrame, **labels):
    """The trivial baseline as evaluator rows: every test pair's relR predicted as the median relR
    of the labelled samples' pairs (the per-target median of the labels)."""
    keys = ["app", "size_bucket"]
    known = pairs.join(lab.select(keys).unique(), on=keys, how="semi").get_column("relR")
    got = pairs.join(test.select(keys), on=keys, how="inner")  # the rows _scored scores
    med = float(known.median()) if known.len() else 1.0  # no labelled pair: relR 1
    return _evaluator_rows(got, pl.lit(med), labels)


def curve_predictions(
    ds, source: str, *, repeats: int = 3, fractions=FRACTIONS, seed: int = 0
) -> pl.DataFrame:
    """Every method's relR predictions on every target's held-out kernels, per fraction and
    repeat.

    Args:
        ds: the data set.
        source: the source machine.
        repeats: seeded repeats.
        fractions: fractions of the pool labelled.
        seed: the seed.

    Returns:
        The predictions.
    """
    samples = with_features(ds.samples)
    src = samples.filter(pl.col("target") == source)
    base = SourceModel(SOURCE_FEATURES, seed=seed).fit(
        src.select(SOURCE_FEATURES).to_numpy(), src.get_column("f_log_s_per_iter").to_numpy()
    )
    out = []
    for target in sorted(set(samples.get_column("target")) - {source}):
        st = samples.filter(pl.col("target") == target)
        pairs = ds.pairs.filter((pl.col("source") == source) & (pl.col("target") == target))
        for rep in range(repeats):
            rng = np.random.default_rng(seed + rep)
            pool, test = _split(st, rng)
            (xp, names), (xt, _) = (
                target_space(pool.select(SOURCE_FEATURES).to_numpy()),
                target_space(test.select(SOURCE_FEATURES).to_numpy()),
            )
            yp = pool.get_column("f_log_s_per_iter").to_numpy()
            full = SourceModel(names, seed=seed + rep).fit(xp, yp).predict(xt)
            out.append(_scored(pairs, test, full, method="full", fraction=1.0, repeat=rep))
            for f in fractions:
                pick = rng.choice(len(yp), size=max(1, round(f * len(yp))), replace=False)
                lab = pool[np.sort(pick)]
                out.append(
                    _median_scored(pairs, lab, test, method="target-median", fraction=f, repeat=rep)
                )
                adapted = base.adapt(xp[pick], yp[pick], names, unlabelled=np.vstack([xp, xt]))
                runs = {
                    "adapted": adapted.predict(xt),
                    "scratch-ridge": ridge_from_scratch(xp[pick], yp[pick])(xt),
                }
                if len(pick) >= 2:
                    runs["scratch-mlp"] = (
                        SourceModel(names, seed=seed + rep).fit(xp[pick], yp[pick]).predict(xt)
                    )
                out += [
                    _scored(pairs, test, p, method=m, fraction=f, repeat=rep)
                    for m, p in runs.items()
                ]
    return pl.concat(out)


def _public_repeat(base, st: pl.DataFrame, target: str, rep: int, fractions, seed: int) -> list:
    """One repeat of the public curve on one target: every method at every fraction, scored."""
    rng = np.random.default_rng(seed + rep)
    pool, test = _split(st, rng)
    xp, xt = pool.select(SOURCE_FEATURES).to_numpy(), test.select(SOURCE_FEATURES).to_numpy()
    yp = pool.get_column("f_log_s_per_iter").to_numpy()
    yt = test.get_column("f_log_s_per_iter").to_numpy()

    def scored(pred, method, f):
        return test.select(
            pl.concat_str("app", pl.lit("|"), "app_params").alias("sample"),
            "app",
            pl.lit(COUNTER_SOURCE).alias("source"),
            pl.lit(target).alias("target"),
            pl.Series("y_true", 10.0**yt),
            pl.Series("y_pred", 10.0 ** np.clip(pred, -12, 3).astype(float)),
            pl.lit(method).alias("method"),
            pl.lit(f).alias("fraction"),
            pl.lit(rep).alias("repeat"),
        )

    def mlp():
        return SourceModel(SOURCE_FEATURES, seed=seed + rep)

    out = [scored(mlp().fit(xp, yp).predict(xt), "full", 1.0)]
    for f in fractions:
        pick = rng.choice(len(yp), size=max(1, round(f * len(yp))), replace=False)
        adapted = base.adapt(xp[pick], yp[pick], SOURCE_FEATURES, unlabelled=np.vstack([xp, xt]))
        out.append(scored(adapted.predict(xt), "adapted", f))
        out.append(scored(np.full(len(yt), np.median(yp[pick])), "target-median", f))
        out.append(scored(ridge_from_scratch(xp[pick], yp[pick])(xt), "scratch-ridge", f))
        if len(pick) >= 2:
            out.append(scored(mlp().fit(xp[pick], yp[pick]).predict(xt), "scratch-mlp", f))
    return out


def public_curve_predictions(
    runs: pl.DataFrame, ds, *, repeats: int = 3, fractions=FRACTIONS, seed: int = 0
) -> pl.DataFrame:
    """The public stand-in: the source described by workload *and* top-down counters
    (:func:`counter_runs`), every target of ``ds`` by the workload figures its CSV gives alone
    (names that match seed the alignment). Scored as each method's predicted time over the measured
    one (the evaluator's within 2x and median |log10 error|)."""
    src = counter_runs(runs)
    names = [*SOURCE_FEATURES, *TOPDOWN]
    base = SourceModel(names, seed=seed).fit(
        src.select(names).to_numpy(), src.get_column("f_log_s_per_iter").to_numpy()
    )
    samples, out = with_features(ds.samples), []
    for target in sorted(set(samples.get_column("target"))):
        st = samples.filter(pl.col("target") == target)
        for rep in range(repeats):
            out += _public_repeat(base, st, target, rep, fractions, seed)
    return pl.concat(out)


ROW = ("sample", "target", "repeat")  # a test row of the curve


def common_rows(preds: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``preds`` at each fraction restricted to the rows every method at that fraction answered
    (a method that cannot train on a target's few labels, scratch-mlp on one label, answers none
    of its rows), and the rows each method lost so (``method``, ``fraction``, ``left_out``).

    Args:
        preds: the curve's predictions (``method``, ``fraction`` and :data:`ROW`).

    Returns:
        (the predictions every method is scored on alike, the counts left out)
    """
    methods = preds.group_by("fraction").agg(pl.col("method").n_unique().alias("_k"))
    answered = preds.group_by("fraction", *ROW).agg(pl.col("method").n_unique().alias("_n"))
    every = answered.join(methods, on="fraction").filter(pl.col("_n") == pl.col("_k"))
    kept = preds.join(every.select("fraction", *ROW), on=["fraction", *ROW], how="semi")
    lost = (
        preds.group_by("method", "fraction")
        .agg(pl.len().alias("_all"))
        .join(
            kept.group_by("method", "fraction").agg(pl.len().alias("_kept")),
            on=["method", "fraction"],
            how="left",
        )
        .select(
            "method", "fraction", (pl.col("_all") - pl.col("_kept").fill_null(0)).alias("left_out")
        )
    )
    return kept, lost


def curve_table(preds: pl.DataFrame, n_boot: int = 300) -> pl.DataFrame:
    """Within 2x and median |log10 error| (90% bootstrap intervals over kernels) per method and
    fraction, every method at a fraction scored on the same rows (:func:`common_rows`; ``n`` the
    rows scored, ``left_out`` a method's rows another method at that fraction did not answer)."""
    ev, rows = Evaluator(n_boot=n_boot), []
    preds, lost = common_rows(preds)
    left = {(m, f): n for m, f, n in lost.iter_rows()}
    for (m, f), part in preds.group_by(["method", "fraction"], maintain_order=True):
        r = ev.pooled(part.drop("method", "fraction", "repeat"))
        rows.append(
            {
                "method": m,
                "fraction": f,
                "n": part.height,
                "left_out": left.get((m, f), 0),
                **{
                    f"{k}{s}": r[k][v]
                    for k in ("within_2", "median_abs_log10")
                    for s, v in (("", "value"), ("_lo", "lo"), ("_hi", "hi"))
                },
            }
        )
    return pl.DataFrame(rows).sort("method", "fraction")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--store", required=True)
    ap.add_argument("--source", default="mi300a-spx:cpu")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--predictor",
        type=Path,
        metavar="TUTORIAL_QUARTZ",
        help="instead: the paper predictor adapted "
        "to the top-down platform (:func:`adapt_curve_predictions`), "
        "from these thicket-tutorial quartz runs",
    )
    ap.add_argument(
        "--public",
        type=Path,
        metavar="TUTORIAL_QUARTZ",
        help="instead: the public stand-in (:func:`public_curve_predictions`), its source these "
        "thicket-tutorial quartz runs with top-down counters",
    )
    ap.add_argument(
        "--out", type=Path, help="also write the table here (JSON: the published table's results)"
    )
    args = ap.parse_args(argv)
    ds = XplatDataset.from_store(args.store)
    if args.predictor:
        from xamm_models.predictors.paper.predictor import XammPredictor  # torch, as the rest

        runs = load("xamm.ingest", "rajaperf", "reading the top-down runs")(
            args.predictor, dry_run=True, workers=2
        ).frame
        base = XammPredictor(feature_columns=list(FEATURES), epochs=200, seed=0).fit_pairs(
            ds.pairs, dataset="xplat-rajaperf"
        )
        preds = adapt_curve_predictions(base, platform_pairs(runs, ds), repeats=args.repeats)
    elif args.public:
        runs = load("xamm.ingest", "rajaperf", "reading the top-down runs")(
            args.public, dry_run=True, workers=2
        ).frame
        preds = public_curve_predictions(runs, ds, repeats=args.repeats)
    else:
        preds = curve_predictions(ds, args.source, repeats=args.repeats)
    table = curve_table(preds)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2):
        print(table)
    if args.out:
        res = {
            "dataset": ds.version,
            "source": args.source,
            "repeats": args.repeats,
            "study": "predictor" if args.predictor else "public" if args.public else "controlled",
            "rows": table.to_dicts(),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    return 0


def _pair_median(lab: pl.DataFrame, test: pl.DataFrame) -> np.ndarray:
    """The strongest simple baseline with these labels: each target's median labelled relR (overall
    where none)."""
    med = lab.group_by("target").agg(pl.col("relR").log().median().alias("_m"))
    overall = float(lab.get_column("relR").log().median())
    return np.exp(
        test.join(med, on="target", how="left", maintain_order="left")
        .get_column("_m")
        .fill_null(overall)
        .to_numpy()
    )


def _ridge_pairs(lab: pl.DataFrame, test: pl.DataFrame, targets: list[str]) -> np.ndarray:
    """From scratch on the same labelled pairs: ridge on the platform's columns and the target
    (one-hot)."""

    def design(f):
        return np.column_stack(
            [
                f.select(PLATFORM_FEATURES).to_numpy(),
                *(f.get_column("target").to_numpy() == t for t in targets),
            ]
        )

    log_rel = ridge_from_scratch(design(lab), np.log(lab.get_column("relR").to_numpy()))(
        design(test)
    )
    # a few labels can send ridge far off: a miss either way, never inf
    return np.exp(np.clip(log_rel, -30.0, 30.0))


def _adapted_runs(adapt, base, lab, test, pairs, seed: int) -> dict:
    """The adapted model's predictions of ``test``, with and without name seeding."""
    runs = {}
    for names in (True, False):
        m = adapt(
            base,
            lab,
            PLATFORM,
            features=PLATFORM_FEATURES,
            unlabelled=pairs,
            use_names=names,
            seed=seed,
        )
        runs["adapted" if names else "adapted-no-names"] = m.predict_pairs(test)
    return runs


def adapt_curve_predictions(
    base, pairs: pl.DataFrame, *, repeats: int = 3, fractions=FRACTIONS, seed: int = 0
) -> pl.DataFrame:
    """``adapt(base, ...)`` (with and without name seeding) against the per-target median
    and ridge from scratch on the same labelled profiles, per fraction of the pool labelled; 30%
    of kernels held out per repeat.

    Args:
        base: the frozen paper predictor.
        pairs: the platform's labelled pairs.
        repeats: seeded repeats.
        fractions: fractions of the pool's profiles labelled.
        seed: the seed.

    Returns:
        Every method's predictions, per fraction and repeat.
    """
    # torch: the base predictor's embedder
    from xamm_models.predictors.adapted.predictor import adapt

    out, targets = [], sorted(set(pairs.get_column("target")))
    for rep in range(repeats):
        rng = np.random.default_rng(seed + rep)
        kernels = np.array(sorted(set(pairs.get_column("app"))))
        held = list(rng.choice(kernels, size=len(kernels) * 3 // 10, replace=False))
        pool, test = (
            pairs.filter(~pl.col("app").is_in(held)),
            pairs.filter(pl.col("app").is_in(held)),
        )
        profiles = np.array(sorted(set(pool.get_column("sample"))))
        for f in fractions:
            lab = pool.filter(
                pl.col("sample").is_in(
                    list(rng.choice(profiles, size=max(2, round(f * len(profiles))), replace=False))
                )
            )
            runs = {
                "pair-median": _pair_median(lab, test),
                "scratch-ridge": _ridge_pairs(lab, test, targets),
                **_adapted_runs(adapt, base, lab, test, pairs, seed),
            }
            out += [
                test.select(
                    "sample",
                    "app",
                    "source",
                    "target",
                    pl.col("relR").alias("y_true"),
                    pl.Series("y_pred", p),
                    pl.lit(k).alias("method"),
                    pl.lit(f).alias("fraction"),
                    pl.lit(rep).alias("repeat"),
                )
                for k, p in runs.items()
            ]
    return pl.concat(out)


if __name__ == "__main__":
    raise SystemExit(main())
