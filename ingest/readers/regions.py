"""Profiles read region by region, for prediction (:mod:`xamm_data.regions`' contract).

:func:`read_regions` takes what an application team has:

* a **Caliper** profile (``.cali``, or JSON as ``cali-query`` writes it): one region per ``path``.
  Times: the per-rank mean (``avg#`` attributes of a spot profile, else the mean over
  ``mpi.rank``); exclusive time from an exclusive attribute, else the inclusive time less the
  children's. Units from ``attribute.unit``, a ``.ns`` suffix or ``time_unit``. Work from RAJAPerf's
  annotations (``Bytes/Rep``, ``Flops/Rep`` x ``Reps``) or canonical counters
  (:func:`xamm_data.regions.work_from_counters`). Regions with ``mpi.function`` or an MPI name are
  communication. The source machine is the ``cluster`` global where the registry knows it;
* an **HPCToolkit** database: old format (``experiment.xml``) region by region through Hatchet, the
  mean over ranks and threads; new format (``meta.db``) one region per function context (and entry
  point) from the summary profile's inclusive sums (:mod:`~xamm_ingest.readers.hpctoolkit_db`):
  time the mean over the profiles that measured it, exclusive time the inclusive less the callees',
  counters summed over profiles. A database that counted ``cycles`` but no time is read with the
  clock rate given (``clock_ghz``), never a guessed one;
* a **table** of regions (``.csv`` or ``.parquet``): ``region`` and ``exclusive_s`` (or ``time_s``),
  optionally ``inclusive_s``, ``calls``, ``bytes``, ``flops``, ``parent``, ``category``.

Every failure is a :class:`~xamm_data.regions.RegionProfileError` naming the file and what was
expected.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import polars as pl
from xamm_ingest.errors import IngestError
from xamm_ingest.readers.base import Source
from xamm_ingest.readers.caliper_files import load_profile
from xamm_ingest.readers.hpctoolkit import declared_metrics, split_unit
from xamm_ingest.readers.hpctoolkit_db import read_contexts, read_summary

from xamm_data import counters
from xamm_data.machines import canonical_id
from xamm_data.regions import (
    LINE_BYTES,
    ProfileMeta,
    RegionProfile,
    RegionProfileError,
    category_expr,
    check_regions,
    conform_regions,
    inherit_communication,
    work_from_counters,
)
from xamm_data.units import seconds_per

CALIPER_SUFFIXES = (".cali", ".json")
TABLE_SUFFIXES = (".csv", ".parquet")
_ANNOTATIONS = ("Reps", "Bytes/Rep", "Flops/Rep", "Kernels/Rep")
_GPU_ATTRIBUTE_PREFIXES = ("cupti.", "rocm.", "roctracer.", "cuda.", "nvtx.")
_THREAD_KEYS = ("omp.num.threads", "omp_max_threads", "num_threads", "threads")
_RANK_KEYS = ("mpi.world.size", "jobsize", "num_procs")


def _num(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _base(attr: str) -> str:
    """An attribute's name without Caliper's aggregation prefixes (``avg#sum#`` ...)."""
    return attr.split("#")[-1]


def _pick(names: list[str]) -> str | None:
    """The per-rank mean where the profile has one (``avg#``), else a plain or summed attribute;
    never a min or max over ranks."""
    ok = [n for n in names if not n.startswith(("min#", "max#", "variance#"))]
    return (sorted(ok, key=lambda n: (not n.startswith("avg#"), n)) or [None])[0]


def _is_time(attr: str) -> bool:
    return _base(attr).startswith("time.duration")


def _time_attributes(numeric: list[str], world: int | None) -> tuple[str | None, str | None, int]:
    """The inclusive and exclusive time attributes and what divides them. A spot profile across
    ``world`` ranks keeps totals over all ranks (``sum#``): divided by ``world`` they are means
    over every rank, which nest (a child within its parent); its ``avg#`` values average only
    the ranks that entered each region, so a child on a few ranks can outlast its parent."""
    # wall-clock time only (``time.duration``): GPU activity (``cupti.activity.duration``) is not
    inc_names = [k for k in numeric if _is_time(k) and ("inclusive" in k or "#iscale#" in k)]
    exc_names = [k for k in numeric if _is_time(k) and not ("inclusive" in k or "#iscale#" in k)]
    if world:
        totals = [
            sorted(n for n in names if n.startswith("sum#")) for names in (inc_names, exc_names)
        ]
        if totals[0] or totals[1]:
            return (totals[0] or [None])[0], (totals[1] or [None])[0], world
    return _pick(inc_names), _pick(exc_names), 1


def _seconds(prof, attr: str, time_unit: str | None, path: Path) -> float:
    unit = prof.meta.get(attr, {}).get("attribute.unit") or (
        "ns" if attr.endswith(".ns") else time_unit
    )
    if unit is None:
        raise RegionProfileError(
            f"{path}: time attribute {attr!r} has no unit metadata; pass --time-unit "
            "(sec, ms, usec or ns)"
        )
    try:
        return seconds_per(unit)
    except ValueError as e:
        raise RegionProfileError(f"{path}: {attr}: {e}") from None


def _record_rows(recs: list[dict], attrs: list[str]) -> pl.DataFrame:
    rows = []
    for r in recs:
        p = r["path"] if isinstance(r["path"], list) else [r["path"]]
        labels = [str(x) for x in p]
        rows.append(
            {
                "region": "/".join(labels),
                "name": labels[-1],
                "parent": "/".join(labels[:-1]) or None,
                "rank": str(r.get("mpi.rank", "0")),
                "mpi": r.get("mpi.function"),
                **{a: _num(r.get(a)) for a in attrs},
            }
        )
    schema = {
        "region": pl.String,
        "name": pl.String,
        "parent": pl.String,
        "rank": pl.String,
        "mpi": pl.String,
        **{a: pl.Float64 for a in attrs},
    }
    return pl.DataFrame(rows, schema=schema)


def _per_region(frame: pl.DataFrame, attrs: list[str]) -> pl.DataFrame:
    """Summed within a rank (records that differ in other attributes), then the mean over ranks;
    an attribute no record of a region holds stays null."""
    per_rank = frame.group_by("region", "rank", maintain_order=True).agg(
        pl.col("name", "parent").first(),
        pl.col("mpi").drop_nulls().first(),
        *(pl.when(pl.col(a).is_not_null().any()).then(pl.col(a).sum()).alias(a) for a in attrs),
    )
    return per_rank.group_by("region", maintain_order=True).agg(
        pl.col("name", "parent").first(),
        pl.col("mpi").drop_nulls().first(),
        *(pl.col(a).mean() for a in attrs),
        pl.col("rank").n_unique().alias("n_ranks"),
    )


def _exclusive_from_inclusive(frame: pl.DataFrame) -> pl.DataFrame:
    """``exclusive_s`` = ``inclusive_s`` less the children's, where the profile has only
    inclusive times (never below 0: the children's per-rank means may overlap their parent's)."""
    children = (
        frame.filter(pl.col("parent").is_not_null())
        .group_by("parent")
        .agg(pl.col("inclusive_s").sum().alias("_children"))
    )
    return (
        frame.join(children, left_on="region", right_on="parent", how="left")
        .with_columns(
            (pl.col("inclusive_s") - pl.col("_children").fill_null(0.0))
            .clip(lower_bound=0.0)
            .alias("exclusive_s")
        )
        .drop("_children")
    )


def _annotated_work(frame: pl.DataFrame, by_base: dict[str, str]) -> pl.DataFrame | None:
    """RAJAPerf's own annotations: bytes and flops per rep x reps, launches = reps x kernels; on
    kernels (leaf regions) only: a group or the root carries some child's value (``any#``)."""
    if not {"Reps", "Bytes/Rep"} <= set(by_base):
        return None
    parents = frame.get_column("parent").drop_nulls().unique()
    leaf = ~pl.col("region").is_in(parents.implode())
    reps = pl.when(leaf).then(pl.col(by_base["Reps"]))
    kernels = pl.col(by_base["Kernels/Rep"]) if "Kernels/Rep" in by_base else pl.lit(1.0)
    flops = pl.col(by_base["Flops/Rep"]) * reps if "Flops/Rep" in by_base else None
    return frame.with_columns(
        (pl.col(by_base["Bytes/Rep"]) * reps).alias("bytes"),
        (flops if flops is not None else pl.lit(None, pl.Float64)).alias("flops"),
        (reps * kernels).alias("calls"),
        pl.lit("annotations: bytes = Bytes/Rep x Reps; flops = Flops/Rep x Reps").alias(
            "work_from"
        ),
    )


def _counter_columns(numeric: list[str]) -> dict[str, str]:
    """Canonical counter -> the attribute measuring it (the per-rank mean where there is one)."""
    found: dict[str, list[str]] = {}
    for k in numeric:
        if (c := counters.resolve(_base(k))) is not None:
            found.setdefault(c, []).append(k)
    return {c: a for c, names in found.items() if (a := _pick(names)) is not None}


def _calls_attribute(numeric: list[str]) -> str | None:
    return _pick([k for k in numeric if _base(k) in ("count", "visits", "calls")])


def _work(frame: pl.DataFrame, numeric: list[str], line_bytes: int) -> pl.DataFrame:
    by_base = {_base(k): k for k in numeric if _base(k) in _ANNOTATIONS}
    annotated = _annotated_work(frame, by_base)
    if annotated is not None:
        return annotated
    ctr = _counter_columns(numeric)
    calls = _calls_attribute(numeric)
    frame = frame.with_columns(
        *(pl.col(a).alias(f"ctr_{c}") for c, a in ctr.items()),
        (pl.col(calls) if calls else pl.lit(None, pl.Float64)).alias("calls"),
    )
    return work_from_counters(frame, line_bytes)


def _first_int(g: dict, keys: tuple[str, ...]) -> int | None:
    for k in keys:
        if (v := _num(g.get(k))) is not None and v >= 0:
            return int(v)
    return None


def _caliper_source(g: dict, attrs: list[str]) -> tuple[str | None, str]:
    """``machine:device`` from the ``cluster`` global and whether GPU attributes were measured."""
    cluster = g.get("cluster")
    if not cluster:
        return None, "the profile names no cluster"
    machine = canonical_id(str(cluster))
    if machine is None:
        return None, f"its cluster {cluster!r} is not in the machine registry"
    gpu = any(a.startswith(_GPU_ATTRIBUTE_PREFIXES) for a in attrs) or bool(
        _first_int(g, ("gpus", "num_gpus"))
    )
    device = "gpu" if gpu else "cpu"
    why = "GPU activity attributes" if gpu else "no GPU attributes or GPU count"
    return f"{machine}:{device}", f"Caliper global cluster={cluster}; {device}: {why}"


def _caliper_meta(prof, path: Path, attrs: list[str], time_from: str) -> ProfileMeta:
    g = prof.globals
    exe = g.get("executablepath") or g.get("executable")
    app = g.get("app") or g.get("application") or (Path(str(exe)).name if exe else path.stem)
    source, source_from = _caliper_source(g, attrs)
    return ProfileMeta(
        path=str(path),
        format="caliper-json" if path.suffix.lower() == ".json" else "caliper-cali",
        app=str(app),
        source=source,
        source_from=source_from,
        ranks=_first_int(g, _RANK_KEYS),
        threads=_first_int(g, _THREAD_KEYS),
        gpus=_first_int(g, ("gpus", "num_gpus")),
        time_from=time_from,
    )


def _caliper_times(prof, recs, numeric, time_unit, path) -> tuple[pl.DataFrame, list[str], str]:
    spot = prof.globals.get("cali.channel") == "spot" or "spot.format.version" in prof.globals
    world = _first_int(prof.globals, ("mpi.world.size",)) if spot else None
    inc, exc, per = _time_attributes(numeric, world)
    if inc is None and exc is None:
        raise RegionProfileError(
            f"{path}: no time attribute (e.g. avg#inclusive#sum#time.duration); expected a timed "
            "Caliper region profile (the spot or runtime-report channel)"
        )
    frame = _per_region(_record_rows(recs, numeric), numeric)
    scale = {a: _seconds(prof, a, time_unit, path) / per for a in (inc, exc) if a}
    frame = frame.with_columns(
        (pl.col(inc) * scale[inc] if inc else pl.lit(None, pl.Float64)).alias("inclusive_s")
    )
    if exc:
        frame = frame.with_columns((pl.col(exc) * scale[exc]).alias("exclusive_s"))
        how = f"exclusive {exc}" + (f", inclusive {inc}" if inc else "")
    else:
        frame = _exclusive_from_inclusive(frame)
        how = f"inclusive {inc}; exclusive = inclusive less the children's"
    # a region no record timed (Caliper wrote it for its children only) holds no time of its own
    untimed = frame.filter(pl.col("exclusive_s").is_null()).height
    frame = frame.with_columns(pl.col("exclusive_s").fill_null(0.0))
    n = int(frame.get_column("n_ranks").max() or 1)
    ranks = (
        f" / {per} ranks (mean over all ranks)"
        if per > 1
        else (" (mean over ranks)" if n > 1 or (inc or exc or "").startswith("avg#") else "")
    )
    none = f"; {untimed} untimed region(s) count 0 s" if untimed else ""
    return frame, numeric, f"{how}{ranks}{none}"


def read_caliper_regions(
    path: Path, *, time_unit: str | None = None, line_bytes: int = LINE_BYTES
) -> RegionProfile:
    """One region per Caliper ``path`` (see the module docstring).

    Args:
        path: a ``.cali`` or Caliper JSON file.
        time_unit: the time attributes' unit where the file records none.
        line_bytes: bytes per last-level-cache miss.

    Returns:
        The profile, checked.
    """
    try:
        prof = load_profile(path)
    except IngestError as e:
        raise RegionProfileError(str(e)) from None
    recs = [r for r in prof.records if r.get("path")]
    if not recs:
        raise RegionProfileError(f"{path}: no region records (no 'path'); expected regions")
    keys = sorted({k for r in recs for k in r} - {"path", "region", "mpi.rank", "mpi.function"})
    numeric = [k for k in keys if any(_num(r.get(k)) is not None for r in recs[:200])]
    frame, numeric, time_from = _caliper_times(prof, recs, numeric, time_unit, path)
    frame = _work(frame, numeric, line_bytes).with_columns(category_expr("name", "mpi"))
    regions = conform_regions(inherit_communication(frame))
    check_regions(regions, str(path))
    return RegionProfile(_caliper_meta(prof, path, keys, time_from), regions)


def _read_table_file(path: Path) -> pl.DataFrame:
    try:
        if path.suffix.lower() == ".parquet":
            return pl.read_parquet(path)
        return pl.read_csv(path, infer_schema_length=10000)
    except Exception as e:  # polars' and pyarrow's errors for a damaged or foreign file
        raise RegionProfileError(
            f"{path}: cannot read it as a table ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:160]}); expected one row per region"
        ) from None


def read_table_regions(path: Path) -> RegionProfile:
    """A CSV or Parquet table of regions (see the module docstring).

    Args:
        path: the table.

    Returns:
        The profile, checked.
    """
    df = _read_table_file(path)
    if df.height == 0:
        raise RegionProfileError(f"{path}: no regions; expected one row per timed region")
    if "exclusive_s" not in df.columns and "time_s" in df.columns:
        df = df.rename({"time_s": "exclusive_s"})
    missing = [c for c in ("region", "exclusive_s") if c not in df.columns]
    if missing:
        raise RegionProfileError(
            f"{path}: no column {' or '.join(missing)}; a region table needs region and "
            "exclusive_s (or time_s, seconds), and may add inclusive_s, calls, bytes, flops, "
            f"parent, category (it has {', '.join(df.columns)})"
        )
    bad = [
        c
        for c in ("exclusive_s", "inclusive_s", "calls", "bytes", "flops")
        if c in df.columns and not df.schema[c].is_numeric()
    ]
    if bad:
        raise RegionProfileError(f"{path}: columns {bad} hold text, not numbers")
    region = pl.col("region").cast(pl.String)
    df = df.with_columns(region.alias("region"))
    if "name" not in df.columns:
        df = df.with_columns(region.str.split("/").list.last().alias("name"))
    if "parent" not in df.columns:
        df = df.with_columns(
            pl.when(region.str.contains("/"))
            .then(region.str.replace(r"/[^/]*$", ""))
            .alias("parent")
        )
    has_work = any(c in df.columns for c in ("bytes", "flops"))
    df = df.with_columns(
        pl.lit("table: bytes and flops as given" if has_work else "none: time only").alias(
            "work_from"
        ),
        *(() if "category" in df.columns else (category_expr("name"),)),
    )
    regions = conform_regions(df)
    check_regions(regions, str(path))
    meta = ProfileMeta(
        path=str(path), format="region-table", app=path.stem, time_from="column exclusive_s"
    )
    return RegionProfile(meta, regions)


def _hatchet_paths(gf) -> dict[int, tuple[str, str | None, str]]:
    """Node id -> (region path, parent path, own label); a label repeated under one parent (a
    loop at two lines) gets its node id, so every path is unique."""
    out: dict[int, tuple[str, str | None, str]] = {}
    seen: set[str] = set()

    def walk(node, parent: str | None) -> None:
        label = str(node.frame.get("name"))
        path = f"{parent}/{label}" if parent else label
        if path in seen:
            path = f"{path}#{node._hatchet_nid}"
        seen.add(path)
        out[node._hatchet_nid] = (path, parent, label)
        for child in node.children:
            walk(child, path)

    for root in gf.graph.roots:
        walk(root, None)
    return out


def _old_hpctoolkit(path: Path) -> tuple[pl.DataFrame, str, int | None, int | None]:
    try:
        # only old-format HPCToolkit databases need hatchet (about 190 MB with pandas)
        import hatchet as ht
    except ImportError:
        raise RegionProfileError(
            f"{path}: an old-format HPCToolkit database needs the hatchet extra: "
            "pip install 'xamm[hatchet]'"
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
    unit = next(
        (
            u
            for n in declared
            for b, u in [split_unit(n.split(":")[0])]
            if b.lower() in ("cputime", "realtime")
        ),
        "usec",
    )
    scale = seconds_per(unit or "usec")
    df = gf.dataframe.reset_index()
    paths = _hatchet_paths(gf)
    by = [c for c in ("rank", "thread") if c in df.columns]
    frame = (
        pl.DataFrame(
            {
                "nid": [n._hatchet_nid for n in df["node"]],
                "inclusive_s": df["time (inc)"].to_numpy() * scale,
                "exclusive_s": df["time"].to_numpy() * scale,
            }
        )
        .group_by("nid", maintain_order=True)
        .agg(pl.col("inclusive_s", "exclusive_s").mean())
    )
    info = [paths[n] for n in frame.get_column("nid")]
    frame = frame.with_columns(
        pl.Series("region", [i[0] for i in info]),
        pl.Series("parent", [i[1] for i in info], dtype=pl.String),
        pl.Series("name", [i[2] for i in info]),
    )
    ranks = int(df["rank"].nunique()) if "rank" in by else None
    threads = int(df["thread"].nunique()) if "thread" in by else None
    return (
        frame,
        f"HPCToolkit {unit} time, mean over {' x '.join(by) or 'one profile'}",
        ranks,
        threads,
    )


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
    out = inclusive.join(kids, left_on="region", right_on="parent", how="left")
    return out.with_columns(
        (pl.col(c) - pl.col(f"_kids_{c}").fill_null(0.0)).clip(lower_bound=0.0).alias(f"{c}_exc")
        for c in cols
    ).drop(f"_kids_{c}" for c in cols)


def _time_metric(summary, path: Path, clock_ghz: float | None) -> tuple[str, float, int, str]:
    """(metric, seconds per unit of it, profiles that measured it, what it is)."""
    by_base = {split_unit(m.name)[0].lower(): m for m in summary.metrics if m.values}
    for base in ("realtime", "cputime"):
        if base in by_base:
            m = by_base[base]
            unit = split_unit(m.name)[1] or "sec"
            return m.name, seconds_per(unit), m.profiles or summary.n_profiles, m.name
    if "cycles" in by_base and clock_ghz:
        m = by_base["cycles"]
        return (
            m.name,
            1e-9 / clock_ghz,
            m.profiles or summary.n_profiles,
            f"cycles / {clock_ghz:g} GHz (the clock given)",
        )
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


def _whole_program(summary, metric: str, scale: float, n: int, what: str) -> pl.DataFrame:
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


def _new_hpctoolkit(path: Path, clock_ghz: float | None = None) -> tuple[pl.DataFrame, str]:
    """Function contexts (and entry points) as regions, from the summary profile's inclusive sums:
    time is the mean over the profiles that measured it, counters the sum over profiles. A
    pre-release database, whose context tree is laid out otherwise, is one whole-program region."""
    try:
        summary = read_summary(path)
        metric, scale, n, what = _time_metric(summary, path, clock_ghz)
        head = f"HPCToolkit {what}, mean over the {n} profiles (ranks x threads) that measured it"
        if summary.prerelease:
            frame = _whole_program(summary, metric, scale, n, what)
            return frame, f"{head}; one whole-program region (a pre-release database layout)"
        contexts, values = read_contexts(path)
    except IngestError as e:
        raise RegionProfileError(str(e)) from None
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
    inc = tree.join(wide, on="ctx_id", how="left").with_columns(pl.col(cols).fill_null(0.0))
    inc = _exclusive(tree, inc, cols)
    frame = inc.select(
        "region",
        "name",
        "parent",
        (pl.col("_time") * (scale / n)).alias("inclusive_s"),
        (pl.col("_time_exc") * (scale / n)).alias("exclusive_s"),
        *(pl.col(f"{m}_exc").alias(c) for m, c in ctr.items() if m in cols and m != metric),
    )
    return frame, f"{head}, per function context (exclusive: less its callees)"


def read_hpctoolkit_regions(
    path: Path, *, line_bytes: int = LINE_BYTES, clock_ghz: float | None = None
) -> RegionProfile:
    """An HPCToolkit database's regions (see the module docstring).

    Args:
        path: the database directory.
        line_bytes: bytes per last-level-cache miss.
        clock_ghz: the measured cores' clock rate, for a new-format database that counted
            ``cycles`` but no time (time = cycles / clock).

    Returns:
        The profile, checked.
    """
    ranks = threads = None
    if (path / "meta.db").is_file():
        frame, time_from, fmt = *_new_hpctoolkit(path, clock_ghz), "hpctoolkit-latest"
    elif (path / "experiment.xml").is_file():
        frame, time_from, ranks, threads = _old_hpctoolkit(path)
        fmt = "hpctoolkit"
    else:
        raise RegionProfileError(
            f"{path}: neither meta.db (new format) nor experiment.xml (old format); expected an "
            "HPCToolkit database directory"
        )
    frame = work_from_counters(frame, line_bytes).with_columns(category_expr("name"))
    regions = conform_regions(inherit_communication(frame))
    check_regions(regions, str(path))
    meta = ProfileMeta(
        path=str(path),
        format=fmt,
        app=path.name,
        ranks=ranks,
        threads=threads,
        time_from=time_from,
    )
    return RegionProfile(meta, regions)


def read_regions(
    path: str | Path,
    *,
    time_unit: str | None = None,
    line_bytes: int = LINE_BYTES,
    clock_ghz: float | None = None,
) -> RegionProfile:
    """A profile read region by region: Caliper, HPCToolkit or a region table, told apart by what
    the path is.

    Args:
        path: a ``.cali``/``.json`` Caliper file, an HPCToolkit database directory, or a
            ``.csv``/``.parquet`` region table.
        time_unit: Caliper time attributes' unit where the file records none.
        line_bytes: bytes per last-level-cache miss, where memory traffic comes from counters.
        clock_ghz: clock rate turning an HPCToolkit database's ``cycles`` into time, where it
            measured no time.

    Returns:
        The profile's metadata and its regions, checked
        (:func:`xamm_data.regions.check_regions`).
    """
    path = Path(path)
    if path.is_dir():
        return read_hpctoolkit_regions(path, line_bytes=line_bytes, clock_ghz=clock_ghz)
    if not path.is_file():
        raise RegionProfileError(f"{path}: no such file or directory")
    suffix = path.suffix.lower()
    if suffix in CALIPER_SUFFIXES:
        return read_caliper_regions(path, time_unit=time_unit, line_bytes=line_bytes)
    if suffix in TABLE_SUFFIXES:
        return read_table_regions(path)
    raise RegionProfileError(
        f"{path}: not a profile xamm reads (suffix {suffix or 'none'}); expected a Caliper "
        ".cali or .json file, an HPCToolkit database directory, or a .csv/.parquet table of "
        "regions"
    )


__all__ = [
    "read_caliper_regions",
    "read_hpctoolkit_regions",
    "read_regions",
    "read_table_regions",
]
