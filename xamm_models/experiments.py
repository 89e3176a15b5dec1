"""The paper's four experiments on the public ``xplat-rajaperf`` benchmark (``xamm eval``).

Protocol (the paper's leave-one-application-out, with RAJAPerf kernels as applications):

* **leave-one-kernel-group-out** (Apps, Basic, Lcals, Polybench, Stream, Algorithm, Comm): train on the
  other groups' kernels, predict the held-out group's relR for every (source, target) pair;
* **leave-one-kernel-out** for the headline comparison (raw XGBoost vs attention + AMMs);
* **held-out machine**: in every group fold, one machine (default ``mi300a-spx``) is also absent from
  training; its AMMs come only from its benchmark data.

**No leakage through the AMMs**: in each fold the AMM embedder is trained on, and every AMM is built
from, benchmark runs *without* the held-out kernels (:func:`fold_amm_embeddings` asserts it), since a
machine's RAJAPerf time on a kernel is the very quantity being predicted. Kernels are aligned with
``union`` at 50% coverage for the AMMs (the intersection over all targets is too small once a group
is removed). All seeds are fixed; nothing is tuned on test folds (hyper-parameters are the defaults of
:mod:`xamm_models.regressors` and the embedders).

Experiments: (1) raw features vs attention embeddings + AMMs for each downstream model; (2) attention
vs NN / AE / VAE sample embeddings (+ AMMs, XGBoost), with t-SNE plots; (3) with vs without AMMs
(attention, XGBoost); (4) AMM aggregation mean / L2 / variance (attention, XGBoost).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from xamm_data.store import as_store
from xamm_data.targets import Target
from xamm_models import xplat
from xamm_models.amm import make_signature
from xamm_models.evaluation import Evaluator
from xamm_models.kernel_apps import FEATURES
from xamm_models.plot import tsne_plot
from xamm_models.regressors import list_regressors
from xamm_models.relperf import pair_relative
from xamm_models.samples import align_kernels, benchmark_samples

PAPER = {"xgboost_mape_reduction_cpu_cpu": 49.64, "xgboost_mape_reduction_cpu_gpu": 99.07}


@dataclass
class EvalSettings:
    epochs: int = 50
    seed: int = 0
    held_out_machine: str = "mi300a-spx"
    loko: bool = True
    amm_min_coverage: float = 0.5
    groups: tuple[str, ...] | None = None  # restrict the group folds (tests); None = every kernel group


def fold_amm_embeddings(runs: pl.DataFrame, exclude_kernels: list[str], settings: EvalSettings):
    """(embeddings per target, kernels) of an attention AMM embedder trained without ``exclude_kernels``."""
    from xamm_models.embedders import create_embedder  # imports torch: loaded on use

    r = runs.filter(~pl.col("kernel").is_in(exclude_kernels))
    kernels = align_kernels(r, "union", min_coverage=settings.amm_min_coverage)
    leak = set(kernels) & set(exclude_kernels)
    assert not leak, f"AMM kernels overlap the test fold: {sorted(leak)}"
    samples = benchmark_samples(r, kernels)
    emb = create_embedder("attention", n_features=len(kernels), feature_names=kernels, seed=settings.seed)
    emb.fit(samples, epochs=settings.epochs)
    out = {}
    for (target,), part in samples.group_by(["target"], maintain_order=True):
        out[target] = (emb.transform(part), part)
    return out, kernels


def signatures_from_embeddings(embs: dict, kernels: list[str], aggregation: str) -> dict:
    """A fold's signatures (not registered), made as every signature is (:func:`~xamm_models.amm.make_signature`)."""
    return {t: make_signature(t, part, E, kernels, aggregation=aggregation, normalise="divide",
                              embedder_id="attention.fold", embedder_revision="fold")
            for t, (E, part) in embs.items()}


def _predict_pairs(pred, test: pl.DataFrame, truth: pl.DataFrame, *, use_amm: bool, sigs=None,
                   only_targets: set | None = None) -> pl.DataFrame:
    """Predictions joined with the measured relR of ``truth`` pairs (sources the model knows)."""
    rows = []
    test = test.with_columns(Target.expr().alias("source"))
    for (source,), part in test.group_by(["source"], maintain_order=True):
        if source not in pred.sources:
            continue
        want = truth.filter(pl.col("source") == source)
        targets = sorted(set(want.get_column("target")) & (only_targets or set(want.get_column("target"))))
        if not targets:
            continue
        p = pred.predict(part, source, targets, use_amm=use_amm, target_signatures=sigs)
        p = p.join(part.select("app", "app_params").with_row_index("row").with_columns(pl.col("row").cast(pl.Int64)), on="row")
        rows.append(p.join(want.select("app", "app_params", "source", "target", pl.col("relR").alias("y_true")),
                           on=["app", "app_params", "source", "target"], how="inner"))
    if not rows:
        return pl.DataFrame()
    out = pl.concat(rows)
    return out.select(pl.concat_str("app", pl.lit("|"), "app_params").alias("sample"), "source", "target",
                      "y_true", pl.col("relR").alias("y_pred"), "used_amm")


class _Run:
    """One evaluation run: the data, the folds' predictions by entry name, and how to fit a predictor."""

    def __init__(self, data: pl.DataFrame, runs: pl.DataFrame, settings: EvalSettings, out_dir: Path):
        self.data, self.runs, self.settings, self.out_dir = data, runs, settings, out_dir
        self.truth_all = pair_relative(data)
        self.preds: dict[str, list[pl.DataFrame]] = {}

    def add(self, name: str, df: pl.DataFrame) -> None:
        if df.height:
            self.preds.setdefault(name, []).append(df)

    def fit(self, train: pl.DataFrame, sigs: dict, **kw):
        from xamm_models.predictor import PredictorConfig, XammPredictor  # imports torch: loaded on use

        cfg = PredictorConfig(feature_columns=list(FEATURES), epochs=self.settings.epochs, seed=self.settings.seed, **kw)
        return XammPredictor(cfg).fit(train, sigs)

    def group_fold(self, gi: int, g: str, experiments, progress, t0: float) -> None:
        """Leave kernel group ``g`` out: train on the rest, predict its pairs for every experiment asked."""
        data = self.data
        test_k = sorted(set(data.filter(pl.col("group") == g).get_column("app")))
        progress(f"[{time.perf_counter() - t0:6.0f}s] fold {gi + 1}: kernel group {g} ({len(test_k)} kernels)")
        embs, kernels = fold_amm_embeddings(self.runs, test_k, self.settings)
        sig = {a: signatures_from_embeddings(embs, kernels, a) for a in ("mean", "l2", "variance")}
        train, test = data.filter(pl.col("group") != g), data.filter(pl.col("group") == g)
        truth = self.truth_all.filter(pl.col("app").is_in(test_k))
        if 1 in experiments or 3 in experiments:
            for reg in (list_regressors() if 1 in experiments else ["xgboost"]):
                raw = self.fit(train, sig["l2"], regressor=reg, use_embedder=False)
                self.add(f"raw/{reg}", _predict_pairs(raw, test, truth, use_amm=False))
                att = self.fit(train, sig["l2"], regressor=reg)
                self.add(f"attention+amm/{reg}", _predict_pairs(att, test, truth, use_amm=True))
                if reg == "xgboost":
                    self.add("attention-no-amm/xgboost", _predict_pairs(att, test, truth, use_amm=False))
                    if gi == 0 and 2 in experiments:
                        _tsne(att, data, self.out_dir / "tsne-attention.png")
        if 2 in experiments:
            for emb_name in ("mlp", "ae", "vae"):
                m = self.fit(train, sig["l2"], regressor="xgboost", embedder=emb_name)
                self.add(f"{emb_name}+amm/xgboost", _predict_pairs(m, test, truth, use_amm=True))
                if gi == 0:
                    _tsne(m, data, self.out_dir / f"tsne-{emb_name}.png")
        if 4 in experiments:
            for a in ("mean", "variance"):
                self.add(f"attention+amm-{a}/xgboost", _predict_pairs(self.fit(train, sig[a], regressor="xgboost"),
                                                                     test, truth, use_amm=True))
        if self.settings.held_out_machine:
            self.held_out(train, test, truth, sig["l2"])

    def held_out(self, train, test, truth, sig: dict) -> None:
        """The held-out machine: absent from training; its AMMs from its benchmark data (not this fold's kernels)."""
        held = self.settings.held_out_machine
        m = self.fit(train.filter(pl.col("machine") != held), sig, regressor="xgboost")
        hold_targets = {t for t in sig if t.startswith(held + ":")}
        self.add("held-out-machine/attention+amm/xgboost",
                 _predict_pairs(m, test, truth, use_amm=True, sigs=sig, only_targets=hold_targets))
        self.add("held-out-machine/attention-no-amm/xgboost",
                 _predict_pairs(m, test, truth, use_amm=False, only_targets=hold_targets))

    def leave_one_kernel_out(self, progress, t0: float) -> None:
        kernels_all = sorted(set(self.data.get_column("app")))
        for ki, k in enumerate(kernels_all):
            if ki % 10 == 0:
                progress(f"[{time.perf_counter() - t0:6.0f}s] leave-one-kernel-out {ki + 1}/{len(kernels_all)}")
            embs, kernels = fold_amm_embeddings(self.runs, [k], self.settings)
            sig = signatures_from_embeddings(embs, kernels, "l2")
            train, test = self.data.filter(pl.col("app") != k), self.data.filter(pl.col("app") == k)
            truth = self.truth_all.filter(pl.col("app") == k)
            self.add("loko/raw/xgboost", _predict_pairs(self.fit(train, sig, regressor="xgboost", use_embedder=False),
                                                       test, truth, use_amm=False))
            self.add("loko/attention+amm/xgboost", _predict_pairs(self.fit(train, sig, regressor="xgboost"), test, truth,
                                                                 use_amm=True))


def run_experiments(store=None, *, experiments=(1, 2, 3, 4), settings: EvalSettings | None = None,
                    out_dir: str | Path = "eval-out", progress=print) -> dict:
    """Run the experiments; write ``results.json``, ``results.md`` and t-SNE PNGs to ``out_dir``."""
    settings = settings or EvalSettings()
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    st = as_store(store)
    runs = st.scan("benchmark_runs").collect()
    run = _Run(xplat.build(runs), runs, settings, out_dir)
    data = run.data
    groups = sorted(set(data.get_column("group")) & set(settings.groups or data.get_column("group")))
    for gi, g in enumerate(groups):
        run.group_fold(gi, g, experiments, progress, t0)
    if settings.loko and (1 in experiments or 3 in experiments):
        run.leave_one_kernel_out(progress, t0)
    ev = Evaluator()
    results = {name: ev.eval(pl.concat(dfs)) for name, dfs in sorted(run.preds.items())}
    summary = {
        "dataset": {"name": xplat.NAME, "version": xplat.version(data), "samples": data.height,
                    "pairs": run.truth_all.height,
                    "targets": sorted(set(data.select(Target.expr()).to_series()))},
        "settings": asdict(settings), "experiments": list(experiments), "seconds": round(time.perf_counter() - t0, 1),
        "paper_claims": PAPER, "results": results, "headline": _headline(results),
    }
    (out_dir / "results.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out_dir / "results.md").write_text(markdown(summary))
    (out_dir / "dataset-card.md").write_text(xplat.card(data))
    return summary


def _tsne(pred, data: pl.DataFrame, out: Path) -> None:
    emb = pred._embed(data)
    labels = data.select(Target.expr()).to_series().to_list()
    tsne_plot(emb, labels, out, title=f"{pred.config.embedder} sample embeddings ({'raw' if not pred.config.use_embedder else 'learned'})")


def _reduction(base: float | None, new: float | None) -> float | None:
    return None if base in (None, 0) or new is None else round(100 * (base - new) / base, 2)


def _headline(results: dict) -> dict:
    raw, att = results.get("raw/xgboost", {}), results.get("attention+amm/xgboost", {})
    return {f"xgboost_mape_reduction_{sc.lower().replace('->', '_')}":
            _reduction(raw.get(sc, {}).get("mape"), att.get(sc, {}).get("mape"))
            for sc in ("CPU->CPU", "CPU->GPU", "GPU->GPU", "GPU->CPU")}


def markdown(summary: dict) -> str:
    res = summary["results"]
    scen = ("all", "CPU->CPU", "CPU->GPU", "GPU->GPU", "GPU->CPU")
    lines = [f"# xamm eval on {summary['dataset']['name']} (version {summary['dataset']['version']})", "",
             f"{summary['dataset']['samples']} samples, {summary['dataset']['pairs']} pairs, targets: "
             f"{', '.join(summary['dataset']['targets'])}. Seeds fixed ({summary['settings']['seed']}); "
             f"{summary['seconds']} s.", "",
             "MAPE % (lower is better) per scenario; last columns: median APE, R² of log relR, ordering accuracy (all).", "",
             "| configuration | " + " | ".join(scen) + " | median APE | R² log | ordering |",
             "|---|" + "---|" * (len(scen) + 3)]
    for name, r in res.items():
        cells = [f"{r[s]['mape']:.1f}" if s in r else "–" for s in scen]
        a = r["all"]
        r2 = "–" if a["r2_log"] is None else f"{a['r2_log']:.3f}"
        order = "–" if a["ordering_accuracy"] is None else f"{a['ordering_accuracy']:.3f}"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {a['median_ape']:.1f} | {r2} | {order} |")
    h = summary["headline"]
    lines += ["", "## Against the paper's claims", "",
              "| XGBoost MAPE reduction, attention + AMMs vs raw | paper | here |", "|---|---|---|",
              f"| CPU→CPU | −{PAPER['xgboost_mape_reduction_cpu_cpu']}% | {_fmt(h.get('xgboost_mape_reduction_cpu_cpu'))} |",
              f"| CPU→GPU | −{PAPER['xgboost_mape_reduction_cpu_gpu']}% | {_fmt(h.get('xgboost_mape_reduction_cpu_gpu'))} |", ""]
    return "\n".join(lines) + "\n"


def _fmt(x):
    if x is None:
        return "n/a"
    return f"−{x}% (better)" if x > 0 else f"+{-x}% (worse)"
