"""An HPCToolkit database read once, for ``xamm predict`` and for the store.

:func:`read_hpctoolkit_regions` turns a database directory into a
:class:`~xamm_data.tables.regions.RegionProfile`; ``xamm-ingest hpctoolkit`` stores the same reading
(:func:`xamm_ingest.readers.profile_common.whole_program`).

* **Old format** (``experiment.xml`` + ``*.metric-db``), through Hatchet: one region per CCT node,
  times the mean over ranks and threads; totals the root's inclusive value of every other metric,
  summed over ranks and threads, named ``BASE (unit)`` as ``experiment.xml`` declares them.
* **New format** (``meta.db``/``profile.db``, read directly:
  :mod:`~xamm_ingest.readers.hpctoolkit_db`): one region per function context (and entry point)
  from the summary profile's inclusive sums: time the mean over the profiles that measured it,
  exclusive time the inclusive less the callees', counters summed over profiles; totals every
  metric's whole-program sum over profiles. Loops and lines fold into their function. A
  pre-release database is one whole-program region.
* **Time**: REALTIME, else CPUTIME; a database that counted ``cycles`` but no time is read with the
  clock rate given (``clock_ghz``), never a guessed one. Without time a prediction is refused; the
  store (``require_time=False``) keeps the counters with no regions and no runtime.
* **The whole program**: the sum of the regions' exclusive times (the mean over ranks and threads
  of the root's inclusive time; docs/decisions.md, "one time per profile").
"""

from __future__ import annotations

import warnings
from pathlib import Path

import polars as pl

from xamm_data.tables import counters
from xamm_data.tables.regions import (
    LINE_BYTES,
    SCHEMA,
    ProfileMeta,
    RegionProfile,
    RegionProfileError,
    category_expr,
    check_regions,
    conform_regions,
    inherit_categories,
    work_from_counters,
)
from xamm_data.tables.units import TIME_UNITS, seconds_per
from xamm_ingest.errors import IngestError
from xamm_ingest.readers.base import Source
from xamm_ingest.readers.hpctoolkit_db import read_contexts, read_summary
from xamm_ingest.readers.hpctoolkit_files import declared_metrics, split_unit

__all__ = ["read_hpctoolkit_regions"]

_TIME_NAMES = ("cputime", "realtime")


def _hatchet_paths(gf) -> dict[int, tuple[str, str | None, str]]:
    """Node id -> (region path, parent path, own label), in the tree's order; a label repeated
    under one parent (a loop at two lines) gets its place among them (``#2``, ``#3``), so every
    path is unique. Hatchet numbers nodes differently from one read to the next, so neither
    names nor order may depend on its node ids: siblings are walked in the order of their frames'
    attributes (file, line, type), which the database fixes."""
    out: dict[int, tuple[str, str | None, str]] = {}
    seen: dict[str, int] = {}

    def walk(node, parent: str | None) -> None:
        label = str(node.frame.get("name"))
        path = f"{parent}/{label}" if parent else label
        seen[path] = seen.get(path, 0) + 1
        if seen[path] > 1:
            path = f"{path}#{seen[path]}"
        out[node._hatchet_nid] = (path, parent, label)
        for child in sorted(node.children, key=_frame_key):
            walk(child, path)

    for root in sorted(gf.graph.roots, key=_frame_key):
        walk(root, None)
    return out


def _frame_key(node) -> str:
    """A hatchet node's frame attributes as one sortable text."""
    return repr(sorted((str(k), str(v)) for k, v in node.frame.attrs.items()))


def _region_tree(contexts: pl.DataFrame) -> pl.DataFrame:
    """Entry points and function contexts as regions: ``ctx_id``, ``region`` (path of region
    labels), ``parent`` (the nearest enclosing region's path) and ``name``. Loops, lines and
    instructions fold into the function that encloses them."""
    ids = contexts.get_column("ctx_id").to_list()
    parents = contexts.get_column("parent_id").to_list()
    kinds = contexts.get_column("lexical").to_list()
    names = contexts.get_column("name").to_list()
    # the walk lists every context after its parent, so one pass finds each nearest region
    nearest: dict[int, int] = {0: 0}
    path: dict[int, str] = {}
    seen: set[str] = set()
    rows: dict[str, list] = {"ctx_id": [], "region": [], "parent": [], "name": []}
    for cid, pid, kind, name in zip(ids, parents, kinds, names):
        up = nearest.get(pid, 0)
        if kind not in ("entry", "function"):
            nearest[cid] = up
            continue
        nearest[cid] = cid
        label = name or f"<{kind}>"
        full = f"{path[up]}/{label}" if up else label
        if full in seen:  # one function called from two lines of its caller
            full = f"{full}#{cid}"
        seen.add(full)
        path[cid] = full
        for k, v in zip(rows, (cid, full, path.get(up), label)):
            rows[k].append(v)
    return pl.DataFrame(
        rows,
        schema={"ctx_id": pl.UInt32, "region": pl.String, "parent": pl.String, "name": pl.String},
    )


def _exclusive(tree: pl.DataFrame, inclusive: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    """``inclusive`` (one row per region) with ``<col>_exc`` = the region's value less its
    child regions', clipped at 0 against rounding."""
    kids = (
        tree.select("region", "parent")
        .join(inclusive, on="region")
        .group_by("parent")
        .agg(pl.col(cols).sum())
        .rename({c: f"_kids_{c}" for c in cols})
    )
    out = inclusive.join(
        kids, left_on="region", right_on="parent", how="left", maintain_order="left"
    )
    return out.with_columns(
        (pl.col(c) - pl.col(f"_kids_{c}").fill_null(0.0)).clip(lower_bound=0.0).alias(f"{c}_exc")
        for c in cols
    ).drop(f"_kids_{c}" for c in cols)


def _load_old(path: Path):
    """(Hatchet's graph frame, the metric names ``experiment.xml`` declares)."""
    try:
        # only old-format HPCToolkit databases need hatchet (about 190 MB with pandas)
        import hatchet as ht
    except ImportError:
        raise RegionProfileError(
            f"{path}: an old-format HPCToolkit database (experiment.xml) needs the hatchet extra: "
            "pip install 'xamm[hatchet]' (new-format databases with meta.db need nothing more)"
        ) from None
    try:
        declared = declared_metrics(Source.of(path))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gf = ht.GraphFrame.from_hpctoolkit(str(path))
    except IngestError as e:
        raise RegionProfileError(str(e)) from None
    except Exception as e:  # hatchet's own errors on a damaged database
        raise RegionProfileError(
            f"{path}: Hatchet could not read it ({type(e).__name__}: {e})"
        ) from None
    return gf, declared


def _declared_units(declared: list[str]) -> dict[str, tuple[str, str | None]]:
    """lower-case base name -> (base, unit), from names such as ``CPUTIME (usec):Sum (I)``."""
    out = {}
    for n in declared:
        base, unit = split_unit(n.split(":")[0])
        out.setdefault(base.lower(), (base, unit))
    return out


def _old_totals(gf, df, units: dict) -> dict[str, float]:
    """Every inclusive metric but time at the root, summed over ranks and threads."""
    rows = df[df["node"] == gf.graph.roots[0]]
    out: dict[str, float] = {}
    for col in gf.inc_metrics:
        hname = col[: -len(" (inc)")] if col.endswith(" (inc)") else col
        if hname == "time":
            continue
        base, unit = units.get(hname.lower(), (hname, None))
        out[f"{base} ({unit})" if unit else base] = float(rows[col].sum())
    return out


def _old_hpctoolkit(path: Path) -> tuple[pl.DataFrame | None, str, dict, int | None, int | None]:
    """(regions or None without time, how they were timed, totals, ranks, threads)."""
    gf, declared = _load_old(path)
    units = _declared_units(declared)
    base, unit = next(
        ((b, u) for k, (b, u) in units.items() if k in _TIME_NAMES), ("CPUTIME", "usec")
    )
    df = gf.dataframe.reset_index()
    by = [c for c in ("rank", "thread") if c in df.columns]
    ranks = int(df["rank"].nunique()) if "rank" in by else None
    threads = int(df["thread"].nunique()) if "thread" in by else None
    totals = _old_totals(gf, df, units)
    if "time (inc)" not in df.columns:
        return None, "no time metric in the database", totals, ranks, threads
    if TIME_UNITS.get((unit or "sec").lower()) is None:
        raise RegionProfileError(
            f"{path / 'experiment.xml'}: time metric {base} has unit {unit!r}; expected sec/usec/ns"
        )
    scale = seconds_per(unit or "usec")
    paths = _hatchet_paths(gf)
    # the mean over every rank and thread, a context none of whose samples fell on some of them
    # counting 0 there: then children nest within parents and exclusive times add up to the root
    profiles = len(df[by].drop_duplicates()) if by else 1
    # hatchet's frame comes in no fixed order: rows are put in the tree's order, ranks and
    # threads ascending, so that regions and their sums are the same on every read
    order = {nid: i for i, nid in enumerate(paths)}
    frame = (
        pl.DataFrame(
            {
                "nid": [n._hatchet_nid for n in df["node"]],
                "_order": [order[n._hatchet_nid] for n in df["node"]],
                **{c: df[c].to_numpy() for c in by},
                "inclusive_s": df["time (inc)"].to_numpy() * scale,
                "exclusive_s": df["time"].to_numpy() * scale,
            }
        )
        .sort("_order", *by)
        .group_by("nid", maintain_order=True)
        .agg(pl.col("inclusive_s", "exclusive_s").sum() / profiles)
    )
    info = [paths[n] for n in frame.get_column("nid")]
    frame = frame.with_columns(
        pl.Series("region", [i[0] for i in info]),
        pl.Series("parent", [i[1] for i in info], dtype=pl.String),
        pl.Series("name", [i[2] for i in info]),
    )
    over = " x ".join(
        f"{n} {what}{'' if n == 1 else 's'}"
        for n, what in ((ranks, "rank"), (threads, "thread"))
        if n is not None
    )
    how = f"HPCToolkit {base} ({unit}), mean over {over or 'one profile'}"
    return frame, how, totals, ranks, threads


def _time_metric(
    summary, path: Path, clock_ghz: float | None, required: bool
) -> tuple[str, float, int, str] | None:
    """(metric, seconds per unit of it, profiles that measured it, what it is); None when the
    database measured no time and ``required`` is False."""
    by_base = {split_unit(m.name)[0].lower(): m for m in summary.metrics if m.values}
    for base in ("realtime", "cputime"):
        if base in by_base:
            m = by_base[base]
            unit = split_unit(m.name)[1] or "sec"
            if TIME_UNITS.get(unit.lower()) is None:
                raise RegionProfileError(
                    f"{path / 'meta.db'}: time metric {m.name!r} has unit {unit!r}; expected "
                    "sec/usec/ns"
                )
            return m.name, seconds_per(unit), m.profiles or summary.n_profiles, m.name
    if "cycles" in by_base and clock_ghz:
        m = by_base["cycles"]
        return (
            m.name,
            1e-9 / clock_ghz,
            m.profiles or summary.n_profiles,
            f"cycles / {clock_ghz:g} GHz (the clock given)",
        )
    if not required:
        return None
    have = ", ".join(sorted(m.name for m in by_base.values())) or "no metrics"
    how = (
        "; it counted cycles: pass the clock rate (--clock-ghz, read_regions(clock_ghz=)) to "
        "take time as cycles / clock"
        if "cycles" in by_base
        else "; re-run hpcrun with -e REALTIME or -e CPUTIME"
    )
    raise RegionProfileError(
        f"{path}: the database measured no time (no REALTIME or CPUTIME metric; it has {have}); "
        f"a prediction needs the profile's time{how}"
    )


def _new_totals(summary) -> dict[str, float]:
    """Every metric's whole-program sum over profiles, the time metrics aside."""
    return {
        m.name: m.values["sum"]
        for m in summary.metrics
        if "sum" in m.values and split_unit(m.name)[0].lower() not in _TIME_NAMES
    }


def _whole_program(summary, metric: str, scale: float, n: int) -> pl.DataFrame:
    """The whole run as one region, from the summary profile's global context."""
    sums = {m.name: m.values["sum"] for m in summary.metrics if "sum" in m.values}
    t = sums[metric] * scale / n
    ctr = {
        f"ctr_{c}": [v]
        for name, v in sums.items()
        if name != metric and (c := counters.resolve(split_unit(name)[0])) is not None
    }
    return pl.DataFrame(
        {
            "region": ["<program root>"],
            "name": ["<program root>"],
            "parent": [None],
            "inclusive_s": [t],
            "exclusive_s": [t],
            **ctr,
        },
        schema_overrides={"parent": pl.String},
    )


def _contexts_frame(path: Path, metric: str, scale: float, n: int) -> pl.DataFrame:
    """One region per function context, per-profile means of time, counters summed."""
    contexts, values = read_contexts(path)
    ctr = {
        m: f"ctr_{c}"
        for m in values.get_column("metric").unique().to_list()
        if (c := counters.resolve(split_unit(m)[0])) is not None
    }
    tree = _region_tree(contexts)
    wide = (
        values.filter(pl.col("metric").is_in([metric, *ctr]))
        .with_columns(pl.col("metric").replace({metric: "_time"}))
        .pivot(on="metric", index="ctx_id", values="value", aggregate_function="sum")
    )
    cols = [c for c in ("_time", *ctr) if c in wide.columns]
    inc = tree.join(wide, on="ctx_id", how="left", maintain_order="left").with_columns(
        pl.col(cols).fill_null(0.0)
    )
    inc = _exclusive(tree, inc, cols)
    return inc.select(
        "region",
        "name",
        "parent",
        (pl.col("_time") * (scale / n)).alias("inclusive_s"),
        (pl.col("_time_exc") * (scale / n)).alias("exclusive_s"),
        *(pl.col(f"{m}_exc").alias(c) for m, c in ctr.items() if m in cols and m != metric),
    )


def _new_hpctoolkit(
    path: Path, clock_ghz: float | None, required: bool
) -> tuple[pl.DataFrame | None, str, dict]:
    """(regions or None without time, how they were timed, totals). A pre-release database,
    whose context tree is laid out otherwise, is one whole-program region."""
    try:
        summary = read_summary(path)
        if not any(m.values for m in summary.metrics):
            raise RegionProfileError(
                f"{path / 'profile.db'}: no whole-program (execution-scope) values in the summary "
                "profile"
            )
        totals = _new_totals(summary)
        timed = _time_metric(summary, path, clock_ghz, required)
        if timed is None:
            return None, "no time metric in the database", totals
        metric, scale, n, what = timed
        head = f"HPCToolkit {what}, mean over the {n} profiles (ranks x threads) that measured it"
        if summary.prerelease:
            frame = _whole_program(summary, metric, scale, n)
            return (
                frame,
                f"{head}; one whole-program region (a pre-release database layout)",
                totals,
            )
        frame = _contexts_frame(path, metric, scale, n)
    except IngestError as e:
        raise RegionProfileError(str(e)) from None
    return frame, f"{head}, per function context (exclusive: less its callees)", totals


def read_hpctoolkit_regions(
    path: str | Path,
    *,
    line_bytes: int = LINE_BYTES,
    clock_ghz: float | None = None,
    require_time: bool = True,
) -> RegionProfile:
    """An HPCToolkit database: regions, totals and metadata (see the module docstring).

    Args:
        path: the database directory.
        line_bytes: bytes per last-level-cache miss.
        clock_ghz: the measured cores' clock rate, for a new-format database that counted
            ``cycles`` but no time (time = cycles / clock).
        require_time: refuse a database that measured no time (a prediction needs it); False
            returns its totals with no regions (the store keeps its counters).

    Returns:
        The profile, checked.
    """
    path = Path(path)
    ranks = threads = None
    if (path / "meta.db").is_file():
        frame, time_from, totals = _new_hpctoolkit(path, clock_ghz, require_time)
        fmt = "hpctoolkit-latest"
    elif (path / "experiment.xml").is_file():
        frame, time_from, totals, ranks, threads = _old_hpctoolkit(path)
        fmt = "hpctoolkit"
        if frame is None and require_time:
            raise RegionProfileError(
                f"{path}: the database measured no time; a prediction needs it"
            )
    else:
        raise RegionProfileError(
            f"{path}: neither meta.db (new format) nor experiment.xml (old format); expected an "
            "HPCToolkit database directory"
        )
    meta = ProfileMeta(
        path=str(path),
        format=fmt,
        app=path.name,
        ranks=ranks,
        threads=threads,
        time_from=time_from,
    )
    if frame is None:
        return RegionProfile(meta, pl.DataFrame(schema=SCHEMA), totals)
    frame = work_from_counters(frame, line_bytes).with_columns(category_expr("name"))
    regions = conform_regions(inherit_categories(frame))
    check_regions(regions, str(path))
    return RegionProfile(meta, regions, totals)
