"""The tables xamm writes, defined once.

Each table is a :class:`TableSchema`: ordered columns with a dtype, a unit, nullability and
value rules. From it come the polars schema used by the store, the vectorised validation rules
(:mod:`xamm_data.tables.validate`) and the language-neutral JSON Schema files in ``schemas/``
(``xamm schemas export``); a test fails when the two drift apart.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from typing import Literal, get_args

import polars as pl

from xamm_data.identifiers import NAME_BODY
from xamm_data.tables.counters import COUNTERS

DType = Literal[
    "string",
    "int64",
    "float64",
    "bool",
    "datetime",
    "list[string]",
    "list[counter]",
    "list[metadata]",
    "list[region]",
]

# one region of a profile, as the region contract (xamm_data.tables.regions) defines it
_REGION_FIELDS: dict[str, pl.DataType] = {
    "region": pl.String(),
    "name": pl.String(),
    "parent": pl.String(),
    "inclusive_s": pl.Float64(),
    "exclusive_s": pl.Float64(),
    "calls": pl.Float64(),
    "bytes": pl.Float64(),
    "flops": pl.Float64(),
    "work_from": pl.String(),
    "category": pl.String(),
}
_REGION_JSON = {
    "region": "string", "name": "string", "parent": ["string", "null"],
    "inclusive_s": ["number", "null"], "exclusive_s": "number", "calls": ["number", "null"],
    "bytes": ["number", "null"], "flops": ["number", "null"], "work_from": "string",
    "category": "string",
}  # fmt: skip

_POLARS: dict[str, pl.DataType] = {
    "string": pl.String(),
    "int64": pl.Int64(),
    "float64": pl.Float64(),
    "bool": pl.Boolean(),
    "datetime": pl.Datetime("us", "UTC"),
    "list[string]": pl.List(pl.String()),
    "list[counter]": pl.List(pl.Struct({"name": pl.String(), "value": pl.Float64()})),
    "list[metadata]": pl.List(pl.Struct({"name": pl.String(), "value": pl.String()})),
    "list[region]": pl.List(pl.Struct(_REGION_FIELDS)),
}

_JSON_TYPE: dict[str, dict] = {
    "string": {"type": "string"},
    "int64": {"type": "integer"},
    "float64": {"type": "number"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "list[string]": {"type": "array", "items": {"type": "string"}},
    "list[counter]": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "value": {"type": ["number", "null"]}},
            "required": ["name", "value"],
            "additionalProperties": False,
        },
    },
    "list[metadata]": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
            "required": ["name", "value"],
            "additionalProperties": False,
        },
    },
    "list[region]": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {k: {"type": v} for k, v in _REGION_JSON.items()},
            "required": list(_REGION_JSON),
            "additionalProperties": False,
        },
    },
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Column:
    """One column: its type, unit, nullability and the rules every value must meet.

    A declaration in code, not input: a frozen dataclass checked when built (no validation
    library to import for every command that reads a table)."""

    name: str
    dtype: DType
    description: str
    unit: str | None = None
    nullable: bool = True
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    finite: bool = False
    enum: tuple[str, ...] | None = None
    pattern: str | None = None

    def __post_init__(self) -> None:
        _check_fields(self, str_fields=("name", "description"), optional_str=("unit", "pattern"))
        if self.dtype not in _POLARS:
            raise ValueError(f"column {self.name!r}: dtype {self.dtype!r} is not one of "
                             f"{', '.join(get_args(DType))}")  # fmt: skip
        if not isinstance(self.nullable, bool) or not isinstance(self.finite, bool):
            raise TypeError(f"column {self.name!r}: nullable and finite are True or False")
        for bound in ("minimum", "exclusive_minimum", "maximum"):
            v = getattr(self, bound)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
                raise TypeError(f"column {self.name!r}: {bound} is a number or None, not {v!r}")
            object.__setattr__(self, bound, float(v))  # as the JSON Schema files write it
        if self.enum is not None:
            object.__setattr__(self, "enum", tuple(self.enum))
            if not all(isinstance(e, str) for e in self.enum):
                raise TypeError(f"column {self.name!r}: enum holds strings only")

    @property
    def polars_dtype(self) -> pl.DataType:
        return _POLARS[self.dtype]

    def json_schema(self) -> dict:
        spec = dict(_JSON_TYPE[self.dtype])
        if self.nullable:
            spec["type"] = [spec["type"], "null"]
        spec["description"] = self.description
        if self.unit is not None:
            spec["x-unit"] = self.unit
        spec["x-dtype"] = self.dtype
        if self.minimum is not None:
            spec["minimum"] = self.minimum
        if self.exclusive_minimum is not None:
            spec["exclusiveMinimum"] = self.exclusive_minimum
        if self.maximum is not None:
            spec["maximum"] = self.maximum
        if self.enum is not None:
            spec["enum"] = list(self.enum) + ([None] if self.nullable else [])
        if self.pattern is not None:
            spec["pattern"] = self.pattern
        return spec


@dataclasses.dataclass(frozen=True, kw_only=True)
class TableSchema:
    """A versioned table: ordered columns, the primary key and the partition column (a frozen
    dataclass, checked when built: the key and the partition are among the columns)."""

    name: str
    version: str
    description: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    partition_by: str = "machine"

    def __post_init__(self) -> None:
        _check_fields(self, str_fields=("name", "version", "description", "partition_by"))
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "primary_key", tuple(self.primary_key))
        if not all(isinstance(c, Column) for c in self.columns):
            raise TypeError(f"table {self.name!r}: columns are Column objects")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"table {self.name!r}: a column name is given twice")
        keys = (*self.primary_key, *([self.partition_by] if self.partition_by else []))
        missing = [k for k in keys if k not in names]
        if missing:
            raise ValueError(f"table {self.name!r}: key or partition column(s) {missing} "
                             "are not among its columns")  # fmt: skip

    def with_columns(self, keep) -> TableSchema:
        """The same table with only the columns named in ``keep`` (in the table's order)."""
        return dataclasses.replace(self, columns=tuple(c for c in self.columns if c.name in keep))

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name!r} has no column {name!r}")

    @property
    def polars_schema(self) -> pl.Schema:
        return pl.Schema({c.name: c.polars_dtype for c in self.columns})

    @property
    def units(self) -> dict[str, str]:
        return {c.name: c.unit for c in self.columns if c.unit is not None}

    def empty(self) -> pl.DataFrame:
        """A new frame of no rows with the table's columns and types."""
        # a frame built from the schema costs milliseconds (nested types), a cleared copy of one
        # built once microseconds: ingest and validation ask for one per source and per check
        return _empty_frame(tuple((c.name, c.dtype) for c in self.columns)).clear()

    def json_schema(self) -> dict:
        """The JSON Schema (draft 2020-12) of one row of this table."""
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://xamm.readthedocs.io/schemas/{self.name}/{self.version}.json",
            "title": self.name,
            "description": self.description,
            "type": "object",
            "properties": {c.name: c.json_schema() for c in self.columns},
            "required": self.names,
            "additionalProperties": False,
            "x-schema-version": self.version,
            "x-primary-key": list(self.primary_key),
            "x-partition-by": self.partition_by,
            "x-column-order": self.names,
        }

    def json_schema_text(self) -> str:
        return json.dumps(self.json_schema(), indent=2, sort_keys=False) + "\n"


def _check_fields(obj, str_fields: tuple[str, ...], optional_str: tuple[str, ...] = ()) -> None:
    """A declaration's text fields are text (what a typo in a table's definition breaks first)."""
    for f in str_fields:
        if not isinstance(getattr(obj, f), str):
            raise TypeError(f"{type(obj).__name__}.{f} is text, not {getattr(obj, f)!r}")
    for f in optional_str:
        if getattr(obj, f) is not None and not isinstance(getattr(obj, f), str):
            raise TypeError(f"{type(obj).__name__}.{f} is text or None, not {getattr(obj, f)!r}")


@functools.lru_cache(maxsize=64)
def _empty_frame(columns: tuple[tuple[str, str], ...]) -> pl.DataFrame:
    """The template :meth:`TableSchema.empty` copies, per list of (name, type): never handed out
    itself, so no caller can change it."""
    return pl.DataFrame(schema={name: _POLARS[dtype] for name, dtype in columns})


def _c(name: str, dtype: DType, description: str, **kw) -> Column:
    return Column(name=name, dtype=dtype, description=description, **kw)


MACHINE_PATTERN = f"^{NAME_BODY}(:(cpu|gpu))?$"  # xamm_data.identifiers: one rule for names
SHA256_PATTERN = r"^[0-9a-f]{64}$"
SOURCE_FORMAT_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"

_PROVENANCE: tuple[Column, ...] = (
    _c(
        "source_path",
        "string",
        "Path of the source file, relative to the ingest root (POSIX separators).",
        nullable=False,
    ),
    _c(
        "source_sha256",
        "string",
        "SHA-256 of the source file's bytes; for a database directory "
        "(HPCToolkit), "
        "SHA-256 of its sorted `relative path NUL file sha256 LF` lines; "
        "for a profile of a Thicket (in memory or "
        "`to_json()`), SHA-256 of the profile's records and globals as "
        "canonical JSON.",
        nullable=False,
        pattern=SHA256_PATTERN,
    ),
    _c(
        "source_format",
        "string",
        "Format of the source file: one of xamm's own (rajaperf-csv, rajaperf-timing-csv, "
        "caliper-cali, caliper-json, thicket, thicket-json, hpctoolkit, hpctoolkit-latest, table, "
        "babelstream, babelstream-csv) or the name of an installed format plug-in "
        "(`xamm.formats` entry point): lower case letters, digits, `.`, `_` and `-`.",
        nullable=False,
        pattern=SOURCE_FORMAT_PATTERN,
    ),
    _c("reader", "string", "Dotted name of the xamm reader that produced the row.", nullable=False),
    _c("xamm_version", "string", "Version of xamm that ingested the row.", nullable=False),
    _c(
        "tool_versions",
        "string",
        "Versions of the tools that produced the source, as sorted "
        "`name=version` pairs joined by `;` "
        "(e.g. `caliper=2.10.0;raja=2022.10.5;rajaperf=1.10.0`).",
    ),
    _c(
        "run_date",
        "datetime",
        "When the measured run started (UTC), from the source's "
        "metadata; null when the source does not say.",
    ),
)

_CONFIG: tuple[Column, ...] = (
    _c(
        "threads",
        "int64",
        "Threads per rank the measured code ran with (1 for sequential "
        "and GPU-offload variants' host side).",
        minimum=1,
    ),
    _c(
        "ranks",
        "int64",
        "MPI ranks of the run: as its metadata or output states, else, in a Caliper spot profile, "
        "the root's total over ranks / their mean; null when the source does not say.",
        minimum=1,
    ),
)

BENCHMARK_RUNS = TableSchema(
    name="benchmark_runs",
    version="1.6.0",
    description=(
        "One row per (machine, suite, kernel, variant, tuning, build, "
        "configuration, trial) of a benchmark suite run "
        "(RAJAPerf, BabelStream). Times are seconds per repetition of the kernel, "
        "sizes in bytes and flops per repetition."
    ),
    columns=(
        _c(
            "machine",
            "string",
            "Machine id from the machine registry (lower case), e.g. `quartz`.",
            nullable=False,
            pattern=MACHINE_PATTERN,
        ),
        _c(
            "device",
            "string",
            "Processor class the variant runs on: `cpu` or `gpu`.",
            nullable=False,
            enum=("cpu", "gpu"),
        ),
        _c(
            "suite",
            "string",
            "Benchmark suite.",
            nullable=False,
            enum=("RAJAPerf", "BabelStream"),
        ),
        _c("suite_version", "string", "Suite version as reported by the run."),
        _c(
            "kernel",
            "string",
            "Canonical kernel name `Group_KERNEL`, e.g. `Basic_DAXPY`.",
            nullable=False,
            pattern=r"^[A-Za-z]+_[A-Z0-9][A-Z0-9_]*$",
        ),
        _c("group", "string", "Kernel group, e.g. `Basic`, `Stream`, `Apps`.", nullable=False),
        _c(
            "variant",
            "string",
            "RAJAPerf variant, e.g. `Base_Seq`, `RAJA_CUDA`; BabelStream's implementation as "
            "`BabelStream_<model>`, e.g. `BabelStream_CUDA`, `BabelStream_StdIndices`.",
            nullable=False,
            pattern=r"^(Base|RAJA|Lambda|Kokkos|BabelStream)_[A-Za-z0-9]+$",
        ),
        _c(
            "backend",
            "string",
            "Programming model of the variant: Seq, OpenMP, OpenMPTarget, "
            "CUDA, HIP, SYCL, StdPar, Kokkos (and, for BabelStream, OpenACC, OpenCL, TBB, "
            "Thrust, RAJA).",
            nullable=False,
            enum=(
                "Seq",
                "OpenMP",
                "OpenMPTarget",
                "CUDA",
                "HIP",
                "SYCL",
                "StdPar",
                "Kokkos",
                "OpenACC",
                "OpenCL",
                "TBB",
                "Thrust",
                "RAJA",
            ),
        ),
        _c("tuning", "string", "Variant tuning, e.g. `default`, `block_256`.", nullable=False),
        _c(
            "compiler",
            "string",
            "Compiler and version, e.g. `g++-10.3.1`; null when the source does not say.",
        ),
        _c(
            "compiler_flags",
            "string",
            "Compiler options of the build; null when the source does not say.",
        ),
        _c(
            "problem_size",
            "int64",
            "The kernel's actual problem size (RAJAPerf `Problem size` / `ProblemSize`).",
            nullable=False,
            minimum=1,
        ),
        _c(
            "problem_size_param",
            "int64",
            "RAJAPerf's `ProblemSizeRunParam`: the `--size` run parameter, "
            "or the "
            "`--sizefact` factor truncated to a whole number (0 for "
            "`--sizefact 0.5`); kernels round it to their own shapes.",
            minimum=0,
        ),
        _c("reps", "int64", "Repetitions of the kernel per pass.", nullable=False, minimum=1),
        _c(
            "npasses",
            "int64",
            "Passes over the kernel set (`--npasses`); times are per "
            "repetition, averaged over passes. "
            "Null when the source does not say (RAJAPerf CSV files, whose "
            "times are already per-pass means).",
            minimum=1,
        ),
        *_CONFIG,
        _c(
            "gpus",
            "int64",
            "GPUs the run used: for a GPU variant one per rank (RAJAPerf's GPU runs are launched "
            "one MPI rank per GPU), so the rank count; 1 for a BabelStream GPU run; null for CPU "
            "variants and where the ranks are unknown.",
            minimum=1,
        ),
        _c(
            "omp_max_threads", "int64", "`omp_get_max_threads()` as recorded by the run.", minimum=1
        ),
        _c(
            "block_size",
            "int64",
            "GPU thread-block size of the tuning; null for CPU variants.",
            minimum=1,
        ),
        _c(
            "trial",
            "int64",
            "0-based repeat index among runs with identical configuration, "
            "ordered by run date then source path.",
            nullable=False,
            minimum=0,
        ),
        _c(
            "time_per_rep_s",
            "float64",
            "Mean time of one repetition (over passes and ranks).",
            unit="s",
            nullable=False,
            exclusive_minimum=0,
            finite=True,
        ),
        _c(
            "time_per_rep_min_s",
            "float64",
            "Minimum over passes (CSV) or ranks (Caliper) of the time per repetition.",
            unit="s",
            exclusive_minimum=0,
            finite=True,
        ),
        _c(
            "time_per_rep_max_s",
            "float64",
            "Maximum over passes (CSV) or ranks (Caliper) of the time per repetition.",
            unit="s",
            exclusive_minimum=0,
            finite=True,
        ),
        _c(
            "iterations_per_rep",
            "float64",
            "Loop iterations per repetition.",
            unit="1",
            minimum=0,
            finite=True,
        ),
        _c(
            "kernels_per_rep",
            "float64",
            "Kernel launches per repetition.",
            unit="1",
            minimum=0,
            finite=True,
        ),
        _c(
            "bytes_per_rep",
            "float64",
            "Bytes moved per repetition (RAJAPerf `BytesMoved/rep`, older `Bytes/rep`).",
            unit="B",
            minimum=0,
            finite=True,
        ),
        _c(
            "bytes_read_per_rep",
            "float64",
            "Bytes read per repetition.",
            unit="B",
            minimum=0,
            finite=True,
        ),
        _c(
            "bytes_written_per_rep",
            "float64",
            "Bytes written per repetition.",
            unit="B",
            minimum=0,
            finite=True,
        ),
        _c(
            "bytes_modify_written_per_rep",
            "float64",
            "Bytes read-modify-written per repetition.",
            unit="B",
            minimum=0,
            finite=True,
        ),
        _c(
            "bytes_atomic_modify_written_per_rep",
            "float64",
            "Bytes atomically modified per repetition.",
            unit="B",
            minimum=0,
            finite=True,
        ),
        _c(
            "bytes_touched_per_rep",
            "float64",
            "Distinct bytes touched per repetition.",
            unit="B",
            minimum=0,
            finite=True,
        ),
        _c(
            "bytes_allocated_per_rep",
            "float64",
            "Bytes allocated for the kernel's data.",
            unit="B",
            minimum=0,
            finite=True,
        ),
        _c(
            "flops_per_rep",
            "float64",
            "Floating-point operations per repetition.",
            unit="flop",
            minimum=0,
            finite=True,
        ),
        _c(
            "bandwidth_bytes_per_s",
            "float64",
            "bytes_per_rep / time_per_rep_s.",
            unit="B/s",
            minimum=0,
            finite=True,
        ),
        _c(
            "flops_per_s",
            "float64",
            "flops_per_rep / time_per_rep_s.",
            unit="flop/s",
            minimum=0,
            finite=True,
        ),
        _c(
            "checksum_status",
            "string",
            "RAJAPerf checksum verdict, when reported.",
            enum=("PASSED", "FAILED"),
        ),
        _c("operational_complexity", "string", "RAJAPerf operational complexity, e.g. `O(N)`."),
        _c("problem_dimensionality", "int64", "RAJAPerf problem dimensionality.", minimum=0),
        *(
            _c(
                f"topdown_{m}",
                "float64",
                f"Top-down fraction `{m}` (Caliper `topdown.{m}`), as measured.",
                unit="1",
                finite=True,
            )
            for m in (
                "retiring",
                "frontend_bound",
                "backend_bound",
                "bad_speculation",
                "branch_mispredict",
                "machine_clears",
                "frontend_latency",
                "frontend_bandwidth",
                "memory_bound",
                "core_bound",
                "ext_mem_bound",
                "l1_bound",
                "l2_bound",
                "l3_bound",
            )
        ),
        _c(
            "extra_metrics",
            "list[counter]",
            "Per-kernel metrics of the source that no column above names "
            "(further "
            "`topdown.*` attributes, newer RAJAPerf columns such as "
            "`FeatureForall`), kept raw as (name, value); "
            "null for rows ingested before schema 1.1.0.",
        ),
        _c(
            "run_metadata",
            "list[metadata]",
            "What the workflow that ran the experiment recorded of it, (name, value) as written: "
            "for a Benchpark/Ramble workspace `benchpark.system`, `benchpark.experiment`, "
            "`ramble.application`, `ramble.workload`, `ramble.experiment`, `ramble.status`, "
            "`ramble.modifiers` and every Ramble variable as `ramble.variable.<name>` "
            "(`xamm_data.tables.workflow.metadata_columns` makes them columns); null for runs "
            "not read from one, and rows ingested before schema 1.6.0.",
        ),
        *_PROVENANCE,
    ),
    primary_key=(
        "machine",
        "suite",
        "kernel",
        "variant",
        "tuning",
        "compiler",
        "compiler_flags",
        "problem_size",
        "threads",
        "ranks",
        "trial",
    ),
)

TABLE_II_FEATURES: tuple[tuple[str, str], ...] = (
    ("branch_intensity", "Branch instructions / total instructions."),
    ("load_intensity", "Load instructions / total instructions."),
    ("store_intensity", "Store instructions / total instructions."),
    ("l1_load_misses", "L1 data-cache load misses."),
    ("l1_store_misses", "L1 data-cache store misses."),
    ("l2_load_misses", "L2 load misses."),
    ("l2_store_misses", "L2 store misses."),
    ("sp_fp_intensity", "Single-precision floating-point operations / total instructions."),
    ("dp_fp_intensity", "Double-precision floating-point operations / total instructions."),
    ("int_arith_intensity", "Integer arithmetic instructions / total instructions."),
    ("io_bytes_read", "Bytes read from I/O."),
    ("io_bytes_written", "Bytes written to I/O."),
    ("ext_page_table", "Extended page table size (walk cycles where only those are measured)."),
    ("mem_stall", "Memory stall cycles."),
)


SEED001_FEATURES: tuple[tuple[str, str], ...] = (
    ("instructions", "Number of instructions (the VAE-DNN paper, Table I)."),
    (
        "float_arith_ratio",
        "Floating-point instructions (or SP + DP operations) / total instructions.",
    ),
    ("mem_ratio", "(Loads + stores) / total instructions."),
    ("cache_miss_hit_ratio", "Last-level cache misses / hits (accesses - misses)."),
    ("page_faults", "Page faults."),
    ("branch_miss_ratio", "Mispredicted branches / branch instructions."),
    ("ipc", "Instructions per cycle."),
)


_RUNTIME_COLUMNS = (
    _c(
        "runtime_s",
        "float64",
        "Runtime of the sample, per rank: the sum of its regions' exclusive times, each the mean "
        "over ranks (so the root's inclusive time, the mean over ranks), as "
        "`runtime_aggregation` says; null when the profile measured no time (e.g. only cycles) "
        "and none was given.",
        unit="s",
        exclusive_minimum=0,
        finite=True,
    ),
    _c(
        "runtime_aggregation",
        "string",
        "How per-rank/thread root times became `runtime_s`, e.g. `max over ranks`.",
        nullable=False,
    ),
)


def _derived_profile_columns() -> tuple[Column, ...]:
    """The canonical counters, the paper's Table II features and the VAE-DNN paper's features."""
    counter_cols = tuple(
        _c(
            f"ctr_{c.name}",
            "float64",
            f"{c.description} (canonical counter `{c.name}`).",
            unit=c.unit,
            minimum=0,
            finite=True,
        )
        for c in COUNTERS
    )
    feature_cols = tuple(
        _c(
            f"feat_{name}",
            "float64",
            f"Table II feature: {desc} Null when its counters are absent.",
            finite=True,
            minimum=0,
        )
        for name, desc in TABLE_II_FEATURES
    )
    seed_cols = tuple(
        _c(
            f"s001_{name}",
            "float64",
            f"VAE-DNN paper counter feature: {desc} Null when its counters are absent.",
            finite=True,
            minimum=0,
        )
        for name, desc in SEED001_FEATURES
    )
    return (*counter_cols, *feature_cols, *seed_cols)


# What a profile's metadata says of the run, through the mapping of xamm_ingest.metadata_map
_PROFILE_METADATA: tuple[Column, ...] = (
    _c(
        "variant",
        "string",
        "The application's algorithm or variant, as the profile names it (Adiak `algorithm`, ...); "
        "null when it says none.",
    ),
    _c(
        "input_size",
        "int64",
        "The problem size the profile states (Adiak `input_size`, `InputSize`, ...), in the "
        "application's own unit (elements, cells).",
        minimum=0,
    ),
    _c(
        "input_type",
        "string",
        "The kind of input the profile states (Adiak `input_type`, e.g. `Random`), as written "
        "or as a value map in the mapping says.",
    ),
    _c(
        "programming_model",
        "string",
        "The programming model the profile states (Adiak `programming_model`, e.g. `MPI`, `CUDA`).",
    ),
)


# what a profile measured or said that no column above names, and its regions
_PROFILE_KEPT: tuple[Column, ...] = (
    _c(
        "extra_metadata",
        "list[metadata]",
        "The profile's own metadata (Adiak keys, Caliper globals) that no mapping names, kept "
        "as written (name, value); null for rows ingested before schema 1.3.0.",
    ),
    _c(
        "regions",
        "list[region]",
        "The profile's regions as `xamm predict` reads them (the region contract of "
        "`xamm_data.tables.regions`: per-rank times, the mean over ranks; work; category): "
        "`runtime_s` is the sum of their `exclusive_s`. Null for samples from tables, "
        "profiles that measured no time, and rows ingested before schema 1.4.0.",
    ),
)


def _app_profile_columns() -> tuple[Column, ...]:
    return (
        _c("app", "string", "Application name, e.g. `Laghos`.", nullable=False),
        _c(
            "app_params",
            "string",
            "Application parameters as a JSON object with sorted keys (`{}` when none).",
            nullable=False,
        ),
        _c(
            "machine",
            "string",
            "Machine id from the machine registry.",
            nullable=False,
            pattern=MACHINE_PATTERN,
        ),
        _c(
            "device",
            "string",
            "Processor class the application ran on.",
            nullable=False,
            enum=("cpu", "gpu"),
        ),
        *_PROFILE_METADATA,
        *_CONFIG,
        _c("gpus", "int64", "GPUs used; null for CPU-only runs.", minimum=0),
        _c(
            "hosts",
            "int64",
            "Nodes the run used, as its metadata says (Caliper/Adiak `numhosts`, ...); null when "
            "it does not say.",
            minimum=1,
        ),
        _c(
            "trial",
            "int64",
            "0-based repeat index among samples with identical app, params, variant, input, "
            "programming model, machine and configuration.",
            nullable=False,
            minimum=0,
        ),
        *_RUNTIME_COLUMNS,
        *_derived_profile_columns(),
        _c(
            "counters_present",
            "list[string]",
            "Canonical counters the source measured (sorted).",
            nullable=False,
        ),
        _c(
            "extra_counters",
            "list[counter]",
            "Measured metrics with no canonical name, kept raw (name, value).",
            nullable=False,
        ),
        *_PROFILE_KEPT,
        *_PROVENANCE,
    )


APP_PROFILES = TableSchema(
    name="app_profiles",
    version="1.5.0",
    description=(
        "One row per application performance sample: an application with "
        "its parameters run on a machine in a "
        "configuration, with its runtime, canonical hardware counters "
        "and the xAMM paper's Table II features."
    ),
    columns=_app_profile_columns(),
    primary_key=(
        "app",
        "app_params",
        "variant",
        "input_size",
        "input_type",
        "programming_model",
        "machine",
        "device",
        "threads",
        "ranks",
        "gpus",
        "trial",
    ),
)

COUNTERS_TABLE = TableSchema(
    name="counters",
    version="1.0.0",
    description="Canonical hardware counters with units and the names they go by "
    "in PAPI, perf, HPCToolkit and Caliper.",
    columns=(
        _c(
            "name",
            "string",
            "Canonical counter name (snake case).",
            nullable=False,
            pattern=r"^[a-z][a-z0-9_]*$",
        ),
        _c("unit", "string", "Unit of the counter's value.", nullable=False),
        _c("description", "string", "What the counter counts.", nullable=False),
        _c("papi", "list[string]", "PAPI preset or native event names.", nullable=False),
        _c("perf", "list[string]", "Linux perf event names.", nullable=False),
        _c(
            "hpctoolkit",
            "list[string]",
            "HPCToolkit metric names (without the `(I)`/`(E)` suffix or unit decorations).",
            nullable=False,
        ),
        _c("caliper", "list[string]", "Caliper attribute names.", nullable=False),
    ),
    primary_key=("name",),
    partition_by="",
)

TABLES: dict[str, TableSchema] = {t.name: t for t in (BENCHMARK_RUNS, APP_PROFILES, COUNTERS_TABLE)}
DATA_KINDS: tuple[str, ...] = ("benchmark_runs", "app_profiles")


def get_table(name: str) -> TableSchema:
    """The schema of a table.

    Args:
        name: ``benchmark_runs``, ``app_profiles`` or ``counters``.

    Returns:
        Its :class:`TableSchema`.

    Raises:
        KeyError: an unknown table; the message lists the known ones.
    """
    try:
        return TABLES[name]
    except KeyError:
        raise KeyError(
            f"unknown table {name!r}; known tables: {', '.join(sorted(TABLES))}"
        ) from None


def counters_frame():
    """The counter table as a polars DataFrame with the ``counters`` table schema."""

    rows = [c.as_record() for c in COUNTERS]
    return pl.DataFrame(rows, schema=COUNTERS_TABLE.polars_schema)
