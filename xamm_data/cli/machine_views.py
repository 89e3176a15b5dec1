"""What ``xamm machines`` prints: the registry's machines as a table, one machine's facts, and the
facts a user adds."""

from __future__ import annotations

import polars as pl

from xamm_data.cli.tools import emit
from xamm_data.machines import registry as machines

__all__ = ["machines_command"]


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


def machines_command(args) -> int:
    """``xamm machines list|show|add``.

    Args:
        args: the parsed command line.
    """
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
