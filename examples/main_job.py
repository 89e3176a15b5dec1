"""xamm's main job: where does this application run best, and how long does it take there?

On real public data, offline, in seconds:

1. a centre adds a machine: its RAJAPerf run is ingested (``xamm-ingest rajaperf``'s reader)
   into a store and loaded back with ``load_dataset``, and the predictor measures the machine's
   signature from those runs (a machine it has never seen is answered the same way);
2. an application team's profile is read as the profiler wrote it (a Caliper ``.cali`` of LULESH
   2.0 measured on quartz; any Caliper file, HPCToolkit database or region table works);
3. the default predictor (``xamm/default``, the package's embedded copy) predicts it region by
   region on every machine with a signature, the new one included, sums the regions per machine
   and ranks the machines: whole-program seconds on a whole node against the node the profile
   ran on (where the machines' node facts allow it; otherwise per rank, said in the row), relR,
   80% intervals, P(fastest), the configuration on both ends, what each answer assumes (a port to
   a GPU) and what the profile lacks; a plot and Parquet files.

    python examples/main_job.py [--profile FILE] [--runs DIR --machine NAME] [--out out/main-job]

The defaults are in ``../shared/data``: LULESH on quartz (LLNL/thicket-tutorial @ 64aca5a7, MIT) and
dane's RAJAPerf Base_Seq run (LLNL/thicket @ 1e6f4068, MIT). ``xamm predict FILE`` is the same
prediction from the shell.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import polars as pl

from xamm_data import Store, load_dataset
from xamm_data.cli.summary import print_frame
from xamm_ingest import ingest_rajaperf, read_regions
from xamm_models.predictors.composed import predict_profile
from xamm_models.report.figures import plot_programs

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
PROFILE = DATA / "LLNL+thicket-tutorial/data/lulesh/230906-105532_880456_M8YbWSOYgGWa.cali"
RUNS = DATA / "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608"
SHOWN = ("rank", "target", "basis", "time_s", "time_lo_s", "time_hi_s", "relR", "p_fastest")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--profile",
        type=Path,
        default=PROFILE,
        help="the application's profile: a Caliper .cali/.json, an HPCToolkit database or a "
        ".csv/.parquet table of regions",
    )
    ap.add_argument("--source", help="machine:device of the profile, when the file names none")
    ap.add_argument(
        "--runs", type=Path, default=RUNS, help="a RAJAPerf run directory of the new machine"
    )
    ap.add_argument("--machine", default="dane", help="the machine those runs come from")
    ap.add_argument("--out", type=Path, default=REPO / "out" / "main-job")
    return ap.parse_args()


def add_machine(runs: Path, machine: str, out: Path) -> pl.DataFrame:
    """The centre's step: a machine's RAJAPerf run into the store, and back."""
    store = Store(out / "store")
    rep = ingest_rajaperf(runs, machine=machine, store=store, workers=2)
    back = load_dataset(machine, store=store)
    print(
        f"1. {machine}: ingested {rep.frame.height} rows from {rep.sources_read} files of "
        f"{runs.name}, rejected {len(rep.rejected)}; load_dataset({machine!r}) gives "
        f"{back.height} rows back"
    )
    return back


def main() -> None:
    args = parse_args()
    for path, flag in ((args.profile, "--profile FILE"), (args.runs, "--runs DIR")):
        if not path.exists():
            raise SystemExit(f"{path}: not found; pass {flag}")
    t0 = time.perf_counter()
    runs = add_machine(args.runs, args.machine, args.out)
    profile = read_regions(args.profile)
    r = profile.regions
    print(
        f"2. {profile.meta.app} from {args.profile.name}: {r.height} regions, "
        f"{r['exclusive_s'].sum():.4g} s, measured as {profile.meta.configuration}"
    )
    pred = predict_profile(profile, source=args.source, target_benchmarks=runs)
    print_frame(
        pred.programs.select(*SHOWN, "assumes", "target_configuration"),
        title=f"3. {profile.meta.app} from {pred.source} on every machine with a signature: "
        "predicted seconds, most likely fastest first (80% intervals; relR = time there / time "
        "on the source)",
    )
    print("\n".join(f"   - {n}" for n in pred.notes))
    args.out.mkdir(parents=True, exist_ok=True)
    pred.programs.write_parquet(args.out / "programs.parquet")
    pred.regions.write_parquet(args.out / "regions.parquet")
    title = f"{profile.meta.app}, measured on {pred.source} as {profile.meta.configuration}"
    png = plot_programs(pred.programs, title, args.out / "relR.png")
    print(
        f"   wrote {args.out / 'programs.parquet'}, {args.out / 'regions.parquet'} and {png} "
        f"({time.perf_counter() - t0:.1f} s)"
    )


if __name__ == "__main__":
    main()
