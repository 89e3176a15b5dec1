"""``benchmark_runs`` rows to a Thicket and back, without loss.

:func:`to_thicket` makes one Thicket profile per run (the columns a source's rows share: machine,
variant, tuning, build, provenance, ... :data:`PROFILE_COLUMNS`, held in ``tk.metadata``) and one
node per kernel under ``RAJAPerf -> group``, the call tree RAJAPerf records. Every other column is a
metric of (node, profile) under its schema name, ``time_per_rep_s`` the default metric, so Thicket's
tools (``tk.tree()``, ``thicket.stats``, queries, ``to_json()``) work on it. The metadata column
:data:`MARKER` names the table and schema version; :func:`rows_of_thicket`
(``xamm_ingest.from_thicket`` calls it) gives back exactly the rows it was made from.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime

import polars as pl

from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_data.tables.validate import require_frame

PROFILE_COLUMNS = (
    "machine",
    "device",
    "suite",
    "suite_version",
    "variant",
    "backend",
    "tuning",
    "compiler",
    "compiler_flags",
    "problem_size_param",
    "npasses",
    "threads",
    "ranks",
    "omp_max_threads",
    "source_path",
    "source_sha256",
    "source_format",
    "reader",
    "xamm_version",
    "tool_versions",
    "run_date",
)
MARKER = "xamm.table"
ROOT = "RAJAPerf"


def _profile_id(values: dict) -> int:
    """A stable integer id per profile (Thicket's own ids are integers too)."""
    text = json.dumps(values, sort_keys=True, default=str)
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


def _check_unique(frame: pl.DataFrame) -> None:
    dup = frame.group_by([*PROFILE_COLUMNS, "kernel"]).len().filter(pl.col("len") > 1)
    if dup.height:
        first = dup.row(0, named=True)
        raise ValueError(
            f"{dup.height} (run, kernel) pair(s) occur more than once, e.g. "
            f"kernel {first['kernel']!r} of "
            f"{first['source_path']!r} ({first['len']} rows); a Thicket has "
            "one row per node and profile"
        )


def kernel_graph(frame: pl.DataFrame, root_name: str = ROOT):
    """The ``root_name -> group -> kernel`` tree of ``frame``'s ``group`` and ``kernel`` columns
    (RAJAPerf's own call tree), and each kernel's node.

    Args:
        frame: rows with ``group`` and ``kernel``.
        root_name: the root node's name.

    Returns:
        (a hatchet ``Graph``, kernel -> its node).
    """
    from hatchet.frame import Frame  # heavy (pandas): only when a Thicket is asked for
    from hatchet.graph import Graph  # heavy, as above
    from hatchet.node import Node  # heavy, as above

    root = Node(Frame({"name": root_name, "type": "function"}), None)
    nodes = {}
    for group in sorted(frame.get_column("group").unique().to_list()):
        g = Node(Frame({"name": group, "type": "function"}), root)
        root.add_child(g)
        for kernel in sorted(
            frame.filter(pl.col("group") == group).get_column("kernel").unique().to_list()
        ):
            k = Node(Frame({"name": kernel, "type": "function"}), g)
            g.add_child(k)
            nodes[kernel] = k
    graph = Graph([root])
    graph.enumerate_traverse()
    return graph, nodes


def to_thicket(frame: pl.DataFrame):
    """A Thicket of ``benchmark_runs`` rows (see the module docstring).

    Args:
        frame: ``benchmark_runs`` rows.

    Returns:
        A ``thicket.Thicket``, one profile per run.

    Raises:
        TypeError: ``frame`` is no polars DataFrame.
        ValueError: a (run, kernel) occurs twice.
    """
    frame = require_frame(frame, "to_thicket")  # before the import: a mistake, with or without it
    try:
        import pandas as pd  # heavy: only when a Thicket is asked for
        import thicket  # heavy, as above
    except ImportError as e:
        # a ModuleNotFoundError of the extra's module: the commands print its one-line hint
        raise ModuleNotFoundError(
            f"to_thicket needs Thicket ({e}): pip install 'xamm[thicket]'", name="thicket"
        ) from None

    missing = [c for c in BENCHMARK_RUNS.names if c not in frame.columns]
    if missing:
        raise ValueError(f"not benchmark_runs rows: missing columns {missing}")
    frame = frame.select(BENCHMARK_RUNS.names)
    _check_unique(frame)
    runs = frame.select(PROFILE_COLUMNS).unique().sort(PROFILE_COLUMNS, nulls_last=True)
    meta = runs.with_columns(pl.col("run_date").dt.to_string("%Y-%m-%dT%H:%M:%S%.f%z")).to_dicts()
    ids = [_profile_id(m) for m in meta]
    graph, nodes = kernel_graph(frame)
    rows = frame.join(
        runs.with_columns(pl.Series("profile", ids)), on=PROFILE_COLUMNS, nulls_equal=True
    )
    metrics = [c for c in BENCHMARK_RUNS.names if c not in PROFILE_COLUMNS]
    records = [
        {
            "node": nodes[r["kernel"]],
            "profile": r["profile"],
            "name": r["kernel"],
            **{c: r[c] for c in metrics},
        }
        for r in rows.select("profile", *metrics).to_dicts()
    ]
    df = pd.DataFrame.from_records(records).set_index(["node", "profile"]).sort_index()
    md = pd.DataFrame.from_records(meta, index=pd.Index(ids, name="profile"))
    md[MARKER] = f"{BENCHMARK_RUNS.name}@{BENCHMARK_RUNS.version}"
    numeric = [c for c in metrics if BENCHMARK_RUNS.column(c).dtype in ("float64", "int64")]
    return thicket.Thicket(
        graph,
        df,
        exc_metrics=numeric,
        inc_metrics=[],
        default_metric="time_per_rep_s",
        metadata=md,
        profile=ids,
        profile_mapping=dict(zip(ids, runs.get_column("source_path"))),
    )


def is_xamm_thicket(tk) -> bool:
    """Whether ``tk`` was made by :func:`to_thicket` (its metadata names the table)."""
    return hasattr(tk, "metadata") and MARKER in tk.metadata.columns


def _value(v, dtype: str):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    v = v.item() if hasattr(v, "item") else v
    if dtype == "int64":
        return int(v)
    if dtype == "float64":
        return float(v)
    if dtype == "datetime":
        return datetime.fromisoformat(v) if isinstance(v, str) else v
    return v


def thicket_records(tk) -> list[dict]:
    """The rows of a :func:`to_thicket` Thicket (also after ``to_json`` / ``Thicket.from_json``) as
    dicts of Python values typed by the schema; no polars (readers run this in forked workers)."""
    marker = str(tk.metadata[MARKER].iloc[0])
    name, _, version = marker.partition("@")
    if name != BENCHMARK_RUNS.name or version.split(".")[0] != BENCHMARK_RUNS.version.split(".")[0]:
        raise ValueError(
            f"the Thicket holds {marker}; this xamm reads "
            f"{BENCHMARK_RUNS.name}@{BENCHMARK_RUNS.version}"
        )
    idx = tk.profile_idx_name
    df = tk.dataframe.reset_index()
    df = df[df["kernel"].notna()]
    meta = {r[idx]: r for r in tk.metadata.reset_index().to_dict("records")}
    types = {c.name: c.dtype for c in BENCHMARK_RUNS.columns}
    return [
        {c: _value({**meta[r[idx]], **r}.get(c), t) for c, t in types.items()}
        for r in df.to_dict("records")
    ]


def rows_of_thicket(tk) -> pl.DataFrame:
    """:func:`thicket_records` as a frame sorted by the table's primary key: the rows
    :func:`to_thicket` was given."""
    out = pl.DataFrame(thicket_records(tk), schema=BENCHMARK_RUNS.polars_schema)
    return out.sort(list(BENCHMARK_RUNS.primary_key), nulls_last=True)
