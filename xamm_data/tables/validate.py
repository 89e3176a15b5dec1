"""Vectorised validation of whole frames against a :class:`~xamm_data.tables.schema.TableSchema`.

Every rule is a polars expression evaluated over the whole frame at once; no per-row Python.
A failing frame raises :class:`ValidationError` naming the table, the column, the rule, how many
rows broke it and the first few of them (row index, value and source file).
"""

from __future__ import annotations

import polars as pl

from xamm_data.errors import XammError, type_name
from xamm_data.tables.schema import Column, TableSchema, get_table

MAX_REPORTED_ROWS = 5


class ValidationError(XammError, ValueError):
    """A frame broke a rule of its table schema."""

    def __init__(self, table: str, column: str, rule: str, n_bad: int, examples: list[dict]):
        self.table, self.column, self.rule, self.n_bad, self.examples = (
            table,
            column,
            rule,
            n_bad,
            examples,
        )
        sources = {e.get("source_path") for e in examples}
        one_source = len(sources) == 1 and None not in sources
        shown = "; ".join(
            f"row {e['row']}: {e['column_value']!r}"
            + (f" (from {e['source_path']})" if e.get("source_path") and not one_source else "")
            for e in examples
        )
        where = f" of {sources.pop()}" if one_source else ""
        super().__init__(
            f"{table}: column {column!r} breaks rule [{rule}] in {n_bad} "
            f"row(s){where}; first: {shown}"
        )


def _rules(col: Column) -> list[tuple[str, pl.Expr]]:
    """(rule text, expression that is True where a row BREAKS the rule)."""
    c = pl.col(col.name)
    rules: list[tuple[str, pl.Expr]] = []
    if not col.nullable:
        rules.append(("not null", c.is_null()))
    numeric = col.dtype in ("int64", "float64")
    if numeric and col.finite and col.dtype == "float64":
        rules.append(("finite", c.is_not_null() & ~c.is_finite()))
    if numeric and col.exclusive_minimum is not None:
        rules.append(
            (f"> {col.exclusive_minimum:g}", c.is_not_null() & ~(c > col.exclusive_minimum))
        )
    if numeric and col.minimum is not None:
        rules.append((f">= {col.minimum:g}", c.is_not_null() & ~(c >= col.minimum)))
    if numeric and col.maximum is not None:
        rules.append((f"<= {col.maximum:g}", c.is_not_null() & ~(c <= col.maximum)))
    if col.enum is not None:
        rules.append((f"one of {list(col.enum)}", c.is_not_null() & ~c.is_in(list(col.enum))))
    if col.pattern is not None:
        rules.append((f"matches {col.pattern}", c.is_not_null() & ~c.str.contains(col.pattern)))
    return rules


def _raise_for(
    df: pl.DataFrame, schema: TableSchema, column: str, rule: str, bad: pl.Series
) -> None:
    idx = df.with_row_index("__row").filter(bad)
    examples = [
        {
            "row": r["__row"],
            "column_value": {k: r.get(k) for k in column.split(",")}
            if "," in column
            else r.get(column),
            "source_path": r.get("source_path"),
        }
        for r in idx.head(MAX_REPORTED_ROWS).iter_rows(named=True)
    ]
    raise ValidationError(schema.name, column, rule, idx.height, examples)


def require_frame(df: object, what: str) -> pl.DataFrame:
    """``df`` if it is a polars DataFrame, else a ``TypeError`` naming its type.

    Args:
        df: what the caller passed as the rows.
        what: the function named in the error.
    """
    if not isinstance(df, pl.DataFrame):
        raise TypeError(
            f"{what}: the rows are {type_name(df, article=True)}; expected a polars DataFrame "
            "(pl.from_pandas converts a pandas one)"
        )
    return df


def _schema_of(schema: TableSchema | str) -> TableSchema:
    """A table's schema, given as one or by its name (``benchmark_runs`` ...)."""
    if isinstance(schema, TableSchema):
        return schema
    if isinstance(schema, str):
        return get_table(schema)
    raise TypeError(
        f"schema: {type_name(schema, article=True)}; expected a TableSchema or a "
        "table's name "
        "(benchmark_runs, app_profiles, counters)"
    )


def conform(df: pl.DataFrame, schema: TableSchema | str) -> pl.DataFrame:
    """Put ``df`` in the schema's column order and dtypes, adding missing nullable columns as null.

    Unknown columns, missing non-nullable columns and values that do not convert to the column's
    dtype raise :class:`ValidationError`; rows that are no polars DataFrame, or a schema that is
    neither a :class:`TableSchema` nor a table's name, a ``TypeError``.
    """
    df, schema = require_frame(df, "conform"), _schema_of(schema)
    unknown = [c for c in df.columns if c not in schema.names]
    if unknown:
        raise ValidationError(
            schema.name,
            unknown[0],
            f"known column of {schema.name} v{schema.version}",
            len(unknown),
            [{"row": "-", "column_value": ", ".join(unknown)}],
        )
    exprs = []
    for col in schema.columns:
        if col.name in df.columns:
            exprs.append(pl.col(col.name))
        elif col.nullable:
            exprs.append(pl.lit(None, dtype=col.polars_dtype).alias(col.name))
        else:
            raise ValidationError(
                schema.name,
                col.name,
                "column present",
                df.height,
                [{"row": "-", "column_value": "<missing column>"}],
            )
    out = df.select(exprs)
    current = out.schema  # polars builds the schema anew on every access
    casts = [col for col in schema.columns if current[col.name] != col.polars_dtype]
    if casts:
        try:
            out = out.with_columns(
                [pl.col(c.name).cast(c.polars_dtype, strict=True) for c in casts]
            )
        except (
            pl.exceptions.InvalidOperationError,
            pl.exceptions.ComputeError,
            pl.exceptions.SchemaError,
        ):
            for col in casts:  # find the offending column for the message
                cast = out.get_column(col.name).cast(col.polars_dtype, strict=False)
                bad = cast.is_null() & out.get_column(col.name).is_not_null()
                if bad.any():
                    _raise_for(out, schema, col.name, f"convertible to {col.dtype}", bad)
            raise
    return out


def validate(df: pl.DataFrame, schema: TableSchema | str) -> pl.DataFrame:
    """Conform ``df`` to ``schema`` and check every rule and the primary key.

    Args:
        df: rows of the table (a polars DataFrame).
        schema: the table's schema, or its name (``benchmark_runs``, ``app_profiles``,
            ``counters``).

    Returns:
        The conformed frame.

    Raises:
        ValidationError: a rule fails; the error names the rows, the column and what was
            expected.
    """
    df, schema = require_frame(df, "validate"), _schema_of(schema)
    out = conform(df, schema)
    checks: list[tuple[str, str, pl.Expr]] = [
        (col.name, text, expr) for col in schema.columns for text, expr in _rules(col)
    ]
    if checks and out.height:
        counts = out.select(
            [expr.sum().alias(str(i)) for i, (_, _, expr) in enumerate(checks)]
        ).row(0)
        for i, n in enumerate(counts):
            if n:
                name, text, expr = checks[i]
                _raise_for(out, schema, name, text, out.select(expr).to_series())
    if schema.primary_key and out.height:
        dup = out.select(pl.struct(list(schema.primary_key)).is_duplicated()).to_series()
        if dup.any():
            _raise_for(out, schema, ",".join(schema.primary_key), "primary key unique", dup)
    return out
