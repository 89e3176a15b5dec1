"""An application already in the store, as the profile ``xamm predict`` reads: one configuration of
it, its regions as they were stored.

``xamm-ingest caliper|hpctoolkit`` stores each profile as the region reader reads it, regions
included (``app_profiles.regions``), so a stored profile is predicted exactly as its file is.
:func:`stored_profile` picks the rows of one application on one machine and:

* refuses to mix configurations: rows that differ in parameters, variant, input, programming model,
  ranks, threads, GPUs or nodes are different runs of different things, and a median over them is
  no answer; the error lists each configuration and how to select one (``select``, on the command
  line ``--select KEY=VALUE``);
* one row is that profile, unchanged;
* several rows of one configuration (trials) become one profile: per region, the median of each
  time and work figure over the trials that hold the region. The profile's metadata says which
  runs were aggregated and how.

Rows stored without regions (samples from tables, profiles that measured no time, rows ingested
before ``app_profiles`` 1.4.0) are predicted as one whole-program region, their median runtime, and
the metadata says so.
"""

from __future__ import annotations

import shlex

import polars as pl

from xamm_data.hub.datasets import load_dataset
from xamm_data.tables.regions import (
    SCHEMA,
    ProfileMeta,
    RegionProfile,
    RegionProfileError,
    category_expr,
    check_regions,
    conform_regions,
    work_from_counters,
)

# what tells two runs of an application apart: a median is taken only within one of these
CONFIGURATION = (
    "app_params",
    "variant",
    "input_size",
    "input_type",
    "programming_model",
    "device",
    "ranks",
    "threads",
    "gpus",
    "hosts",
)
_FIGURES = ("inclusive_s", "exclusive_s", "calls", "bytes", "flops")

__all__ = [
    "CONFIGURATION",
    "StoredProfileError",
    "configurations",
    "parse_select",
    "stored_profile",
]


class StoredProfileError(RegionProfileError):
    """The store holds no such application, or several configurations of it: the message lists
    them and how to choose one."""


def _selected(rows: pl.DataFrame, select: dict[str, str] | None, where: str) -> pl.DataFrame:
    """``rows`` whose columns equal ``select``'s values (compared as text)."""
    for key, value in (select or {}).items():
        if key not in rows.columns:
            raise StoredProfileError(
                f"{where}: --select {key}={value}: no column {key!r}; expected one of "
                f"{', '.join((*CONFIGURATION, 'source_path', 'trial'))}"
            )
        rows = rows.filter(pl.col(key).cast(pl.String) == str(value))
    return rows


def configurations(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per configuration (:data:`CONFIGURATION`) of ``app_profiles`` rows, with how many
    runs each holds.

    Args:
        rows: ``app_profiles`` rows.

    Returns:
        The configurations and ``runs``, sorted.
    """
    cols = [c for c in CONFIGURATION if c in rows.columns]
    return rows.group_by(cols).agg(pl.len().alias("runs")).sort(cols, nulls_last=True)


def _describe(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items() if v is not None and k != "runs")


def _one_configuration(rows: pl.DataFrame, where: str) -> pl.DataFrame:
    found = configurations(rows)
    if found.height == 1:
        return rows
    shown = "; ".join(
        f"[{_describe(c)}] ({c['runs']} run{'s' if c['runs'] != 1 else ''})"
        for c in found.head(6).iter_rows(named=True)
    )
    more = f"; and {found.height - 6} more" if found.height > 6 else ""
    differ = [c for c in CONFIGURATION if c in found.columns and found[c].n_unique() > 1]
    raise StoredProfileError(
        f"{where}: {rows.height} stored runs in {found.height} configurations: {shown}{more}; a "
        "median over different configurations is no answer: pick one with --select "
        f"({', '.join(f'{c}=...' for c in differ)}), e.g. {_selection(found, differ)}"
    )


def _selection(found: pl.DataFrame, differ: list[str]) -> str:
    """The ``--select`` options that pick one configuration whole: every column that differs, with
    the values of the first configuration that holds them all (a value for one key alone can leave
    several), quoted for a shell."""
    rows = list(found.iter_rows(named=True))
    pick = next((r for r in rows if all(r[c] is not None for c in differ)), rows[0])
    return " ".join(
        f"--select {shlex.quote(f'{c}={pick[c]}')}" for c in differ if pick[c] is not None
    )


def _trial_regions(rows: pl.DataFrame) -> pl.DataFrame:
    """Per region, the median of each figure over the trials that hold it, in the first trial's
    order (a region only some trials hold keeps their median)."""
    exploded = (
        rows.select(pl.int_range(pl.len()).alias("_trial"), "regions")
        .explode("regions", empty_as_null=False)
        .unnest("regions")
        .with_columns(pl.int_range(pl.len()).over("_trial").alias("_pos"))
    )
    return (
        exploded.group_by("region", maintain_order=True)
        .agg(
            pl.col("name", "parent", "work_from", "category").first(),
            *(pl.col(c).median() for c in _FIGURES),
            pl.col("_trial").min().alias("_first"),
            pl.col("_pos").first(),
        )
        .sort("_first", "_pos")
        .select(list(SCHEMA))
    )


def _whole_program(rows: pl.DataFrame, app: str) -> pl.DataFrame:
    """Rows without regions: one whole-program region, the median runtime and counters' work."""
    ctr = [c for c in rows.columns if c.startswith("ctr_") and rows[c].null_count() < rows.height]
    one = rows.select(
        pl.lit(app).alias("region"),
        pl.lit(app).alias("name"),
        pl.col("runtime_s").median().alias("exclusive_s"),
        pl.col("runtime_s").median().alias("inclusive_s"),
        *(pl.col(c).median() for c in ctr),
    )
    return conform_regions(work_from_counters(one).with_columns(category_expr("name")))


def _first(rows: pl.DataFrame, col: str):
    return rows.get_column(col).drop_nulls().first() if col in rows.columns else None


def stored_profile(
    app: str, machine: str, *, store=None, select: dict[str, str] | None = None
) -> RegionProfile:
    """One configuration of an application in the store's ``app_profiles``, as a profile (see the
    module docstring).

    Args:
        app: the application's name.
        machine: the machine it ran on.
        store: the store (None: the default one).
        select: column -> value the rows must hold (a configuration's columns, ``source_path``,
            ``trial``).

    Returns:
        The profile, checked.

    Raises:
        StoredProfileError: no such application, no runtime, or several configurations.
    """
    where = f"{app} on {machine}"
    rows = load_dataset(machine, kind="app_profiles", store=store)
    got = rows.filter(pl.col("app") == app)
    if got.is_empty():
        have = sorted(set(rows["app"])) if rows.height else []
        raise StoredProfileError(
            f"no application {app!r} on {machine} in the store's app_profiles (it holds "
            f"{', '.join(have) or 'none'}); ingest its profiles with xamm-ingest caliper|hpctoolkit"
            " (or table) first"
        )
    got = _selected(got, select, where).filter(pl.col("runtime_s").is_not_null())
    if got.is_empty():
        raise StoredProfileError(f"{where}: no stored run with a runtime matches {select or {}}")
    got = _one_configuration(got, where).sort("trial", "source_path")
    regions, time_from = _regions_of(got, app)
    check_regions(regions, where)
    paths = got.get_column("source_path").to_list()
    meta = ProfileMeta(
        path=f"store app_profiles {app}@{machine}" + (f" ({paths[0]})" if len(paths) == 1 else ""),
        format="app_profiles",
        app=app,
        source=f"{machine}:{_first(got, 'device')}",
        source_from="the store's app_profiles",
        **{c: _first(got, c) for c in ("ranks", "threads", "gpus", "hosts")},
        **{c: _first(got, c) for c in ("programming_model", "variant", "input_size", "input_type")},
        time_from=time_from,
    )
    return RegionProfile(meta, regions)


def parse_select(items: list[str] | None) -> dict[str, str]:
    """``["ranks=8", "input_size=30"]`` -> ``{"ranks": "8", "input_size": "30"}``; a malformed
    item is a ValueError naming it."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--select {item!r}: expected KEY=VALUE, e.g. ranks=8")
        if key.strip() in out:  # one configuration has one value of each key
            raise ValueError(f"--select {item!r}: {key.strip()} is given twice")
        out[key.strip()] = value.strip()
    return out


def _regions_of(got: pl.DataFrame, app: str) -> tuple[pl.DataFrame, str]:
    """(regions, how the time was had) of one configuration's stored runs: per region the median
    over trials when every run stored its regions, else one region of the median runtime."""
    with_regions = (
        got.filter(pl.col("regions").list.len() > 0) if "regions" in got.columns else got[:0]
    )
    paths = got.get_column("source_path").to_list()
    runs = f"{len(paths)} stored run{'s' if len(paths) > 1 else ''} ({', '.join(paths[:4])}" + (
        ", ...)" if len(paths) > 4 else ")"
    )
    if with_regions.height == got.height:
        return conform_regions(_trial_regions(got)), f"{_first(got, 'runtime_aggregation')}; " + (
            "one stored run" if got.height == 1 else f"per region the median over {runs}"
        )
    return _whole_program(got, app), (
        f"no regions stored: one region, the median runtime_s over {runs}"
    )
