"""An OGB-style evaluator bound to a data set: ``Evaluator("xplat-rajaperf")``.

It scores relR predictions with :mod:`xamm_models.benchmark.metrics` (log scale, within machine
pairs, 90% bootstrap intervals over kernels), per scenario (CPU->CPU, CPU->GPU, GPU->GPU, GPU->CPU)
and overall, pooled over folds and averaged over folds, and compares two entries on the same rows.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_data.machines.targets import scenario_expr
from xamm_models.benchmark.metrics import HIGHER_IS_BETTER, METRICS, bootstrap, compare, score

SCENARIOS = ("CPU->CPU", "CPU->GPU", "GPU->GPU", "GPU->CPU")
DATASETS = ("xplat-rajaperf",)


class Evaluator:
    """Scores predictions on ``xplat-rajaperf`` (see :attr:`expected_input_format` and
    :attr:`expected_output_format`)."""

    expected_input_format = """\
A polars DataFrame (or dict of equal-length sequences), one row per test pair of a fold:
  sample    the application sample ('kernel|{"size_bucket":N}' in xplat-rajaperf); rows of one \
sample on one
            source are ranked together
  app       the kernel: the unit the bootstrap resamples
  source    'machine:cpu' or 'machine:gpu'
  target    'machine:cpu' or 'machine:gpu', != source
  y_true    measured relR = runtime(target) / runtime(source), finite and > 0
  y_pred    predicted relR, finite and > 0
  fold      (optional) the fold's name, for per-fold and fold-averaged figures
  y_lo, y_hi  (optional) the prediction's interval, scored as coverage"""

    expected_output_format = """\
{"pooled": {SCOPE: {METRIC: {"value", "lo", "hi"}}}, "fold_mean": {SCOPE: {METRIC: value}},
 "folds": {FOLD: {SCOPE: {METRIC: value}}}, "n": {SCOPE: rows}}
SCOPE is "all" or a scenario (CPU->CPU, CPU->GPU, GPU->GPU, GPU->CPU) with rows; METRIC is one of
within_1_25, within_2, median_abs_log10 (primary: within_2 and median_abs_log10), \
r2_log_within_pair,
ranking_accuracy, top1_accuracy, mape, coverage (null without y_lo/y_hi). lo/hi: the 90% \
percentile bootstrap interval over kernels.
MAPE is the paper's metric and is reported for comparison only: it is bounded by 100% for any
under-prediction, so a tiny constant scores about 100% and "beats" a model that is 3x high."""

    def __init__(
        self, name: str = "xplat-rajaperf", *, n_boot: int = 1000, seed: int = 0, level: float = 0.9
    ):
        if name not in DATASETS:
            raise ValueError(f"no evaluator for data set {name!r}; known: {', '.join(DATASETS)}")
        self.name, self.n_boot, self.seed, self.level = name, n_boot, seed, level

    def _check(self, data) -> pl.DataFrame:
        df = data if isinstance(data, pl.DataFrame) else pl.DataFrame(data)
        need = ["sample", "app", "source", "target", "y_true", "y_pred"]
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise ValueError(
                f"input lacks columns {missing}; expected:\n{self.expected_input_format}"
            )
        if df.is_empty():
            raise ValueError("input has no rows")
        shape = pl.col("source").cast(pl.String).str.contains(r"^[^:]+:(cpu|gpu)$") & pl.col(
            "target"
        ).cast(pl.String).str.contains(r"^[^:]+:(cpu|gpu)$")
        bad = df.select((~shape).arg_true().first()).item()
        if bad is not None:
            raise ValueError(
                "source and target must read 'machine:cpu' or 'machine:gpu'; row "
                f"{bad} reads "
                f"{df['source'][bad]!r} -> {df['target'][bad]!r}"
            )
        if df.select((pl.col("source") == pl.col("target")).any()).item():
            raise ValueError("a row has source == target")
        if "fold" not in df.columns:
            df = df.with_columns(pl.lit("all").alias("fold"))
        return df.with_columns(scenario_expr())

    def _scopes(self, df: pl.DataFrame):
        yield "all", df
        for sc in SCENARIOS:
            part = df.filter(pl.col("scenario") == sc)
            if part.height:
                yield sc, part

    def eval(self, data) -> dict:
        """Scores of one entry's predictions.

        Args:
            data: predictions in :attr:`expected_input_format` (values finite and > 0, checked).

        Returns:
            Scores in :attr:`expected_output_format`.
        """
        df = self._check(data)
        pooled = {
            s: bootstrap(p, n=self.n_boot, seed=self.seed, level=self.level)
            for s, p in self._scopes(df)
        }
        folds = {
            f: {s: score(q) for s, q in self._scopes(part)}
            for (f,), part in df.group_by(["fold"], maintain_order=True)
        }
        fold_mean = {}
        for s in pooled:
            fold_mean[s] = {
                m: _mean([folds[f][s][m] for f in folds if s in folds[f]]) for m in METRICS
            }
        return {
            "pooled": pooled,
            "fold_mean": fold_mean,
            "folds": folds,
            "n": {s: p.height for s, p in self._scopes(df)},
        }

    def pooled(self, data) -> dict:
        """The pooled scores of every row (``eval(data)["pooled"]["all"]`` without the scenarios
        and folds).

        Args:
            data: predictions in :attr:`expected_input_format`.

        Returns:
            ``{metric: {"value", "lo", "hi"}}``.
        """
        return bootstrap(self._check(data), n=self.n_boot, seed=self.seed, level=self.level)

    def compare(self, a, b) -> dict:
        """Entry ``a`` minus entry ``b`` on the same rows and resamples.

        Args:
            a: predictions in :attr:`expected_input_format`.
            b: predictions for the same rows.

        Returns:
            ``{scope: {metric: {"difference", "lo", "hi", "better"}}}``.
        """
        da, db = self._check(a), self._check(b)
        out = {}
        for s, pa in self._scopes(da):
            pb = db.filter(pl.col("scenario") == s) if s != "all" else db
            out[s] = compare(pa, pb, n=self.n_boot, seed=self.seed, level=self.level)
        return out


def _mean(xs: list) -> float | None:
    xs = [x for x in xs if x is not None and np.isfinite(x)]
    return float(np.mean(xs)) if xs else None


def best_of(
    results: dict, names: list[str], scope: str = "all", metric: str = "within_2"
) -> str | None:
    """The entry among ``names`` with the best pooled ``metric`` in ``scope`` (ties: the first
    name)."""
    if HIGHER_IS_BETTER[metric] is None:
        raise ValueError(f"{metric} has no better direction")
    sign = 1 if HIGHER_IS_BETTER[metric] else -1
    have = [
        (n, results[n]["pooled"][scope][metric]["value"])
        for n in names
        if scope in results.get(n, {}).get("pooled", {})
        and results[n]["pooled"][scope][metric]["value"] is not None
    ]
    return max(have, key=lambda t: sign * t[1])[0] if have else None
