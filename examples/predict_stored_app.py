"""An application already in the store, predicted: five trials of LULESH on quartz ingested with
``xamm-ingest caliper``'s reader, then ``xamm predict --app lulesh2.0 --machine quartz``.

    python examples/predict_stored_app.py [--profiles DIR] [--store out/app-store] [--out FILE]

The store's ``app_profiles`` keeps each profile as ``xamm predict`` reads its file, regions
included, so a stored application is predicted as its file is. Several stored runs of one
configuration (here: 8 ranks x 5 threads, size 30, five trials) are one profile, each region the
median over the trials; runs of different configurations are never mixed: ``--select ranks=8``
picks one, and the command says which runs it took.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import caliperreader

from xamm_data import Store
from xamm_data.cli.commands import main as xamm
from xamm_ingest import ingest_profiles
from xamm_ingest.readers.profile_common import SampleSpec

REPO = Path(__file__).resolve().parents[1]
LULESH = REPO.parent / "shared" / "data" / "LLNL+thicket-tutorial/data/lulesh"


def trials(folder: Path, ranks: str, size: str) -> list[Path]:
    """The profiles of one configuration, told by their Adiak globals."""
    out = []
    for f in sorted(folder.glob("*.cali")):
        r = caliperreader.CaliperReader()
        r.read(str(f))
        if (r.globals.get("jobsize"), r.globals.get("problem_size")) == (ranks, size):
            out.append(f)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--profiles", type=Path, default=LULESH, help="LULESH Caliper files")
    ap.add_argument("--store", type=Path, default=REPO / "out" / "app-store")
    ap.add_argument(
        "--out", type=Path, help="write the ranked targets here (Parquet) instead of printing them"
    )
    args = ap.parse_args()
    files = trials(args.profiles, "8", "30")
    spec = SampleSpec(app="lulesh2.0", machine="quartz", params={"size": 30}, ranks=8, threads=5)
    rep = ingest_profiles("caliper", files, spec, store=Store(args.store))
    print(f"ingested {rep.frame.height} profiles; rejected {len(rep.rejected)}")
    argv = ["predict", "--app", "lulesh2.0", "--machine", "quartz", "--store", str(args.store)]
    raise SystemExit(xamm(argv + (["--out", str(args.out)] if args.out else [])))


if __name__ == "__main__":
    main()
