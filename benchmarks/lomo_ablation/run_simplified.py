import sys
import time

import numpy as np
import polars as pl
from xamm_models.predictors.default.candidates import SplitSlowdown

from xamm_models.benchmark import dataset as xplat
from xamm_models.experiments.entries import FoldContext
from xamm_models.predictors.default.model import StackedPredictor

scheme = sys.argv[1]
ds = xplat.XplatDataset.from_store("/tmp/lx/xstore")
folds = ds.get_idx_split(scheme)


def default_pred(ctx, **cfg):
    held = ctx.fold.held_out_machine
    known = ctx.samples.filter(pl.col("machine") != held) if held else ctx.samples
    bench = ctx.samples.filter(pl.col("machine") == held) if held else None
    m = StackedPredictor(seed=0, **cfg).fit(ctx.train, known)
    p = m.predict_pairs(ctx.test, target_benchmarks=bench)
    return tuple(p.get_column(c).to_numpy() for c in ("relR", "relR_lo", "relR_hi"))


V = {
    "split-only": dict(
        candidates={"seen": ["split"], "new": ["split"]}, twins=False, interval="pooled"
    ),
    "prior-only": dict(
        candidates={"seen": ["prior"], "new": ["prior"]}, twins=False, interval="pooled"
    ),
    "split-only-auto": dict(candidates={"seen": ["split"], "new": ["split"]}, twins=False),
}
if scheme != "machine":
    V["default"] = {}
rows = []
t0 = time.time()
for f in folds:
    ctx = FoldContext(ds, f)
    base = ctx.test.select(
        "sample", "app", "group", "source", "target", pl.col("relR").alias("y_true")
    ).with_columns(pl.lit(f.name).alias("fold"))
    preds = {
        "split": SplitSlowdown().predict(ctx.physics(), ctx.test),
        "prior": ctx.stacked("prior"),
    }
    for n, cfg in V.items():
        r = default_pred(ctx, **cfg)
        preds[n] = r[0]
        preds[n + "/lo"], preds[n + "/hi"] = r[1], r[2]
    rows.append(base.with_columns(*[pl.Series(k, np.asarray(v, float)) for k, v in preds.items()]))
    print(f"{time.time() - t0:5.0f}s {f.name}", flush=True)
pl.concat(rows).write_parquet(f"/tmp/lx/lomo/preds2-{scheme}.parquet")
