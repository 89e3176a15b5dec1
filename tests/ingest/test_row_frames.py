"""Readers' rows into a frame (xamm_ingest.pipeline.row_frames): the frame equals what
``pl.from_dicts`` makes from the same rows, values, dtypes and refusals alike, on real profiles'
rows and on seeded rows of every irregular shape (the memory it saves is measured by
benchmarks/bench_archive.py)."""

from __future__ import annotations

import math
import random
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from xamm_ingest.format import get_format
from xamm_ingest.pipeline import row_frames
from xamm_ingest.pipeline.row_frames import frame_of_rows
from xamm_ingest.pipeline.stages import _rows_schema, read_chunk
from xamm_ingest.readers.base import ColumnRows
from xamm_ingest.readers.profile_common import SampleSpec
from xamm_ingest.records import Bounds
from xamm_ingest.sources import Task

REGIONS = pl.List(pl.Struct({"region": pl.String, "inclusive_s": pl.Float64, "calls": pl.Int64}))
SCHEMA = {"app": pl.String, "regions": REGIONS, "runtime_s": pl.Float64}
SORT = Path("LLNL+thicket-tutorial") / "data" / "parallel-sorting"


def _plain(rows: list[dict]) -> list[dict]:
    """The rows with each value held as columns (ColumnRows) given as the dicts it holds."""
    return [{k: list(v) if type(v) is ColumnRows else v for k, v in r.items()} for r in rows]


def _same(rows: list[dict], schema: dict) -> None:
    """frame_of_rows gives from_dicts' frame (of the rows as dicts), or raises where it raises."""
    try:
        want = pl.from_dicts(_plain(rows), schema=schema, strict=True)
    except Exception as e:
        with pytest.raises(type(e)):
            frame_of_rows(rows, schema)
        return
    got = frame_of_rows(rows, schema)
    assert got.schema == want.schema
    assert got.equals(want, null_equal=True), (got.to_dicts(), want.to_dicts())


def test_plain_and_edge_rows_give_the_frame_from_dicts_gives():
    region = {"region": "main", "inclusive_s": 1.5, "calls": 3}
    cases = [
        [{"app": "a", "regions": [region, {**region, "region": "main/x"}], "runtime_s": 2.0}],
        [{"app": "a", "regions": []}, {"app": "b", "regions": None}, {"app": "c"}],
        [{"app": "a", "regions": None}, {"app": "b"}],  # no row has a value
        [{"app": "a", "regions": [region]}, {"app": "b", "regions": [region]}],  # one each
        [{"app": a, "regions": [region, {**region, "calls": 9}]} for a in "abc"],  # two each
        [{"app": "a", "regions": [region]}, {"app": "b", "regions": None}],  # one, or none
        [{"app": "a", "regions": [None, region]}],  # a null element
        [{"app": "a", "regions": [{"region": "m", "extra": 1}]}],  # a key more, keys missing
        [{"app": "a", "regions": [{**region, "inclusive_s": 2}]}],  # an int for a float
        [{"app": "a", "regions": [{**region, "region": 7}]}],  # a number for a string
        [{"app": "a", "regions": [{**region, "calls": "many"}]}],  # text for an integer
        [{"app": "a", "regions": "main"}],  # not a list
        [{"app": "a", "regions": {"region": "main"}}],  # a dict, not a list of them
        [{"app": 3, "regions": [region]}],  # a bad flat column
        [{"app": "a", "regions": ColumnRows({"region": ["m", "m/x"], "calls": [1, 2]})}],
        [{"app": "a", "regions": ColumnRows({"region": []})}, {"app": "b", "regions": [region]}],
        [{"app": "a", "regions": ColumnRows({"calls": ["many"]})}],  # text for an integer
        [],
    ]
    for rows in cases:
        _same(rows, SCHEMA)


def test_seeded_rows_of_every_shape_give_the_same_frame():
    rng = random.Random(7)
    values = [None, 1.5, 2, "x", True, [], {}]
    as_columns = 0
    for _ in range(200):
        rows = []
        for i in range(rng.randint(1, 6)):
            regions = [
                {
                    k: rng.choice([*values, "main", 0.25])
                    for k in rng.sample(["region", "inclusive_s", "calls", "other"], 3)
                }
                for _ in range(rng.randint(0, 3))
            ]
            if rng.random() < 0.15:
                regions = rng.choice([None, "r", [None], regions + [None]])
            elif rng.random() < 0.4 and regions and len({frozenset(e) for e in regions}) == 1:
                # the same elements held as columns
                regions = ColumnRows({k: [e[k] for e in regions] for k in regions[0]})
                as_columns += 1
            rows.append({"app": f"a{i}", "regions": regions, "runtime_s": rng.random()})
        _same(rows, SCHEMA)
    assert as_columns > 50


def test_real_profiles_rows_give_the_same_frame_built_flat(shared_data, monkeypatch):
    files = sorted((shared_data / SORT).rglob("*.cali"))[:300]
    opts = {"spec": SampleSpec(app="sort", machine="grace"), "bounds": Bounds()}
    rows = [r for _, rs, _ in read_chunk([Task("caliper", f, f.parent) for f in files], opts)
            for r in rs]  # fmt: skip
    assert len(rows) == len(files)
    schema = _rows_schema(get_format("caliper").rows_table)
    nested = [c for c, dt in schema.items() if isinstance(dt, pl.List)]
    assert {"regions", "extra_metadata"} <= set(nested)
    # a reader's rows take the flat build, never polars' own builder
    fallbacks: list[str] = []
    real = row_frames._as_polars_builds
    monkeypatch.setattr(
        row_frames, "_as_polars_builds", lambda r, n, d: fallbacks.append(n) or real(r, n, d)
    )
    _same(rows, schema)
    _same(rows[:1], schema)
    assert fallbacks == []


TIMED = {"app": pl.String, "run_date": pl.Datetime("us", "UTC"), "runtime_s": pl.Float64}


def test_times_of_every_zone_and_shape_give_the_frame_from_dicts_gives():
    """Aware times in any zone, before and after the epoch, to the microsecond, repeated, null:
    the instants polars' builder gives; a naive time, text or a date takes polars' builder."""
    rng = random.Random(11)
    zones = [UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=5, minutes=45))]
    for _ in range(200):
        rows = []
        for i in range(rng.randint(1, 8)):
            t = datetime(rng.choice([1, 1901, 1969, 1970, 2022, 9999]), rng.randint(1, 12),
                         rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59),
                         rng.randint(0, 59), rng.choice([0, 1, 999_999]))  # fmt: skip
            if t.year in (1, 9999):  # kept inside the range once shifted to UTC
                t = t.replace(month=6)
            value = rng.choice([t.replace(tzinfo=rng.choice(zones)), None, "repeat"])
            if value == "repeat":
                value = rows[-1]["run_date"] if rows else None
            if rng.random() < 0.05:
                value = rng.choice([t, "2022-01-01", date(2022, 1, 1), 7])
            rows.append({"app": f"a{i}", "run_date": value, "runtime_s": 1.0})
        _same(rows, TIMED)


def test_a_time_column_takes_the_microseconds_build_and_another_value_polars_builder(
    monkeypatch,
):
    fallbacks: list[str] = []
    real = row_frames._as_polars_builds
    monkeypatch.setattr(
        row_frames, "_as_polars_builds", lambda r, n, d: fallbacks.append(n) or real(r, n, d)
    )
    aware = datetime(2022, 11, 17, 1, 43, 40, tzinfo=UTC)
    rows = [{"app": "a", "run_date": aware}, {"app": "b", "run_date": None}]
    _same(rows, TIMED)
    assert frame_of_rows(rows, TIMED)["run_date"].to_list() == [aware, None]
    assert fallbacks == []
    _same([{"app": "a", "run_date": aware.replace(tzinfo=None)}], TIMED)
    assert fallbacks == ["run_date"]


SOURCE = {"src": pl.String, "x": pl.Float64, "n": pl.Int64, "at": pl.Datetime("us", "UTC"),
          "regions": REGIONS, "y": pl.Float64}  # fmt: skip


def _same_of_sources(sources: list[tuple[dict, list[dict]]], schema: dict) -> None:
    """frame_of_sources gives the frame from_dicts gives of the full rows (each with its source's
    shared columns, which win), or raises where it raises."""
    rows = [{**r, **shared} for shared, rs in sources for r in rs]
    try:
        want = pl.from_dicts(rows, schema=schema, strict=True)
    except Exception as e:
        with pytest.raises(type(e)):
            row_frames.frame_of_sources(sources, schema)
        return
    got = row_frames.frame_of_sources(sources, schema)
    assert got.schema == want.schema
    assert got.equals(want, null_equal=True), (got.to_dicts(), want.to_dicts())


def test_columns_sources_share_are_built_once_and_give_the_frame_of_the_full_rows(monkeypatch):
    """Seeded sources, each giving some columns once (the same ones in every source or not; a
    value that fits or not; a row that holds a shared column too): the frame is the full rows'
    own, and the shared columns are built once per source exactly when every source shares the
    same ones."""
    rng = random.Random(5)
    region = {"region": "main", "inclusive_s": 1.5, "calls": 3}
    at = datetime(2022, 11, 17, tzinfo=UTC)
    pools = {
        "x": [0.0, -0.0, 1.0, 1, math.nan, None, "text"],
        "n": [1, 2, None, 1.0, True],
        "at": [at, None, at.replace(tzinfo=None)],
        "regions": [[region], [], None, [{**region, "calls": 2}]],
    }
    built: list[list[str]] = []
    real = row_frames.frame_of_rows
    monkeypatch.setattr(
        row_frames,
        "frame_of_rows",
        lambda rows, schema: built.append(list(schema)) or real(rows, schema),
    )
    took = {True: 0, False: 0}
    for _ in range(300):
        sources, names = [], rng.sample(list(pools), rng.randint(0, 3))
        for s in range(rng.randint(1, 4)):
            mine = names if rng.random() < 0.85 else rng.sample(list(pools), 1)
            shared = {c: rng.choice(pools[c]) for c in mine}
            rows = []
            for i in range(rng.randint(0, 4)):
                row = {"src": f"s{s}", "y": float(i)}
                for c in pools:
                    if c not in shared or rng.random() < 0.1:  # a shared column in a row too
                        row[c] = rng.choice(pools[c])
                rows.append(row)
            sources.append((shared, rows))
        filled = [sh for sh, rs in sources if rs]
        once = bool(filled) and len({frozenset(sh) for sh in filled}) == 1 and bool(filled[0])
        built.clear()
        _same_of_sources(sources, SOURCE)
        assert (list(SOURCE) not in built) == once, (sources, built)
        took[once] += 1
    assert took[True] > 100 and took[False] > 50, took  # both, often


def test_a_rajaperf_file_gives_its_run_columns_once_and_the_frame_is_its_full_rows(shared_data):
    """The real quartz files: each gives its run metadata once (machine, variant, path, hash, the
    variant's back-end ...), no row holds one of those columns, and the batch frame equals the
    frame of the full rows."""
    files = sorted((shared_data / "LLNL+thicket-tutorial" / "data" / "quartz").rglob("*.cali"))
    tasks = [Task("rajaperf", f, f.parent.parent, machine="quartz") for f in files[:12]]
    results = read_chunk(tasks, {})
    for out, rows, _ in results:
        assert {"machine", "variant", "source_sha256", "backend", "run_date"} <= set(out.shared)
        assert rows and not any(set(r) & set(out.shared) for r in rows)
    schema = _rows_schema(get_format("rajaperf").rows_table)
    _same_of_sources([(out.shared, rows) for out, rows, _ in results], schema)
    full = [{**r, **out.shared} for out, rows, _ in results for r in rows]
    got = row_frames.frame_of_sources([(out.shared, rows) for out, rows, _ in results], schema)
    assert got.equals(frame_of_rows(full, schema), null_equal=True)


def test_a_source_s_full_rows_take_its_shared_columns_over_their_own():
    """``ReadResult.full_rows``: each row with the shared columns, which win where a row holds one
    too (as the batch frame takes them); no shared columns, the rows as they are."""
    from xamm_ingest.readers.base import ReadResult

    rows = [{"kernel": "Basic_DAXPY", "machine": "mine"}, {"kernel": "Basic_COPY"}]
    got = ReadResult(rows=rows, shared={"machine": "quartz", "variant": "Base_Seq"}).full_rows()
    assert got == [
        {"kernel": "Basic_DAXPY", "machine": "quartz", "variant": "Base_Seq"},
        {"kernel": "Basic_COPY", "machine": "quartz", "variant": "Base_Seq"},
    ]
    assert rows[1] == {"kernel": "Basic_COPY"}  # the reader's rows are left as they were
    assert ReadResult(rows=rows).full_rows() is rows
    schema = {"kernel": pl.String, "machine": pl.String, "variant": pl.String}
    frame = row_frames.frame_of_sources(
        [({"machine": "quartz", "variant": "Base_Seq"}, rows)], schema
    )
    assert frame.to_dicts() == got


def test_rows_held_as_columns_read_as_the_dicts_they_hold():
    """ColumnRows is the sequence of its rows: length, index (negative too), slice, iteration,
    equality with the list of dicts, truth, a pickle's round trip."""
    import pickle

    rows = [{"region": "m", "calls": 1.0}, {"region": "m/x", "calls": None}]
    held = ColumnRows({"region": ["m", "m/x"], "calls": [1.0, None]})
    assert len(held) == 2 and list(held) == rows and held == rows and rows == held
    assert held[0] == rows[0] and held[-1] == rows[-1] and held[1:] == rows[1:]
    assert held != rows[:1] and held != [*rows, rows[0]]
    assert pickle.loads(pickle.dumps(held)) == held
    assert bool(held) and not ColumnRows({"region": []}) and not ColumnRows({})
