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

Communication regions (MPI calls, host-device copies and the names teams give their own) and I/O
regions are their own categories (:func:`region_category`), and so is everything beneath them.
:func:`check_regions` validates a frame with polars expressions and names the file, the region and
the rule it breaks; :func:`region_problems` checks many profiles' regions in one pass.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypeVar

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from xamm_data.errors import XammError
from xamm_data.tables import counters
from xamm_data.tables.bounds import DEFAULT_BOUNDS
from xamm_data.tables.sums import exact_sum

LINE_BYTES = 64  # bytes per last-level-cache miss: the line size of x86 and Arm server parts
# canonical counters that give work, in order of preference
FLOP_COUNTERS: tuple[tuple[str, ...], ...] = (("fp_ops",), ("sp_ops", "dp_ops"))
BYTE_COUNTERS: tuple[str, ...] = ("l3_tcm",)
# label starts (lower case) of communication regions: message-passing libraries (MPI, SHMEM,
# NCCL/RCCL, GASNet), the words teams use for their own (the parallel-sorting corpus: comm,
# comm_large, mpi_gather, mpibarrier, Gatherv; LULESH: CommSend, CommSBN), and host-device copies
COMMUNICATION_STARTS: tuple[str, ...] = (
    "mpi", "pmpi", "shmem", "nccl", "rccl", "gasnet", "comm",
    "allgather", "allreduce", "alltoall", "gather", "scatter", "bcast", "broadcast", "barrier",
    "sendrecv", "isend", "irecv",
    "cudamemcpy", "hipmemcpy", "cudamemprefetch", "hipmemprefetch",
)  # fmt: skip
# words that make a label communication wherever they stand (``halo_sendrecv``)
COMMUNICATION_WORDS = frozenset(
    {"comm", "mpi", "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "bcast",
     "sendrecv", "isend", "irecv", "waitall", "barrier"}
)  # fmt: skip
# label starts and words of I/O regions (MPI-IO, netCDF, PnetCDF, ADIOS, POSIX stdio)
IO_PREFIXES: tuple[str, ...] = ("mpi_file", "ncmpi_", "nc_", "adios", "fwrite", "fread", "fopen")
IO_WORDS = frozenset(
    {"io", "checkpoint", "checkpointing", "hdf5", "h5", "netcdf", "output", "write", "read",
     "fwrite", "fread", "fopen", "fclose", "silo"}
)  # fmt: skip
CATEGORIES = ("compute", "communication", "io")
# time below which an inclusive/exclusive difference is rounding in the profile's printed digits
TIME_SLACK_S = 1e-6
# how far the regions' exclusive times may add up from the roots' inclusive times: a sampling
# profiler attributes them apart (HPCToolkit's public allgather database: 3.4%); a damaged or
# altered time is further off
SUM_RTOL = 0.05


class RegionProfileError(XammError, ValueError):
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
    RegionColumn("category", pl.String(), "compute, communication or io", "-"),
)
SCHEMA = {c.name: c.dtype for c in REGION_COLUMNS}
FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


class ProfileMeta(BaseModel):
    """Where a profile comes from and the configuration it ran in.

    ``source`` is ``machine:device`` where the profile names its machine (Caliper's ``cluster``, an
    HPCToolkit or table file's caller), else None; ``source_from`` says how it was found;
    ``cluster`` is the machine name as the profile writes it (known to the registry or not).
    ``ranks``, ``threads`` (per rank), ``gpus`` and ``hosts`` (nodes) are the run's configuration,
    ``programming_model`` the model it was built with (``MPI``, ``OpenMP``, ``CUDA``; for a
    RAJAPerf profile its variant's back-end); ``variant``, ``input_size`` and ``input_type`` what
    its metadata says of the run, and ``extra_metadata`` the metadata no column took, as
    written."""

    model_config = ConfigDict(frozen=True)
    path: str
    format: str
    app: str
    source: str | None = None
    source_from: str = "not in the profile"
    cluster: str | None = None
    ranks: int | None = None
    threads: int | None = None
    gpus: int | None = None
    hosts: int | None = None
    programming_model: str | None = None
    variant: str | None = None
    input_size: int | None = None
    input_type: str | None = None
    time_from: str = ""
    run_date: datetime | None = None
    tool_versions: dict[str, str | None] = Field(default_factory=dict)
    extra_metadata: tuple[dict[str, str], ...] = ()

    @property
    def configuration(self) -> str:
        """``ranks x threads x GPUs`` as the profile ran (``?`` where it does not say), and the
        nodes where it says."""

        def part(v: int | None, unit: str) -> str:
            return f"{v if v is not None else '?'} {unit}{'' if v == 1 else 's'}"

        parts = [part(self.ranks, "rank"), part(self.threads, "thread")]
        if self.gpus:
            parts.append(part(self.gpus, "GPU"))
        nodes = f" on {part(self.hosts, 'node')}" if self.hosts else ""
        return " x ".join(parts) + nodes


@dataclass(frozen=True)
class RegionProfile:
    """A profile read once, for prediction and for the store: its metadata, one row per region
    (:data:`SCHEMA`), every metric it measured as its total over regions and ranks (``totals``,
    under the profile's own names), and notes on metadata a field could not take.

    The whole program's time is the sum of the regions' exclusive times (:attr:`runtime_s`): per
    rank, the mean over ranks (docs/decisions.md, "one time per profile")."""

    meta: ProfileMeta
    regions: pl.DataFrame
    totals: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def runtime_s(self) -> float | None:
        """The whole program's time: the sum of the regions' exclusive times (None: no regions,
        a profile that measured no time). Correctly rounded (``math.fsum``): the same on any CPU and
        in any order, and what an ingest stores for the profile."""
        if self.regions.height == 0:
            return None
        return exact_sum(self.regions.get_column("exclusive_s").to_list())

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


def _tokens(name: str) -> list[str]:
    """A region label's words, lower case: split at non-alphanumerics and camelCase humps
    (``CommSend`` -> ``comm``, ``send``; ``MPI_Allreduce`` -> ``mpi``, ``allreduce``)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


@functools.lru_cache(maxsize=8192)
def region_category(name: str) -> str:
    """``communication``, ``io`` or ``compute`` from a region's label, as real profiles name them.

    * **io**: MPI-IO (``MPI_File_*``), HDF5 (``H5Dwrite``), netCDF and PnetCDF (``nc_``,
      ``ncmpi_``), ADIOS, POSIX calls (``fwrite``, ``fopen``), and labels with a word of
      :data:`IO_WORDS` (``write_output``, ``checkpoint``);
    * **communication**: a label that starts with a word of :data:`COMMUNICATION_STARTS`
      (``MPI_*``, ``comm``, ``comm_large``, ``CommSend``, ``mpibarrier``, ``Gatherv``,
      ``cudaMemcpy``: a copy between host and device), or holds a word of
      :data:`COMMUNICATION_WORDS` (``halo_sendrecv``, ``exchange_irecv``);
    * everything else is compute.

    Cached: a corpus repeats its labels in every profile.

    Args:
        name: the region's own label.

    Returns:
        The category.
    """
    low = name.lower()
    words = _tokens(name)
    if (
        low.startswith(IO_PREFIXES)
        or re.match(r"^H5[A-Z]", name)
        or any(w in IO_WORDS for w in words)
    ):
        return "io"
    if low.startswith(COMMUNICATION_STARTS) or any(w in COMMUNICATION_WORDS for w in words):
        return "communication"
    return "compute"


def category_expr(name: str = "name", mpi_function: str | None = None) -> pl.Expr:
    """Each region's :func:`region_category` from its label (column ``name``); a region where
    ``mpi_function`` (a column) is set is communication.

    Args:
        name: the column of labels.
        mpi_function: a column naming the MPI function a region measured (Caliper's
            ``mpi.function``), or None.

    Returns:
        An expression named ``category``.
    """
    by_name = pl.col(name).map_elements(region_category, return_dtype=pl.String)
    if mpi_function is not None:
        by_name = (
            pl.when(pl.col(mpi_function).is_not_null())
            .then(pl.lit("communication"))
            .otherwise(by_name)
        )
    return by_name.alias("category")


def inherited_categories(
    regions: list[str], parents: list[str | None], categories: list[str], declared: list[bool]
) -> list[str]:
    """Each region's category once the tree is read: below a communication or I/O region a region
    takes its category (a sampling profiler attributes an MPI call's time to the library's internals
    beneath it, ``PMPI_Recv`` -> ``MPIR_Wait_impl``, which are communication whatever their names);
    a region whose work the code declares (a RAJAPerf kernel such as ``Comm_HALO_PACKING``) stays
    compute, whatever its name or parent.

    Args:
        regions: region paths.
        parents: each region's parent path (None at a root).
        categories: each region's own category (:func:`region_category`).
        declared: whether each region's work is declared by the code (annotations).

    Returns:
        The categories, in the order of ``regions``.
    """
    own = {r: "compute" if d else c for r, c, d in zip(regions, categories, declared, strict=True)}
    if set(own.values()) <= {"compute"}:
        return [own[r] for r in regions]
    parent = dict(zip(regions, parents, strict=True))
    found: dict[str, str] = {}

    def above(region: str) -> str:
        """The category of the nearest non-compute region at or above ``region``."""
        chain = []
        node: str | None = region
        while node is not None and node not in found and own.get(node, "compute") == "compute":
            chain.append(node)
            node = parent.get(node)
        cat = "compute" if node is None else found.get(node, own.get(node, "compute"))
        for n in chain:
            found[n] = cat
        return cat

    return [
        "compute" if d else above(r) if own[r] == "compute" else own[r]
        for r, d in zip(regions, declared, strict=True)
    ]


def inherit_categories(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with categories propagated down the tree (:func:`inherited_categories`); a region
    with ``work_from`` of annotations and bytes is declared work.

    Args:
        frame: one row per region, with ``region``, ``parent``, ``category`` and optionally
            ``work_from`` and ``bytes``.

    Returns:
        ``frame`` with ``category`` propagated.
    """
    declared = (
        frame.select(
            pl.col("work_from").str.starts_with("annotations") & pl.col("bytes").is_not_null()
        )
        .to_series()
        .fill_null(False)
        .to_list()
        if {"work_from", "bytes"} <= set(frame.columns)
        else [False] * frame.height
    )
    cats = inherited_categories(
        frame.get_column("region").to_list(),
        frame.get_column("parent").to_list(),
        frame.get_column("category").to_list(),
        declared,
    )
    return frame.with_columns(pl.Series("category", cats, dtype=pl.String))


def counter_work(
    have: set[str], line_bytes: int = LINE_BYTES
) -> tuple[tuple[str, ...], str | None, str]:
    """Which canonical counters give a region's work, of those ``have`` holds: (the flop counters
    summed, the byte counter, the ``work_from`` note). Empty and None where none does.

    Args:
        have: canonical counter names measured.
        line_bytes: bytes per last-level-cache miss.

    Returns:
        The flop counters, the byte counter and the note.
    """
    notes: list[str] = []
    flops: tuple[str, ...] = ()
    for names in FLOP_COUNTERS:
        if all(n in have for n in names):
            flops = names
            notes.append(f"flops = {' + '.join(names)} ({counters.get(names[0]).unit})")
            break
    nbytes = next((n for n in BYTE_COUNTERS if n in have), None)
    if nbytes is not None:
        notes.append(f"bytes = {nbytes} ({counters.get(nbytes).description}) x {line_bytes} B")
    return flops, nbytes, ("counters: " + "; ".join(notes) if notes else "none: time only")


def work_from_counters(frame: FrameT, line_bytes: int = LINE_BYTES) -> FrameT:
    """``bytes``, ``flops`` and ``work_from`` from canonical counter columns (``ctr_<name>``), as
    :func:`counter_work` chooses them: flops unknown where none of its counters measured the
    region, never 0.

    Args:
        frame: one row per region (eager or lazy), with any ``ctr_*`` columns (canonical
            counters, summed over the region's ranks and threads).
        line_bytes: bytes per last-level-cache miss.

    Returns:
        ``frame`` with ``bytes``, ``flops`` and ``work_from`` set where the counters give them.
    """
    have = {c[4:] for c in frame.collect_schema().names() if c.startswith("ctr_")}
    flop_names, byte_name, note = counter_work(have, line_bytes)
    cols = [f"ctr_{n}" for n in flop_names]
    flops = (
        pl.when(pl.any_horizontal(pl.col(cols).is_not_null())).then(pl.sum_horizontal(cols))
        if cols
        else pl.lit(None, dtype=pl.Float64)
    )
    nbytes = (
        pl.col(f"ctr_{byte_name}") * float(line_bytes)
        if byte_name
        else pl.lit(None, dtype=pl.Float64)
    )
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


_MAX_S = DEFAULT_BOUNDS.max_runtime_s


def _breaks(key: str) -> list[tuple[str, pl.Expr]]:
    """(rule, expression True where a region BREAKS it), for the regions of many profiles told
    apart by ``key``."""
    ex, inc = pl.col("exclusive_s"), pl.col("inclusive_s")
    out = [
        ("exclusive_s is set", ex.is_null()),
        ("exclusive_s is finite and >= 0", ex.is_not_null() & ~(ex.is_finite() & (ex >= 0))),
        ("inclusive_s is finite and >= 0", inc.is_not_null() & ~(inc.is_finite() & (inc >= 0))),
        (
            f"a region's time is at most {_MAX_S:g} s; beyond, it is outside the plausible range",
            (ex > _MAX_S) | (inc > _MAX_S),
        ),
        (
            "exclusive_s <= inclusive_s",
            inc.is_not_null() & (ex > inc * (1 + 1e-6) + TIME_SLACK_S),
        ),
        ("region names are unique", pl.col("region").is_duplicated().over(key)),
        (
            "category is compute, communication or io",
            ~pl.col("category").is_in(list(CATEGORIES)),
        ),
    ]
    for c in ("calls", "bytes", "flops"):
        x = pl.col(c)
        out.append((f"{c} is finite and >= 0", x.is_not_null() & ~(x.is_finite() & (x >= 0))))
    return out


def _nesting(frame: pl.LazyFrame, key: str) -> pl.LazyFrame:
    """The regions whose children's inclusive times do not fit within theirs (within 2%), with
    their children's total ``_kids``."""
    kids = (
        frame.filter(pl.col("parent").is_not_null() & pl.col("inclusive_s").is_not_null())
        .group_by(key, "parent")
        .agg(pl.col("inclusive_s").sum().alias("_kids"))
    )
    return frame.join(kids, left_on=[key, "region"], right_on=[key, "parent"]).filter(
        pl.col("_kids") > pl.col("inclusive_s") * 1.02 + TIME_SLACK_S
    )


NESTING = "children within their parent"


def region_problems(frame: pl.DataFrame, key: str) -> dict[str, str]:
    """What is wrong with each profile of ``frame`` (one row per region of many profiles, told
    apart by ``key``), in one pass: the first rule of :func:`_breaks` a profile's regions break,
    naming the region; else regions whose children outlast them (within 2%: the profile's times do
    not nest, so no sum of its regions is the program's time); else no time at all, or exclusive
    times that do not add up to the roots' inclusive times (within :data:`SUM_RTOL`).

    Args:
        frame: the region contract's columns (:data:`SCHEMA`) and ``key``.
        key: the column naming each profile (a file, a source path).

    Returns:
        ``key`` -> the problem, for the profiles that have one.
    """
    if frame.height == 0:
        return {}
    lf = frame.lazy()
    rules = _breaks(key)
    first = [pl.col("region").first().alias("_region"), pl.len().alias("_n")]
    queries = [lf.filter(e.fill_null(False)).group_by(key).agg(first) for _, e in rules]
    queries.append(
        _nesting(lf, key).group_by(key).agg(*first, pl.col("inclusive_s", "_kids").first())
    )
    roots = pl.col("parent").is_null()
    queries.append(
        lf.group_by(key).agg(
            pl.len().alias("_total_n"),
            pl.col("exclusive_s").sum().alias("_total"),
            pl.col("inclusive_s").filter(roots).sum().alias("_roots"),
            pl.col("inclusive_s").filter(roots).is_null().any().alias("_untimed_root"),
        )
    )
    *broken, nests, totals = pl.collect_all(queries)
    sizes = dict(zip(totals.get_column(key), totals.get_column("_total_n")))
    out: dict[str, str] = {}
    for (rule, _), found in zip(rules, broken):
        for k, region, n in found.select(key, "_region", "_n").iter_rows():
            out.setdefault(k, f"region {region!r} breaks [{rule}] ({n} of {sizes[k]} regions)")
    for k, region, n, inc, kids in nests.select(
        key, "_region", "_n", "inclusive_s", "_kids"
    ).iter_rows():
        out.setdefault(
            k,
            f"region {region!r} lasts {inc:.6g} s but its children {kids:.6g} s ({n} such "
            "regions): the profile's times do not nest, so no sum of its regions is the "
            "program's time; expected each child within its parent",
        )
    _total_problems(totals, out)
    return out


def _total_problems(totals: pl.DataFrame, out: dict[str, str]) -> None:
    """Per profile: no time at all, a program's time outside the plausibility bounds, or exclusive
    times that do not add up to the roots' inclusive times (into ``out``, first problem kept)."""
    for k, n, total, roots_s, untimed in totals.iter_rows():
        if not total > 0:
            out.setdefault(k, "every region's exclusive time is 0; expected timed regions")
        elif not DEFAULT_BOUNDS.min_runtime_s <= total <= DEFAULT_BOUNDS.max_runtime_s:
            out.setdefault(
                k,
                f"the program's time {total:.6g} s is outside the plausible range "
                f"[{DEFAULT_BOUNDS.min_runtime_s:g}, {DEFAULT_BOUNDS.max_runtime_s:g}] s",
            )
        elif not untimed and abs(total - roots_s) > SUM_RTOL * roots_s + TIME_SLACK_S * n:
            out.setdefault(
                k,
                f"the regions' exclusive times add up to {total:.6g} s but the roots' inclusive "
                f"times to {roots_s:.6g} s; expected them equal (within {SUM_RTOL:.0%}): the "
                "profile's exclusive and inclusive times disagree",
            )


def check_regions(frame: pl.DataFrame, where: str) -> None:
    """Raise :class:`RegionProfileError` unless ``frame`` holds regions a predictor can use (the
    rules of :func:`region_problems`).

    Args:
        frame: one row per region (:data:`SCHEMA`).
        where: the file (or source) named in errors.
    """
    if frame.height == 0:
        raise RegionProfileError(f"{where}: no regions; expected at least one timed region")
    problems = region_problems(frame.with_columns(pl.lit(where).alias("_where")), "_where")
    if problems:
        raise RegionProfileError(f"{where}: {problems[where]}")


__all__ = [
    "BYTE_COUNTERS",
    "CATEGORIES",
    "COMMUNICATION_STARTS",
    "COMMUNICATION_WORDS",
    "IO_PREFIXES",
    "IO_WORDS",
    "FLOP_COUNTERS",
    "LINE_BYTES",
    "REGION_COLUMNS",
    "SCHEMA",
    "SUM_RTOL",
    "exact_sum",
    "ProfileMeta",
    "RegionColumn",
    "RegionProfile",
    "RegionProfileError",
    "category_expr",
    "region_category",
    "check_regions",
    "region_problems",
    "inherit_categories",
    "inherited_categories",
    "conform_regions",
    "counter_work",
    "work_from_counters",
]
