"""xamm's main job, end to end, on a real public RAJAPerf run.

1. ingest the run directory (``xamm-ingest rajaperf``'s reader) into a store, and load it back with
   ``load_dataset``;
2. build that machine's physics signature (its machine model) from its own runs, into a signature
   registry;
3. answer "how would these application profiles, measured on this machine, run on every other
   machine?" with the default predictor (``xamm/default``: the package's embedded copy when nothing
   is pinned on the Hub): a ranked table of predicted relR with 80% intervals and P(fastest), and a
   PNG plot.

    python examples/main_job.py [--runs DIR] [--machine NAME] [--device gpu] [--out out/main-job]

``--runs`` defaults to the MI300A node's tier-1 sweep in ``../shared/data`` (llnl/RAJAPerf-Benchmark
@ b7b229cd, BSD-3-Clause). The profiles here are that run's own kernels, one per kernel at its
largest size, standing in for an application's profile.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import polars as pl
from xamm_ingest import ingest_rajaperf

from xamm_data import Store, load_dataset
from xamm_data.summary import print_frame
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.machines.signatures import SignatureRegistry
from xamm_models.zoo.build import build_physics_signatures
from xamm_models.zoo.registry import load_model

REPO = Path(__file__).resolve().parents[1]
RUNS = (
    REPO.parent
    / "shared"
    / "data"
    / "llnl+RAJAPerf-Benchmark"
    / "2026-FCR"
    / "data"
    / "RPBenchmark_MI300A_tier1-SPX"
)


def plot(ranked: pl.DataFrame, source: str, path: Path) -> Path:
    """Predicted relR with its 80% interval per profile (x) and target (colour), log scale."""
    import matplotlib  # the models extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    fig, ax = plt.subplots(figsize=(11, 4.5), dpi=100)
    apps = ranked.get_column("app").unique(maintain_order=True).to_list()
    targets = sorted(set(ranked.get_column("target")))
    for k, t in enumerate(targets):
        p = ranked.filter(pl.col("target") == t)
        x = np.array([apps.index(a) for a in p["app"]]) + (k - len(targets) / 2) * 0.12
        y = p["relR"].to_numpy()
        err = np.vstack([y - p["relR_lo"].to_numpy(), p["relR_hi"].to_numpy() - y])
        ax.errorbar(x, y, yerr=err, fmt="o", ms=3, capsize=2, label=t)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(
        range(len(apps)), [a.split("_", 1)[-1] for a in apps], rotation=60, ha="right", fontsize=7
    )
    ax.set_ylabel("relR (target / source)")
    ax.set_title(f"Predicted relR from {source} (80% intervals); < 1: faster there", fontsize=10)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--runs", type=Path, default=RUNS, help="a RAJAPerf run directory (CSV or .cali outputs)"
    )
    ap.add_argument("--machine", default="mi300a-spx", help="the machine the runs come from")
    ap.add_argument(
        "--device",
        default="gpu",
        choices=["cpu", "gpu"],
        help="which of its devices the profiles are from",
    )
    ap.add_argument("--out", type=Path, default=REPO / "out" / "main-job")
    ap.add_argument(
        "--profiles",
        type=int,
        default=12,
        help="how many kernels stand in for application profiles",
    )
    args = ap.parse_args()
    if not args.runs.is_dir():
        raise SystemExit(
            f"{args.runs}: no such run directory; pass --runs DIR (a RAJAPerf output folder)"
        )
    t0 = time.perf_counter()
    store = Store(args.out / "store")
    rep = ingest_rajaperf(args.runs, machine=args.machine, store=store, workers=2)
    runs = load_dataset(args.machine, store=store)
    print(
        f"1. ingested {rep.frame.height} rows from {rep.sources_read} "
        f"files of {args.runs.name}, rejected "
        f"{len(rep.rejected)}; load_dataset({args.machine!r}) gives {runs.height} rows back"
    )
    for s in build_physics_signatures(
        store=store, registry=SignatureRegistry(args.out / "signatures")
    ):
        p = s.physics
        print(
            f"2. {s.ref}: bandwidth up to {max(p.bw):.3g} B/s, flop rate "
            f"{p.flop_rate:.3g} flop/s, "
            f"launch overhead {p.overhead_s:.3g} s, from {s.n_samples} samples"
        )
    source = f"{args.machine}:{args.device}"
    samples = samples_from_runs(runs).filter(pl.col("target") == source)
    largest = samples.sort("problem_size").group_by("app", maintain_order=True).last().sort("app")
    profiles = largest.head(args.profiles)
    model = load_model("xamm/default")
    targets = [t for t in model.targets if t != source]
    ranked = model.rank_targets(profiles, source, targets, target_benchmarks=runs)
    show = ranked.select(
        "app",
        "target",
        "rank",
        pl.col("relR").round(3),
        pl.col("relR_lo").round(3),
        pl.col("relR_hi").round(3),
        pl.col("p_fastest").round(2),
        "regime",
    )
    print_frame(
        show.head(5 * len(targets)),
        title=f"3. {source} profiles on every other machine, fastest first",
    )
    best = ranked.filter(pl.col("rank") == 1).group_by("target").len().sort("len", descending=True)
    print(
        f"   predicted fastest, over {profiles.height} profiles: "
        + ", ".join(f"{t} for {n}" for t, n in best.iter_rows())
    )
    args.out.mkdir(parents=True, exist_ok=True)
    ranked.write_parquet(args.out / "ranked.parquet")
    print(
        f"   wrote {args.out / 'ranked.parquet'} and "
        f"{plot(ranked, source, args.out / 'relR.png')} "
        f"({time.perf_counter() - t0:.1f} s)"
    )


if __name__ == "__main__":
    main()
