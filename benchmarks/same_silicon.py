"""Is the same silicon recognised? Every machine's runs split in halves, each half asked for its
nearest known machine, kernel by kernel (:mod:`xamm_models.studies.same_silicon`).

    python benchmarks/same_silicon.py [--data ../shared/data] [--out docs/bench/same-silicon.md]

Two tables: every machine end with RAJAPerf runs in ``xplat-rajaperf`` (the halves must be each
other's nearest), and every UoB BabelStream platform and programming model with two or more
output files (both halves' nearest must be the same platform). The signature distance of
``physics.distance`` is shown beside the first for the RAJAPerf ends, the rule it replaces.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl
from _data import printed_to

REPO = Path(__file__).resolve().parents[1]
UOB = "UoB-HPC+performance-portability/benchmarking"
# the study names its platforms by directory in 2019, by file name from 2022
PATTERNS = (
    r"^2019/babelstream/(?P<machine>[^/]+)/",
    r"babelstream-(?P<machine>[a-z0-9]+(?:_80g)?)_(?P<compiler>[a-z]+-[0-9.]+)_",
)


def _table(df: pl.DataFrame) -> str:
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    fmt = [(lambda v: f"{v:.3f}") if dt == pl.Float64 else (lambda v: f"{v}") for dt in df.dtypes]
    return head + "\n".join(
        "| " + " | ".join(f(v) for f, v in zip(fmt, row, strict=True)) + " |"
        for row in df.iter_rows()
    )


def _signature_rule(ds, xplat) -> dict[str, bool]:
    """Whether the signature distance (the rule replaced) recognised each end's halves."""
    from xamm_models.machines.physics import most_similar, physics_signatures
    from xamm_models.studies.same_silicon import halves

    runs, out = ds.config_runs, {}
    sigs = physics_signatures(ds.samples)
    for t in sorted(set(runs.get_column("target"))):
        m, d = t.rsplit(":", 1)
        parts = halves(runs.filter(pl.col("target") == t).drop("target"))
        half = {
            f"{m}#{i}:{d}": physics_signatures(
                xplat.samples_from_runs(h).with_columns(pl.lit(f"{m}#{i}:{d}").alias("target"))
            )[f"{m}#{i}:{d}"]
            for i, h in enumerate(parts)
        }
        known = {u: s for u, s in sigs.items() if u != t}
        a, b = sorted(half)
        out[t] = (
            most_similar(half[a], {**known, b: half[b]}) == b
            and most_similar(half[b], {**known, a: half[a]}) == a
        )
    return out


def run(args) -> int:
    from _data import xplat_dataset

    from xamm_ingest import read_babelstream
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.studies.same_silicon import babelstream_halves, rajaperf_halves

    ds, _ = xplat_dataset(args.data, "same-silicon")
    raja = rajaperf_halves(ds.config_runs, xplat.samples_from_runs)
    old = _signature_rule(ds, xplat)
    raja = raja.with_columns(
        pl.col("machine").replace_strict(old, return_dtype=pl.Boolean).alias("signatures_did")
    )
    print("## RAJAPerf machine ends (xplat-rajaperf's declared configurations)\n")
    print(_table(raja))
    print(
        f"\nrecognised: {raja['recognised'].sum()} of {raja.height} (kernel by kernel); "
        f"{raja['signatures_did'].sum()} of {raja.height} by the signature distance\n"
    )
    runs = read_babelstream(args.data / UOB, path_patterns=PATTERNS, workers=1).frame
    bs = babelstream_halves(runs)
    print("## UoB BabelStream platforms, one programming model's files in halves\n")
    print(_table(bs))
    print(
        f"\nrecognised (both halves nearest the same platform): {bs['recognised'].sum()} of "
        f"{bs.height}"
    )
    return 0 if raja["recognised"].all() else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    with printed_to(args.out, "same_silicon.py"):
        return run(args)


if __name__ == "__main__":
    sys.exit(main())
