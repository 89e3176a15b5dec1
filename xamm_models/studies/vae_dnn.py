"""the VAE-DNN papers' metrics for relR vectors, the RandomForest they compare with, and the runs on
``xplat-rajaperf``.

Metrics of a vector prediction (log relR to every target; ``mask`` marks measured entries):

* ``r2_seed``: R^2 over every measured entry pooled (the seeds report one R^2 for the vector; this
  is its reading);
* ``r2_within_target``: R^2 of log relR inside each target's entries (>= 3, some spread), averaged
  over targets;
* ``ordering_accuracy``: fraction of vector samples with >= 2 measured targets whose predicted order
  equals the true order (the VAE-DNN papers' ~91%);
* ``auc``: the VAE-DNN papers' ROC: among samples measured on the most common target set (>= 3
  targets), the most common true ordering is the positive class; the score is the margin by which
  the prediction keeps that ordering (the smallest gap between neighbours in it). ``roc`` holds the
  curve.

Through :class:`~xamm_models.benchmark.evaluate.Evaluator` the same predictions become pair rows and
get the benchmark's log-scale metrics with bootstrap intervals.
"""

from __future__ import annotations

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl

from xamm_models.benchmark.evaluate import Evaluator
from xamm_models.benchmark.vector_metrics import (  # the study's metrics and figure, and its names
    plot_roc,
    vector_metrics,
)
from xamm_models.predictors.vector_baselines import RandomForestVector


def as_pairs(rows: pl.DataFrame, P: np.ndarray, targets: list[str]) -> pl.DataFrame:
    """Vector predictions as the evaluator's pair rows (one per measured target other than the
    source)."""
    parts = []
    for j, t in enumerate(targets):
        part = rows.select(
            "sample", "app", "source", pl.col(f"y_{t}").exp().alias("y_true")
        ).with_columns(pl.lit(t).alias("target"), pl.Series("y_pred", np.exp(P[:, j])))
        parts.append(
            part.filter(pl.col("y_true").is_not_null() & (pl.col("source") != pl.col("target")))
        )
    return pl.concat(parts).select("sample", "app", "source", "target", "y_true", "y_pred")


class PairMedianVector:
    """The trivial baseline under the papers' definitions: every vector is its source's median log
    relR to each target over the training vectors (one constant per machine pair)."""

    def __init__(self, targets: list[str], sources: list[str], seed: int = 0):
        self.targets, self.sources = targets, sources
        self.median: dict[str, np.ndarray] = {}

    def fit(self, rows: pl.DataFrame) -> PairMedianVector:
        """Each source's median log relR to each target (0, relR 1, where it has none).

        Args:
            rows: vector samples.

        Returns:
            The fitted model.
        """
        for (s,), part in rows.group_by(["source"]):
            y = part.select([f"y_{t}" for t in self.targets]).to_numpy().astype(float)
            have = (~np.isnan(y)).any(axis=0)
            med = np.zeros(len(self.targets))
            med[have] = np.nanmedian(y[:, have], axis=0)
            self.median[s] = med
        return self

    def predict_vector(self, rows: pl.DataFrame) -> np.ndarray:
        """Predicted log relR to every target: the source's training medians.

        Args:
            rows: rows with ``source``.

        Returns:
            One row per input row, one column per target.
        """
        zero = np.zeros(len(self.targets))
        return np.array([self.median.get(s, zero) for s in rows.get_column("source")]).reshape(
            rows.height, len(self.targets)
        )


def vector_lengths(rows: pl.DataFrame, targets: list[str]) -> dict[str, int]:
    """How many vectors hold each number of measured targets other than their source (the seeds'
    vectors held 4).

    Args:
        rows: vector samples.
        targets: the targets of the vector.

    Returns:
        Number of measured targets -> vectors, as strings for JSON.
    """
    n = rows.select(
        pl.sum_horizontal(
            [(pl.col(f"y_{t}").is_not_null() & (pl.col("source") != t)) for t in targets]
        ).alias("n")
    ).get_column("n")
    return {str(k): int(v) for k, v in sorted(n.value_counts().iter_rows())}


def run_split(
    train: pl.DataFrame,
    test: pl.DataFrame,
    targets: list[str],
    sources: list[str],
    *,
    seed: int = 0,
    n_boot: int = 1000,
    rf_trees: int = 200,
    **switches,
) -> dict:
    """Train the VAE-DNN (with ``switches``) and the RandomForest (``rf_trees`` trees per target,
    the papers' 200) on ``train``; score both on ``test``."""
    from xamm_models.predictors.vae_dnn import VaeDnn  # torch: loaded on use

    ev = Evaluator("xplat-rajaperf", n_boot=n_boot, seed=seed)
    out = {}
    for name, model in (
        ("vae-dnn", VaeDnn(targets, sources, seed=seed, **switches)),
        ("random-forest", RandomForestVector(targets, sources, seed=seed, n_estimators=rf_trees)),
        ("pair-median", PairMedianVector(targets, sources)),
    ):
        out[name] = _scored_vector(model, train, test, targets, ev if n_boot else None)
    return out


def _scored_vector(model, train: pl.DataFrame, test: pl.DataFrame, targets, ev) -> dict:
    """A vector model fitted on ``train`` and scored on ``test``: the papers' metrics, the pair
    rows and (given an evaluator) the evaluator's figures."""
    Y = test.select([f"y_{t}" for t in targets]).to_numpy().astype(float)
    P = model.fit(train).predict_vector(test)
    pairs = as_pairs(test, P, targets)
    return {
        "seed_metrics": vector_metrics(Y, P, ~np.isnan(Y), targets),
        "pairs": pairs,
        "evaluator": ev.eval(pairs) if ev is not None else None,
    }


def add_pair_median(ds, out_dir, *, seed: int = 0, n_boot: int = 1000) -> dict:
    """The trivial baseline (:class:`PairMedianVector`) added to ``out_dir``'s ``results.json`` of
    the same data set version: on the papers' 80/20 split (beside every ablation row: the same
    split), on the kernel-group and kernel folds present, and the 80/20 test vectors' lengths.

    Args:
        ds: the data set the results were computed on.
        out_dir: the folder of ``results.json`` (``results.md`` is rewritten from it).
        seed: the split's seed.
        n_boot: bootstrap resamples.

    Returns:
        The updated results.
    """
    from xamm_models.predictors.vae_dnn import split_80_20, vector_samples  # torch: loaded on use

    path = Path(out_dir) / "results.json"
    result = json.loads(path.read_text())
    if result["dataset"]["version"] != ds.version:
        raise ValueError(
            f"{path} is of data set version {result['dataset']['version']}, not {ds.version}"
        )
    rows = vector_samples(ds.pairs)
    targets = result["dataset"]["targets"]
    sources = sorted(set(rows.get_column("source")))
    tr, te = split_80_20(rows, seed)
    ev = Evaluator("xplat-rajaperf", n_boot=n_boot, seed=seed)
    base = PairMedianVector(targets, sources)
    split = _summary(
        {
            "pair-median": _scored_vector(
                base, rows.filter(pl.Series(tr)), rows.filter(pl.Series(te)), targets, ev
            )
        }
    )
    for label in result["split_80_20"]:
        result["split_80_20"][label].update(split)
    result["dataset"]["test_vector_lengths_80_20"] = vector_lengths(
        rows.filter(pl.Series(te)), targets
    )
    for key, scheme in (("kernel_group_pooled", "kernel-group"), ("kernel_pooled", "kernel")):
        if key not in result:
            continue
        per_fold = {}
        for f in ds.get_idx_split(scheme):
            test = rows.get_column("app").is_in(list(f.test_kernels))
            per_fold[f.name] = {
                "pair-median": _scored_vector(
                    base, rows.filter(~test), rows.filter(test), targets, None
                )
            }
        result[key].update(_pooled(per_fold, n_boot, seed))
    text = json.dumps(result, indent=1, sort_keys=True, default=float) + "\n"
    path.write_text(text)
    (Path(out_dir) / "results.md").write_text(markdown(json.loads(text)))
    return json.loads(text)


ABLATIONS = {
    "all switches on": {},
    "no calibrated decoder": {"calibrated": False},
    "no CPU-first fit": {"cpu_first": False},
    "constant KL weight": {"kl_schedule": False},
    "no joint regression loss": {"joint_epochs": 0},
}


def _summary(res: dict) -> dict:
    """The figures of one run, without the ROC curve (kept separately for the plot)."""
    out = {}
    for name, r in res.items():
        sm = {k: v for k, v in r["seed_metrics"].items() if k != "roc"}
        pooled = r["evaluator"]["pooled"]["all"]
        out[name] = {
            **sm,
            **{m: pooled[m] for m in ("within_2", "median_abs_log10", "r2_log_within_pair")},
        }
    return out


def run_all(
    ds, out_dir, *, seed: int = 0, n_boot: int = 1000, ablation: bool = True, progress=print
) -> dict:
    """The papers' 80/20 split (with the ablation of the three training switches) and the official
    leave-one-kernel- group-out folds; writes ``results.json``, ``results.md`` and ``roc.png`` to
    ``out_dir``."""
    from xamm_models.predictors.vae_dnn import split_80_20, vector_samples  # torch: loaded on use

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = vector_samples(ds.pairs)
    targets = sorted(c[2:] for c in rows.columns if c.startswith("y_"))
    sources = sorted(set(rows.get_column("source")))
    tr, te = split_80_20(rows, seed)
    result = {
        "dataset": {
            "version": ds.version,
            "vectors": rows.height,
            "targets": targets,
            "test_vector_lengths_80_20": vector_lengths(rows.filter(pl.Series(te)), targets),
        },
        "split_80_20": {},
        "kernel_group": {},
    }
    roc = None
    for label, sw in ABLATIONS.items() if ablation else [("all switches on", {})]:
        progress(f"80/20: {label}")
        res = run_split(
            rows.filter(pl.Series(tr)),
            rows.filter(pl.Series(te)),
            targets,
            sources,
            seed=seed,
            n_boot=n_boot,
            **sw,
        )
        roc = roc or res["vae-dnn"]["seed_metrics"]["roc"]
        result["split_80_20"][label] = _summary(res)
    for fold in ds.get_idx_split("kernel-group"):
        progress(f"kernel group: {fold.name}")
        test = rows.get_column("app").is_in(list(fold.test_kernels)).to_numpy()
        res = run_split(
            rows.filter(pl.Series(~test)),
            rows.filter(pl.Series(test)),
            targets,
            sources,
            seed=seed,
            n_boot=0,
        )
        result["kernel_group"][fold.name] = res
    result["kernel_group_pooled"] = _pooled(result.pop("kernel_group"), n_boot, seed)
    text = json.dumps(result, indent=1, sort_keys=True, default=float) + "\n"
    (out_dir / "results.json").write_text(text)
    plot_roc({"VAE-DNN": roc}, out_dir / "roc.png", "ROC (80/20 split), most common ordering")
    (out_dir / "results.md").write_text(markdown(json.loads(text)))  # exactly what the JSON says
    return result


def _loko_task(
    rows: pl.DataFrame,
    kernels: list[str],
    targets: list[str],
    sources: list[str],
    seed: int,
    switches: dict,
) -> dict:
    """One worker's share of leave-one-kernel-out: each kernel's vectors tested on a model trained
    on the others."""
    import torch  # the worker's thread count; loaded on use

    torch.set_num_threads(1)
    out = {}
    for k in kernels:
        test = (rows.get_column("app") == k).to_numpy()
        out[k] = run_split(
            rows.filter(pl.Series(~test)),
            rows.filter(pl.Series(test)),
            targets,
            sources,
            seed=seed,
            n_boot=0,
            **switches,
        )
    return out


def add_loko(
    ds, out_dir, *, seed: int = 0, n_boot: int = 1000, workers: int = 2, progress=print, **switches
) -> dict:
    """Leave one kernel out (the official ``kernel`` folds) for both vector models, pooled with
    intervals, added to ``out_dir``'s ``results.json`` and ``results.md`` (about 70 s per fold and
    core for the VAE-DNN)."""
    from xamm_models.predictors.vae_dnn import vector_samples  # torch: loaded on use

    rows = vector_samples(ds.pairs)
    targets = sorted(c[2:] for c in rows.columns if c.startswith("y_"))
    sources = sorted(set(rows.get_column("source")))
    kernels = sorted(k for f in ds.get_idx_split("kernel") for k in f.test_kernels)
    chunks = [c for i in range(workers * 4) if (c := kernels[i :: workers * 4])]
    per_fold: dict = {}
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for i, res in enumerate(
            pool.map(
                _loko_task,
                *zip(*[(rows, c, targets, sources, seed, switches) for c in chunks], strict=True),
            )
        ):
            per_fold.update(res)
            progress(f"leave one kernel out: {i + 1}/{len(chunks)} chunks")
    path = Path(out_dir) / "results.json"
    result = json.loads(path.read_text())
    result["kernel_pooled"] = _pooled(dict(sorted(per_fold.items())), n_boot, seed)
    text = json.dumps(result, indent=1, sort_keys=True, default=float) + "\n"
    path.write_text(text)
    # exactly what the JSON says
    (Path(out_dir) / "results.md").write_text(markdown(json.loads(text)))
    return json.loads(text)


def _pooled(per_fold: dict, n_boot: int, seed: int) -> dict:
    """Pool every fold's test predictions per model and score them once (evaluator with
    intervals)."""
    ev = Evaluator("xplat-rajaperf", n_boot=n_boot, seed=seed)
    out = {}
    for name in next(iter(per_fold.values())):
        frames = [r[name]["pairs"] for r in per_fold.values()]
        seed_m = [r[name]["seed_metrics"] for r in per_fold.values()]
        scored = ev.eval(pl.concat(frames))
        pooled = scored["pooled"]["all"]
        out[name] = {m: pooled[m] for m in ("within_2", "median_abs_log10", "r2_log_within_pair")}
        out[name]["pairs"] = scored["n"]["all"]
        out[name]["ordering_accuracy_fold_mean"] = float(
            np.mean([m["ordering_accuracy"] for m in seed_m if m["ordering_accuracy"] is not None])
        )
        out[name]["r2_seed_fold_mean"] = float(
            np.mean([m["r2_seed"] for m in seed_m if m["r2_seed"] is not None])
        )
    return out


def markdown(result: dict) -> str:
    """``results.md``: the 80/20 ablation and the kernel-group figures, beside the VAE-DNN papers'
    claims."""

    def v(x, d=2):
        return (
            "–"
            if x is None
            else (
                f"{x['value']:.{d}f} [{x['lo']:.{d}f}, {x['hi']:.{d}f}]"
                if isinstance(x, dict) and x.get("lo") is not None
                else f"{(x['value'] if isinstance(x, dict) else x):.{d}f}"
            )
        )

    lines = [
        f"# VAE-DNN on xplat-rajaperf version {result['dataset']['version']}",
        "",
        f"{result['dataset']['vectors']} vector samples (sample x source) "
        f"over {', '.join(result['dataset']['targets'])}.",
        "The papers' claims (their data): R² 0.81 vs RandomForest 0.68; correct ordering ≈ 91%.",
        "",
        "## The papers' 80/20 split",
        "",
        "| run | model | R² (seed) | R² within target | ordering | AUC | "
        "within 2× [90% CI] | median abs log10 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, res in result["split_80_20"].items():
        for name, r in res.items():
            lines.append(
                f"| {label} | {name} | {v(r['r2_seed'])} | "
                f"{v(r['r2_within_target'])} | {v(r['ordering_accuracy'])} | "
                f"{v(r['auc'])} | {v(r['within_2'])} | {v(r['median_abs_log10'])} |"
            )
    for key, title in (
        ("kernel_group_pooled", "Leave one kernel group out"),
        ("kernel_pooled", "Leave one kernel out"),
    ):
        if key not in result:
            continue
        lines += [
            "",
            f"## {title} (official folds, pooled)",
            "",
            "| model | within 2× [90% CI] | median abs log10 [90% CI] | R² "
            "seed (fold mean) | ordering (fold mean) |",
            "|---|---|---|---|---|",
        ]
        for name, r in result[key].items():
            lines.append(
                f"| {name} | {v(r['within_2'])} | {v(r['median_abs_log10'])} | "
                f"{v(r['r2_seed_fold_mean'])} | "
                f"{v(r['ordering_accuracy_fold_mean'])} |"
            )
    return "\n".join(lines) + "\n"
