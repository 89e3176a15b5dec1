"""The region contract: what a profile hands to a predictor, one row per region.

An application profile (Caliper, HPCToolkit, a table of regions and times) becomes a
:class:`RegionProfile`: its metadata (:class:`ProfileMeta`: the source machine where the profile
names it, and the configuration it ran in) and a frame with the columns of :data:`REGION_COLUMNS`.
Per region, times are per rank (the mean over ranks where a profile holds many); ``exclusive_s``
partitions the program, so the whole-program time is their sum.

Work per region comes from the profile where it says so, each derivation recorded in ``work_from``:

* **annotations**: RAJAPerf's ``Bytes/Rep`` and ``Flops/Rep`` x ``Reps`` (what the code declares);
* **counters** (:data:`FLOP_COUNTERS`, :data:`BYTE_COUNTERS`): floating-point operations from the
  canonical ``fp_ops``, else ``sp_ops + dp_ops``; memory traffic from last-level-cache misses
  (``l3_tcm``) x the line size (:data:`LINE_BYTES`, or the caller's);
* otherwise **none**: a time-only region, for which a predictor can say only what a bandwidth ratio
  says, and its interval is the one measured for time-only input.

Communication regions (MPI calls, and the names in :data:`COMMUNICATION`) are their own category:
:func:`category_expr`. :func:`check_regions` validates a frame with polars expressions and names the
file, the region and the rule it breaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict

from xamm_data import counters

LINE_BYTES = 64  # bytes per last-level-cache miss: the line size of x86 and Arm server parts
# canonical counters that give work, in order of preference
FLOP_COUNTERS: tuple[tuple[str, ...], ...] = (("fp_ops",), ("sp_ops", "dp_ops"))
BYTE_COUNTERS: tuple[str, ...] = ("l3_tcm",)
# region-name prefixes of communication libraries (MPI, PMPI, SHMEM, NCCL/RCCL, GASNet)
COMMUNICATION = ("MPI_", "PMPI_", "mpi_", "shmem_", "nccl", "rccl", "gasnet_")
# time below which an inclusive/exclusive difference is rounding in the profile's printed digits
TIME_SLACK_S = 1e-6


class RegionProfileError(ValueError):
    """A profile that cannot be predicted from: names the file, the region and what was expected."""


@dataclass(frozen=True)
class RegionColumn:
    """One column of the region contract: its type, meaning and unit."""

    name: str
    dtype: pl.DataType
    meaning: str
    unit: str
    required: bool = True


REGION_COLUMNS: tuple[RegionColumn, ...] = (
    RegionColumn("region", pl.String(), "path from the root, labels joined by '/'", "-"),
    RegionColumn("name", pl.String(), "the region's own label", "-"),
    RegionColumn("parent", pl.String(), "the parent's path (null at a root)", "-", False),
    RegionColumn("inclusive_s", pl.Float64(), "time in the region and its children", "s", False),
    RegionColumn("exclusive_s", pl.Float64(), "time in the region itself", "s"),
    RegionColumn("calls", pl.Float64(), "visits, launches or repetitions", "1", False),
    RegionColumn("bytes", pl.Float64(), "bytes moved to and from memory", "B", False),
    RegionColumn("flops", pl.Float64(), "floating-point operations", "flop", False),
    RegionColumn("work_from", pl.String(), "how bytes and flops were derived", "-"),
    RegionColumn("category", pl.String(), "compute or communication", "-"),
)
SCHEMA = {c.name: c.dtype for c in REGION_COLUMNS}


class ProfileMeta(BaseModel):
    """Where a profile comes from and the configuration it ran in.

    ``source`` is ``machine:device`` where the profile names its machine (Caliper's ``cluster``, an
    HPCToolkit or table file's caller), else None; ``source_from`` says how it was found."""

    model_config = ConfigDict(frozen=True)
    path: str
    format: str
    app: str
    source: str | None = None
    source_from: str = "not in the profile"
    ranks: int | None = None
    threads: int | None = None
    gpus: int | None = None
    time_from: str = ""

    @property
    def configuration(self) -> str:
        """``ranks x threads x GPUs`` as the profile ran (``?`` where it does not say)."""

        def part(v: int | None, unit: str) -> str:
            return f"{v if v is not None else '?'} {unit}{'' if v == 1 else 's'}"

        parts = [part(self.ranks, "rank"), part(self.threads, "thread")]
        if self.gpus:
            parts.append(part(self.gpus, "GPU"))
        return " x ".join(parts)


@dataclass(frozen=True)
class RegionProfile:
    """A profile read for prediction: its metadata and one row per region (:data:`SCHEMA`)."""

    meta: ProfileMeta
    regions: pl.DataFrame

    @property
    def work_known(self) -> Literal["all", "some", "none"]:
        """Whether the compute regions' bytes are known for all, some or none of them."""
        known = self.regions.filter(pl.col("category") == "compute").get_column("bytes")
        n = known.is_not_null().sum()
        return "all" if n == known.len() else ("some" if n else "none")

    @classmethod
    def from_runtime(
        cls, app: str, runtime_s: float, *, source: str | None = None, path: str = "", **config
    ) -> RegionProfile:
        """A program known only by its runtime: one time-only compute region.

        Args:
            app: the program's name.
            runtime_s: its wall time, seconds.
            source: ``machine:device`` it ran on.
            path: where the runtime was read (a log), for messages.
            **config: ``ranks``, ``threads``, ``gpus`` as it ran.

        Returns:
            The profile, checked.
        """
        meta = ProfileMeta(
            path=path or f"{app} runtime",
            format="runtime",
            app=app,
            source=source,
            source_from="given" if source else "not in the profile",
            time_from="the whole program's wall time",
            **config,
        )
        frame = pl.DataFrame(
            {
                "region": [app],
                "name": [app],
                "inclusive_s": [float(runtime_s)],
                "exclusive_s": [float(runtime_s)],
                "work_from": ["none: time only"],
                "category": ["compute"],
            }
        )
        regions = conform_regions(frame)
        check_regions(regions, meta.path)
        return cls(meta, regions)


def category_expr(name: str = "name", mpi_function: str | None = None) -> pl.Expr:
    """``communication`` where the region's label starts with a communication library's prefix
    (:data:`COMMUNICATION`) or ``mpi_function`` (a column) is set, else ``compute``."""
    comm = pl.col(name).str.starts_with(COMMUNICATION[0])
    for p in COMMUNICATION[1:]:
        comm = comm | pl.col(name).str.starts_with(p)
    if mpi_function is not None:
        comm = comm | pl.col(mpi_function).is_not_null()
    return (
        pl.when(comm).then(pl.lit("communication")).otherwise(pl.lit("compute")).alias("category")
    )


def inherit_communication(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every region below a communication region made communication too: a
    sampling profiler attributes an MPI call's time to the library's internals beneath it
    (``PMPI_Recv`` -> ``MPIR_Wait_impl``), which are communication whatever their names.

    Args:
        frame: one row per region, with ``region``, ``parent`` and ``category``.

    Returns:
        ``frame`` with ``category`` propagated down the tree.
    """
    parent = dict(zip(frame.get_column("region"), frame.get_column("parent")))
    comm = {
        r
        for r, c in zip(frame.get_column("region"), frame.get_column("category"))
        if c == "communication"
    }
    if not comm:
        return frame
    below: dict[str, bool] = {}
    for region in parent:
        chain = []
        node = region
        while node is not None and node not in below and node not in comm:
            chain.append(node)
            node = parent.get(node)
        hit = node is not None and (node in comm or below[node])
        for n in chain:
            below[n] = hit
    under = [below.get(r, False) or r in comm for r in frame.get_column("region")]
    return frame.with_columns(
        pl.when(pl.Series(under))
        .then(pl.lit("communication"))
        .otherwise(pl.col("category"))
        .alias("category")
    )


def work_from_counters(frame: pl.DataFrame, line_bytes: int = LINE_BYTES) -> pl.DataFrame:
    """``bytes``, ``flops`` and ``work_from`` from canonical counter columns (``ctr_<name>``).

    Args:
        frame: one row per region, with any ``ctr_*`` columns (canonical counters, summed over the
            region's ranks and threads).
        line_bytes: bytes per last-level-cache miss.

    Returns:
        ``frame`` with ``bytes``, ``flops`` and ``work_from`` set where the counters give them.
    """
    notes: list[str] = []
    flops = pl.lit(None, dtype=pl.Float64)
    for names in FLOP_COUNTERS:
        cols = [f"ctr_{n}" for n in names]
        if all(c in frame.columns for c in cols):
            flops = pl.sum_horizontal(cols)
            notes.append(f"flops = {' + '.join(names)} ({counters.get(names[0]).unit})")
            break
    nbytes = pl.lit(None, dtype=pl.Float64)
    for name in BYTE_COUNTERS:
        if f"ctr_{name}" in frame.columns:
            nbytes = pl.col(f"ctr_{name}") * float(line_bytes)
            notes.append(f"bytes = {name} ({counters.get(name).description}) x {line_bytes} B")
            break
    note = "counters: " + "; ".join(notes) if notes else "none: time only"
    return frame.with_columns(
        nbytes.cast(pl.Float64).alias("bytes"),
        flops.cast(pl.Float64).alias("flops"),
        pl.lit(note).alias("work_from"),
    )


def conform_regions(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with the contract's columns in order and types (absent optional ones null)."""
    missing = [c.name for c in REGION_COLUMNS if c.required and c.name not in frame.columns]
    if missing:
        raise RegionProfileError(f"the region frame lacks {missing}")
    return frame.select(
        pl.col(c.name).cast(c.dtype)
        if c.name in frame.columns
        else pl.lit(None, c.dtype).alias(c.name)
        for c in REGION_COLUMNS
    )


def _breaks() -> list[tuple[str, pl.Expr]]:
    """(rule, expression True where a region BREAKS it)."""
    ex, inc = pl.col("exclusive_s"), pl.col("inclusive_s")
    out = [
        ("exclusive_s is set", ex.is_null()),
        ("exclusive_s is finite and >= 0", ex.is_not_null() & ~(ex.is_finite() & (ex >= 0))),
        ("inclusive_s is finite and >= 0", inc.is_not_null() & ~(inc.is_finite() & (inc >= 0))),
        (
            "exclusive_s <= inclusive_s",
            inc.is_not_null() & (ex > inc * (1 + 1e-6) + TIME_SLACK_S),
        ),
        ("region names are unique", pl.col("region").is_duplicated()),
        (
            "category is compute or communication",
            ~pl.col("category").is_in(["compute", "communication"]),
        ),
    ]
    for c in ("calls", "bytes", "flops"):
        x = pl.col(c)
        out.append((f"{c} is finite and >= 0", x.is_not_null() & ~(x.is_finite() & (x >= 0))))
    return out


def _check_nesting(frame: pl.DataFrame, where: str) -> None:
    """Children's inclusive times must fit in their parent's (within 2%): where they do not, the
    profile's times do not nest and a sum of exclusive times would not be the program's time."""
    kids = (
        frame.filter(pl.col("parent").is_not_null() & pl.col("inclusive_s").is_not_null())
        .group_by("parent")
        .agg(pl.col("inclusive_s").sum().alias("_kids"))
    )
    over = frame.join(kids, left_on="region", right_on="parent").filter(
        pl.col("_kids") > pl.col("inclusive_s") * 1.02 + TIME_SLACK_S
    )
    if over.height:
        r = over.row(0, named=True)
        raise RegionProfileError(
            f"{where}: region {r['region']!r} lasts {r['inclusive_s']:.6g} s but its children "
            f"{r['_kids']:.6g} s ({over.height} such regions): the profile's times do not nest, "
            "so no sum of its regions is the program's time; expected each child within its parent"
        )


def check_regions(frame: pl.DataFrame, where: str) -> None:
    """Raise :class:`RegionProfileError` unless ``frame`` holds regions a predictor can use.

    Args:
        frame: one row per region (:data:`SCHEMA`).
        where: the file (or source) named in errors.
    """
    if frame.height == 0:
        raise RegionProfileError(f"{where}: no regions; expected at least one timed region")
    bad = frame.select(*(e.alias(rule) for rule, e in _breaks()))
    for rule in bad.columns:
        mask = bad.get_column(rule).fill_null(False)
        if mask.any():
            names = frame.filter(mask).get_column("region").head(3).to_list()
            also = f"; also {', '.join(map(repr, names[1:]))}" if len(names) > 1 else ""
            raise RegionProfileError(
                f"{where}: region {names[0]!r} breaks [{rule}] ({int(mask.sum())} of "
                f"{frame.height} regions{also})"
            )
    _check_nesting(frame, where)
    if frame.get_column("exclusive_s").sum() <= 0:
        raise RegionProfileError(
            f"{where}: every region's exclusive time is 0; expected timed regions"
        )


__all__ = [
    "BYTE_COUNTERS",
    "COMMUNICATION",
    "FLOP_COUNTERS",
    "LINE_BYTES",
    "REGION_COLUMNS",
    "SCHEMA",
    "ProfileMeta",
    "RegionColumn",
    "RegionProfile",
    "RegionProfileError",
    "category_expr",
    "check_regions",
    "inherit_communication",
    "conform_regions",
    "work_from_counters",
]
