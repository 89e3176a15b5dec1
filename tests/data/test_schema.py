"""The code's table definitions, the files in schemas/, and the counter table agree."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import polars as pl
import pytest

from xamm_data.tables import counters
from xamm_data.tables.schema import APP_PROFILES, BENCHMARK_RUNS, TABLES, counters_frame
from xamm_data.tables.schema_files import check_schema_files, expected_files, write_schema_files

REPO = Path(__file__).resolve().parents[2]


def test_schema_files_match_code():
    assert check_schema_files(REPO / "schemas") == [], "run `xamm schemas export`"


def test_drift_is_detected(tmp_path):
    write_schema_files(tmp_path)
    assert check_schema_files(tmp_path) == []
    doc = json.loads((tmp_path / "benchmark_runs.schema.json").read_text())
    doc["properties"]["time_per_rep_s"]["x-unit"] = "ms"
    (tmp_path / "benchmark_runs.schema.json").write_text(json.dumps(doc, indent=2) + "\n")
    (tmp_path / "stale.schema.json").write_text("{}")
    problems = check_schema_files(tmp_path)
    assert any("benchmark_runs.schema.json" in p for p in problems)
    assert any("stale.schema.json" in p for p in problems)


def test_schema_files_into_a_file_are_refused_naming_it(tmp_path, capsys):
    """``xamm schemas export --dir FILE``: one line saying the path is a file, exit 1, the file
    untouched."""
    from xamm_data.cli.commands import main

    taken = tmp_path / "taken"
    taken.write_text("mine")
    with pytest.raises(NotADirectoryError, match="taken is a file, not a folder"):
        write_schema_files(taken)
    assert main(["schemas", "export", "--dir", str(taken)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"xamm: error: {taken} is a file, not a folder for the schema files"
    assert taken.read_text() == "mine"


def test_public_contract_columns():
    required = {
        "machine",
        "suite",
        "kernel",
        "group",
        "variant",
        "tuning",
        "problem_size",
        "reps",
        "threads",
        "ranks",
        "block_size",
        "trial",
        "time_per_rep_s",
        "bytes_per_rep",
        "flops_per_rep",
        "iterations_per_rep",
        "source_path",
        "source_sha256",
        "reader",
        "tool_versions",
        "run_date",
    }
    assert required <= set(BENCHMARK_RUNS.names)
    assert {
        "app",
        "app_params",
        "machine",
        "threads",
        "ranks",
        "runtime_s",
        "counters_present",
        "feat_branch_intensity",
        "feat_mem_stall",
        "source_sha256",
    } <= set(APP_PROFILES.names)
    for t in TABLES.values():
        assert t.version.count(".") == 2


def _json_rows(df: pl.DataFrame) -> list[dict]:
    rows = df.to_dicts()
    for r in rows:
        for k, v in r.items():
            if hasattr(v, "isoformat"):
                r[k] = v.isoformat()
    return rows


def test_stored_rows_conform_to_published_json_schema(tmp_path):
    """Rows ingested from the sample validate against schemas/benchmark_runs.schema.json; a broken
    row does not."""
    from xamm_ingest import read_rajaperf

    frame = read_rajaperf(REPO / "tests" / "fixtures" / "rajaperf_sample", workers=1).frame
    schema = json.loads((REPO / "schemas" / "benchmark_runs.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    rows = _json_rows(frame)
    assert rows
    for r in rows:
        validator.validate(r)
    bad = dict(rows[0], time_per_rep_s=-1.0)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(dict(rows[0], unexpected_column=1))


def test_every_alias_round_trips():
    doc = json.loads((REPO / "schemas" / "counters.json").read_text())
    assert [c["name"] for c in doc["counters"]] == [c.name for c in counters.COUNTERS]
    for c in counters.COUNTERS:
        for alias in (c.name, *c.aliases()):
            assert counters.resolve(alias) == c.name, alias


@pytest.mark.parametrize(
    "spelling,canonical",
    [
        ("PAPI_TOT_INS (I)", "tot_ins"),
        ("cycles:Sum (E)", "tot_cyc"),
        ("sum#papi.PAPI_L1_LDM", "l1_ldm"),
        ("perf.branch-misses", "br_msp"),
        ("instructions", "tot_ins"),
        ("PAPI_DP_OPS", "dp_ops"),
    ],
)
def test_decorated_names_resolve(spelling, canonical):
    assert counters.resolve(spelling) == canonical


def test_unknown_counter_is_none_and_table_frame():
    assert counters.resolve("GPUOPS:KERNEL_CALLS") is None
    frame = counters_frame()
    assert frame.height == len(counters.COUNTERS)
    assert frame.filter(pl.col("name") == "tot_ins").get_column("papi").to_list() == [
        ["PAPI_TOT_INS"]
    ]


def test_expected_files_cover_every_table():
    """The published files, as listed on disk, are exactly the tables this xamm defines and the
    acceptance criteria and certificate the models layer adds (a literal list)."""
    on_disk = {p.name for p in (REPO / "schemas").iterdir()}
    assert (
        on_disk
        == set(expected_files())
        == {
            "benchmark_runs.schema.json",
            "app_profiles.schema.json",
            "counters.schema.json",
            "counters.json",
            "acceptance_criteria.schema.json",
            "acceptance_certificate.schema.json",
        }
    )


def test_a_table_declaration_is_checked_when_built():
    """Tables and columns are frozen dataclasses checked as they are declared: a dtype the store
    has no type for, a key that is no column, a name given twice, a bound that is no number."""
    from xamm_data.tables.schema import Column, TableSchema

    col = Column(name="x", dtype="float64", description="d", minimum=0, maximum=5)
    assert (col.minimum, col.maximum) == (0.0, 5.0) and isinstance(col.minimum, float)
    assert Column(name="e", dtype="string", description="d", enum=["a", "b"]).enum == ("a", "b")
    with pytest.raises(ValueError, match="dtype 'float32' is not one of string, int64"):
        Column(name="x", dtype="float32", description="d")
    for bad in ({"minimum": "0"}, {"maximum": True}, {"exclusive_minimum": float("nan")}):
        with pytest.raises(TypeError, match="is a number or None"):
            Column(name="x", dtype="float64", description="d", **bad)
    with pytest.raises(TypeError, match="nullable"):
        Column(name="x", dtype="float64", description="d", nullable="no")
    with pytest.raises(TypeError, match="description is text"):
        Column(name="x", dtype="float64", description=None)
    with pytest.raises(AttributeError):
        col.minimum = 1.0  # frozen
    m = Column(name="machine", dtype="string", description="d")
    table = dict(name="t", version="1", description="d", columns=[col, m], primary_key=["x"])
    t = TableSchema(**table)
    assert t.columns == (col, m) and t.primary_key == ("x",) and t.names == ["x", "machine"]
    assert t.with_columns({"machine", "x"}).names == ["x", "machine"]
    with pytest.raises(ValueError, match=r"\['x'\] are not among"):  # its key dropped
        t.with_columns({"machine"})
    with pytest.raises(ValueError, match=r"key or partition column\(s\) \['y'\]"):
        TableSchema(**{**table, "primary_key": ["y"]})
    with pytest.raises(ValueError, match=r"\['node'\]"):
        TableSchema(**{**table, "partition_by": "node"})
    assert TableSchema(**{**table, "partition_by": ""}).partition_by == ""
    with pytest.raises(ValueError, match="given twice"):
        TableSchema(**{**table, "columns": [col, m, col]})
    assert hash(BENCHMARK_RUNS) == hash(TABLES["benchmark_runs"])  # a cache key


def test_a_counter_record_is_its_fields_with_lists():
    c = counters.COUNTERS[0]
    rec = c.as_record()
    assert list(rec) == ["name", "unit", "description", "papi", "perf", "hpctoolkit", "caliper"]
    assert rec["papi"] == list(c.papi) and isinstance(rec["caliper"], list)
    doc = json.loads((REPO / "schemas" / "counters.json").read_text())  # an independent parse
    assert doc["counters"] == [k.as_record() for k in counters.COUNTERS]
    with pytest.raises(TypeError, match="papi holds names"):
        counters.Counter(name="x", unit="u", description="d", papi=(1,))
