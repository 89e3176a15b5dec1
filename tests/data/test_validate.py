"""Vectorised validation: errors name the table, the column, the rule and the first offending
rows."""

from __future__ import annotations

import polars as pl
import pytest

from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_data.tables.validate import ValidationError, conform, validate


def good_rows(n: int = 3) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "machine": ["quartz"] * n,
            "device": ["cpu"] * n,
            "suite": ["RAJAPerf"] * n,
            "kernel": [f"Basic_K{i}" for i in range(n)],
            "group": ["Basic"] * n,
            "variant": ["Base_Seq"] * n,
            "backend": ["Seq"] * n,
            "tuning": ["default"] * n,
            "problem_size": [1000] * n,
            "reps": [10] * n,
            "npasses": [1] * n,
            "threads": [1] * n,
            "trial": [0] * n,
            "time_per_rep_s": [1e-3] * n,
            "source_path": [f"r/{i}.cali" for i in range(n)],
            "source_sha256": ["a" * 64] * n,
            "source_format": ["caliper-cali"] * n,
            "reader": ["t"] * n,
            "xamm_version": ["0"] * n,
        }
    )


def test_good_frame_conforms_to_schema_order_and_types():
    out = validate(good_rows(), BENCHMARK_RUNS)
    assert out.columns == BENCHMARK_RUNS.names
    assert out.schema == BENCHMARK_RUNS.polars_schema
    assert out.get_column("bytes_per_rep").null_count() == 3


def test_error_names_column_rule_rows_and_source():
    df = good_rows(8).with_columns(
        pl.when(pl.int_range(pl.len()) >= 2).then(-1.0).otherwise(1e-3).alias("time_per_rep_s")
    )
    with pytest.raises(ValidationError) as ei:
        validate(df, BENCHMARK_RUNS)
    e = ei.value
    assert (e.column, e.n_bad, e.rule) == ("time_per_rep_s", 6, "> 0")
    assert [x["row"] for x in e.examples] == [2, 3, 4, 5, 6]  # first five only
    assert "r/2.cali" in str(e) and "time_per_rep_s" in str(e)


@pytest.mark.parametrize(
    "column,value,rule",
    [
        ("time_per_rep_s", float("inf"), "finite"),
        ("device", "fpga", "one of"),
        ("kernel", "daxpy", "matches"),
        ("machine", None, "not null"),
        ("source_sha256", "xyz", "matches"),
    ],
)
def test_each_rule_is_enforced(column, value, rule):
    df = good_rows().with_columns(pl.lit(value).alias(column))
    with pytest.raises(ValidationError) as ei:
        validate(df, BENCHMARK_RUNS)
    assert ei.value.column == column and rule in ei.value.rule


def test_unknown_and_missing_columns_and_bad_types():
    with pytest.raises(ValidationError, match="known column"):
        conform(good_rows().with_columns(pl.lit(1).alias("mystery")), BENCHMARK_RUNS)
    with pytest.raises(ValidationError, match="column present"):
        conform(good_rows().drop("kernel"), BENCHMARK_RUNS)
    with pytest.raises(ValidationError) as ei:
        conform(good_rows().with_columns(pl.Series("reps", ["10", "ten", "10"])), BENCHMARK_RUNS)
    assert ei.value.column == "reps" and ei.value.examples[0]["row"] == 1


def test_primary_key_duplicates_rejected():
    df = pl.concat([good_rows(2), good_rows(2)])
    with pytest.raises(ValidationError, match="primary key unique") as ei:
        validate(df, BENCHMARK_RUNS)
    assert ei.value.n_bad == 4


def test_rows_that_are_no_frame_or_a_schema_that_is_none_are_refused_by_type():
    """``validate``/``conform``/``to_thicket`` name what they were given instead of failing on
    an attribute; a table's name stands for its schema."""
    from xamm_data.thicket import to_thicket

    assert validate(good_rows(), "benchmark_runs").equals(validate(good_rows(), BENCHMARK_RUNS))
    for fn in (validate, conform):
        with pytest.raises(TypeError, match=f"{fn.__name__}: the rows are a NoneType; expected a"):
            fn(None, BENCHMARK_RUNS)
        with pytest.raises(TypeError, match="the rows are a dict; .*pl.from_pandas"):
            fn(good_rows().to_dict(as_series=False), "benchmark_runs")
        with pytest.raises(TypeError, match="schema: an int; expected a TableSchema"):
            fn(good_rows(), 5)
        with pytest.raises(KeyError, match="unknown table 'runs'; known tables"):
            fn(good_rows(), "runs")
    with pytest.raises(TypeError, match="to_thicket: the rows are a NoneType"):
        to_thicket(None)
