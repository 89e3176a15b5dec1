"""``xamm compare NEW REF [REF ...]``: acceptance testing in one command."""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from xamm_data.cli.tools import UsageError, path_arg, print_frame, store_arg
from xamm_models.benchmark.limits import MAX_SIZE_RATIO, MAX_TOLERANCE
from xamm_models.cli.common import bounded

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

#: kernel columns printed to a terminal with --wide
SHOWN = ("ref", "group", "kernel", "relR", "relR_min", "relR_max", "relR_node", "sizes",
         "predicted", "departure", "flagged")  # fmt: skip
#: and in 100 columns: relR with the range of its trials, the reference only when there are several
NARROW = ("ref", "kernel", "relR", "relR_node", "predicted", "departure", "flagged")


def date_arg(text: str) -> str:
    """``--since`` as written, once it reads as a date or time (else a usage error); the
    comparison reads it again."""
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date or time, YYYY-MM-DD[THH:MM], not {text!r}"
        ) from None
    return text


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
        type=date_arg,
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
    s.add_argument(
        "--wide", action="store_true", help="every column, 200 characters wide (default: 100)"
    )
    s.add_argument(
        "--out", type=path_arg, help="write report.md, ratios.png and bandwidth.png here"
    )
    s.add_argument(
        "--thicket", type=path_arg, help="write the comparison as Thicket JSON to this file"
    )
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
    _print(c, files, args.wide)
    return 0


def _print(c, files: list[str], wide: bool = False) -> None:
    from xamm_data.cli.summary import say  # the table printer: loaded when something is printed

    backends = ", ".join(f"{t} {b}" for t, b in c.backends.items())
    say(f"{c.new} against {', '.join(c.refs)}: family {c.family} ({backends})", indent="")
    for t, how in c.configurations.items():
        scale = c.scales.get(t)
        say(f"{t}: {how}; {scale.basis}: {scale.why}" if scale else f"{t}: {how}")
    if not c.node_view:
        say("relR_node is empty: a node is not known for every target (see above)")
    say(f"problem sizes matched within {c.size_ratio:g}x")
    print_frame(c.physics(), title="physics figures", wide=wide)
    for t, ms in c.missing().items():
        for m in ms:
            say(f"{t}: {m}")
    _print_groups(c, wide)
    _print_kernels(c, wide)
    why = c.unmatched.group_by("ref", "side", "why").len().sort("ref", "side", "why")
    if why.height:
        print_frame(why, title="not matched (--json lists each)", wide=wide)
    for f in files:
        print(f"wrote {f}")


def _narrow(frame, intervals: dict, refs: list[str]):
    """``frame`` for 100 columns: each interval in one column, no ``ref`` column for one
    reference (the title names it)."""
    from xamm_data.cli.summary import with_intervals  # likewise

    out = with_intervals(frame, intervals)
    return out.drop("ref") if len(refs) == 1 and "ref" in out.columns else out


def _print_groups(c, wide: bool) -> None:
    import polars as pl  # the command's own work: loaded when it runs

    from xamm_data.cli.summary import say  # likewise

    groups = c.groups.drop("regime_why")
    if not wide:
        bounds = {"relR": ("relR_lo", "relR_hi"), "relR_node": ("relR_node_lo", "relR_node_hi")}
        groups = _narrow(groups, bounds, c.refs)
    print_frame(
        groups,
        title="kernel groups: geometric mean relR per rank and per node, 90% bootstrap intervals; "
        "regime: whether matched sizes sit in the same cache level on both nodes"
        + (f" (against {c.refs[0]})" if len(c.refs) == 1 else ""),
        wide=wide,
    )
    for r in c.groups.filter(pl.col("regime") == "across").iter_rows(named=True):
        say(f"{r['group']} against {r['ref']}: {r['regime_why']}")


def _print_kernels(c, wide: bool) -> None:
    against = f" against {c.refs[0]}" if len(c.refs) == 1 else ""
    if wide:
        print_frame(c.kernels.select(SHOWN), title="kernels", wide=True)
    else:
        kernels = _narrow(c.kernels.select(SHOWN), {"relR": ("relR_min", "relR_max")}, c.refs)
        print_frame(kernels.select(k for k in NARROW if k in kernels.columns),
                    title=f"kernels{against}: relR [fastest, slowest trial] (--wide: every "
                    "column)")  # fmt: skip
    if c.flags.height:
        flags = c.flags.select(*SHOWN[:3], "relR", "predicted", "departure")
        print_frame(flags if wide or len(c.refs) > 1 else flags.drop("ref"),
                    title=f"departs from the physics{against} (slower than predicted first)",
                    wide=wide)  # fmt: skip
    else:
        print("no kernel departs from the physics beyond the measured interval")
