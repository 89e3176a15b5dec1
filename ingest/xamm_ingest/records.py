"""Record-level checks of ``benchmark_runs`` rows: drop a bad record, keep the rest of its file.

Readers hand over numbers as they found them (integers still as floats, so that a problem size of
1e300 is seen as such rather than silently becoming null in an integer column). Every rule here is
one polars expression over the whole frame; a row that breaks one is dropped and reported with
its file, record, field, value and the rule, e.g. ``Reps is 0.0; expected a whole number >= 1``.

Physical plausibility bounds (:class:`Bounds`) are part of the rules and configurable
(``xamm-ingest rajaperf --bound max_time_per_rep_s=1e6``). Optional metadata that is ``nan``,
``inf`` or empty becomes null rather than an error; RAJAPerf's ``-1`` ("not set") for bytes and
flops per rep becomes null too.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from xamm_data.tables.bounds import Bounds
from xamm_data.tables.schema import BENCHMARK_RUNS

# Integer columns that come from numbers in the sources: carried as Float64 until checked.
RAW_INT_COLUMNS = (
    "problem_size",
    "problem_size_param",
    "reps",
    "npasses",
    "threads",
    "ranks",
    "omp_max_threads",
    "block_size",
    "problem_dimensionality",
)
# _record: where in the file; _time_resolution_s: half a unit of the time's last printed digit, per
# rep;
# _uncertain_figures: Caliper figures that only the same run's CSV can confirm (see
# rajaperf_caliper).
INTERNAL = {
    "_record": pl.String(),
    "_time_resolution_s": pl.Float64(),
    "_uncertain_figures": pl.Boolean(),
    "_device_name": pl.String(),  # the device a BabelStream run names (xamm_ingest.babelstream)
    # a RAJAPerf CSV run's rows waiting for the machine the Caliper files beside them name: why
    # none, if they name none (xamm_ingest.formats.rajaperf)
    "_no_machine": pl.String(),
}
PER_REP = (
    "bytes_per_rep",
    "bytes_read_per_rep",
    "bytes_written_per_rep",
    "bytes_modify_written_per_rep",
    "bytes_atomic_modify_written_per_rep",
    "bytes_touched_per_rep",
    "bytes_allocated_per_rep",
    "flops_per_rep",
)
OPTIONAL_FLOATS = (
    "iterations_per_rep",
    "kernels_per_rep",
    *(c for c in BENCHMARK_RUNS.names if c.startswith("topdown_")),
)


@dataclass(frozen=True)
class DroppedRecord:
    """One record left out of an otherwise good source."""

    path: str
    record: str
    field: str
    value: str
    rule: str

    @property
    def reason(self) -> str:
        return f"{self.path} [{self.record}]: {self.rule}"


def raw_schema() -> dict[str, pl.DataType]:
    """The polars schema readers' rows are built with: integer columns as Float64, plus internal
    columns."""
    out = {
        n: (pl.Float64() if n in RAW_INT_COLUMNS else t)
        for n, t in BENCHMARK_RUNS.polars_schema.items()
    }
    return {**out, **INTERNAL}


def _shown(col: str) -> pl.Expr:
    return pl.col(col).cast(pl.String).fill_null("missing")


def _bound_rules(b: Bounds) -> list[tuple[str, pl.Expr, pl.Expr]]:
    """The rules of the minimum and maximum times, bytes and flops per rep, and counts."""
    out = []
    for role in ("time_per_rep_min_s", "time_per_rep_max_s"):
        c = pl.col(role)
        out.append(
            (role, c <= 0, pl.format(f"{role} is {{}} s; expected a time > 0", _shown(role)))
        )
        out.append(
            (
                role,
                (c < b.min_time_per_rep_s) | (c > b.max_time_per_rep_s),
                pl.format(
                    f"{role} {{}} s is outside the plausible range "
                    f"[{b.min_time_per_rep_s:g} s, "
                    f"{b.max_time_per_rep_s:g} s] (bounds min_time_per_rep_s, max_time_per_rep_s)",
                    _shown(role),
                ),
            )
        )
    for col in PER_REP:
        c, limit = (
            pl.col(col),
            (b.max_flops_per_rep if col.startswith("flops") else b.max_bytes_per_rep),
        )
        bound = "max_flops_per_rep" if col.startswith("flops") else "max_bytes_per_rep"
        out.append(
            (
                col,
                c < 0,
                pl.format(f"{col} is {{}}; expected >= 0 (or -1 for 'not set')", _shown(col)),
            )
        )
        out.append(
            (
                col,
                c > limit,
                pl.format(
                    f"{col} {{}} is above the plausible maximum {limit:g} (bound {bound})",
                    _shown(col),
                ),
            )
        )
    # those have their own rules
    for col in (c for c in RAW_INT_COLUMNS if c not in ("reps", "problem_size")):
        c, low = pl.col(col), BENCHMARK_RUNS.column(col).minimum or 0
        out.append(
            (
                col,
                (c < low) | (c != c.floor()) | (c > 2.0**62),
                pl.format(f"{col} is {{}}; expected a whole number >= {low:g}", _shown(col)),
            )
        )
    return out


def _rules(b: Bounds) -> list[tuple[str, pl.Expr, pl.Expr]]:
    """(field, expression True where a row breaks the rule, message)."""
    t, r, n = pl.col("time_per_rep_s"), pl.col("reps"), pl.col("problem_size")
    out = [
        (
            "reps",
            r.is_null() | r.is_nan() | r.is_infinite() | (r < 1) | (r != r.floor()) | (r > 2.0**62),
            pl.format("Reps is {}; expected a whole number from 1 to 2^62", _shown("reps")),
        ),
        (
            "problem_size",
            n.is_null() | n.is_nan() | n.is_infinite() | (n < 1) | (n != n.floor()),
            pl.format("problem size is {}; expected a whole number >= 1", _shown("problem_size")),
        ),
        (
            "problem_size",
            n > b.max_problem_size,
            pl.format(
                f"problem size {{}} is above the plausible maximum "
                f"{b.max_problem_size:g} (bound max_problem_size)",
                _shown("problem_size"),
            ),
        ),
        (
            "time_per_rep_s",
            t.is_null() | t.is_nan() | t.is_infinite() | (t <= 0),
            pl.format("time per rep is {} s; expected a finite time > 0", _shown("time_per_rep_s")),
        ),
        (
            "time_per_rep_s",
            (t < b.min_time_per_rep_s) | (t > b.max_time_per_rep_s),
            pl.format(
                f"time per rep {{}} s is outside the plausible range "
                f"[{b.min_time_per_rep_s:g} s, "
                f"{b.max_time_per_rep_s:g} s] (bounds min_time_per_rep_s, max_time_per_rep_s)",
                _shown("time_per_rep_s"),
            ),
        ),
    ]
    return out + _bound_rules(b)


def _sanitise(frame: pl.DataFrame) -> pl.DataFrame:
    """nan/inf in optional fields -> null; RAJAPerf's -1 ('not set') for bytes and flops -> null."""
    optional = [
        c
        for c in (
            *RAW_INT_COLUMNS,
            "time_per_rep_min_s",
            "time_per_rep_max_s",
            *OPTIONAL_FLOATS,
            *PER_REP,
        )
        if c in frame.columns and c not in ("reps", "problem_size")
    ]

    def clean(c: str) -> pl.Expr:
        x = pl.col(c)
        bad = (
            x.is_nan()
            | x.is_infinite()
            | ((x == -1) if c in PER_REP else pl.lit(False))
            | ((x <= 0) if c == "block_size" else pl.lit(False))
        )
        return pl.when(bad).then(None).otherwise(x).alias(c)

    exprs = [clean(c) for c in optional]
    return frame.with_columns(exprs)


def check_benchmark_records(
    frame: pl.DataFrame, bounds: Bounds | None = None
) -> tuple[pl.DataFrame, list[DroppedRecord], list[tuple[str, str]]]:
    """Drop the rows that break a rule; return (good rows with integer columns cast, dropped
    records, (source path, note) on values read as 'not set')."""
    if frame.is_empty():
        return frame, [], []
    bounds = bounds or Bounds()
    not_set = _not_set_records(frame)
    frame = _sanitise(frame)
    rules = _rules(bounds)
    breaks = frame.select(
        pl.any_horizontal([bad.fill_null(False) for _, bad, _ in rules]).alias("_bad")
    ).to_series()
    if not breaks.any():  # nearly always: the reasons' expression costs more than the rules'
        return _with_integers(frame), [], not_set
    bad = frame.filter(breaks).with_columns(_reason(rules).alias("_why"))
    dropped = [
        DroppedRecord(
            path=r["source_path"],
            record=r["_record"] or f"{r['kernel']} {r['variant']}-{r['tuning']}",
            field=r["_why"]["field"],
            value=r["_why"]["value"],
            rule=r["_why"]["rule"],
        )
        for r in bad.select(
            "source_path", "_record", "kernel", "variant", "tuning", "_why"
        ).iter_rows(named=True)
    ]
    return _with_integers(frame.filter(~breaks)), dropped, not_set


def _with_integers(frame: pl.DataFrame) -> pl.DataFrame:
    """The integer columns readers carry as floats, cast to integers (their rules held)."""
    return frame.with_columns(
        pl.col(c).cast(pl.Int64) for c in RAW_INT_COLUMNS if c in frame.columns
    )


def _reason(rules: list[tuple[str, pl.Expr, pl.Expr]]) -> pl.Expr:
    """The first rule a row breaks, as a struct of its field, its rule and the value shown."""
    return pl.coalesce(
        [
            pl.when(bad.fill_null(False)).then(
                pl.struct(
                    pl.lit(field).alias("field"), msg.alias("rule"), _shown(field).alias("value")
                )
            )
            for field, bad, msg in rules
        ]
    )


def _not_set_records(frame: pl.DataFrame) -> list[tuple[str, str]]:
    """Notes, one per source, of the per-rep figures that are RAJAPerf's -1 ('not set',
    ``KernelBase``'s initial value) and so are stored as null: said, never silent."""
    cols = [c for c in PER_REP if c in frame.columns]
    if not cols or frame.is_empty():
        return []
    hit = frame.select("source_path", *[(pl.col(c) == -1).fill_null(False).alias(c) for c in cols])
    if not hit.select(pl.any_horizontal(pl.col(c).any() for c in cols)).item():
        return []
    per = hit.group_by("source_path", maintain_order=True).agg(pl.col(c).sum() for c in cols)
    notes = []
    for r in per.iter_rows(named=True):
        said = [f"{c} in {r[c]} record(s)" for c in cols if r[c]]
        if said:
            notes.append(
                (
                    r["source_path"],
                    f"{r['source_path']}: RAJAPerf's -1 ('not set') stored as null "
                    "for "
                    f"{', '.join(said)}",
                )
            )
    return notes


def app_rules(b: Bounds, columns: list[str]) -> list[tuple[str, pl.Expr, pl.Expr]]:
    """(field, expression True where an ``app_profiles`` row breaks the rule, message): the
    runtime's plausibility bounds (a null runtime is allowed: a profile that measured no time) and
    counters that are not finite or < 0."""
    t = pl.col("runtime_s")
    out = [
        (
            "runtime_s",
            t.is_nan() | t.is_infinite() | (t <= 0),
            pl.format("runtime {} s; expected a finite time > 0", _shown("runtime_s")),
        ),
        (
            "runtime_s",
            (t < b.min_runtime_s) | (t > b.max_runtime_s),
            pl.format(
                f"runtime {{}} s is outside the plausible range "
                f"[{b.min_runtime_s:g} s, {b.max_runtime_s:g} s] "
                "(bounds min_runtime_s, max_runtime_s)",
                _shown("runtime_s"),
            ),
        ),
    ]
    for c in (c for c in columns if c.startswith("ctr_")):
        x = pl.col(c)
        out.append(
            (
                c,
                x.is_nan() | x.is_infinite() | (x < 0),
                pl.format(f"counter {c[4:]} is {{}}; expected a finite count >= 0", _shown(c)),
            )
        )
    return out


def flag_app_records(frame: pl.DataFrame, bounds: Bounds | None = None) -> pl.DataFrame:
    """``frame`` with a ``_why`` struct (field, rule, value) on the rows that break an
    :func:`app_rules` rule."""
    rules = app_rules(bounds or Bounds(), frame.columns)
    return frame.with_columns(_reason(rules).alias("_why"))
