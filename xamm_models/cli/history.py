"""``xamm amm history MACHINE`` and ``xamm amm diff M@A M@B``."""

from __future__ import annotations

import json

from xamm_data.cli.tools import print_frame, store_arg

RAW_HISTORY = """A version per line, in 100 columns: what changed in short (--wide: every column,
the compilers and flags themselves; --json: every value).

examples:
  xamm amm history dane
  xamm amm history dane:cpu --wide
  xamm amm history dane:cpu --json"""
# the history's columns a terminal shows, under short headings (--wide: all, as --json names them)
HISTORY_SHOWN = {"target": "target", "version": "version", "sources": "runs",
                 "last_run": "last run", "bandwidth_gbs": "GB/s", "accepted": "accepted",
                 "changed": "changed"}  # fmt: skip
RAW_DIFF = """Figures are each version's physics signature, with a 90% bootstrap interval over its
runs (moved: the intervals do not overlap); kernels are the runs the newer version added against the
older version's (xamm compare M@now M@accepted does the same for store states). 100 columns wide
(--wide: the bounds in columns of their own).

examples:
  xamm amm diff dane:cpu@1 dane:cpu@2
  xamm amm diff dane:cpu@1 dane:cpu@2 --json"""


def add(a, raw) -> None:
    """Add ``history`` and ``diff`` to ``xamm amm``."""
    h = a.add_parser("history", help="a machine's signature versions, their runs and changes",
                     formatter_class=raw, epilog=RAW_HISTORY)  # fmt: skip
    h.add_argument("machine", help="MACHINE or MACHINE:DEVICE")
    h.add_argument("--json", action="store_true", help="print the history as JSON")
    h.add_argument("--wide", action="store_true", help="every column, 200 characters wide")
    h.add_argument("--store", type=store_arg, default=None)
    d = a.add_parser("diff", help="two signature versions side by side, and the kernels that moved",
                     formatter_class=raw, epilog=RAW_DIFF)  # fmt: skip
    d.add_argument("older", help="MACHINE:DEVICE@VERSION")
    d.add_argument("newer", help="MACHINE:DEVICE@VERSION")
    d.add_argument("--json", action="store_true", help="print the diff as JSON")
    d.add_argument("--wide", action="store_true", help="every column, 200 characters wide")
    d.add_argument("--store", type=store_arg, default=None)


def history_cmd(args, reg) -> int:
    """``xamm amm history``."""
    from xamm_models.compare.history.versions import history  # loaded when the command runs

    h = history(args.machine, registry=reg, store=args.store)
    if args.json:
        print(json.dumps(h.to_dicts(), indent=1, default=str))
        return 0
    title = f"physics signature versions of {args.machine}"
    if args.wide:
        print_frame(h, title=title, wide=True)
        return 0
    import polars as pl  # the command's own work: loaded when it runs

    if "changed" not in h.columns:  # a history pulled from a Hub repository written before it
        h = h.with_columns(pl.col("changes").alias("changed"))
    shown = h.select(c for c in HISTORY_SHOWN if c in h.columns)
    if "last_run" in shown.columns:  # the day is what tells versions apart
        shown = shown.with_columns(pl.col("last_run").cast(pl.String).str.slice(0, 10))
    print_frame(shown.rename(HISTORY_SHOWN, strict=False), title=f"{title} (--wide: every column)")
    return 0


def diff_cmd(args, reg) -> int:
    """``xamm amm diff``."""
    from xamm_models.compare.history.versions import signature_diff  # loaded when the command runs

    d = signature_diff(args.older, args.newer, registry=reg, store=args.store)
    if args.json:
        print(json.dumps(d.to_dict(), indent=1, default=str))
        return 0
    print(f"{d.older.label} (store v{d.older.version}) -> {d.newer.label} "
          f"(store v{d.newer.version})")  # fmt: skip
    title = "physics figures, 90% intervals over each version's runs"
    if args.wide:
        print_frame(d.figures, title=title, wide=True)
    else:
        from xamm_data.cli.summary import with_intervals  # the printer: loaded when it prints

        bounds = {"older": ("older_lo", "older_hi"), "newer": ("newer_lo", "newer_hi")}
        print_frame(with_intervals(d.figures, bounds), title=f"{title}: value [lo, hi]")
    if said := d.kernels_said():
        print(said)
    if d.drift is None:
        print(d.note)
        return 0
    moved = d.drift.kernels.filter(d.drift.kernels["verdict"] != "same")
    if moved.height:
        print_frame(moved.select("group", "kernel", "problem_size", "ratio", "lo", "hi", "verdict"),
                    title="kernels that moved beyond the trials' spread and "
                    f"{d.drift.tolerance:.0%}", wide=args.wide)  # fmt: skip
    else:
        print(f"no kernel moved beyond the trials' spread and {d.drift.tolerance:.0%}")
    return 0
