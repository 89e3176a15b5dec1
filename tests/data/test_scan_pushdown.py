"""Reading at scale: ``load_dataset(..., lazy=True)`` of one machine is a lazy scan of that
machine's partition only (only its files are verified and listed to the Parquet reader), and a
filter or column selection on it reaches the reader (predicate and projection pushdown). The time
and memory this saves on a 10M-row store are measured by ``benchmarks/bench_archive.py
--scale-rows``."""

from __future__ import annotations

import re

import polars as pl

import xamm_data.store.read as store_mod
from xamm_data import load_dataset
from xamm_data.store.store import Store
from xamm_data.tables.schema import APP_PROFILES

COUNTERS = APP_PROFILES.polars_schema["extra_counters"]


def profile_rows(machine: str, app: str, n: int, start: int = 0) -> pl.DataFrame:
    """``n`` minimal ``app_profiles`` rows of one machine and application."""
    i = pl.int_range(start, start + n, eager=True)
    return pl.DataFrame(
        {
            "app": app, "app_params": "{}", "machine": machine, "device": "cpu", "trial": 0,
            "input_size": i, "runtime_s": (i + 1).cast(pl.Float64),
            "runtime_aggregation": "given", "counters_present": [[]] * n,
            "extra_counters": pl.Series([[]] * n, dtype=COUNTERS),
            "source_path": i.cast(pl.String).str.zfill(8) + f"-{machine}-{app}.cali",
            "source_sha256": (i.cast(pl.String) + f"{machine}{app}").map_elements(
                lambda s: __import__("hashlib").sha256(s.encode()).hexdigest(), pl.String
            ),
            "source_format": "caliper-cali", "reader": "test", "xamm_version": "0",
        }
    )  # fmt: skip


def _store(tmp_path) -> Store:
    st = Store(tmp_path / "store")
    for batch in range(2):
        frames = [
            profile_rows(m, a, 50, 50 * batch)
            for m in ("alpha-node", "beta-node", "gamma-node")
            for a in "ab"
        ]
        st.append(pl.concat(frames), "app_profiles")
    return st


def test_one_machine_is_a_lazy_scan_of_its_partition_only(tmp_path, monkeypatch):
    st = _store(tmp_path)
    verified = []
    real = store_mod.read_part

    def counting(loc, rel, **kw):
        verified.append(rel)
        return real(loc, rel, **kw)

    monkeypatch.setattr(store_mod, "read_part", counting)
    lf = load_dataset("beta-node", "app_profiles", lazy=True, store=st)
    assert isinstance(lf, pl.LazyFrame)
    assert len(verified) == 2 and all(r.startswith("machine=beta-node/") for r in verified)
    one_app = lf.filter(pl.col("app") == "b").select("input_size", "runtime_s")
    plan = one_app.explain()
    scan = plan[plan.index("SCAN") :]
    assert (
        "machine=alpha-node" not in scan and "machine=gamma-node" not in scan
    )  # pruned partitions
    # the predicate pushed down to the Parquet reader
    assert re.search(r'SELECTION: \(?col\("app"\) == "b"\)?\n', scan.replace(") & (", ")\n("))
    # columns pushed down too: the two asked for and the key the scan sorts by, not all 71
    read, total = map(int, re.search(r"PROJECT (\d+)/(\d+) COLUMNS", scan).groups())
    assert read < total == len(APP_PROFILES.columns)
    got = one_app.collect()
    eager = st.read("app_profiles", "beta-node").filter(pl.col("app") == "b")
    assert got.equals(eager.select("input_size", "runtime_s"))
    assert got.height == 100


def test_appended_batches_number_trials_across_commits(tmp_path):
    st = Store(tmp_path / "store")
    rows = profile_rows("m1", "a", 6).with_columns(pl.lit(7).alias("input_size"))
    st.append(rows.head(4), "app_profiles")
    w = st.append(rows, "app_profiles")  # four already held, two new
    assert w.already_held == 4 and w.rows_written == 2
    t = st.read("app_profiles", "m1")
    assert sorted(t.get_column("trial").to_list()) == list(range(6))
    assert st.verify() == []


def test_a_file_of_many_sources_names_how_many_and_lists_a_bounded_few(tmp_path):
    from xamm_data.store.files import MAX_LISTED_SOURCES

    st = Store(tmp_path / "store")
    st.append(profile_rows("alpha-node", "a", MAX_LISTED_SOURCES + 500), "app_profiles")
    meta = st.metadata("app_profiles", "alpha-node")
    assert meta["n_sources"] == MAX_LISTED_SOURCES + 500
    assert len(meta["sources"]) == MAX_LISTED_SOURCES
    assert st.scan("app_profiles").collect().height == MAX_LISTED_SOURCES + 500
