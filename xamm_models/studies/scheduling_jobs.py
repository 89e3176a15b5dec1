"""Jobs for :mod:`xamm_models.studies.scheduling_sim` from the benchmark's real runs, and what each
predictor believes of them.

A job is a sample of a *held-out* kernel (``xplat-rajaperf``'s kernel-group folds: no predictor saw
its kernel's labels) profiled on the submit machine ``source``; it runs 1000 repetitions, so its
true duration on a machine is 1000 x its measured time per repetition there (the source's time times
the measured relR). Predictors:

* ``predicted``: xamm's default predictor
  (:class:`~xamm_models.predictors.default.model.StackedPredictor`) fitted on the fold's training
  pairs, as ``stacked/default`` in ``xamm eval``;
* ``device-kind``: the trivial baseline: the median relR of the fold's training pairs of the same
  device scenario (CPU->GPU, ...): it knows only whether a machine is a CPU or a GPU;
* ``roofline``: the plain roofline (``baseline/roofline``) from each machine's own runs;
* ``adapted``: per target, the source's
  :class:`~xamm_models.predictors.adapted.alignment.SourceModel` adapted with ``fraction`` of that
  target's samples of the fold's *other* kernels, in the controlled feature space of
  :mod:`xamm_models.studies.adaptation` (the few-shot adaptation setting: the target described by
  other columns).

Only samples measured on every machine of the cluster are jobs; they are drawn with replacement,
seeded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

from xamm_data.hashing import frame_sha256
from xamm_data.machines.targets import scenario_expr
from xamm_models.benchmark import baselines as B
from xamm_models.benchmark.dataset import XplatDataset
from xamm_models.features import FEATURES
from xamm_models.predictors.adapted.alignment import SourceModel
from xamm_models.predictors.default.model import StackedPredictor
from xamm_models.studies.adaptation import SOURCE_FEATURES, target_space, with_features
from xamm_models.studies.scheduling_sim import Job, arrivals, compare

REPS = 1000
# what each policy believes, best informed first: the default predictor, the plain roofline, the
# device kind alone, the adapted model
BELIEFS = ("predicted", "roofline", "device-kind", "adapted")


def _adapted(
    samples: pl.DataFrame, base: SourceModel, fold, target: str, fraction: float, seed: int
) -> pl.DataFrame:
    st = samples.filter(pl.col("target") == target)
    pool = st.filter(~pl.col("app").is_in(list(fold.test_kernels)))
    test = st.filter(pl.col("app").is_in(list(fold.test_kernels)))
    (xp, names), (xt, _) = (
        target_space(pool.select(SOURCE_FEATURES).to_numpy()),
        target_space(test.select(SOURCE_FEATURES).to_numpy()),
    )
    y = pool.get_column("f_log_s_per_iter").to_numpy()
    pick = np.random.default_rng(seed).choice(
        len(y), size=max(1, round(fraction * len(y))), replace=False
    )
    # a few labels can send the alignment far off: bounded to 1e-12..1e3 s per iteration, outside
    # every real run
    pred = np.clip(
        base.adapt(xp[pick], y[pick], names, unlabelled=np.vstack([xp, xt])).predict(xt), -12.0, 3.0
    )
    return test.select(
        "app",
        "size_bucket",
        pl.lit(target).alias("target"),
        pl.Series("_adapted_s_iter", 10.0**pred),
    )


# fold predictions kept per process by (the data set's pairs and samples, by content; source,
# fraction, seed): what a simulation costs, and the same whatever cluster, jobs and load are
# simulated with them
_KEPT: dict[tuple, pl.DataFrame] = {}
KEEP = 4


def fold_predictions(ds, source: str, *, fraction: float = 0.05, seed: int = 0) -> pl.DataFrame:
    """Per test pair from ``source`` (every kernel-group fold): true and predicted relR, and the
    source's time. Computed once per data set (its pairs and samples, by content), source,
    fraction and seed in a process; simulations of other clusters reuse them.

    Args:
        ds: the data set.
        source: the submit machine (``machine:device``).
        fraction: the share of each target's samples the adapted model is given.
        seed: the seed of every model and draw.

    Returns:
        The predictions (a frame nothing modifies).
    """
    key = (ds.version, frame_sha256(ds.samples), source, fraction, seed)
    if key not in _KEPT:
        while len(_KEPT) >= KEEP:
            _KEPT.pop(next(iter(_KEPT)))
        _KEPT[key] = _fold_predictions(ds, source, fraction, seed)
    return _KEPT[key]


def _fold_predictions(ds, source: str, fraction: float, seed: int) -> pl.DataFrame:
    samples = with_features(ds.samples)
    src = samples.filter(pl.col("target") == source)
    base = SourceModel(SOURCE_FEATURES, seed=seed).fit(
        src.select(SOURCE_FEATURES).to_numpy(), src.get_column("f_log_s_per_iter").to_numpy()
    )
    out = []
    for fold in ds.get_idx_split("kernel-group"):
        # kernel-group folds hold no machine out: the fold's view is its pairs and the samples
        # without its test kernels, as in ``xamm eval``
        train, test = fold.frames(ds.pairs)
        unlabelled = test.drop("relR", "runtime_target")
        seen = ds.samples.filter(~pl.col("app").is_in(list(fold.machine_exclude)))
        model = StackedPredictor(seed=seed).fit(train, seen)
        kind = (
            train.with_columns(scenario_expr())
            .group_by("scenario")
            .agg(pl.col("relR").median().alias("relR_device-kind"))
        )
        test = (
            unlabelled.with_columns(
                # the simulator runs jobs for their measured time: the truth, beside the beliefs
                test.get_column("relR"),
                pl.Series("relR_predicted", model.predict_pairs(unlabelled).get_column("relR")),
                pl.Series(
                    "relR_roofline",
                    B.roofline(train, unlabelled, samples=seen, features=list(FEATURES)),
                ),
                scenario_expr(),
            )
            .join(kind, on="scenario", how="left", maintain_order="left")
            .filter(pl.col("source") == source)
        )
        if test.is_empty():
            continue
        adapted = pl.concat(
            [
                _adapted(samples, base, fold, t, fraction, seed)
                for t in sorted(set(test.get_column("target")))
            ]
        )
        test = test.join(
            adapted, on=["app", "size_bucket", "target"], how="left", maintain_order="left"
        )
        out.append(
            test.select(
                "sample",
                "app",
                "source",
                "target",
                "relR",
                *[f"relR_{k}" for k in BELIEFS if k != "adapted"],
                "runtime_source",
                "iterations_per_rep",
                (pl.col("_adapted_s_iter") / pl.col("runtime_source")).alias("relR_adapted"),
            )
        )
    return pl.concat(out)


def make_jobs(
    preds: pl.DataFrame, nodes: dict[str, int], *, n_jobs: int, load: float, seed: int
) -> list[Job]:
    """Jobs drawn from the samples measured (and predicted) on every machine of ``nodes``.

    Args:
        preds: measured and predicted durations per sample and machine.
        nodes: machine -> node count.
        n_jobs: how many jobs.
        load: offered load as a fraction of the cluster's best-case capacity.
        seed: the seed.

    Returns:
        The jobs, in arrival order.
    """
    source = preds.get_column("source")[0]
    targets = [m for m in nodes if m != source]
    usable = preds.filter(pl.col("target").is_in(targets)).drop_nulls(
        ["relR", *[f"relR_{k}" for k in BELIEFS]]
    )
    full = usable.group_by("sample").agg(pl.col("target").n_unique().alias("k"))
    keep = full.filter(pl.col("k") == len(targets)).get_column("sample").sort()
    if keep.is_empty():
        raise ValueError(f"no held-out sample from {source} was measured on all of {sorted(nodes)}")
    rows = usable.filter(pl.col("sample").is_in(keep.implode()))
    per = {s: part for (s,), part in rows.group_by(["sample"], maintain_order=True)}
    draw = np.random.default_rng(seed).choice(keep.to_numpy(), size=n_jobs)
    work = {
        s: REPS * p.get_column("runtime_source")[0] * p.get_column("iterations_per_rep")[0]
        for s, p in per.items()
    }
    jobs = []
    for s in draw:
        p, w = per[s], work[s]
        true = {t: w * r for t, r in zip(p.get_column("target"), p.get_column("relR"))}
        believed = {
            k: {t: w * r for t, r in zip(p.get_column("target"), p.get_column(f"relR_{k}"))}
            for k in BELIEFS
        }
        if source in nodes:
            true[source] = w
            for b in believed.values():
                b[source] = w
        jobs.append(
            Job(arrival=0.0, true=true, believed=believed, sample=s, app=p.get_column("app")[0])
        )
    t = arrivals(n_jobs, np.array([min(j.true.values()) for j in jobs]), nodes, load, seed)
    for j, a in zip(jobs, t):
        j.arrival = float(a)
    return jobs


# the clusters of the published table: node counts per machine
CLUSTERS = {
    "all six": {
        "h100-node:gpu": 2,
        "lassen:gpu": 4,
        "mi300a-spx:gpu": 2,
        "h100-node:cpu": 4,
        "quartz:cpu": 8,
        "mi300a-spx:cpu": 4,
    },
    "CPUs only": {"h100-node:cpu": 4, "quartz:cpu": 8, "mi300a-spx:cpu": 4},
    "GPUs only": {"h100-node:gpu": 2, "lassen:gpu": 4, "mi300a-spx:gpu": 2},
}


def run_clusters(
    ds,
    source: str = "mi300a-spx:cpu",
    *,
    clusters: dict[str, dict[str, int]] = CLUSTERS,
    n_jobs: int = 2000,
    load: float = 0.8,
    seed: int = 0,
) -> dict:
    """Every policy on every cluster, from one set of fold predictions: the results file of the
    published scheduling table.

    Args:
        ds: the data set.
        source: the submit machine.
        clusters: name -> machine -> node count.
        n_jobs: jobs per cluster.
        load: offered load as a fraction of each cluster's best-case capacity.
        seed: the seed.

    Returns:
        The settings and, per cluster, its nodes and each policy's mean turnaround and makespan.
    """
    preds = fold_predictions(ds, source, seed=seed)
    out = {
        "dataset": ds.version,
        "source": source,
        "jobs": n_jobs,
        "load": load,
        "seed": seed,
        "clusters": {},
    }
    for name, nodes in clusters.items():
        jobs = make_jobs(preds, nodes, n_jobs=n_jobs, load=load, seed=seed)
        out["clusters"][name] = {
            "nodes": nodes,
            "distinct_samples": len({j.sample for j in jobs}),
            "distinct_kernels": len({j.app for j in jobs}),
            "policies": compare(jobs, nodes, seed=seed),
        }
    return out


def main(argv=None) -> int:
    """``python -m xamm_models.studies.scheduling_jobs --store STORE --out results.json``."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--store", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    res = run_clusters(XplatDataset.from_store(args.store))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
