"""Targets answered from their specifications in ``xamm predict``: every registry machine whose
peak bandwidth and flop rate are recorded, and that neither the predictor nor the user's runs make
a target, is answered by the plain roofline with figures from its peaks
(:mod:`xamm_models.machines.specifications`): the same model the default answers measured targets
with, the source's figures from its runs, the target's from peaks times the efficiencies the
measured machines of its kind sustain.

Its interval is the spread measured by leaving each measured machine out
(:attr:`~xamm_models.machines.specifications.Calibration.spread`), far wider than a measured
target's; its basis and regime say ``specifications``. Runs of the machine, once ingested, make it
a measured target and its specifications are no longer read.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_data.machines import registry as machines
from xamm_models.benchmark.baselines import machine_figures, roofline_seconds
from xamm_models.machines.nodes import RunConfig
from xamm_models.machines.physics import PhysicsSignature
from xamm_models.machines.specifications import (
    SPECIFICATIONS,
    Calibration,
    calibrate,
    shipped_calibration,
    specification_figures,
    specification_signature,
)
from xamm_models.predictors.configurations import TargetRuns

__all__ = [
    "answer_from_specifications",
    "is_specification",
    "left_out_answers",
    "left_out_errors",
    "relr_with",
    "specification_runs",
    "specification_targets",
    "spread_of",
]


def is_specification(sig: PhysicsSignature) -> bool:
    """Whether a signature comes from specifications, not runs."""
    return sig.flop_rate_from == SPECIFICATIONS


def specification_targets(
    known, calibration: Calibration | None = None
) -> dict[str, PhysicsSignature]:
    """The registry's targets with peaks recorded that are not among ``known``, and their
    signatures from specifications.

    Args:
        known: targets answered from runs or a predictor's signatures.
        calibration: the efficiencies (None: the shipped ones).

    Returns:
        Target -> signature.
    """
    cal = calibration or shipped_calibration()
    have = set(known)
    out = {}
    for m in machines.MACHINES:
        for d in m.devices:
            t = f"{m.id}:{d}"
            if t not in have and (sig := specification_signature(t, cal)) is not None:
                out[t] = sig
    return out


def specification_runs(target: str) -> TargetRuns:
    """A target answered from specifications as a prediction sees it: one rank on one unit (a
    core, or a GPU), what its figures describe; no runs."""
    gpu = target.endswith(":gpu")
    return TargetRuns(
        target=target,
        origin=SPECIFICATIONS,
        family="gpu" if gpu else "sequential",
        run=RunConfig(ranks=1, threads=1, gpus=1 if gpu else None, variant=SPECIFICATIONS),
    )


def relr_with(rows: pl.DataFrame, figures: pl.DataFrame, spec: pl.DataFrame) -> np.ndarray:
    """relR of each row by the plain roofline, the targets of ``spec`` taking its figures instead
    of any ``figures`` holds (NaN where an end has none).

    Args:
        rows: rows with ``source``, ``target`` and the work columns.
        figures: the plain roofline's figures of measured targets.
        spec: figures from specifications (:func:`~xamm_models.machines.specifications.
            specification_figures`).
    """
    kept = figures.filter(~pl.col("target").is_in(spec.get_column("target").implode()))
    figs = pl.concat([kept, spec], how="vertical_relaxed")
    return roofline_seconds(rows, figs, "target") / roofline_seconds(rows, figs, "source")


def left_out_answers(
    samples: pl.DataFrame,
    machine: str,
    rows: pl.DataFrame,
    figures: pl.DataFrame | None = None,
    raw: pl.DataFrame | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``machine`` left out: each row's relR with the machine's ends answered from their peaks
    times the efficiencies of the other measured machines, and the end so answered.

    Args:
        samples: benchmark samples of the measured targets.
        machine: a machine id.
        rows: rows with ``source``, ``target`` and the work columns.
        figures: ``machine_figures(samples)``, where the caller has it.
        raw: ``machine_figures(samples, borrow=False)``, likewise.

    Returns:
        ``(relR, end)`` per row: NaN and "" for a row without an end of ``machine`` with peaks.
    """
    figs = machine_figures(samples) if figures is None else figures
    eff = calibrate(machine_figures(samples, borrow=False) if raw is None else raw, (machine,))
    mine = [t for t in figs.get_column("target") if t.startswith(machine + ":")]
    spec = specification_figures(mine, eff)
    specced = set(spec.get_column("target"))
    src, tgt = rows.get_column("source").to_list(), rows.get_column("target").to_list()
    end = np.array([t if t in specced else (s if s in specced else "") for s, t in zip(src, tgt)])
    rel = relr_with(rows, figs, spec) if specced else np.full(rows.height, np.nan)
    return np.where(end != "", rel, np.nan), end


def answer_from_specifications(
    rows: pl.DataFrame,
    source: str,
    targets: list[str],
    figures: pl.DataFrame,
    calibration: Calibration | None = None,
) -> pl.DataFrame:
    """relR of each profile row on each target from its specifications, with the interval
    measured for such answers.

    Args:
        rows: profile rows (``app``, ``bytes_per_rep``, ``flops_per_rep``, ``kernels_per_rep``,
            ``iterations_per_rep``).
        source: the machine they were measured on.
        targets: targets answered from specifications.
        figures: the plain roofline's figures of measured targets (the source's among them).
        calibration: the efficiencies and spread (None: the shipped ones).

    Returns:
        ``region``, ``target``, ``relR``, ``relR_lo``, ``relR_hi``, ``regime``.
    """
    cal = calibration or shipped_calibration()
    spec = specification_figures(targets, cal.efficiencies)
    parts = []
    for t in spec.get_column("target"):
        lo, hi = cal.spread[t.rpartition(":")[2]]
        test = rows.with_columns(pl.lit(source).alias("source"), pl.lit(t).alias("target"))
        rel = relr_with(test, figures, spec)
        parts.append(
            pl.DataFrame(
                {
                    "region": rows.get_column("app"),
                    "target": t,
                    "relR": rel,
                    "relR_lo": rel * 10.0**lo,
                    "relR_hi": rel * 10.0**hi,
                    "regime": SPECIFICATIONS,
                }
            )
        )
    schema = {"region": pl.String, "target": pl.String, "relR": pl.Float64,
              "relR_lo": pl.Float64, "relR_hi": pl.Float64, "regime": pl.String}  # fmt: skip
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)


def left_out_errors(samples: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """log10(measured / predicted relR) of every pair with an end of a left-out machine, that end
    answered from its specifications.

    Args:
        samples: benchmark samples of the measured targets.
        pairs: their labelled pairs (``source``, ``target``, ``relR`` and the work columns).

    Returns:
        ``machine``, ``end``, ``kind``, ``error`` per answered pair.
    """
    figs = machine_figures(samples)
    raw = machine_figures(samples, borrow=False)
    left = sorted({t.rpartition(":")[0] for t in _calibrating(raw)})
    parts = []
    for machine in left:
        of = pl.col("source").str.starts_with(machine + ":")
        rows = pairs.filter(of | pl.col("target").str.starts_with(machine + ":"))
        rel, end = left_out_answers(samples, machine, rows, figs, raw)
        keep = end != ""
        if not keep.any():
            continue
        parts.append(
            pl.DataFrame(
                {
                    "machine": machine,
                    "end": end[keep],
                    "kind": [e.rpartition(":")[2] for e in end[keep]],
                    "error": np.log10(rows.get_column("relR").to_numpy()[keep] / rel[keep]),
                }
            )
        )
    return pl.concat(parts) if parts else pl.DataFrame()


def _calibrating(raw: pl.DataFrame) -> list[str]:
    """The measured targets some kind's efficiencies are calibrated on."""
    return [t for e in calibrate(raw).values() for t in e.machines]


def spread_of(errors: pl.DataFrame, coverage: float) -> tuple[dict[str, list[float]], dict]:
    """Per device kind: the quantiles of :func:`left_out_errors`' errors at ``coverage`` (a
    central interval), and the pairs behind them.

    Args:
        errors: ``kind`` and ``error`` per answered pair.
        coverage: the interval's coverage.

    Returns:
        ``(spread, pairs)``: kind -> ``[lo, hi]``, kind -> count.
    """
    lo, hi = (1 - coverage) / 2, (1 + coverage) / 2
    spread: dict[str, list[float]] = {}
    count: dict[str, int] = {}
    if errors.is_empty():
        return spread, count
    for (kind,), part in errors.sort("kind").group_by(["kind"], maintain_order=True):
        e = part.get_column("error").to_numpy()
        e = e[np.isfinite(e)]
        if e.size:
            spread[kind] = [float(np.quantile(e, lo)), float(np.quantile(e, hi))]
            count[kind] = int(e.size)
    return spread, count
