"""The calibration of answers from specifications, measured: each device kind's efficiencies over
the measured machines, and how far answers from peaks alone land from the truth.

Over the embedded snapshot's ``xplat-rajaperf`` (every kernel), each measured machine with peaks in
the registry is left out in turn: the efficiencies are calibrated on the others
(:func:`~xamm_models.machines.specifications.calibrate`), its ends get figures from their peaks
(:func:`~xamm_models.machines.specifications.specification_figures`), and every labelled pair with
one of its ends is predicted by the plain roofline with those figures on that end and measured ones
on the other. The quantiles of log10(measured / predicted relR) at the interval's coverage, per
device kind of the left-out end, are the interval an answer from specifications carries; the
efficiencies shipped are calibrated on every measured machine. Written to
:data:`~xamm_models.machines.specifications.CALIBRATION_FILE`::

    python -m xamm_models.studies.specifications
"""

from __future__ import annotations

import argparse

import polars as pl

from xamm_data import load_dataset
from xamm_data.hub import snapshot
from xamm_models.benchmark.baselines import machine_figures
from xamm_models.benchmark.dataset import XplatDataset
from xamm_models.machines.specifications import CALIBRATION_FILE, Calibration, calibrate
from xamm_models.predictors.specifications import left_out_errors, spread_of

COVERAGE = 0.8  # the default predictor's interval coverage


def calibration(samples: pl.DataFrame, pairs: pl.DataFrame, data_version: str = "") -> Calibration:
    """The efficiencies over every measured machine, and the left-out spread per device kind.

    Args:
        samples: benchmark samples of the measured targets.
        pairs: their labelled pairs.
        data_version: what the samples are (the data set's version).

    Returns:
        The calibration.
    """
    spread, count = spread_of(left_out_errors(samples, pairs), COVERAGE)
    return Calibration(
        efficiencies=calibrate(machine_figures(samples, borrow=False)),
        spread=dict(sorted(spread.items())),
        coverage=COVERAGE,
        pairs=dict(sorted(count.items())),
        data_version=data_version,
    )


def main(argv: list[str] | None = None) -> int:
    """Measure the calibration on the embedded snapshot and write it (``--out``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(CALIBRATION_FILE))
    args = ap.parse_args(argv)
    runs = pl.concat([load_dataset(m) for m in snapshot.machines()], how="diagonal_relaxed")
    ds = XplatDataset(runs)
    cal = calibration(ds.samples, ds.pairs, ds.version)
    with open(args.out, "w") as f:
        f.write(cal.model_dump_json(indent=2) + "\n")
    print(cal.model_dump_json(indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
