"""Derived features of application profiles, computed from canonical counters with polars
expressions.

Table II of the xAMM paper and the counter set of the VAE-DNN paper. A feature whose counters are
absent is null (polars arithmetic propagates nulls), never zero; a ratio over a zero denominator is
null too.
"""

from __future__ import annotations

import polars as pl

from xamm_data.tables.counters import COUNTERS
from xamm_data.tables.schema import SEED001_FEATURES, TABLE_II_FEATURES


def _c(name: str) -> pl.Expr:
    return pl.col(f"ctr_{name}")


def _ratio(num: pl.Expr, den: pl.Expr) -> pl.Expr:
    return pl.when(den > 0).then(num / den).otherwise(None)


TABLE_II: dict[str, pl.Expr] = {
    "branch_intensity": _ratio(_c("br_ins"), _c("tot_ins")),
    "load_intensity": _ratio(_c("ld_ins"), _c("tot_ins")),
    "store_intensity": _ratio(_c("sr_ins"), _c("tot_ins")),
    "l1_load_misses": _c("l1_ldm"),
    "l1_store_misses": _c("l1_stm"),
    "l2_load_misses": _c("l2_ldm"),
    "l2_store_misses": _c("l2_stm"),
    "sp_fp_intensity": _ratio(_c("sp_ops"), _c("tot_ins")),
    "dp_fp_intensity": _ratio(_c("dp_ops"), _c("tot_ins")),
    "int_arith_intensity": _ratio(_c("int_ins"), _c("tot_ins")),
    "io_bytes_read": _c("io_read_bytes"),
    "io_bytes_written": _c("io_write_bytes"),
    "ext_page_table": _c("ept_walk_cyc"),
    "mem_stall": _c("mem_stall_cyc"),
}

SEED001: dict[str, pl.Expr] = {
    "instructions": _c("tot_ins"),
    "float_arith_ratio": _ratio(
        pl.coalesce(_c("fp_ins"), _c("sp_ops") + _c("dp_ops")), _c("tot_ins")
    ),
    "mem_ratio": _ratio(_c("ld_ins") + _c("sr_ins"), _c("tot_ins")),
    "cache_miss_hit_ratio": _ratio(_c("l3_tcm"), _c("l3_tca") - _c("l3_tcm")),
    "page_faults": _c("page_faults"),
    "branch_miss_ratio": _ratio(_c("br_msp"), _c("br_ins")),
    "ipc": _ratio(_c("tot_ins"), _c("tot_cyc")),
}

assert set(TABLE_II) == {n for n, _ in TABLE_II_FEATURES} and set(SEED001) == {
    n for n, _ in SEED001_FEATURES
}


def add_features(df: pl.DataFrame) -> pl.DataFrame:
    """Return ``df`` with every ``feat_*`` and ``s001_*`` column computed from its ``ctr_*``
    columns."""
    missing = [
        pl.lit(None, dtype=pl.Float64).alias(f"ctr_{c.name}")
        for c in COUNTERS
        if f"ctr_{c.name}" not in df.columns
    ]
    if missing:
        df = df.with_columns(missing)
    return df.with_columns(
        [e.cast(pl.Float64).alias(f"feat_{n}") for n, e in TABLE_II.items()]
        + [e.cast(pl.Float64).alias(f"s001_{n}") for n, e in SEED001.items()]
    )
