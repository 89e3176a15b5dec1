"""The spread of time-only predictions, measured: what a profile without bytes or flops can expect.

Every labelled pair of the embedded ``xplat-rajaperf`` pairs (a RAJAPerf kernel measured on two
targets) is predicted as a profile would be that records only time: one region, its time per
repetition, no bytes, flops or launches, through the same code as ``xamm predict``
(:func:`xamm_models.predictors.composed.predict_regions`) with the embedded default. The 10th and
90th percentiles of log10(true / predicted relR) per scenario are the time-only interval
(:func:`~xamm_models.predictors.composed.time_only_spread`), written to
:data:`~xamm_models.predictors.composed.SPREAD_FILE`::

    python -m xamm_models.studies.time_only
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import polars as pl

from xamm_data import load_dataset
from xamm_data.hub import snapshot
from xamm_data.machines.targets import scenario_expr
from xamm_data.tables.regions import ProfileMeta, RegionProfile, conform_regions
from xamm_models.benchmark.dataset import build
from xamm_models.predictors.composed import SPREAD_FILE, predict_regions
from xamm_models.predictors.kinds import load_model

QUANTILES = (0.1, 0.9)


def labelled_pairs() -> pl.DataFrame:
    """The embedded snapshot's labelled pairs (``xplat-rajaperf`` built from it)."""
    runs = pl.concat([load_dataset(m) for m in snapshot.machines()], how="diagonal_relaxed")
    return build(runs)


def time_only_errors(pairs: pl.DataFrame, model) -> pl.DataFrame:
    """log10(true / predicted relR) of each pair, predicted from its source time alone.

    Args:
        pairs: labelled pairs (``source``, ``target``, ``relR``, ``runtime_source``,
            ``iterations_per_rep``).
        model: the predictor (with physics signatures).

    Returns:
        ``source, target, scenario, err``, one row per pair.
    """
    out = []
    for (src,), part in pairs.with_row_index("pair").group_by(["source"], maintain_order=True):
        regions = conform_regions(
            part.select(
                pl.col("pair").cast(pl.String).alias("region"),
                pl.col("pair").cast(pl.String).alias("name"),
                (pl.col("runtime_source") * pl.col("iterations_per_rep")).alias("exclusive_s"),
                pl.lit("none: time only").alias("work_from"),
                pl.lit("compute").alias("category"),
            )
        )
        prof = RegionProfile(
            ProfileMeta(path="xplat-rajaperf", format="pairs", app="pairs"), regions
        )
        targets = sorted(set(part["target"]))
        pred = predict_regions(model, prof, src, targets, model.signatures)
        got = part.select(
            pl.col("pair").cast(pl.String).alias("region"), "source", "target", "relR"
        ).join(
            pred.select("region", "target", pl.col("relR").alias("pred")), on=["region", "target"]
        )
        out.append(got)
    df = pl.concat(out)
    return df.select(
        "source",
        "target",
        scenario_expr(),
        (pl.col("relR") / pl.col("pred")).log10().alias("err"),
    )


def spread(errors: pl.DataFrame) -> dict:
    """The quantiles per scenario, with how many pairs each rests on."""
    q = {}
    n = {}
    for (s,), part in errors.sort("scenario").group_by(["scenario"], maintain_order=True):
        e = part["err"].to_numpy()
        q[s] = [round(float(x), 6) for x in np.quantile(e, QUANTILES)]
        n[s] = int(e.size)
    return {
        "what": "10th and 90th percentiles of log10(true / predicted relR), time-only input",
        "measured_on": "xplat-rajaperf pairs of the embedded snapshot, the embedded default",
        "quantiles": q,
        "pairs": n,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure the spread and write :data:`SPREAD_FILE` (or ``--out``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(SPREAD_FILE))
    args = ap.parse_args(argv)
    result = spread(time_only_errors(labelled_pairs(), load_model("xamm/default")))
    with open(args.out, "w") as f:
        f.write(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {result['quantiles']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
