"""An OGB-style evaluator for cross-platform relative-performance predictions."""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_data.targets import Target

SCENARIOS = ("CPU->CPU", "CPU->GPU", "GPU->GPU", "GPU->CPU")


class Evaluator:
    """Scores relR predictions: MAPE, median APE, R^2 (of log relR) and ordering accuracy, per scenario.

    ``eval`` takes a polars DataFrame (or a dict of equal-length columns) in
    :attr:`expected_input_format` and returns ``{"all": {...}, "CPU->GPU": {...}, ...}``.
    """

    expected_input_format = """\
A polars DataFrame (or dict of equal-length sequences) with one row per (sample, source, target):
  sample    any hashable id of the application sample (rows of one sample on one source are ranked together)
  source    'machine:cpu' or 'machine:gpu'
  target    'machine:cpu' or 'machine:gpu', != source
  y_true    measured relR = runtime(target) / runtime(source), finite and > 0
  y_pred    predicted relR, finite and > 0
Metrics: MAPE = mean(|y_pred - y_true| / y_true) * 100; median APE likewise; R^2 of log(y_pred) against
log(y_true) (relR spans orders of magnitude); ordering accuracy = fraction of (sample, source) groups with
>= 2 targets whose targets sorted by y_pred are in the same order as sorted by y_true (seed 002's metric).
Scenarios by device: CPU->CPU, CPU->GPU, GPU->GPU, GPU->CPU."""

    def __init__(self, name: str = "xplat-rajaperf"):
        self.name = name

    def _check(self, data) -> pl.DataFrame:
        df = data if isinstance(data, pl.DataFrame) else pl.DataFrame(data)
        need = ["sample", "source", "target", "y_true", "y_pred"]
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise ValueError(f"input lacks columns {missing}; expected:\n{self.expected_input_format}")
        if df.is_empty():
            raise ValueError("input has no rows")
        for col in ("y_true", "y_pred"):
            s = df.get_column(col).cast(pl.Float64)
            bad = s.is_null() | ~s.is_finite() | (s <= 0)
            if bad.any():
                raise ValueError(f"{col} must be finite and > 0; {int(bad.sum())} row(s) are not (first at row "
                                 f"{int(bad.arg_max())})")
        for col in ("source", "target"):
            bad = ~df.get_column(col).cast(pl.String).str.contains(r"^[^:]+:(cpu|gpu)$")
            if bad.any():
                raise ValueError(f"{col} must read 'machine:cpu' or 'machine:gpu'; row {int(bad.arg_max())} is "
                                 f"{df.get_column(col)[int(bad.arg_max())]!r}")
        if (df.get_column("source") == df.get_column("target")).any():
            raise ValueError("a row has source == target")
        return df.with_columns(pl.col("y_true").cast(pl.Float64), pl.col("y_pred").cast(pl.Float64))

    @staticmethod
    def _metrics(df: pl.DataFrame) -> dict:
        yt, yp = df.get_column("y_true").to_numpy(), df.get_column("y_pred").to_numpy()
        ape = np.abs(yp - yt) / yt * 100
        lt, lp = np.log(yt), np.log(yp)
        ss_res, ss_tot = float(((lt - lp) ** 2).sum()), float(((lt - lt.mean()) ** 2).sum())
        groups = df.group_by("sample", "source").agg(
            pl.col("target").sort_by("y_true").alias("by_true"), pl.col("target").sort_by("y_pred").alias("by_pred"),
            pl.len().alias("n")).filter(pl.col("n") >= 2)
        ordering = float((groups.get_column("by_true") == groups.get_column("by_pred")).mean()) if groups.height else None
        return {"n": int(len(yt)), "mape": float(ape.mean()), "median_ape": float(np.median(ape)),
                "r2_log": 1 - ss_res / ss_tot if ss_tot > 0 else None, "ordering_accuracy": ordering,
                "ordering_groups": int(groups.height)}

    def eval(self, data) -> dict:
        df = self._check(data)
        dev = lambda c: Target.device_expr(c).str.to_uppercase()  # noqa: E731
        df = df.with_columns(pl.concat_str(dev("source"), pl.lit("->"), dev("target")).alias("scenario"))
        out = {"all": self._metrics(df)}
        for sc in SCENARIOS:
            part = df.filter(pl.col("scenario") == sc)
            if part.height:
                out[sc] = self._metrics(part)
        return out
