"""Signatures from specifications: what a machine without runs sustains, from its published peak
figures times an efficiency measured on the machines that have runs.

For each device kind (``cpu``, ``gpu``) and each figure, the efficiency is the median over the
measured targets of that kind whose peaks the registry records of

* bandwidth: the plain roofline's sustained bandwidth
  (:func:`~xamm_models.benchmark.baselines.machine_figures`) over the peak memory bandwidth of
  one unit (a CPU core: a node's or a processor's figure over its cores; one GPU,
  :meth:`~xamm_data.machines.registry.Machine.per_unit`);
* flop rate: the flop rate its runs measured (never a borrowed one) over the unit's peak;
* overhead: the median launch overhead the kind's runs measured (a CPU's sequential runs have
  none).

A machine's specification figures are its unit's peaks times those efficiencies: the plain
roofline's three figures, so a target answered from specifications is modelled as a measured one
is, with figures no run of it produced. How far such answers are from the truth is measured by
leaving each measured machine out (:mod:`xamm_models.studies.specifications`, and the evaluation's
"Specifications" table); the interval an answer carries is that spread (:class:`Calibration`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from statistics import median
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from xamm_data.machines import registry as machines
from xamm_models.machines.physics import PhysicsSignature

__all__ = [
    "CALIBRATION_FILE",
    "SPECIFICATIONS",
    "Calibration",
    "Efficiency",
    "calibrate",
    "peaks",
    "shipped_calibration",
    "specification_figures",
    "specification_signature",
]

#: what a target answered from its specifications is called (its ``basis`` and its provenance)
SPECIFICATIONS = "specifications"
#: the calibration shipped with the package (written by ``python -m
#: xamm_models.studies.specifications``)
CALIBRATION_FILE = Path(__file__).with_name("specifications.json")


class Efficiency(BaseModel):
    """What a device kind's measured machines sustain of their peaks (medians over them)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["cpu", "gpu"]
    bandwidth: float = Field(gt=0, description="sustained / peak memory bandwidth of a unit")
    flop_rate: float = Field(gt=0, description="measured / peak flop rate of a unit")
    overhead_s: float = Field(ge=0, description="the median measured launch overhead")
    machines: list[str] = Field(description="the measured targets the medians are over")


class Calibration(BaseModel):
    """Efficiencies per device kind, and the spread of answers from specifications measured by
    leaving each measured machine out: ``spread[kind] = [lo, hi]``, quantiles of log10(measured /
    predicted relR) at the interval's coverage."""

    model_config = ConfigDict(frozen=True)
    efficiencies: dict[str, Efficiency]
    spread: dict[str, list[float]] = Field(default_factory=dict)
    coverage: float = Field(default=0.8, gt=0, lt=1)
    pairs: dict[str, int] = Field(default_factory=dict, description="pairs behind each spread")
    data_version: str = ""


def peaks(target: str) -> dict[str, float] | None:
    """The registry's peak bandwidth and flop rate of one unit of a target (B/s, flop/s); None
    unless both are recorded (and for a machine the registry does not know).

    Args:
        target: ``machine:device``.
    """
    machine, _, device = target.rpartition(":")
    mid = machines.canonical_id(machine)
    if mid is None:
        return None
    unit = machines.get(mid).per_unit(device)
    if unit["bandwidth"] is None or unit["flop_rate"] is None:
        return None
    return {"bandwidth": float(unit["bandwidth"]), "flop_rate": float(unit["flop_rate"])}


def _kind(target: str) -> str:
    return target.rpartition(":")[2]


def calibrate(figures: pl.DataFrame, exclude: tuple[str, ...] = ()) -> dict[str, Efficiency]:
    """The efficiencies of each device kind from measured figures.

    Args:
        figures: the plain roofline's figures of measured targets (``target``, ``bw``, ``flops``
            null where the runs measured none, ``overhead``), as ``machine_figures(samples,
            borrow=False)`` gives them.
        exclude: machine ids left out (every device of them): the machine being answered.

    Returns:
        Kind -> efficiency, for each kind with a measured bandwidth and flop rate against a
        recorded peak.
    """
    got: dict[str, dict[str, list]] = {}
    for r in figures.sort("target").iter_rows(named=True):
        t = r["target"]
        p = peaks(t)
        if p is None or t.rpartition(":")[0] in exclude or r["bw"] is None:
            continue
        g = got.setdefault(_kind(t), {"bw": [], "flops": [], "overhead": [], "machines": []})
        g["bw"].append(r["bw"] / p["bandwidth"])
        if r["flops"] is not None:
            g["flops"].append(r["flops"] / p["flop_rate"])
        g["overhead"].append(r["overhead"] or 0.0)
        g["machines"].append(t)
    return {
        k: Efficiency(
            kind=k,
            bandwidth=median(g["bw"]),
            flop_rate=median(g["flops"]),
            overhead_s=median(g["overhead"]),
            machines=g["machines"],
        )
        for k, g in sorted(got.items())
        if g["bw"] and g["flops"]
    }


def specification_figures(targets, efficiencies: dict[str, Efficiency]) -> pl.DataFrame:
    """The plain roofline's figures of targets from their peaks and their kind's efficiencies.

    Args:
        targets: ``machine:device`` names.
        efficiencies: :func:`calibrate`'s.

    Returns:
        ``target``, ``bw``, ``flops``, ``overhead``: one row per target with both peaks recorded
        and its kind calibrated (the others are left out).
    """
    rows = []
    for t in sorted(set(targets)):
        p, e = peaks(t), efficiencies.get(_kind(t))
        if p is None or e is None:
            continue
        rows.append(
            {
                "target": t,
                "bw": p["bandwidth"] * e.bandwidth,
                "flops": p["flop_rate"] * e.flop_rate,
                "overhead": e.overhead_s,
            }
        )
    schema = {"target": pl.String, "bw": pl.Float64, "flops": pl.Float64, "overhead": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def specification_signature(target: str, calibration: Calibration) -> PhysicsSignature | None:
    """A target's physics signature from its specifications (one bandwidth at every working set:
    peaks say nothing of caches' speeds); None without both peaks or its kind calibrated.

    Args:
        target: ``machine:device``.
        calibration: the efficiencies (:func:`shipped_calibration`).
    """
    figs = specification_figures([target], calibration.efficiencies)
    if figs.is_empty():
        return None
    r = figs.row(0, named=True)
    return PhysicsSignature(
        target=target,
        overhead_s=r["overhead"],
        flop_rate=r["flops"],
        bw_log2_ws=[0.0],
        bw=[r["bw"]],
        n_samples=0,
        flop_rate_from=SPECIFICATIONS,
        overhead_from=SPECIFICATIONS,
    )


@lru_cache(maxsize=1)
def shipped_calibration() -> Calibration:
    """The calibration shipped with the package (:data:`CALIBRATION_FILE`)."""
    return Calibration.model_validate(json.loads(CALIBRATION_FILE.read_text()))
