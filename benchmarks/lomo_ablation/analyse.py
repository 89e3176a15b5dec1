import sys

import numpy as np
import polars as pl

from xamm_data.machines.targets import scenario_expr
from xamm_models.benchmark.metrics import bootstrap, compare

scheme = sys.argv[1] if len(sys.argv) > 1 else "machine"
d = (
    pl.read_parquet(f"/tmp/lx/lomo/preds-{scheme}.parquet")
    .with_columns(pl.col("target").str.split(":").list.first().alias("tm"))
    .with_columns(scenario_expr())
)
names = [
    c
    for c in d.columns
    if c not in ("sample", "app", "group", "source", "target", "y_true", "fold", "tm", "scenario")
    and "/" not in c
]


def fr(df, n):
    return df.select("sample", "app", "source", "target", "y_true", pl.col(n).alias("y_pred"))


def w2(df, n):
    return float(((df[n] / df["y_true"]).log10().abs() <= np.log10(2) + 1e-12).mean())


print(
    "entry            pooled [CI]           "
    + " ".join(f"{m:>10}" for m in sorted(d["tm"].unique()))
    + "  "
    + " ".join(f"{s:>9}" for s in ("CPU->CPU", "CPU->GPU", "GPU->GPU", "GPU->CPU"))
)
for n in names:
    b = bootstrap(fr(d, n), n=1000)["within_2"]
    per = " ".join(f"{w2(d.filter(pl.col('tm') == m), n):10.3f}" for m in sorted(d["tm"].unique()))
    sc = " ".join(
        f"{w2(part, n) if part.height else float('nan'):9.3f}"
        for s in ("CPU->CPU", "CPU->GPU", "GPU->GPU", "GPU->CPU")
        for part in [d.filter(pl.col("scenario") == s)]
    )
    print(f"{n:26s} {b['value']:.3f} [{b['lo']:.3f},{b['hi']:.3f}] {per}  {sc}")


def cmp(a, b, df=d):
    c = compare(fr(df, a), fr(df, b), n=1000)["within_2"]
    return f"{c['difference']:+.3f} [{c['lo']:+.3f},{c['hi']:+.3f}]"


def mcmp(a, b, df=d):
    c = compare(
        fr(df, a).with_columns(pl.col("target").str.split(":").list.first().alias("app")),
        fr(df, b).with_columns(pl.col("target").str.split(":").list.first().alias("app")),
        n=1000,
    )["within_2"]
    return f"{c['difference']:+.3f} [{c['lo']:+.3f},{c['hi']:+.3f}]"


print()
for a, b in [
    ("prior", "roofline-plain"),
    ("default", "roofline-plain"),
    ("default", "prior"),
    ("roofline-plain", "roofline-old"),
    ("prior", "prior-no-borrow"),
    ("roofline-plain", "roofline-plain-no-borrow"),
    ("split", "prior"),
    ("default", "default-no-split"),
    ("default", "default-no-tiebreak"),
    ("default", "default-no-siblings"),
    ("default", "default-no-twins"),
    ("default", "default-no-gate"),
    ("default", "default-prior-only"),
    ("default-no-twins", "prior"),
    ("most-similar", "prior") if "most-similar" in names else ("prior", "prior"),
    ("pair-median", "prior"),
]:
    print(f"{a:22s} - {b:22s} kernels {cmp(a, b)}  machines {mcmp(a, b)}")
# coverage
for n in [c[:-3] for c in d.columns if c.endswith("/lo")]:
    inside = (d["y_true"] >= d[n + "/lo"]) & (d["y_true"] <= d[n + "/hi"])
    per = " ".join(
        f"{m}:{inside.filter(d['tm'] == m).mean():.2f}" for m in sorted(d["tm"].unique())
    )
    print(f"coverage {n:26s} {inside.mean():.3f}  {per}")
