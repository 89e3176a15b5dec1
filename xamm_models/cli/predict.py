"""``xamm predict``: relR and seconds of profiles on target machines."""

from __future__ import annotations

import argparse
from pathlib import Path

from xamm_data.cli.tools import emit, path_arg, store_arg, time_unit_arg, write_table
from xamm_models.cli.common import RAW, TOP_REGIONS, needs_models

PREDICT_EPILOG = """\
examples:
  xamm predict lulesh.cali                      where a Caliper profile runs best, every machine
  xamm predict lulesh.cali --regions --plot lulesh.png --target lassen:gpu
  xamm predict regions.csv --source quartz:cpu  a table: region, exclusive_s[, bytes, flops, calls]
  xamm predict ./hpctoolkit-lulesh-database --source quartz:cpu --json
  xamm predict ./cycles-only-database --source quartz:cpu --clock-ghz 2.1
  xamm predict --app LULESH --machine quartz    an application already in the store
  xamm predict --app LULESH --machine quartz --select ranks=8
  xamm predict regions.csv --source mi300a-spx:gpu --config rank --target-benchmarks ./dane-store
  xamm predict profiles.parquet --source quartz:cpu --target lassen:gpu --target h100-node:gpu \
--model xamm/default
  xamm predict profiles.parquet --source quartz:cpu --target newbox:gpu --model xamm/default \
--target-benchmarks ./newbox-store --family gpu
  xamm predict ./store --source quartz:cpu --target lassen:gpu --target h100-node:gpu \
--model xamm/default --rank --json

A profile (Caliper .cali/.json, an HPCToolkit database, a table with a region column) is predicted
region by region and summed: one row per target with predicted time and relR, 80% intervals,
p_fastest and the rank it gives; whole node against whole node where the facts allow it (column
basis), with what each target assumes (a port to a GPU, another programming model) and where its
runs come from. The source machine comes from the profile (Caliper's cluster) or --source; targets
default to every machine with a signature and every machine of your store. A table of the model's
feature columns (or a store's RAJAPerf kernels) is predicted row by row, with --source and
--target.
"""


def add(sub) -> None:
    q = sub.add_parser(
        "predict",
        help="predict where an application profile runs best, and how long it takes",
        epilog=PREDICT_EPILOG,
        formatter_class=RAW,
    )
    q.add_argument(
        "profiles",
        type=path_arg,
        nargs="?",
        help="a Caliper file, an HPCToolkit database, a table of regions, or a table of the "
        "model's feature columns (or a store of RAJAPerf runs)",
    )
    q.add_argument("--source", help="machine:device the profile was measured on")
    q.add_argument("--target", action="append", help="machine:device to predict for (repeatable)")
    q.add_argument("--model", help="predictor folder or Hub repo id (default: xamm/default)")
    q.add_argument("--revision", help="Hub revision to pin")
    q.add_argument(
        "--target-benchmarks",
        type=path_arg,
        help="benchmark data (store root or Parquet) of machines the model has no signature of",
    )
    q.add_argument("--app", help="an application in the store's app_profiles (with --machine)")
    q.add_argument("--machine", help="with --app: the machine it ran on")
    q.add_argument("--store", type=store_arg, help="with --app: the store (default: the usual)")
    q.add_argument(
        "--time-unit",
        type=time_unit_arg,
        metavar="UNIT",
        help="Caliper time unit where the file records none (s, ms, us, ns)",
    )
    q.add_argument(
        "--clock-ghz",
        type=_clock_ghz,
        help="HPCToolkit databases that counted cycles but no time: the cores' clock rate",
    )
    _add_predict_configuration(q)
    q.add_argument(
        "--regions",
        action="store_true",
        help=f"also the prediction per region: the {TOP_REGIONS} with the most time (--all: every "
        "one; --json and --out hold every one)",
    )
    q.add_argument("--all", action="store_true", help="with --regions: print every region")
    q.add_argument(
        "--wide", action="store_true", help="a profile's tables: every column, 200 characters wide"
    )
    q.add_argument("--plot", type=path_arg, help="draw the targets' relR with intervals to a PNG")
    q.add_argument("--rank", action="store_true", help="feature tables: rank targets per row")
    q.add_argument(
        "--out",
        type=path_arg,
        help="also write the predictions to a file: .parquet (the default), .csv or .json",
    )
    q.add_argument("--json", action="store_true", help="every prediction as JSON on stdout")
    # the model loads what it needs
    q.set_defaults(handler=needs_models(predict_cmd, needs_torch=lambda args: False))


def _add_predict_configuration(q) -> None:
    """``xamm predict``'s options on what is compared: the configuration, the stored runs, the
    variant family and the targets."""
    q.add_argument(
        "--config",
        choices=("node", "rank"),
        default="node",
        help="node (default): a whole node against a whole node where the profile and the "
        "machines' facts allow it, per rank elsewhere, said in each row; rank: one rank against "
        "one rank of each machine's benchmark runs",
    )
    q.add_argument(
        "--select",
        action="append",
        metavar="KEY=VALUE",
        help="with --app: the stored runs to predict, by configuration (ranks=8, input_size=30, "
        "source_path=...; repeatable)",
    )
    q.add_argument(
        "--family",
        choices=("sequential", "threaded", "gpu"),
        help="feature tables with --target-benchmarks: the programming-model family of the "
        "profiles; each target's signature is measured from its runs of that family only "
        "(a profile file's family comes from its metadata)",
    )
    q.add_argument(
        "--variant",
        choices=("Base", "Lambda", "RAJA"),
        help="a profile file: the RAJAPerf variant kind each target's runs are read in where they "
        "hold several (default: the profile's own, else Base), said in each row",
    )
    q.add_argument(
        "--no-store-targets",
        action="store_true",
        help="leave the machines of your store out of the targets (they are in by default)",
    )


def _clock_ghz(text: str) -> float:
    """A clock rate in GHz: a positive number."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GHz") from None
    if not (0 < v < 100):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a clock rate in GHz, e.g. 2.1")
    return v


SHOWN = 50  # rows of a prediction table printed to a terminal


PROFILE_KINDS = (
    "a .cali or Caliper .json file, an HPCToolkit database, a table with a region column"
)
FEATURES = "a table of model features (.parquet or .csv) needs --source and --target"


def not_a_profile(path: Path | None, is_profile, look: int = 200) -> str:
    """Why ``xamm predict PATH`` without ``--source``/``--target`` has nothing to read, naming
    ``path`` and what it is: a folder of profiles (predict reads one), an empty folder, or a file
    no installed format reads as a profile.

    Args:
        path: what the command line named (None: nothing).
        is_profile: whether an installed format reads a path as a profile.
        look: how many of a folder's files are asked about.
    """
    if path is None:
        return f"no input: name a profile ({PROFILE_KINDS}); {FEATURES}"
    if path.is_dir():
        files = sorted(f for f in path.rglob("*") if f.is_file())
        found = [f for f in files[:look] if is_profile(f)]
        if found:
            more = "" if len(files) <= look else f" (of its first {look} files)"
            return (f"{path}: a folder of {len(found)} profiles{more}; xamm predict reads one "
                    f"profile at a time: name one, e.g. {found[0]}")  # fmt: skip
        what = "an empty folder" if not files else f"a folder of {len(files)} files, none a profile"
        return f"{path}: {what}; expected a profile ({PROFILE_KINDS}); {FEATURES}"
    return (f"{path}: not an application profile an installed format reads ({PROFILE_KINDS}); "
            f"{FEATURES}")  # fmt: skip


def predict_cmd(args) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.cli.predict_profile import is_profile, profile_cmd

    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.default.model import load_predictor

    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.inputs import load_profiles

    # in the handler: `xamm --help` never loads the models
    from xamm_models.profile_input import ProfileInputError

    # in the handler: `xamm --help` never loads the models
    from xamm_models.stored import load_benchmark_runs

    if args.profiles is not None and not args.profiles.exists():
        raise ProfileInputError(f"{args.profiles}: no such file or directory")
    if args.app or (args.profiles is not None and is_profile(args.profiles)):
        return profile_cmd(args)
    if args.profiles is None or not args.source or not args.target:
        raise ProfileInputError(not_a_profile(args.profiles, is_profile))
    model = load_predictor(str(args.model or "xamm/default"), revision=args.revision)
    profiles = load_profiles(model, args.profiles, args.source)
    bench = load_benchmark_runs(args.target_benchmarks) if args.target_benchmarks else None
    if bench is not None and args.family:
        from xamm_models.predictors.configurations import one_family  # as above

        bench = one_family(bench, args.family)
    fn = model.rank_targets if args.rank else model.predict
    try:
        out = fn(profiles, args.source, args.target, target_benchmarks=bench)
    except ProfileInputError as e:  # the rows are the file's: say which file
        raise ProfileInputError(f"{args.profiles}: {e}") from None
    if args.out:
        print(f"wrote {write_table(out, args.out)} ({out.height} rows)")
    if not args.out or not args.json:
        emit(
            out if args.json else out.head(SHOWN),
            as_json=args.json,
            title=f"relR = runtime on target / runtime on {args.source} (> 1: slower)",
        )
        if not args.json and out.height > SHOWN and not args.out:
            print(
                f"showing {SHOWN} of {out.height} rows ({out.height - SHOWN} left "
                "out): --out FILE.parquet or --json "
                "for all of them"
            )
    return 0
