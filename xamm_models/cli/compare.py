"""``xamm compare NEW REF [REF ...]``: acceptance testing in one command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from xamm_data.cli.tools import UsageError, print_frame
from xamm_data.store.locations import store_arg
from xamm_models.benchmark.limits import MAX_SIZE_RATIO, MAX_TOLERANCE

EPILOG = """\
relR = seconds per iteration on NEW / on the reference, one rank against one rank as the runs ran
(below 1: NEW is faster); relR_node = a whole node of NEW against a whole node of the reference,
where the machine registry's node facts and the runs' configurations give both nodes (xamm
machines show). Kernels are matched like for like (variant family, work per iteration, nearest
problem size within 1.5x); a kernel is flagged when its relR departs from what the two physics
signatures predict by more than the interval measured on the benchmark's machines.

examples:
  xamm compare h100-node:gpu mi300a-spx:gpu
  xamm compare dane quartz --size-ratio 16 --json
  xamm compare h100-node:gpu mi300a-spx:gpu lassen --out acceptance/
  xamm compare h100-node:gpu lassen --thicket compare.json

drift (a machine against itself, MACHINE@STATE with STATE now, accepted, a signature version or
a date): the runs added since the older state against its runs, per kernel and group, flagged
when the 90% family-wise interval lies beyond the tolerance:
  xamm compare dane:cpu@now dane:cpu@accepted
  xamm compare dane:cpu@now dane:cpu@accepted --out drift/
  xamm compare dane:cpu --since 2025-05-14T15:42 --tolerance 0.1 --json
"""

#: kernel columns printed to a terminal
SHOWN = ("ref", "group", "kernel", "relR", "relR_min", "relR_max", "relR_node", "sizes",
         "predicted", "departure", "flagged")  # fmt: skip


def bounded(lo: float, hi: float, what: str):
    """An argparse type: a finite number in [lo, hi], else a usage error naming the option."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = float("nan")
        if not lo <= v <= hi:  # nan and inf fail here
            raise argparse.ArgumentTypeError(f"{what}: expected a number from {lo:g} to {hi:g}, "
                                             f"not {text!r}")  # fmt: skip
        return v

    return parse


def add(sub) -> None:
    """Add ``compare`` to ``xamm``."""
    s = sub.add_parser(
        "compare",
        help="compare a new machine's benchmark runs with known machines, kernel by kernel",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("new", help="the new target: MACHINE or MACHINE:DEVICE")
    s.add_argument(
        "refs", nargs="*", metavar="REF", help="reference targets (or NEW's earlier state)"
    )
    s.add_argument(
        "--since",
        metavar="DATE",
        help="drift: NEW's runs from DATE (YYYY-MM-DD[THH:MM]) on against before",
    )
    s.add_argument(
        "--tolerance",
        type=bounded(0, MAX_TOLERANCE, "a fraction (0.05 for 5%)"),
        default=0.05,
        help="drift: the relative change below which nothing is flagged (default 0.05)",
    )
    s.add_argument(
        "--family", help="variant family (Base, RAJA, BabelStream; default: first common)"
    )
    s.add_argument(
        "--size-ratio",
        type=bounded(1, MAX_SIZE_RATIO, "a ratio of problem sizes"),
        default=1.5,
        help="how far apart matched problem sizes may be (default 1.5, the benchmark's)",
    )
    s.add_argument("--store", type=store_arg, default=None, help="store (default $XAMM_HOME/store)")
    s.add_argument("--json", action="store_true", help="print everything as JSON")
    s.add_argument("--out", type=Path, help="write report.md, ratios.png and bandwidth.png here")
    s.add_argument("--thicket", type=Path, help="write the comparison as Thicket JSON to this file")
    s.set_defaults(handler=run)


def run(args) -> int:
    """The ``compare`` handler."""
    from xamm_models.compare.history.states import is_state_ref  # likewise

    # the command's own work: loaded when it runs
    from xamm_models.compare.runs.targets import compare

    if args.since is not None or is_state_ref(args.new):
        from xamm_models.cli.drift import run_drift  # drift: a machine against itself

        return run_drift(args)
    if not args.refs:
        raise UsageError("name at least one reference target (or NEW@STATE REF@STATE, or --since "
                         "DATE)")  # fmt: skip
    c = compare(
        args.new, args.refs, store=args.store, family=args.family, size_ratio=args.size_ratio
    )
    files = []
    if args.out is not None:
        from xamm_models.compare.runs.report import write_report  # matplotlib: only with --out

        files = [str(p) for p in write_report(c, args.out)]
    if args.thicket is not None:
        args.thicket.parent.mkdir(parents=True, exist_ok=True)
        args.thicket.write_text(c.to_thicket().to_json())
        files.append(str(args.thicket))
    if args.json:
        print(json.dumps({**c.to_dict(), "files": files}, indent=1, default=str))
        return 0
    _print(c, files)
    return 0


def _print(c, files: list[str]) -> None:
    backends = ", ".join(f"{t} {b}" for t, b in c.backends.items())
    print(f"{c.new} against {', '.join(c.refs)}: family {c.family} ({backends})")
    for t, how in c.configurations.items():
        scale = c.scales.get(t)
        print(f"  {t}: {how}; {scale.basis}: {scale.why}" if scale else f"  {t}: {how}")
    if not c.node_view:
        print("  relR_node is empty: a node is not known for every target (see above)")
    print(f"  problem sizes matched within {c.size_ratio:g}x")
    print_frame(c.physics(), title="physics figures")
    for t, ms in c.missing().items():
        for m in ms:
            print(f"  {t}: {m}")
    print_frame(
        c.groups.drop("regime_why"),
        title="kernel groups: geometric mean relR per rank and per node, 90% bootstrap intervals; "
        "regime: whether matched sizes sit in the same cache level on both nodes",
    )
    import polars as pl  # the command's own work: loaded when it runs

    for r in c.groups.filter(pl.col("regime") == "across").iter_rows(named=True):
        print(f"  {r['group']} against {r['ref']}: {r['regime_why']}")
    print_frame(c.kernels.select(SHOWN), title="kernels")
    if c.flags.height:
        print_frame(c.flags.select(*SHOWN[:3], "relR", "predicted", "departure"),
                    title="departs from the physics (slower than predicted first)")  # fmt: skip
    else:
        print("no kernel departs from the physics beyond the measured interval")
    why = c.unmatched.group_by("ref", "side", "why").len().sort("ref", "side", "why")
    if why.height:
        print_frame(why, title="not matched (--json lists each)")
    for f in files:
        print(f"wrote {f}")
