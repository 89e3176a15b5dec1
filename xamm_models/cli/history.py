"""``xamm amm history MACHINE`` and ``xamm amm diff M@A M@B``."""

from __future__ import annotations

import json

from xamm_data.cli.tools import print_frame
from xamm_data.store.locations import store_arg

RAW_HISTORY = """examples:
  xamm amm history dane
  xamm amm history dane:cpu --json"""
RAW_DIFF = """Figures are each version's physics signature, with a 90% bootstrap interval over its
runs (moved: the intervals do not overlap); kernels are the runs the newer version added against the
older version's (xamm compare M@now M@accepted does the same for store states).

examples:
  xamm amm diff dane:cpu@1 dane:cpu@2
  xamm amm diff dane:cpu@1 dane:cpu@2 --json"""


def add(a, raw) -> None:
    """Add ``history`` and ``diff`` to ``xamm amm``."""
    h = a.add_parser("history", help="a machine's signature versions, their runs and changes",
                     formatter_class=raw, epilog=RAW_HISTORY)  # fmt: skip
    h.add_argument("machine", help="MACHINE or MACHINE:DEVICE")
    h.add_argument("--json", action="store_true", help="print the history as JSON")
    h.add_argument("--store", type=store_arg, default=None)
    d = a.add_parser("diff", help="two signature versions side by side, and the kernels that moved",
                     formatter_class=raw, epilog=RAW_DIFF)  # fmt: skip
    d.add_argument("older", help="MACHINE:DEVICE@VERSION")
    d.add_argument("newer", help="MACHINE:DEVICE@VERSION")
    d.add_argument("--json", action="store_true", help="print the diff as JSON")
    d.add_argument("--store", type=store_arg, default=None)


def history_cmd(args, reg) -> int:
    """``xamm amm history``."""
    from xamm_models.compare.history.versions import history  # loaded when the command runs

    h = history(args.machine, registry=reg, store=args.store)
    if args.json:
        print(json.dumps(h.to_dicts(), indent=1, default=str))
    else:
        print_frame(h, title=f"physics signature versions of {args.machine}")
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
    print_frame(d.figures, title="physics figures, 90% intervals over each version's runs")
    if said := d.kernels_said():
        print(said)
    if d.drift is None:
        print(d.note)
        return 0
    moved = d.drift.kernels.filter(d.drift.kernels["verdict"] != "same")
    if moved.height:
        print_frame(moved.select("group", "kernel", "problem_size", "ratio", "lo", "hi", "verdict"),
                    title="kernels that moved beyond the trials' spread and "
                    f"{d.drift.tolerance:.0%}")  # fmt: skip
    else:
        print(f"no kernel moved beyond the trials' spread and {d.drift.tolerance:.0%}")
    return 0
