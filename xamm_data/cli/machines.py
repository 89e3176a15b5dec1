"""``xamm machines list|show|add``: the machine registry and its node facts."""

from __future__ import annotations

import argparse

import polars as pl

from xamm_data.cli.tools import emit
from xamm_data.machines import registry as machines

LIST = "examples:\n  xamm machines list\n  xamm machines list 'mi*' --json\n"
SHOW = "examples:\n  xamm machines show dane\n"
ADD = (
    "examples:\n  xamm machines add newbox --cpu 'AMD EPYC 9654' --sockets 2 "
    "--cores-per-node 192 --memory-bandwidth-gbs 921.6 --source 'vendor specification'\n"
)
EPILOG = LIST + SHOW[len("examples:\n") :] + ADD[len("examples:\n") :]


def add(sub) -> None:
    """Add ``machines`` to ``xamm``."""
    p = sub.add_parser(
        "machines",
        help="list, show and add machines and the facts of their nodes",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    msub = p.add_subparsers(dest="action", metavar="ACTION")
    msub.required = True
    raw = argparse.RawDescriptionHelpFormatter
    q = msub.add_parser(
        "list", help="every machine with its node facts", epilog=LIST, formatter_class=raw
    )
    q.add_argument("pattern", nargs="?", default="*", help="shell-style pattern, e.g. 'xeon*'")
    q.add_argument("--json", action="store_true", help="print as JSON")
    q = msub.add_parser(
        "show",
        help="one machine: what it is, its facts and their sources",
        epilog=SHOW,
        formatter_class=raw,
    )
    q.add_argument("machine", help="a machine id or alias")
    q.add_argument("--json", action="store_true", help="print as JSON")
    q = msub.add_parser(
        "add",
        help="add a machine, or facts of a known one, to $XAMM_HOME/machines.toml",
        epilog=ADD,
        formatter_class=raw,
    )
    q.add_argument("machine", help="a new id, or a known machine whose facts to add or correct")
    q.add_argument("--cpu", help="processor model")
    q.add_argument("--gpu", help="GPU model")
    for field, what in machines.NODE_FACTS:
        kind = int if field in ("sockets", "cores_per_node", "gpus_per_node") else float
        q.add_argument(f"--{field.replace('_', '-')}", type=kind, dest=field, help=what)
    q.add_argument("--alias", action="append", dest="aliases", help="another name (repeatable)")
    q.add_argument("--source", help="where the facts come from")
    q.add_argument("--notes", help="anything else worth saying")
    q.add_argument("--json", action="store_true", help="print the machine as JSON")
    p.set_defaults(handler=run)


def _frame(records: list[machines.Machine]) -> pl.DataFrame:
    """One row per machine: what it is, the node facts a comparison of nodes needs, and whose."""
    rows = [
        {
            "id": m.id,
            "devices": ", ".join(m.devices),
            "processors": " + ".join(x for x in (m.cpu, m.gpu) if x),
            "cores": m.cores_per_node,
            "gpus": m.gpus_per_node,
            "memory_gib": m.memory_gib,
            "memory_gbs": m.memory_bandwidth_gbs,
            "gpu_memory_gbs": m.gpu_memory_bandwidth_gbs,
            "from": m.origin,
        }
        for m in records
    ]
    schema = {"id": pl.String, "devices": pl.String, "processors": pl.String, "cores": pl.Int64,
              "gpus": pl.Int64, "memory_gib": pl.Float64, "memory_gbs": pl.Float64,
              "gpu_memory_gbs": pl.Float64, "from": pl.String}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def _facts(m: machines.Machine) -> pl.DataFrame:
    """One row per fact of one machine, unrecorded ones included."""
    what = dict(machines.NODE_FACTS)
    rows = [("cpu", m.cpu, "processor"), ("gpu", m.gpu, "GPU")]
    rows += [(k, None if v is None else f"{v:g}", what[k]) for k, v in m.facts().items()]
    return pl.DataFrame(
        {"fact": [r[0] for r in rows], "value": [r[1] for r in rows], "what": [r[2] for r in rows]},
        schema={"fact": pl.String, "value": pl.String, "what": pl.String},
    )


def run(args) -> int:
    """The ``machines`` handler."""
    if args.action == "list":
        ids = machines.list_machines(args.pattern)
        frame = _frame([machines.get(i) for i in ids])
        emit(frame, as_json=args.json, title=f"{frame.height} machines (node facts; - unrecorded)")
        return 0
    if args.action == "show":
        m = machines.get(args.machine)
        emit(m.model_dump() if args.json else _facts(m), as_json=args.json, title=m.id)
        if not args.json:
            print(f"source: {m.source}")
            if m.notes:
                print(f"notes: {m.notes}")
        return 0
    facts = {
        k: getattr(args, k)
        for k in ("cpu", "gpu", "source", "notes", *(f for f, _ in machines.NODE_FACTS))
    }
    if args.aliases:
        facts["aliases"] = tuple(args.aliases)
    m = machines.add_facts(args.machine, **facts)
    if args.json:
        emit(m.model_dump(), as_json=True)
    else:
        print(f"{m.id}: recorded in {machines.user_file()}")
        emit(_facts(m), as_json=False, title=m.id)
    return 0
