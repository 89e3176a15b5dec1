"""What a profile handed to a predictor must hold, checked before any model runs.

The default predictor (and the baseline predictors that share its input) reads one row per profile
with the columns of :data:`DEFAULT_COLUMNS`; each is named with what it means and its unit, so an
error can say what is missing and why. Every rule is a polars expression over the whole frame, and a
refusal names the offending rows (0-based, as in the input) and how many there are.
:func:`read_profiles_file` reads a Parquet or CSV file and names the file when it cannot.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from xamm_data.errors import type_name
from xamm_data.store.parquet_depth import read_parquet
from xamm_data.tables.bounds import DEFAULT_BOUNDS
from xamm_models.errors import FeatureSchemaError, ProfileInputError


@dataclass(frozen=True)
class InputColumn:
    """One input column: what it means, its unit, and the smallest value it may take."""

    name: str
    meaning: str
    unit: str
    minimum: float | None = None  # None: any finite number
    strict: bool = False  # True: the value must be > minimum
    required: bool = True
    maximum: float | None = None  # a plausibility bound (xamm_data.tables.bounds), inclusive
    count: bool = False  # a count (bytes, flops): 0, or at least 1


DEFAULT_COLUMNS: tuple[InputColumn, ...] = (
    InputColumn(
        "runtime_s",
        "the profile's time per iteration on the source machine",
        "s",
        0.0,
        strict=True,
        # the bound ingest holds an application's runtime to
        maximum=DEFAULT_BOUNDS.max_runtime_s,
    ),
    InputColumn("bytes_per_rep", "bytes moved per repetition", "B", 0.0, count=True),
    InputColumn(
        "flops_per_rep", "floating-point operations per repetition", "flop", 0.0, count=True
    ),
    InputColumn("iterations_per_rep", "loop iterations per repetition", "1", 0.0, strict=True),
    InputColumn("f_log_s_per_iter", "log10 of the source's seconds per iteration", "log10 s"),
    InputColumn("f_arith_intensity", "flops per byte", "flop/B", 0.0),
    InputColumn("f_log_problem_size", "log10 of the problem size", "log10 1"),
    InputColumn(
        "kernels_per_rep",
        "kernel launches per repetition (1 when absent)",
        "1",
        1.0,
        required=False,
    ),
)


def feature_columns(names: list[str]) -> tuple[InputColumn, ...]:
    """The input contract of a model trained on feature columns ``names``: each required, numeric
    and finite."""
    return tuple(
        InputColumn(n, "a feature the model was trained on", "as in training") for n in names
    )


def _rows(mask: pl.Series, shown: int = 5) -> str:
    idx = mask.arg_true().to_list()
    more = f" and {len(idx) - shown} more" if len(idx) > shown else ""
    return (
        f"row{'s' if len(idx) > 1 else ''} "
        f"{', '.join(map(str, idx[:shown]))}{more} ({len(idx)} of {len(mask)})"
    )


def _describe(c: InputColumn) -> str:
    return f"{c.name} ({c.meaning}, {c.unit})"


def require_frame(profiles: object, what: str = "the default predictor") -> None:
    """Raise :class:`ProfileInputError` unless ``profiles`` is a polars DataFrame.

    Args:
        profiles: what was given as the profiles.
        what: the model named in the error.
    """
    if not isinstance(profiles, pl.DataFrame):
        raise ProfileInputError(
            f"profiles: {type_name(profiles, article=True)}; {what} takes a polars DataFrame, "
            "one row per profile (pl.from_pandas converts a pandas one)"
        )


def check_profiles(
    profiles: pl.DataFrame,
    columns: tuple[InputColumn, ...] = DEFAULT_COLUMNS,
    *,
    what: str = "the default predictor",
) -> None:
    """Raise :class:`ProfileInputError` unless ``profiles`` has rows and every column of ``columns``
    is present (optional ones may be absent), numeric, finite and within its range.

    Parameters: ``profiles``, one row per profile; ``columns``, the contract; ``what``, the model
    named in errors."""
    require_frame(profiles, what)
    if profiles.height == 0:
        raise ProfileInputError(
            f"no profiles: the input has no rows; {what} needs one row per profile"
        )
    missing = [c for c in columns if c.required and c.name not in profiles.columns]
    if missing:
        raise ProfileInputError(
            f"the input lacks {'; '.join(map(_describe, missing))}; {what} "
            "needs "
            f"{', '.join(c.name for c in columns if c.required)}"
        )
    for c in (c for c in columns if c.name in profiles.columns):
        dtype = profiles.schema[c.name]
        if not dtype.is_numeric():
            raise ProfileInputError(f"column {_describe(c)} holds {dtype}, not numbers")
        x = profiles.get_column(c.name).cast(pl.Float64)
        # a null is bad only where the column is required
        bad = (x.is_nan() | x.is_infinite()).fill_null(c.required)
        if c.minimum is not None:
            below = (x <= c.minimum) if c.strict else (x < c.minimum)
            bad = bad | below.fill_null(False)
        if c.maximum is not None:
            bad = bad | (x > c.maximum).fill_null(False)
        if c.count:  # less than one byte or flop is no measurement (and underflows the physics)
            bad = bad | ((x > 0) & (x < 1)).fill_null(False)
        if bad.any():
            rule = "finite" + (
                f" and {'>' if c.strict else '>='} {c.minimum:g}" if c.minimum is not None else ""
            )
            rule += f" and <= {c.maximum:g} (plausibility bound)" if c.maximum is not None else ""
            rule += ", 0 or at least 1 (a count)" if c.count else ""
            raise ProfileInputError(
                f"column {_describe(c)} must be {rule}; it is not in {_rows(bad)}"
            )
    _refuse_no_work(profiles, columns)


def _refuse_no_work(profiles: pl.DataFrame, columns: tuple[InputColumn, ...]) -> None:
    """Rows whose bytes and flops are both 0: the physics of the default contract models a time
    from the work, and none has no time to carry (it would answer NaN)."""
    names = {c.name for c in columns}
    if not {"bytes_per_rep", "flops_per_rep"} <= names & set(profiles.columns):
        return
    none = (profiles["bytes_per_rep"] == 0) & (profiles["flops_per_rep"] == 0)
    if none.fill_null(False).any():
        raise ProfileInputError(
            f"bytes_per_rep and flops_per_rep are both 0 in {_rows(none.fill_null(False))}; "
            "expected the work of each profile (a table of regions predicts from time alone)"
        )


def read_profiles_file(path: Path) -> pl.DataFrame:
    """A Parquet (``.parquet``) or CSV file of profiles; :class:`ProfileInputError` names the file
    it cannot read."""
    if not path.is_file():
        raise ProfileInputError(f"{path}: no such file")
    kind = "Parquet" if path.suffix.lower() == ".parquet" else "CSV"
    try:
        return (
            read_parquet(path, "")
            if kind == "Parquet"
            else pl.read_csv(path, infer_schema_length=10000)
        )
    except Exception as e:  # polars' and pyarrow's errors for a damaged or foreign file
        raise ProfileInputError(
            f"{path}: cannot read it as {kind} ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:160]}); "
            "expected a table with one row per profile"
        ) from None


__all__ = [
    "DEFAULT_COLUMNS",
    "InputColumn",
    "ProfileInputError",
    "check_profiles",
    "read_profiles_file",
    "require_frame",
]


def check_feature_columns(df: pl.DataFrame, columns: list[str], what: str) -> None:
    """:class:`FeatureSchemaError` naming the ``columns`` ``df`` lacks, or has but not numeric
    (``what`` expects them)."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise FeatureSchemaError(
            f"input lacks the feature columns {missing}; {what} expects {columns}"
        )
    wrong = [c for c in columns if not df.schema[c].is_numeric()]
    if wrong:
        raise FeatureSchemaError(
            f"feature columns {wrong} are not numeric ({[str(df.schema[c]) for c in wrong]})"
        )
