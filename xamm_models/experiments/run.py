"""``xamm eval``: every entry of the benchmark on the official folds of ``xplat-rajaperf``, through
its evaluator.

Schemes (:mod:`xamm_models.benchmark.splits`): leave-one-kernel-group-out (all entries of the
experiments asked), leave one machine out over every machine (each machine and kernel group in
turn: the machine absent from training, its signature from its own benchmark runs without the
group's kernels; baselines, the stacked entries and the default), and leave-one-kernel-out
(baselines, raw and attention + AMMs with XGBoost). Machine data never includes a fold's test
kernels. Hyper-parameters are the defaults of :mod:`xamm_models.predictors.paper.regressors` and the
embedders; which rules of the default predictor were set after seeing which folds is recorded in
docs/decisions.md.

Results go to ``results.json`` (the source of truth), ``results.md`` and ``dataset-card.md``; the
documentation's tables are generated from the JSON
(:func:`xamm_models.experiments.report.results_block`).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import polars as pl

from xamm_models import runtime as cpu_kernels
from xamm_models.benchmark import dataset as xplat
from xamm_models.benchmark.evaluate import Evaluator
from xamm_models.benchmark.intervals import sharpness
from xamm_models.benchmark.vector_metrics import plot_roc, vector_metrics_from_pairs
from xamm_models.experiments.entries import ENTRIES, FoldContext, list_entries
from xamm_models.experiments.report import (
    ceiling,
    compare_to_baselines,
    machine_scores,
    markdown,
    rule_comparisons,
)
from xamm_models.experiments.same_silicon import same_silicon_scores
from xamm_models.experiments.specifications import specification_scores

PAPER = {"xgboost_mape_reduction_cpu_cpu": 49.64, "xgboost_mape_reduction_cpu_gpu": 99.07}
PIPELINE = "attention+amm/xgboost"


LIBRARIES = ("catboost", "numpy", "polars", "scikit-learn", "torch", "xgboost", "xgboost-cpu")


def library_versions() -> dict[str, str]:
    """Python's and the numerical libraries' versions (those installed): a model's figures can move
    with them, so a run records what it ran on."""
    out = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


@dataclass
class EvalSettings:
    epochs: int = 50
    seed: int = 0
    lomo: bool = True  # leave one machine out, over every machine
    loko: bool = True
    amm_min_coverage: float = 0.5
    n_boot: int = 1000
    quick: bool = False
    workers: int = 2  # processes; results do not depend on it (one torch thread each)
    # restrict the kernel-group folds (tests); None = every group
    groups: tuple[str, ...] | None = None
    # restrict the entries (tests); None = every entry of the experiments
    entries: tuple[str, ...] | None = None

    @classmethod
    def for_quick(cls, **kw) -> EvalSettings:
        """``--quick``: 5 epochs, no leave-one-kernel-out, 300 resamples; baselines, XGBoost and
        stacked entries.

        Args:
            **kw: settings that override these.

        Returns:
            The settings.
        """
        return cls(**{"epochs": 5, "loko": False, "n_boot": 300, "quick": True, **kw})


def _entries_for(scheme: str, experiments, settings: EvalSettings) -> list[str]:
    names = []
    for n in list_entries():
        e = ENTRIES.get(n)
        if scheme not in e.schemes or not (
            e.kind == "baseline" or e.experiments & set(experiments)
        ):
            continue
        if settings.entries is not None and n not in settings.entries:
            continue
        if (
            settings.quick
            and e.kind != "baseline"
            and "xgboost" not in n
            and not n.startswith("stacked/")
        ):
            continue
        names.append(n)
    return names


_WORKER: dict = {}


def _init_worker(runs: pl.DataFrame) -> None:
    """A worker process: one torch thread (so results never depend on the number of workers),
    torch's AVX2 kernels on x86-64 (so they never depend on the processor:
    :mod:`xamm_models.runtime`), its own data set."""
    cpu_kernels.pin()  # a spawned worker has not imported torch yet
    import torch  # the models extra; a worker only runs model entries

    torch.set_num_threads(1)
    _WORKER["ds"] = xplat.XplatDataset(runs)


def _fold_task(
    folds, names: list[str], settings: EvalSettings
) -> list[tuple[str, dict[str, pl.DataFrame]]]:
    """Predictions of every entry in ``names`` on each fold: [(fold name, {entry: frame})]."""
    ds, out = _WORKER["ds"], []
    for fold in folds:
        ctx = FoldContext(
            ds,
            fold,
            epochs=settings.epochs,
            seed=settings.seed,
            amm_min_coverage=settings.amm_min_coverage,
        )
        out.append(
            (
                fold.name,
                {n: _frame(ctx.truth, ENTRIES.get(n).predict(ctx), fold.name) for n in names},
            )
        )
    return out


def _frame(truth: pl.DataFrame, pred, fold: str) -> pl.DataFrame:
    """An entry's predictions as an evaluator frame; an entry may return (relR, lo, hi) to have its
    interval scored."""
    cols = ("y_pred", "y_lo", "y_hi") if isinstance(pred, tuple) else ("y_pred",)
    parts = pred if isinstance(pred, tuple) else (pred,)
    return truth.with_columns(
        *[pl.Series(c, v, dtype=pl.Float64) for c, v in zip(cols, parts, strict=True)],
        pl.lit(fold).alias("fold"),
    )


def _tasks(ds, schemes: list[str], settings: EvalSettings) -> list[tuple[str, list]]:
    """(scheme, folds) work units: one fold each, except leave-one-kernel-out, chunked by kernel
    group so a worker reuses the group's AMM embedder."""
    tasks = []
    for scheme in schemes:
        folds = ds.get_idx_split(scheme)
        if scheme != "kernel" and settings.groups:
            folds = [f for f in folds if f.name.split(" to ")[0] in settings.groups]
        if scheme != "kernel":
            tasks += [(scheme, [f]) for f in folds]
            continue
        by_group: dict[tuple, list] = {}
        for f in folds:
            by_group.setdefault(f.machine_exclude, []).append(f)
        for fs in by_group.values():
            half = max(1, (len(fs) + 1) // 2)
            tasks += [(scheme, fs[i : i + half]) for i in range(0, len(fs), half)]
    return tasks


def _run_all(
    ds, schemes, experiments, settings: EvalSettings, progress, t0: float
) -> tuple[dict[str, dict], str]:
    """({scheme: {entry: predictions over all its folds}}, the torch CPU kernels they ran), computed
    in ``settings.workers`` spawned processes."""
    tasks = _tasks(ds, schemes, settings)
    names = {s: _entries_for(s, experiments, settings) for s in schemes}
    # never fork a process that has started polars or torch threads
    ctx = multiprocessing.get_context("spawn")
    done: dict[str, list] = {s: [] for s in schemes}
    with ProcessPoolExecutor(
        settings.workers, mp_context=ctx, initializer=_init_worker, initargs=(ds.runs,)
    ) as pool:
        kernels = pool.submit(cpu_kernels.capability).result()
        futures = {
            pool.submit(_fold_task, folds, names[scheme], settings): (i, scheme)
            for i, (scheme, folds) in enumerate(tasks)
        }
        for k, fut in enumerate(as_completed(futures)):
            i, scheme = futures[fut]
            done[scheme].append((i, fut.result()))
            progress(
                f"[{time.perf_counter() - t0:6.0f}s] {k + 1}/{len(tasks)} done: {scheme} "
                f"{', '.join(n for n, _ in done[scheme][-1][1])}"
            )
    out = {}
    for scheme in schemes:
        parts = [p for _, res in sorted(done[scheme], key=lambda t: t[0]) for _, p in res]
        out[scheme] = {n: pl.concat([p[n] for p in parts]) for n in names[scheme]} if parts else {}
    return out, kernels


def _dataset_record(ds: xplat.XplatDataset) -> dict:
    """What ``results.json`` records of the data set the run used."""
    return {
        "name": xplat.NAME,
        "schema": xplat.SCHEMA_VERSION,
        "version": ds.version,
        "samples": ds.samples.height,
        "pairs": ds.pairs.height,
        "drops": ds.drops,
        "targets": sorted(set(ds.samples.get_column("target"))),
        "sources": [s.model_dump() for s in xplat.SOURCES],
    }


def _scored(
    ds, all_preds: dict, schemes: list, settings, out_dir: Path, progress, t0: float
) -> dict:
    """Every scheme's entries scored, compared with the baselines, the same-silicon answers and
    the answers from specifications (leave one machine out), and the vector models' figures (their
    ROC drawn into ``out_dir``)."""
    ev = Evaluator(xplat.NAME, n_boot=settings.n_boot, seed=settings.seed)
    results = {}
    for scheme in schemes:
        preds = all_preds[scheme]
        if not preds:
            continue
        progress(f"[{time.perf_counter() - t0:6.0f}s] scoring {scheme}: {len(preds)} entries")
        scored = {n: ev.eval(p) for n, p in preds.items()}
        results[scheme] = {
            "folds": _fold_sizes(preds),
            "entries": scored,
            "comparisons": compare_to_baselines(ev, preds, scored, PIPELINE),
        }
        results[scheme]["rules"] = rule_comparisons(ev, preds)
        results[scheme]["ceiling"] = ceiling(preds)
        if scheme == "machine":
            results[scheme]["by_machine"] = machine_scores(ev, preds)
            results[scheme]["intervals"] = _sharpness(preds, settings)
            results[scheme]["same_silicon"] = same_silicon_scores(ev, ds, preds)
            results[scheme]["specifications"] = specification_scores(ev, ds, preds)
        vectors = _vector_results(preds, out_dir / "roc.png")
        if vectors:
            results[scheme]["vector_metrics"] = vectors
    return results


def _sharpness(preds: dict[str, pl.DataFrame], settings: EvalSettings) -> dict:
    """Entry -> machine -> how sharp its intervals are beside the roofline's at equal coverage."""
    roof = preds.get("baseline/roofline")
    return {
        n: sharpness(p, roof, n_boot=min(settings.n_boot, 300), seed=settings.seed)
        for n, p in preds.items()
        if roof is not None and "y_lo" in p.columns
    }


def run_experiments(
    store=None,
    *,
    experiments=(1, 2, 3, 4),
    settings: EvalSettings | None = None,
    out_dir: str | Path = "eval-out",
    progress=print,
    dataset: xplat.XplatDataset | None = None,
) -> dict:
    """Run the benchmark; write ``results.json``, ``results.md`` and ``dataset-card.md``.

    Args:
        store: the store holding the data set's sources.
        experiments: the paper's experiments to run (their entries).
        settings: epochs, schemes, resamples, workers (default :class:`EvalSettings`).
        out_dir: where the results are written.
        progress: where progress is printed.
        dataset: the data set, when already built.

    Returns:
        The summary (what ``results.json`` holds).
    """
    settings = settings or EvalSettings()
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ds = dataset or xplat.XplatDataset.from_store(store)
    schemes = (
        ["kernel-group"]
        + (["machine"] if settings.lomo else [])
        + (["kernel"] if settings.loko else [])
    )
    all_preds, kernels = _run_all(ds, schemes, experiments, settings, progress, t0)
    results = _scored(ds, all_preds, schemes, settings, out_dir, progress, t0)
    summary = {
        "dataset": _dataset_record(ds),
        "settings": asdict(settings),
        "experiments": list(experiments),
        "torch_cpu_kernels": kernels,
        # oneMKL's code branch (xamm_models.runtime pins COMPATIBLE unless the user set one)
        "mkl_branch": os.environ.get("MKL_CBWR"),
        "libraries": library_versions(),
        "seconds": round(time.perf_counter() - t0, 1),
        "paper_claims": PAPER,
        "pipeline": PIPELINE,
        "entries": {
            n: {"kind": ENTRIES.get(n).kind, "description": ENTRIES.get(n).description}
            for r in results.values()
            for n in r["entries"]
        },
        "results": results,
    }
    text = json.dumps(_clean(summary), indent=1, sort_keys=True) + "\n"
    (out_dir / "results.json").write_text(text)
    (out_dir / "results.md").write_text(markdown(json.loads(text)))  # exactly what the JSON says
    (out_dir / "dataset-card.md").write_text(ds.card())
    return summary


VECTOR_ENTRIES = {"vae-dnn/seed": "VAE-DNN", "baseline/random-forest-vector": "RandomForest"}


def _vector_results(preds: dict[str, pl.DataFrame], roc_png: Path) -> dict:
    """the VAE-DNN papers' vector metrics (R², ordering, AUC) of the vector models' pooled
    predictions, and their ROC PNG."""
    names = [n for n in VECTOR_ENTRIES if n in preds]
    if not names:
        return {}
    metrics = {n: vector_metrics_from_pairs(preds[n]) for n in names}
    plot_roc(
        {VECTOR_ENTRIES[n]: m["roc"] for n, m in metrics.items()},
        roc_png,
        "ROC (kernel groups pooled), most common ordering",
    )
    return {n: {k: v for k, v in m.items() if k != "roc"} for n, m in metrics.items()}


def _fold_sizes(preds: dict[str, pl.DataFrame]) -> dict[str, int]:
    any_entry = next(iter(preds.values()))
    return dict(any_entry.group_by("fold", maintain_order=True).len().iter_rows())


def _clean(x):
    """JSON-safe and compact: NaN becomes null (a metric with no defined value), tuples lists,
    floats keep 6 significant digits (the report shows at most 3)."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, float):
        return None if math.isnan(x) else float(f"{x:.6g}")
    return x
