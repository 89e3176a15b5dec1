"""How far choosing among the default predictor's candidates could go (the aims set for it).

    python benchmarks/bench_ceiling.py [--data ../shared/data] [--out docs/eval/ceiling.md]

The default predictor chooses, per regime and device scenario, one of its candidates
(:mod:`xamm_models.predictors.default.candidates`) on inner folds of its training pairs. This
measures what that choice could reach at most on ``xplat-rajaperf``'s kernel-group and
held-out-machine (``mi300a-spx``) test folds: every candidate is fitted on each fold's training
pairs as the default fits it, and scored on the test pairs as is and, on the held-out machine, also
through the twin rule (a new machine answered as the known machine its runs cannot tell it from).
Then the **ceiling**: in each (fold, scenario), the candidate that scores best *on that fold's test
pairs*. No predictor can make that choice (it reads the answers); it bounds every choice made per
fold and scenario, honest or not. The last column is looser still: a pair counts if any candidate
puts it within 2×. A third row scores the kernel-group folds on the held-out machine's test pairs
alone (same kernels, sources and targets): what the default reaches on them when that machine is in
training, its runs of the other kernel groups labelled pairs.

Prints a markdown table (within 2×, all pairs) and writes it to ``--out`` when given. About a minute
on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
HELD = "mi300a-spx"
LOG2 = np.log10(2)


def fold_hits(ds, fold) -> pl.DataFrame:
    """One row per test pair: source, target, scenario, fold, and within 2× (bool) of the default
    and of every candidate (on the held-out machine also of each answering through the twin rule,
    ``twin-<name>``)."""
    from xamm_data.targets import scenario_expr
    from xamm_models.experiments.entries import FoldContext
    from xamm_models.predictors.default.candidates import CANDIDATES
    from xamm_models.predictors.default.model import fit_candidates

    ctx = FoldContext(ds, fold, seed=0)
    model, bench = ctx.default_model()  # the default exactly as `xamm eval` fits it on this fold
    sigs, twin = model.asked(ctx.test, target_benchmarks=bench)
    test, y = ctx.test, ctx.test.get_column("relR").to_numpy()
    hit = lambda p: np.abs(np.log10(p / y)) <= LOG2 + 1e-12  # noqa: E731  (as xamm_models.benchmark.metrics counts it)
    cols = {"default": hit(ctx.default()[0])}
    fitted = fit_candidates(
        list(CANDIDATES), model.signatures, ctx.train, 0, model.config.min_pair_kernels
    )
    for name, m in fitted.items():
        cols[name] = hit(m.predict(sigs, test))
        if bench is not None:
            same = (twin.get_column("source") == twin.get_column("target")).to_numpy()
            p = np.ones(len(y))  # a twin of the source itself: relR 1
            if (~same).any():
                p[~same] = m.predict(sigs, twin.filter(pl.Series(~same)))
            cols[f"twin-{name}"] = hit(p)
    return test.select("source", "target", scenario_expr()).with_columns(
        pl.lit(fold.name).alias("fold"), *[pl.Series(k, v) for k, v in cols.items()]
    )


def ceiling_row(scheme: str, hits: pl.DataFrame) -> dict:
    """Within 2× of the default, of the best single candidate, and the two ceilings."""
    names = [
        c for c in hits.columns if c not in ("source", "target", "fold", "scenario", "default")
    ]
    means = {n: hits.get_column(n).mean() for n in names}
    best = max(names, key=lambda n: (means[n], -names.index(n)))
    per_cell = hits.group_by("fold", "scenario").agg(*[pl.col(n).sum() for n in names])
    ceiling = per_cell.select(pl.max_horizontal(names)).to_series().sum() / hits.height
    anyone = hits.select(pl.any_horizontal(names)).to_series().mean()
    return {
        "scheme": scheme,
        "pairs": hits.height,
        "default": hits.get_column("default").mean(),
        "best": best,
        "best_score": means[best],
        "ceiling": ceiling,
        "any": anyone,
        "candidates": len(names),
    }


def table(rows: list[dict]) -> str:
    head = (
        "| scheme | pairs | default | best single candidate | ceiling: "
        "best candidate per (fold, scenario), "
        "chosen on the test pairs | any candidate within 2× |\n|---|---|---|---|---|---|"
    )
    body = [
        f"| {r['scheme']} | {r['pairs']} | {r['default']:.3f} | "
        f"{r['best']} {r['best_score']:.3f} "
        f"(of {r['candidates']}) | {r['ceiling']:.3f} | {r['any']:.3f} |"
        for r in rows
    ]
    return "\n".join([head, *body])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, help="also write the table here (markdown)")
    args = ap.parse_args(argv)
    from _data import xplat_dataset

    t = time.perf_counter()
    ds, _ = xplat_dataset(args.data, "ceiling")
    from xamm_models.benchmark import dataset as xplat

    rows = []
    for scheme in ("kernel-group", "held-out-machine"):
        hits = pl.concat(
            [fold_hits(ds, f) for f in ds.get_idx_split(scheme, held_out_machine=HELD)]
        )
        rows.append(ceiling_row(scheme, hits))
        # the held-out machine's test pairs, with the machine in training instead
        if scheme == "kernel-group":
            rows.append(
                ceiling_row(
                    f"kernel-group, the {HELD} pairs",
                    hits.filter(
                        pl.col("target").str.starts_with(HELD + ":"),
                        ~pl.col("source").str.starts_with(HELD + ":"),
                    ),
                )
            )
    text = (
        f"Within 2× on {xplat.NAME} (version {ds.version}), `python "
        "benchmarks/bench_ceiling.py`, "
        f"{time.perf_counter() - t:.0f} s on {os.cpu_count()} cores:\n\n{table(rows)}\n"
    )
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
