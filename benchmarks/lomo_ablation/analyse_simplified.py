import sys

import numpy as np
import polars as pl

from xamm_data.machines.targets import scenario_expr
from xamm_models.benchmark.metrics import bootstrap, compare

scheme = sys.argv[1]
d = (
    pl.read_parquet(f"/tmp/lx/lomo/preds2-{scheme}.parquet")
    .with_columns(pl.col("target").str.split(":").list.first().alias("tm"))
    .with_columns(scenario_expr())
)
if scheme == "machine":
    d0 = pl.read_parquet("/tmp/lx/lomo/preds-machine.parquet").select(
        "default", "default/lo", "default/hi", "roofline-plain"
    )
    d = pl.concat([d, d0], how="horizontal")


def fr(df, n):
    return df.select("sample", "app", "source", "target", "y_true", pl.col(n).alias("y_pred"))


def w2(df, n):
    return float(((df[n] / df["y_true"]).log10().abs() <= np.log10(2) + 1e-12).mean())


names = [
    c
    for c in d.columns
    if c not in ("sample", "app", "group", "source", "target", "y_true", "fold", "tm", "scenario")
    and "/" not in c
]
ms = sorted(d["tm"].unique())
for n in names:
    b = bootstrap(fr(d, n), n=1000)["within_2"]
    print(
        f"{n:18s} {b['value']:.3f} [{b['lo']:.3f},{b['hi']:.3f}] "
        + " ".join(f"{m}:{w2(d.filter(pl.col('tm') == m), n):.3f}" for m in ms)
        + " | "
        + " ".join(
            f"{s}:{w2(d.filter(pl.col('scenario') == s), n):.3f}"
            for s in ("CPU->CPU", "CPU->GPU", "GPU->GPU", "GPU->CPU")
        )
    )
for a, b in [
    ("split-only", "default"),
    ("split-only", "prior-only"),
    ("split-only", "roofline-plain") if "roofline-plain" in names else ("split", "prior"),
]:
    c = compare(fr(d, a), fr(d, b), n=1000)
    print(
        a,
        b,
        {
            k: f"{c[k]['difference']:+.3f} [{c[k]['lo']:+.3f},{c[k]['hi']:+.3f}]"
            for k in ("within_2", "median_abs_log10")
        },
    )
for n in [c[:-3] for c in d.columns if c.endswith("/lo")]:
    inside = (d["y_true"] >= d[n + "/lo"]) & (d["y_true"] <= d[n + "/hi"])
    print(
        "cov",
        n,
        f"{inside.mean():.3f}",
        " ".join(f"{m}:{inside.filter(d['tm'] == m).mean():.2f}" for m in ms),
    )
