import contextlib
import sys
import time

import numpy as np
import polars as pl
from xamm_models.predictors.default.candidates import SplitSlowdown, default_candidates

import xamm_models.machines.physics as P
import xamm_models.predictors.default.model as M
from xamm_models.benchmark import dataset as xplat
from xamm_models.benchmark.baselines import pair_median
from xamm_models.experiments.entries import FoldContext
from xamm_models.predictors.default.model import StackedPredictor

scheme = sys.argv[1] if len(sys.argv) > 1 else "machine"

ds = xplat.XplatDataset.from_store("/tmp/lx/xstore")
folds = ds.get_idx_split(scheme)
print(len(folds), [f.name for f in folds])


def plain_sigs(samples, ref=None):
    sigs = {}
    for (t,), part in samples.group_by(["target"], maintain_order=True):
        s = P.physics_signature(t, part)
        arr = P.sample_arrays(part)
        tt, b, f, n = arr.T
        busy = np.clip(tt - s.overhead_s * n, 0.1 * tt, None)
        ws = np.log2(np.clip(b / n, 1.0, None))
        ok = b > 0
        big = ok & (ws >= np.median(ws[ok]))
        bw = float(np.quantile((b / busy)[big], 0.9))
        sigs[t] = s.model_copy(update={"bw_log2_ws": [0.0], "bw": [bw]})
    return P.borrow_flop_rates(sigs, ref)


@contextlib.contextmanager
def patched(obj, name, val):
    old = getattr(obj, name)
    setattr(obj, name, val)
    try:
        yield
    finally:
        setattr(obj, name, old)


def default_pred(ctx, **cfg):
    held = ctx.fold.held_out_machine
    known = ctx.samples.filter(pl.col("machine") != held) if held else ctx.samples
    bench = ctx.samples.filter(pl.col("machine") == held) if held else None
    m = StackedPredictor(seed=0, **cfg).fit(ctx.train, known)
    p = m.predict_pairs(ctx.test, target_benchmarks=bench)
    return tuple(p.get_column(c).to_numpy() for c in ("relR", "relR_lo", "relR_hi"))


def no_sib():
    c = default_candidates()
    c.pop("siblings", None)
    return c


def no_split():
    return {r: [n for n in v if n != "split"] for r, v in default_candidates().items()}


VARIANTS = {
    "default": lambda ctx: default_pred(ctx),
    "default-no-split": lambda ctx: default_pred(ctx, candidates=no_split()),
    "default-no-siblings": lambda ctx: default_pred(ctx, candidates=no_sib()),
    "default-no-twins": lambda ctx: default_pred(ctx, twins=False),
    "default-no-gate": lambda ctx: default_pred(ctx, min_pair_kernels=0),
    "default-pooled-interval": lambda ctx: default_pred(ctx, interval="pooled"),
    "default-group-interval": lambda ctx: default_pred(ctx, interval="group"),
}


def no_tiebreak(ctx):
    with patched(M, "label_free", lambda: frozenset()):
        return default_pred(ctx)


VARIANTS["default-no-tiebreak"] = no_tiebreak


def prior_only(ctx):  # the default with only the prior: no candidates, no twins
    return default_pred(ctx, candidates={"seen": ["prior"], "new": ["prior"]}, twins=False)


VARIANTS["default-prior-only"] = prior_only


def simple(ctx):
    out = {}
    out["prior"] = ctx.stacked("prior")
    out["split"] = SplitSlowdown().predict(ctx.physics(), ctx.test)
    out["roofline-old"] = ctx.baseline(
        __import__("xamm_models.benchmark.baselines", fromlist=["x"]).roofline
    )
    out["pair-median"] = pair_median(ctx.train, ctx.test)
    if ctx.fold.held_out_machine:
        out["most-similar"] = ctx.most_similar_machine()
    with patched(P, "borrow_flop_rates", lambda s, r=None: s):
        out["prior-no-borrow"] = (
            __import__("xamm_models.predictors.default.stacked", fromlist=["x"])
            .StackedModel("prior", 0)
            .fit(P.physics_signatures(ctx.samples), ctx.train)
            .predict(P.physics_signatures(ctx.samples), ctx.test)
        )
    ps = plain_sigs(ctx.samples)
    from xamm_models.predictors.default.stacked import StackedModel

    out["roofline-plain"] = StackedModel("prior", 0).fit(ps, ctx.train).predict(ps, ctx.test)
    with patched(P, "borrow_flop_rates", lambda s, r=None: s):
        ps2 = plain_sigs(ctx.samples)
    out["roofline-plain-no-borrow"] = (
        StackedModel("prior", 0).fit(ps2, ctx.train).predict(ps2, ctx.test)
    )
    return out


rows = []
t0 = time.time()
for f in folds:
    ctx = FoldContext(ds, f)
    base = ctx.test.select(
        "sample", "app", "group", "source", "target", pl.col("relR").alias("y_true")
    ).with_columns(pl.lit(f.name).alias("fold"))
    preds = simple(ctx)
    for name, fn in VARIANTS.items():
        r = fn(ctx)
        preds[name] = r[0]
        preds[name + "/lo"], preds[name + "/hi"] = r[1], r[2]
    rows.append(base.with_columns(*[pl.Series(k, np.asarray(v, float)) for k, v in preds.items()]))
    print(f"{time.time() - t0:6.0f}s {f.name} {base.height}", flush=True)
out = pl.concat(rows)
out.write_parquet(f"/tmp/lx/lomo/preds-{scheme}.parquet")
