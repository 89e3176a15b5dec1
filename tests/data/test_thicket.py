"""Thicket and Caliper JSON users come and go: ``cali-query ... format json`` output, Thicket
objects and Thicket's ``to_json()`` ingest to the same rows as the ``.cali`` files they hold, and
``to_thicket`` / ``from_thicket`` round-trip the store's rows without loss."""

from __future__ import annotations

import json
import warnings

import polars as pl
import pytest
from caliper_json_writer import cali_query_json

from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_data.thicket import MARKER, PROFILE_COLUMNS, to_thicket
from xamm_ingest import from_thicket, read_profiles, read_rajaperf
from xamm_ingest.readers.profile_common import SampleSpec

PROVENANCE = ["source_path", "source_sha256", "source_format"]


def _thicket():
    """Thicket, imported by the tests that use it: each worker collects every module, and only
    the one running these tests should pay for loading Thicket (pandas, Hatchet, SciPy)."""
    import thicket

    return thicket


def _tk(files, **kw):
    thicket = _thicket()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return thicket.Thicket.from_caliperreader([str(f) for f in files], disable_tqdm=True, **kw)


def _without_node_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Hatchet drops Caliper's ``Node order`` (the aggregation slot, an ordering, not a
    measurement)."""
    keep = pl.element().filter(pl.element().struct.field("name") != "Node order")
    return frame.with_columns(pl.col("extra_metrics").list.eval(keep))


def _same(a: pl.DataFrame, b: pl.DataFrame, drop=PROVENANCE) -> None:
    """Equal in every column but ``drop``, row for row once both are sorted by all their plain
    columns."""
    a, b = _without_node_order(a).drop(drop), _without_node_order(b).drop(drop)
    key = [c for c, t in a.schema.items() if not isinstance(t, pl.List)]
    a, b = a.sort(key, nulls_last=True), b.sort(key, nulls_last=True)
    assert a.height == b.height > 0
    for c in a.columns:
        assert a.get_column(c).equals(b.get_column(c)), c


@pytest.fixture(scope="module")
def cali_sets(rajaperf_sets):
    t, tut = rajaperf_sets["thicket"], rajaperf_sets["tutorial_quartz"]
    return {
        "quartz spot (v2023 tree)": sorted((t / "quartz").rglob("*.cali")),
        "lassen CUDA tunings": sorted((t / "lassen").rglob("*.cali")),
        "lassen new-cali": sorted((rajaperf_sets["tutorial_lassen"] / "new-cali").glob("*.cali")),
        "quartz top-down (ns, custom aliases)": sorted(
            (tut / "GCC_10.3.1_BaseSeq_08388608" / "O3").glob("*.cali")
        ),
    }


@pytest.mark.parametrize("layout", ["object"])
def test_cali_query_json_ingests_as_the_cali_files(cali_sets, tmp_path, layout):
    """Every real .cali file written as cali-query's format json(object) (per Caliper's
    JsonFormatter) gives the rows its .cali gives: all 60 columns but the provenance."""
    files = [f for fs in cali_sets.values() for f in fs]
    for i, f in enumerate(files):
        (tmp_path / f"{i:03d}.json").write_text(cali_query_json(f, layout))
    direct, via_json = read_rajaperf(files, workers=1), read_rajaperf(tmp_path, workers=1)
    assert via_json.rejected == [] and len(via_json.dropped) == len(direct.dropped)
    assert set(via_json.frame.get_column("source_format")) == {"caliper-json"}
    _same(direct.frame, via_json.frame, drop=PROVENANCE)


def test_cali_query_default_json_layout_names_what_is_missing(cali_sets, tmp_path):
    """The default format json layout has no globals: the rejection says how to write the file
    instead."""
    f = tmp_path / "run.json"
    f.write_text(cali_query_json(cali_sets["quartz spot (v2023 tree)"][0], "records"))
    rep = read_rajaperf(f, workers=1)
    assert rep.frame.height == 0 and len(rep.rejected) == 1
    assert "format json(object)" in rep.rejected[0].reason and str(f) in rep.rejected[0].reason


def test_bare_nan_from_caliper_is_read(tmp_path):
    """Caliper prints a non-finite double as a bare nan (not JSON): it is read, as null where the
    schema says."""
    from xamm_ingest.readers.caliper_files import load_caliper_json

    f = tmp_path / "x.json"
    f.write_text(
        '{"records": [{"path":"RAJAPerf/Basic/Basic_DAXPY","any#any#max#BlockSize":nan,'
        '"avg#inclusive#sum#time.duration":-inf}], "globals": {"a": '
        '"nan"}, "attributes": {}}\n'
    )
    rec = load_caliper_json(f).records[0]
    assert rec["path"] == ["RAJAPerf", "Basic", "Basic_DAXPY"]
    assert (
        rec["any#any#max#BlockSize"] != rec["any#any#max#BlockSize"]
        and rec["avg#inclusive#sum#time.duration"] < 0
    )
    f.write_text('{"records": [{"path":"a", "x": nonsense}]}')
    with pytest.raises(ValueError, match="not valid JSON"):
        load_caliper_json(f)


@pytest.mark.parametrize("layout", ["object", "records"])
def test_caliper_app_profile_as_cali_query_json(shared_data, tmp_path, layout):
    """The application-profile reader takes format json in both layouts: same row as the .cali. The
    default layout has no globals, so what only they say (MPI ranks, tool versions) is null there
    unless given (``ranks``)."""
    cali = next(
        (
            shared_data
            / "LLNL+hatchet"
            / "hatchet"
            / "tests"
            / "data"
            / "caliper-sw4-cuda-activity-profile-cali"
        ).glob("*.cali")
    )
    (tmp_path / "p.json").write_text(cali_query_json(cali, layout))
    spec = SampleSpec(app="sw4", machine="lassen", time_unit="sec")
    a, b = read_profiles("caliper", cali, spec), read_profiles("caliper", tmp_path / "p.json", spec)
    assert a.rejected == b.rejected == [] and a.frame.height == b.frame.height == 1
    from_globals = [] if layout == "object" else ["ranks", "tool_versions"]
    assert a.frame.drop(PROVENANCE + from_globals).equals(b.frame.drop(PROVENANCE + from_globals))
    if layout == "records":
        assert b.frame.select(from_globals).null_count().row(0) == (1, 1)
        given = read_profiles(
            "caliper", tmp_path / "p.json", spec.model_copy(update={"ranks": 4})
        ).frame
        assert given.get_column("ranks").item() == a.frame.get_column("ranks").item() == 4


@pytest.mark.parametrize(
    "name", ["quartz spot (v2023 tree)", "lassen CUDA tunings", "lassen new-cali"]
)
def test_from_thicket_equals_the_cali_ingest(cali_sets, name):
    """A Thicket of real RAJAPerf .cali files (aliased metric names) gives the .cali ingest's
    rows."""
    files = cali_sets[name]
    rep = from_thicket(_tk(files))
    assert rep.rejected == [] and rep.sources_read == len(files)
    assert set(rep.frame.get_column("source_format")) == {"thicket"}
    assert set(rep.frame.get_column("source_path")) == {str(f) for f in files}
    _same(read_rajaperf(files, workers=1).frame, rep.frame)


def test_from_thicket_with_native_names_and_ns_times(cali_sets):
    """Custom aliases and no spot.metrics: by alias the Thicket is ambiguous and refused with the
    fix; built with native names (``time.duration.ns``) it gives the .cali rows, times scaled from
    ns."""
    files = cali_sets["quartz top-down (ns, custom aliases)"]
    refused = from_thicket(_tk(files))
    assert refused.frame.height == 0 and len(refused.rejected) == len(files)
    assert "native=True" in refused.rejected[0].reason
    direct = read_rajaperf(files, workers=1).frame
    rep = from_thicket(_tk(files, native=True))
    assert rep.rejected == []
    value = pl.element().struct.field("value")  # names: the native attributes, not the aliases
    named = pl.col("extra_metrics").list.eval(
        pl.struct(pl.lit("-").alias("name"), value.alias("value"))
    )
    _same(direct.with_columns(named), rep.frame.with_columns(named))
    assert rep.frame.get_column("topdown_retiring").null_count() == 0


def test_thicket_to_json_file_ingests(cali_sets, tmp_path):
    """A Thicket's to_json() file is a RAJAPerf source: its profiles are rows (trials of one
    configuration told apart by their content hash), and a second ingest gives the same bytes."""
    files = cali_sets["quartz spot (v2023 tree)"] + cali_sets["lassen CUDA tunings"]
    tk = _tk(files)
    (tmp_path / "tk.json").write_text(tk.to_json())
    rep = read_rajaperf(tmp_path, workers=1)
    assert rep.rejected == [] and set(rep.frame.get_column("source_format")) == {"thicket-json"}
    assert rep.frame.get_column("source_sha256").n_unique() == len(files)
    _same(read_rajaperf(files, workers=1).frame, rep.frame, drop=[*PROVENANCE, "trial"])
    in_memory = from_thicket(tk).frame
    assert set(in_memory.get_column("source_sha256")) == set(rep.frame.get_column("source_sha256"))
    assert read_rajaperf(tmp_path, workers=1).frame.equals(rep.frame)


def test_a_bad_profile_is_rejected_alone(cali_sets):
    files = cali_sets["lassen CUDA tunings"]
    tk = _tk(files)
    bad = tk.profile[0]
    tk.metadata.loc[bad, "variant"] = "Base_Nonsense"
    rep = from_thicket(tk)
    assert len(rep.rejected) == 1 and "Base_Nonsense" in rep.rejected[0].reason
    assert rep.frame.height > 0 and str(tk.profile_mapping[bad]) not in set(
        rep.frame.get_column("source_path")
    )


def test_to_thicket_round_trip_is_exact(rajaperf_sets):
    """Store rows -> to_thicket -> from_thicket (and through to_json / from_json) are the same rows,
    every column; the Thicket holds the runs as profiles and the kernels under RAJAPerf -> group."""
    rows = read_rajaperf([rajaperf_sets["thicket"], rajaperf_sets["mi300a_tier1"]], workers=1).frame
    tk = to_thicket(rows)
    want = rows.sort(list(BENCHMARK_RUNS.primary_key), nulls_last=True)
    assert from_thicket(tk).frame.equals(want)
    back = _thicket().Thicket.from_json(tk.to_json())
    assert from_thicket(back).frame.equals(want)
    assert len(tk.profile) == rows.select(PROFILE_COLUMNS).n_unique()
    assert set(tk.metadata[MARKER]) == {f"benchmark_runs@{BENCHMARK_RUNS.version}"}
    r = rows.filter(pl.col("kernel") == "Basic_DAXPY").row(0, named=True)
    node = next(n for n in tk.graph.traverse() if n.frame["name"] == "Basic_DAXPY")
    assert [p.frame["name"] for p in node.paths()[0]] == ["RAJAPerf", "Basic", "Basic_DAXPY"]
    pid = next(
        p
        for p in tk.profile
        if tk.metadata.loc[p, "source_path"] == r["source_path"]
        and tk.metadata.loc[p, "variant"] == r["variant"]
        and tk.metadata.loc[p, "tuning"] == r["tuning"]
    )
    assert tk.dataframe.loc[(node, pid), "time_per_rep_s"] == r["time_per_rep_s"]
    assert json.loads(tk.to_json())["profile_mapping"][str(pid)] == r["source_path"]


def test_to_thicket_refuses_what_it_cannot_hold(rajaperf_sets):
    rows = read_rajaperf(rajaperf_sets["thicket"] / "quartz", workers=1).frame
    with pytest.raises(ValueError, match="occur more than once"):
        to_thicket(pl.concat([rows, rows.head(1)]))
    with pytest.raises(ValueError, match="missing columns"):
        to_thicket(rows.drop("reps"))
    with pytest.raises(TypeError, match="expected a thicket.Thicket"):
        from_thicket(rows)


def test_export_as_thicket_and_ingest_it_back(rajaperf_sets, tmp_path):
    """xamm datasets export NAME --thicket F writes a file Thicket.from_json reads; xamm-ingest
    rajaperf F puts the same measurements (same hashes) in another store, provenance pointing at
    F."""
    from xamm_data import load_dataset
    from xamm_data.cli.commands import main as xamm
    from xamm_ingest.cli import main as ingest

    assert (
        ingest(
            [
                "rajaperf",
                str(rajaperf_sets["thicket"] / "lassen"),
                "--store",
                str(tmp_path / "a"),
                "-q",
            ]
        )
        == 0
    )
    out = tmp_path / "lassen.json"
    assert (
        xamm(
            ["datasets", "export", "lassen", "--thicket", str(out), "--store", str(tmp_path / "a")]
        )
        == 0
    )
    tk = _thicket().Thicket.from_json(out.read_text())
    assert tk.default_metric == "time_per_rep_s" or "time_per_rep_s" in tk.dataframe.columns
    assert ingest(["rajaperf", str(out), "--store", str(tmp_path / "b"), "-q"]) == 0
    a, b = (
        load_dataset("lassen", store=tmp_path / "a"),
        load_dataset("lassen", store=tmp_path / "b"),
    )
    assert set(b.get_column("source_path")) == {"lassen.json"} and set(
        b.get_column("source_format")
    ) == {"thicket-json"}
    assert set(a.get_column("source_sha256")) == set(b.get_column("source_sha256"))
    _same(a, b, drop=[*PROVENANCE, "reader", "xamm_version", "trial"])
    assert ingest(["rajaperf", str(out), "--store", str(tmp_path / "c"), "-q"]) == 0
    assert load_dataset("lassen", store=tmp_path / "c").equals(b)


def test_without_thicket_installed_the_extra_is_named(cali_sets, tmp_path, hide_module):
    files = cali_sets["lassen new-cali"][:1]
    (tmp_path / "tk.json").write_text(_tk(files).to_json())
    rows = read_rajaperf(files, workers=1).frame
    hide_module("thicket")
    rep = read_rajaperf(tmp_path, workers=1)
    assert rep.frame.height == 0 and "pip install 'xamm[thicket]'" in rep.rejected[0].reason
    with pytest.raises(ModuleNotFoundError, match=r"xamm\[thicket\]"):
        to_thicket(rows)


def test_commands_asked_for_a_thicket_without_thicket_say_so_in_one_line(
    tmp_path, hide_module, capsys
):
    """``compare --thicket`` and ``datasets export --thicket`` on an install without the thicket
    extra: exit 1 and the extra's one line, no traceback (the release check runs the first on
    the wheel's core install)."""
    from xamm_data.cli.commands import main

    hide_module("thicket")
    for argv in (
        ["compare", "quartz", "lassen", "--thicket", str(tmp_path / "c.json")],
        ["datasets", "export", "xplat-rajaperf", "--thicket", str(tmp_path / "d.json")],
    ):
        capsys.readouterr()
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        hint = "this needs 'thicket' (the thicket extra): pip install 'xamm[thicket]'"
        assert err == f"xamm: error: {hint}", err


def test_an_edited_xamm_thicket_is_validated_again(rajaperf_sets):
    """Rows of a to_thicket Thicket are checked against the schema on the way back: a source whose
    numbers were edited out of bounds is rejected, the others kept."""
    rows = read_rajaperf(rajaperf_sets["thicket"] / "lassen", workers=1).frame
    tk = to_thicket(rows)
    first = tk.dataframe["time_per_rep_s"].dropna().index[0]
    tk.dataframe.loc[first, "time_per_rep_s"] = -1.0
    rep = from_thicket(tk)
    bad = tk.metadata.loc[first[1], "source_path"]
    assert [r.path for r in rep.rejected] == [bad] and "time_per_rep_s" in rep.rejected[0].reason
    assert rep.frame.height == rows.filter(pl.col("source_path") != bad).height
