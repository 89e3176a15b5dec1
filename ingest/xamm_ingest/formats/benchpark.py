"""``xamm-ingest benchpark``: the RAJAPerf experiments of Benchpark/Ramble workspaces into
``benchmark_runs`` rows, each with what the workflow recorded of its experiment.

The workspaces are found under the paths given (a workspace, a Benchpark experiment, an
experiments root: :mod:`~xamm_ingest.readers.ramble`); every experiment directory's RAJAPerf outputs
(Caliper files, CSV runs) are read as ``xamm-ingest rajaperf`` reads them, and each row gets the
column ``run_metadata``: Benchpark's system and experiment, the Ramble application, workload,
experiment, status and modifiers, and every variable ``results.latest.json`` recorded for the
experiment (``ramble.variable.<name>``: ``n_ranks``, ``n_nodes``, ``n_threads_per_proc``, the
system's ``sys_cores_per_node``, ...). ``xamm_data.tables.workflow.metadata_columns`` makes them
columns. A workspace never analysed (no ``results.latest.json``) still gives its runs, with the
names its directories carry and a note in ``ramble.results``. Files of the workspace that are no
experiment's output (configurations, logs, inventories) are listed as ignored.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from xamm_ingest.errors import IngestError
from xamm_ingest.formats import rajaperf
from xamm_ingest.readers.base import ReadResult
from xamm_ingest.readers.ramble import (
    experiment_dirs,
    find_workspaces,
    inside,
    read_workspace,
    workspace_of,
)
from xamm_ingest.report import Rejected
from xamm_ingest.sources import Plan, Task, ingest_root

#: what Ramble writes in an experiment directory that is no benchmark output
RAMBLE_FILES = ("ramble_inventory.json", "execute_experiment", ".ramble-experiment")


def plan(paths: list[Path], opts: dict) -> Plan:
    """The RAJAPerf sources of every experiment of every workspace under ``paths``."""
    out = Plan(root=ingest_root(paths))
    for p in paths:
        found = find_workspaces(p) if p.is_dir() else []
        if not found:
            out.rejected.append(Rejected(str(p), "not a Ramble workspace (configs/ramble.yaml and "
                                         "experiments/) nor a folder holding one"))  # fmt: skip
            continue
        for ws in found:
            try:
                read_workspace(ws)
            except IngestError as e:
                out.rejected.append(Rejected(e.path, str(e)))
                continue
            dirs = _within(experiment_dirs(ws), ws, out)
            if not dirs:
                out.ignored.append(f"{ws}: no experiment directory under experiments/")
                continue
            sub = rajaperf.plan(dirs, opts)
            tasks = [t for t in sub.tasks if t.path in _within([t.path], ws, out)]
            out.tasks += [dataclasses.replace(t, fmt="benchpark", root=out.root) for t in tasks]
            out.rejected += sub.rejected
            out.ignored += [f for f in sub.ignored if not f.endswith(RAMBLE_FILES)]
    return out


def _within(paths: list[Path], ws: Path, out: Plan) -> list[Path]:
    """``paths`` that lie in the workspace; a link out of it is refused by name (its rows would
    carry a file the workspace does not hold)."""
    kept = []
    for p in paths:
        if inside(p, ws):
            kept.append(p)
        else:
            out.rejected.append(
                Rejected(
                    str(p),
                    f"{p}: a link out of the workspace {ws}; refused",
                    problem="a link out of the workspace",
                )
            )
    return kept


def read(task: Task, opts: dict) -> ReadResult:
    """One RAJAPerf source of an experiment, each row with the experiment's ``run_metadata``."""
    if task.path.name.endswith(RAMBLE_FILES):
        return ReadResult(notes=[f"ignored {task.path.name}: written by Ramble, not RAJAPerf"])
    where = workspace_of(task.path)
    if where is None:
        raise IngestError(task.path, "not inside a Ramble workspace's experiments/ directory")
    ws, names = where
    meta = read_workspace(ws).metadata(names)
    got = rajaperf.read(task, opts)
    for row in got.rows:
        row["run_metadata"] = meta
    return got
