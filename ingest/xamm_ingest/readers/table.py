"""Application samples already flattened to CSV or Parquet (as the xAMM paper's data sets are).

A TOML mapping says which of the user's columns is which canonical field::

    [columns]              # canonical field = the user's column
    app = "application"
    machine = "system"
    runtime_s = "time"
    threads = "nthreads"
    ranks = "nranks"

    params = ["size", "iterations"]     # the user's columns that form app_params

    [counters]             # the user's column = a counter alias or canonical name
    "Tot Ins" = "PAPI_TOT_INS"
    br = "branches"

    [units]
    runtime_s = "ms"       # s (default), ms, us, ns

    [defaults]             # for fields no column gives
    device = "cpu"

Columns named after a known counter alias (``PAPI_TOT_INS``, ``instructions``, ...) are mapped
without being listed; any other numeric column is kept raw in ``extra_counters``. Mapping and
conversion are polars expressions over the whole table.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from xamm_data.identifiers import first_repeated
from xamm_data.store.parquet_depth import read_parquet
from xamm_data.tables import counters
from xamm_data.tables.units import TIME_UNITS, accepted, seconds_per
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import source_machine
from xamm_ingest.readers.base import Source, provenance
from xamm_ingest.records import flag_app_records

READER = "xamm_ingest.readers.table"
_FIELDS = ("app", "machine", "device", "runtime_s", "threads", "ranks", "gpus", "trial")


class TableMapping(BaseModel):
    """The mapping file: the user's column names -> canonical fields."""

    model_config = ConfigDict(extra="forbid")

    columns: dict[str, str] = Field(default_factory=dict)
    params: list[str] = Field(default_factory=list)
    counters: dict[str, str] = Field(default_factory=dict)
    units: dict[str, str] = Field(default_factory=dict)
    # bool first: a switch stays one (pydantic would read true as the count 1)
    defaults: dict[str, bool | str | int | float] = Field(default_factory=dict)
    ignore: list[str] = Field(default_factory=list)


def load_mapping(path: str | Path) -> TableMapping:
    """Parse and validate a mapping file; errors name the file and the field."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        mapping = TableMapping(**data)
    # RecursionError: arrays nested past the parser (a valid TOML file nests a few deep)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        raise IngestError(path, f"cannot read the mapping: {e}") from None
    except ValidationError as e:
        err = e.errors()[0]
        raise IngestError(path, f"field {'.'.join(map(str, err['loc']))!r}: {err['msg']}") from None
    bad = [k for k in mapping.columns if k not in _FIELDS]
    if bad:
        raise IngestError(path, f"[columns] has {bad}; canonical fields are {list(_FIELDS)}")
    if (twice := first_repeated(mapping.params)) is not None:
        raise IngestError(path, f"{twice!r} is named twice", record="params")
    _check_defaults(path, mapping)
    for col, alias in mapping.counters.items():
        if counters.resolve(alias) is None:
            raise IngestError(
                path,
                f"[counters] {col!r} = {alias!r} is no known counter name or alias",
                record="counters",
            )
    for k, u in mapping.units.items():
        if k != "runtime_s" or u.strip().lower() not in TIME_UNITS:
            raise IngestError(
                path, f"[units] {k} = {u!r}; expected runtime_s = a time unit ({accepted()})"
            )
    return mapping


def _check_defaults(path: Path, mapping: TableMapping) -> None:
    """``[defaults]``: canonical fields without a column, each value of its field's kind (a count
    is a whole number, never truncated; a runtime a number; a name text), else an error naming
    the file and the field."""
    for fld, value in mapping.defaults.items():
        why: str | None
        if fld not in _FIELDS:
            why = f"is no canonical field; they are {list(_FIELDS)}"
        elif fld in mapping.columns:
            why = f"has a column under [columns] ({mapping.columns[fld]!r}); give one or the other"
        elif _NUMERIC.get(fld) == pl.Int64:
            least = 1 if fld in ("threads", "ranks") else 0
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= least
            why = None if ok else f"is {value!r}; expected a whole number >= {least}"
        elif fld == "runtime_s":
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            why = None if ok else f"is {value!r}; expected a number"
        else:
            ok = isinstance(value, str) and value.strip() != ""
            why = None if ok else f"is {value!r}; expected text"
        if why is not None:
            raise IngestError(path, f"{fld} {why}", record="defaults")


_NUMERIC = {
    "runtime_s": pl.Float64,
    "threads": pl.Int64,
    "ranks": pl.Int64,
    "gpus": pl.Int64,
    "trial": pl.Int64,
}


def _not_numeric(col: str, whole: bool) -> pl.Expr:
    """True where a cell is not a number, or (``whole``: counts) not a whole number an integer
    holds: ``2.5`` threads is refused, never truncated to 2, and so is ``1e23``."""
    x = pl.col(col).cast(pl.Float64, strict=False)
    bad = pl.col(col).is_not_null() & x.is_null()
    if whole:
        wrong = x.is_nan() | x.is_infinite() | (x != x.floor()) | (x.abs() >= 2.0**63)
        bad = bad | (x.is_not_null() & wrong)
    return bad


def _bad_cells(
    df: pl.DataFrame, mapping: TableMapping, counter_cols: dict[str, str]
) -> tuple[pl.DataFrame, list[tuple[str, str, str, str]]]:
    """Drop rows whose mapped numeric cells, or counters, are not numbers (``fast`` for a runtime,
    ``four`` or ``2.5`` threads, ``n/a`` instructions)."""
    checks = [(fld, col) for fld, col in mapping.columns.items() if fld in _NUMERIC]
    rules = [
        (
            col,
            _NUMERIC[fld] == pl.Int64,
            f"column {col!r} ({fld}) expected "
            + ("a whole number below 2^63" if _NUMERIC[fld] == pl.Int64 else "a number"),
        )
        for fld, col in checks
    ] + [
        (col, False, f"column {col!r} (counter {n}) expected a number")
        for col, n in counter_cols.items()
    ]
    if not rules:
        return df, []
    why = pl.coalesce(
        [
            pl.when(_not_numeric(col, whole)).then(
                pl.struct(
                    pl.lit(col).alias("field"),
                    pl.col(col).cast(pl.String).alias("value"),
                    pl.lit(rule).alias("rule"),
                )
            )
            for col, whole, rule in rules
        ]
    )
    flagged = df.with_columns(why.alias("_why"))
    dropped = [
        (
            f"row {r['_row']}",
            r["_why"]["field"],
            r["_why"]["value"],
            f"{r['_why']['rule']}, got {r['_why']['value']!r}",
        )
        for r in flagged.filter(pl.col("_why").is_not_null())
        .select("_row", "_why")
        .iter_rows(named=True)
    ]
    good = flagged.filter(pl.col("_why").is_null()).drop("_why")
    return good.with_columns(
        pl.col(col).cast(pl.Float64, strict=False).cast(_NUMERIC[fld]) for fld, col in checks
    ), dropped


def _implausible(
    frame: pl.DataFrame, bounds
) -> tuple[pl.DataFrame, list[tuple[str, str, str, str]]]:
    """Drop rows whose runtime or counters break the plausibility rules
    (:func:`~xamm_ingest.records.app_rules`)."""
    flagged = flag_app_records(frame, bounds)
    dropped = [
        (f"row {r['_row']}", r["_why"]["field"], r["_why"]["value"], r["_why"]["rule"])
        for r in flagged.filter(pl.col("_why").is_not_null())
        .select("_row", "_why")
        .iter_rows(named=True)
    ]
    return flagged.filter(pl.col("_why").is_null()).drop("_why"), dropped


def _load_table(src: Source, mapping: TableMapping, mapping_path: Path) -> pl.DataFrame:
    """The file as a frame, holding every column the mapping names."""
    try:
        df = (
            read_parquet(src.path, "")
            if src.path.suffix.lower() == ".parquet"
            else pl.read_csv(src.path, infer_schema_length=10000)
        )
    except Exception as e:
        raise IngestError(
            src.path, f"cannot read as {'Parquet' if src.path.suffix == '.parquet' else 'CSV'}: {e}"
        ) from None
    missing = [
        c
        for c in [*mapping.columns.values(), *mapping.params, *mapping.counters]
        if c not in df.columns
    ]
    if missing:
        raise IngestError(
            src.path,
            f"columns {missing} named in {mapping_path.name} are not in the "
            "table; "
            f"it has {df.columns}",
        )
    return df


def _field_exprs(mapping: TableMapping, mapping_path: Path) -> list[pl.Expr]:
    """The row number and every schema field from its column or its default; app, machine and
    runtime are required."""
    exprs: list[pl.Expr] = [pl.col("_row")]
    for fld in _FIELDS:
        if fld in mapping.columns:
            exprs.append(pl.col(mapping.columns[fld]).alias(fld))
        elif fld in mapping.defaults:
            exprs.append(pl.lit(mapping.defaults[fld]).alias(fld))
    have = {e.meta.output_name() for e in exprs}
    for need in ("app", "machine", "runtime_s"):
        if need not in have:
            raise IngestError(
                mapping_path,
                f"no column or default for {need!r}; add it under [columns] or [defaults]",
            )
    return exprs


def _counter_columns(df: pl.DataFrame, mapping: TableMapping) -> tuple[dict[str, str], list[str]]:
    """Columns that name a canonical counter (column -> counter), and the other numeric ones."""
    used = set(mapping.columns.values()) | set(mapping.params) | set(mapping.ignore) | {"_row"}
    counter_cols: dict[str, str] = {}
    for col in df.columns:
        if col in used:
            continue
        name = counters.resolve(mapping.counters.get(col, col))
        if name is not None and name not in counter_cols.values():
            counter_cols[col] = name
    extra_cols = [
        c
        for c in df.columns
        if c not in used and c not in counter_cols and df.schema[c].is_numeric()
    ]
    return counter_cols, extra_cols


def _machine_ids(out: pl.DataFrame, src: Source) -> pl.DataFrame:
    """The machine column as machine ids; a name that is a path refuses the file."""
    names = out.get_column("machine").cast(pl.String).unique().drop_nulls().to_list()
    ids = {m: source_machine(m, src.path, "the machine column") for m in names}
    return out.with_columns(pl.col("machine").cast(pl.String).replace(ids))


def read_table(
    src: Source, mapping: TableMapping, mapping_path: Path, bounds=None
) -> tuple[pl.DataFrame, list]:
    """The table as ``app_profiles`` columns (features not yet added), and the rows dropped with
    reasons.

    ``bounds``: the plausibility bounds (:class:`~xamm_ingest.records.Bounds`) of runtimes; counters
    must be finite and >= 0."""
    df = _load_table(src, mapping, mapping_path).with_row_index("_row", offset=2)  # 1: the header
    counter_cols, extra_cols = _counter_columns(df, mapping)
    df, dropped = _bad_cells(df, mapping, counter_cols)
    exprs = _field_exprs(mapping, mapping_path)
    params = (
        pl.struct([pl.col(p) for p in sorted(mapping.params)]).struct.json_encode()
        if mapping.params
        else pl.lit("{}")
    )
    scale = seconds_per(mapping.units.get("runtime_s", "s"))
    out = df.select(
        *exprs,
        params.alias("app_params"),
        *[pl.col(c).cast(pl.Float64).alias(f"ctr_{n}") for c, n in counter_cols.items()],
        pl.concat_list(
            [
                pl.when(pl.col(c).is_not_null()).then(pl.lit(n))
                for c, n in sorted(counter_cols.items(), key=lambda x: x[1])
            ]
        )
        .list.drop_nulls()
        .alias("counters_present")
        if counter_cols
        else pl.lit([], dtype=pl.List(pl.String)).alias("counters_present"),
        pl.concat_list(
            [
                pl.struct(pl.lit(c).alias("name"), pl.col(c).cast(pl.Float64).alias("value"))
                for c in extra_cols
            ]
        ).alias("extra_counters")
        if extra_cols
        else pl.lit([], dtype=pl.List(pl.Struct({"name": pl.String, "value": pl.Float64}))).alias(
            "extra_counters"
        ),
    ).with_columns((pl.col("runtime_s").cast(pl.Float64) * scale).alias("runtime_s"))
    out = _machine_ids(out, src)
    if "device" not in out.columns:
        out = out.with_columns(pl.lit("cpu").alias("device"))
    out, implausible = _implausible(out, bounds)
    dropped += implausible
    prov = provenance(src, "table", READER)
    frame = out.drop("_row").with_columns(
        pl.lit(f"column {mapping.columns.get('runtime_s', 'runtime_s')} of the table").alias(
            "runtime_aggregation"
        ),
        *[pl.lit(v).alias(k) for k, v in prov.items() if k != "run_date"],
    )
    return frame, dropped
