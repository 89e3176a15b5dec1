"""An HPCToolkit database in, predictions out: GAMESS measured on Frontier's MI250X, predicted on
every machine with a signature, two of them known only from their BabelStream runs.

    python examples/predict_hpctoolkit.py [--database DIR] [--stream DIR] [--out FILE]

The database (new format: ``meta.db``, ``profile.db``) names no machine, so the source is given:
Frontier's GPUs are MI250X, whose signature comes from the UoB study's BabelStream runs on an MI250X
(2024), read here with ``xamm-ingest babelstream``'s reader. The database is read as one region per
function context; it measured time but no bytes or flops, so each compute region's answer is a
bandwidth ratio with the interval measured for time-only input, and the MPI calls (with the library
internals beneath them) are held constant; the notes say so. The shell form is
``xamm predict DATABASE --source mi250x:gpu --target-benchmarks STORE``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from xamm_data.cli.summary import print_frame
from xamm_ingest import read_babelstream, read_regions
from xamm_models.predictors.composed import predict_profile

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DATABASE = DATA / "spencer-gre+hatchet/hatchet/tests/data/hpctoolkit-gamess"
STREAM = DATA / "UoB-HPC+performance-portability/benchmarking/2024/babelstream/results"
# the UoB study names its 2022-2024 platforms in the file names: babelstream-<machine>_<compiler>_
PLATFORM = r"babelstream-(?P<machine>[a-z0-9]+(?:_80g)?)_(?P<compiler>[a-z]+-[0-9.]+)_"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--database", type=Path, default=DATABASE, help="an HPCToolkit database")
    ap.add_argument("--stream", type=Path, default=STREAM, help="BabelStream outputs")
    ap.add_argument("--source", default="mi250x:gpu", help="where the database was measured")
    ap.add_argument("--out", type=Path, help="write the ranked targets here (Parquet)")
    args = ap.parse_args()
    stream = read_babelstream(args.stream, path_patterns=[PLATFORM], workers=1)
    machines = sorted(set(stream.frame["machine"]))
    print(f"BabelStream: {stream.frame.height} rows of {', '.join(machines)}")
    profile = read_regions(args.database)
    pred = predict_profile(profile, source=args.source, target_benchmarks=stream.frame)
    print_frame(
        pred.programs.select("rank", "target", "relR", "relR_lo", "relR_hi", "p_fastest", "time_s"),
        title=f"{profile.meta.app} from {pred.source}, fastest first (80% intervals)",
    )
    print("\n".join(f"- {n}" for n in pred.notes))
    if args.out:
        pred.programs.write_parquet(args.out)


if __name__ == "__main__":
    main()
