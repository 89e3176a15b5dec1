"""Specifications in the evaluation: on the nested leave-one-machine-out folds, the left-out
machine answered from its published peaks alone (:mod:`xamm_models.machines.specifications`)
against the same roofline answered from its own runs, the default and the truth, on the same
pairs.

What each answer may read: the left-out machine's peaks in the registry, and the efficiencies
calibrated on the other measured machines' runs without the fold's kernel group; never a run of
the left-out machine. The other end of every pair keeps the figures its runs give (the plain
roofline's, as ``baseline/roofline`` has them).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_models.machines.specifications import peaks
from xamm_models.predictors.specifications import left_out_answers, left_out_errors, spread_of

__all__ = ["COMPARED", "specification_rows", "specification_scores"]

COVERAGE = 0.8  # the default predictor's interval coverage
OWN = "baseline/roofline"  # the same model, the left-out machine's figures from its own runs
COMPARED = (OWN, "stacked/default")
KEY = ["sample", "source", "target"]
WORK = ["bytes_per_rep", "flops_per_rep", "kernels_per_rep", "iterations_per_rep"]
HEAD = [
    "| left-out end | pairs answered | from specifications, within 2× [90% CI] "
    "| from its own runs (plain roofline) | the default "
    "| specifications − own runs [90% CI] | median abs log10 error: specifications, own runs "
    "| its 80% interval: coverage, median width (×) |",
    "|---|---|---|---|---|---|---|---|",
]


def _fold_answers(ds, part: pl.DataFrame, fold) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One fold's rows answered with the left-out machine's specification figures: (relR, the
    left-out end of each row, "" where it has no peaks recorded, and per row the interval's log10
    offsets below and above, NaN where the fold measures none)."""
    held = fold.held_out_machine
    hidden = list(fold.machine_exclude)
    samples = ds.samples.filter(~pl.col("app").is_in(hidden))
    test = part.select(KEY).join(
        ds.pairs.select(*KEY, *WORK), on=KEY, how="left", maintain_order="left"
    )
    rel, end = left_out_answers(samples, held, test)
    spread = _nested_spread(ds, samples, held, hidden)
    nan = [np.nan, np.nan]
    bounds = np.array([spread.get(e.rpartition(":")[2], nan) if e else nan for e in end])
    return rel, end, bounds.reshape(-1, 2)


def _nested_spread(ds, samples: pl.DataFrame, held: str, hidden: list[str]) -> dict:
    """The interval of answers from specifications as the fold may know it: each other measured
    machine left out in turn, over the fold's kernels and the pairs without the held-out one."""
    mine = pl.col("target").str.starts_with(held + ":")
    pairs = ds.pairs.filter(
        ~pl.col("app").is_in(hidden) & ~mine & ~pl.col("source").str.starts_with(held + ":")
    )
    spread, _ = spread_of(left_out_errors(samples.filter(~mine), pairs), COVERAGE)
    return spread


def _answers(ds, own: pl.DataFrame) -> pl.DataFrame:
    """The plain roofline's machine-scheme rows with the specification answer (``y_spec``, NaN
    where the left-out machine has no peaks), its nested interval (``spec_lo``, ``spec_hi``) and
    the left-out end (``end``)."""
    folds = {f.name: f for f in ds.get_idx_split("machine")}
    parts = []
    for (name,), part in own.group_by(["fold"], maintain_order=True):
        y, end, b = _fold_answers(ds, part, folds[name])
        parts.append(
            part.with_columns(
                pl.Series("y_spec", y),
                pl.Series("spec_lo", y * 10.0 ** b[:, 0]),
                pl.Series("spec_hi", y * 10.0 ** b[:, 1]),
                pl.Series("end", end),
            )
        )
    return pl.concat(parts)


def _interval(mine: pl.DataFrame) -> dict:
    """How the nested interval of answers from specifications covers the truth, and its median
    width (log10 of hi / lo), over the rows the fold could give one."""
    lo, hi = mine.get_column("spec_lo").to_numpy(), mine.get_column("spec_hi").to_numpy()
    y = mine.get_column("y_true").to_numpy()
    has = np.isfinite(lo) & np.isfinite(hi)
    if not has.any():
        return {"rows": 0, "coverage": None, "median_width_log10": None}
    return {
        "rows": int(has.sum()),
        "coverage": float(np.mean((y[has] >= lo[has]) & (y[has] <= hi[has]))),
        "median_width_log10": float(np.median(np.log10(hi[has] / lo[has]))),
    }


def _scored(ev, rows: pl.DataFrame, preds: dict[str, pl.DataFrame], keep: np.ndarray) -> dict:
    """The specification answer's scores on the kept rows, and its differences from each
    compared entry on them."""
    mine = rows.filter(pl.Series(keep)).drop("y_lo", "y_hi", strict=False)
    mine = mine.with_columns(pl.col("y_spec").alias("y_pred"))
    out = {
        "answered": int(keep.sum()),
        "specifications": ev.pooled(mine.drop("spec_lo", "spec_hi")),
        "interval": _interval(mine),
        "entries": {},
        "differences": {},
    }
    for name in COMPARED:
        if name in preds:
            theirs = preds[name].filter(pl.Series(keep))
            out["entries"][name] = ev.pooled(theirs)
            out["differences"][name] = ev.compare(mine.drop("spec_lo", "spec_hi"), theirs)["all"]
    return out


def specification_scores(ev, ds, preds: dict[str, pl.DataFrame]) -> dict:
    """Per left-out end with peaks recorded, and over them all: the answer from specifications
    against the same roofline from the end's own runs and the default, on the same pairs.

    Args:
        ev: the evaluator.
        ds: the data set.
        preds: the machine scheme's predictions per entry (every frame's rows in one order).

    Returns:
        ``{"by_target": {end: scores}, "all": scores, "without_peaks": [ends]}``; empty without
        the plain roofline's predictions or any end with peaks.
    """
    own = preds.get(OWN)
    if own is None:
        return {}
    rows = _answers(ds, own)
    for name in COMPARED:
        if name in preds and not preds[name].select(*KEY, "fold").equals(own.select(*KEY, "fold")):
            raise ValueError(f"{name}: rows are not in the plain roofline's order")
    ends = rows.get_column("end").to_numpy()
    answered = np.isfinite(rows.get_column("y_spec").to_numpy()) & (ends != "")
    if not answered.any():
        return {}
    measured = sorted(set(ds.samples.get_column("target")))
    return {
        "by_target": {
            t: _scored(ev, rows, preds, answered & (ends == t)) for t in sorted(set(ends[answered]))
        },
        "all": _scored(ev, rows, preds, answered),
        "without_peaks": [t for t in measured if peaks(t) is None],
    }


def _ci(m: dict) -> str:
    return f"{m['value']:.2f} [{m['lo']:.2f}, {m['hi']:.2f}]"


def _interval_cell(iv: dict) -> str:
    if not iv["rows"]:
        return "none (no other machine of its kind to measure it)"
    return f"{iv['coverage']:.2f}, {10 ** iv['median_width_log10']:.1f}× ({iv['rows']} pairs)"


def _row(end: str, s: dict, of: str) -> str:
    own, default = s["entries"].get(OWN), s["entries"].get("stacked/default")
    d = s["differences"].get(OWN)
    mine = s["specifications"]
    cells = [
        end,
        f"{s['answered']}{of}",
        _ci(mine["within_2"]),
        _ci(own["within_2"]) if own else "–",
        _ci(default["within_2"]) if default else "–",
        f"{d['within_2']['difference']:+.2f} [{d['within_2']['lo']:+.2f}, "
        f"{d['within_2']['hi']:+.2f}]"
        if d
        else "–",
        f"{mine['median_abs_log10']['value']:.2f}, "
        + (f"{own['median_abs_log10']['value']:.2f}" if own else "–"),
        _interval_cell(s["interval"]),
    ]
    return "| " + " | ".join(cells) + " |"


def specification_rows(summary: dict) -> list[str]:
    """The evaluation page's specifications table (header included) and the measured ends it
    cannot score, from ``results.json``; empty when the run has none."""
    s = summary["results"].get("machine", {}).get("specifications") or {}
    if not s:
        return []
    rows = [_row(t, v, "") for t, v in s["by_target"].items()]
    out = [*HEAD, *rows, _row("all", s["all"], "")]
    if s.get("without_peaks"):
        out += [
            "",
            "Measured ends the registry records no peak bandwidth and flop rate of (not scored): "
            + ", ".join(s["without_peaks"])
            + ".",
        ]
    return out
