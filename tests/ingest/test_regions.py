"""Profiles read region by region (xamm_ingest.regions), checked against independent readers
of the same real files: Hatchet's own Caliper and HPCToolkit readers."""

from __future__ import annotations

import math
import random
import warnings

import polars as pl
import pytest

from xamm_data.tables.regions import RegionProfileError
from xamm_ingest.readers.caliper_files import load_profile
from xamm_ingest.regions import read_regions

LULESH = "LLNL+thicket-tutorial/data/lulesh"
QUARTZ_TOPDOWN = "LLNL+thicket-tutorial/data/quartz/GCC_10.3.1_BaseSeq_08388608/O3"
CPI_DB = "LLNL+hatchet/hatchet/tests/data/hpctoolkit-cpi-database"
GAMESS_DB = "spencer-gre+hatchet/hatchet/tests/data/hpctoolkit-gamess"
METADB = "HPCToolkit+hpcviewer.e4/tests/resources/metadb"


def _hatchet_paths(gf) -> dict:
    def path(node) -> str:
        names = []
        while node is not None:
            names.append(str(node.frame["name"]))
            node = node.parents[0] if node.parents else None
        return "/".join(reversed(names))

    return {n: path(n) for n in gf.graph.traverse()}


def _spot_totals(path, world: int) -> pl.DataFrame:
    """Each region's totals over ranks / the ranks, summed straight from the file's records."""
    out: dict[str, list[float]] = {}
    for r in load_profile(path).records:
        if "path" not in r:
            continue
        p = "/".join(r["path"] if isinstance(r["path"], list) else [r["path"]])
        inc = out.setdefault(p, [0.0, 0.0])
        inc[0] += float(r["sum#inclusive#sum#time.duration"]) / world
        inc[1] += float(r["sum#scale#sum#time.duration.ns"]) / world
    return pl.DataFrame(
        {
            "region": list(out),
            "inc": [v[0] for v in out.values()],
            "exc": [v[1] for v in out.values()],
        }
    )


def test_lulesh_regions_are_the_files_totals_over_ranks(shared_data):
    """Every LULESH region's inclusive and exclusive time is its total over ranks / 8 (the file's
    ``sum#`` attributes: a region entered by 7 of 8 ranks still averages over all 8); the source
    machine is the file's own cluster; MPI calls are communication."""
    f = sorted((shared_data / LULESH).glob("*.cali"))[0]
    prof = read_regions(f)
    theirs = _spot_totals(f, 8)
    both = prof.regions.join(theirs, on="region", how="inner")
    assert both.height == prof.regions.height == theirs.height
    assert (both["inclusive_s"] - both["inc"]).abs().max() < 1e-9
    assert (both["exclusive_s"] - both["exc"]).abs().max() < 1e-9
    assert prof.meta.source == "quartz:cpu" and prof.meta.ranks == 8
    comm = prof.regions.filter(pl.col("category") == "communication")["name"]
    # MPI calls and LULESH's own CommSend, CommRecv, CommSBN ... (and what runs beneath them)
    assert comm.len() > 0 and comm.str.contains("^(MPI_|Comm)").all()
    assert prof.work_known == "none"
    main = prof.regions.filter(pl.col("region") == "main").row(0, named=True)
    below = prof.regions.filter(pl.col("region").str.starts_with("main/"))["exclusive_s"].sum()
    assert main["exclusive_s"] + below == pytest.approx(main["inclusive_s"], rel=1e-4)


def test_rajaperf_caliper_kernels_carry_their_annotated_work(shared_data):
    """quartz top-down RAJAPerf .cali: each kernel's bytes and flops are Bytes/Rep and Flops/Rep x
    Reps as Hatchet reads them; groups and the root carry none (their ``any#`` values are a
    child's)."""
    ht = pytest.importorskip("hatchet")
    f = sorted((shared_data / QUARTZ_TOPDOWN).glob("*.cali"))[0]
    prof = read_regions(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = ht.GraphFrame.from_caliperreader(str(f))
    df = gf.dataframe.reset_index()
    leaf = df[df["node"].map(lambda n: not n.children)]
    paths = _hatchet_paths(gf)
    want = {
        paths[n]: float(b) * float(r)
        for n, b, r in zip(leaf["node"], leaf["Bytes/Rep"], leaf["Reps"], strict=True)
    }
    got = dict(
        prof.regions.filter(pl.col("bytes").is_not_null()).select("region", "bytes").iter_rows()
    )
    assert got.keys() == want.keys() and len(got) > 50
    assert all(got[k] == pytest.approx(want[k]) for k in want)
    assert prof.regions.filter(pl.col("region") == "RAJAPerf")["bytes"].null_count() == 1


def test_old_hpctoolkit_regions_are_means_over_ranks(shared_data):
    ht = pytest.importorskip("hatchet")
    db = shared_data / CPI_DB
    prof = read_regions(db)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = ht.GraphFrame.from_hpctoolkit(str(db))
    df = gf.dataframe.reset_index()
    root = gf.graph.roots[0]
    want = df[df["node"] == root]["time (inc)"].mean() * 1e-6  # experiment.xml: usec
    got = prof.regions.filter(pl.col("parent").is_null())["inclusive_s"][0]
    assert got == pytest.approx(want)
    assert prof.meta.ranks == df["rank"].nunique() and prof.meta.source is None
    assert prof.regions["region"].is_unique().all()


def _hatchet_functions(db, metric: str = "time") -> pl.DataFrame:
    """Hatchet's summary values at every function context of the main thread, by context id:
    ``inc`` the execution-scope sum, ``exc`` HPCToolkit's own function-scope (exclusive) sum."""
    ht = pytest.importorskip("hatchet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = ht.GraphFrame.from_hpctoolkit_latest(str(db), metric_names=[metric])
    df = gf.dataframe.reset_index()
    df = df[df["node"].map(lambda n: n.frame.get("type") == "function")]
    return pl.DataFrame(
        {
            "ctx_id": [n._hatchet_nid for n in df["node"]],
            "inc": df["time (inc)"].to_numpy(),
            "exc": df["time"].fillna(0).to_numpy(),
        }
    ).with_columns(pl.col("ctx_id").cast(pl.UInt32))


def _by_context(db, prof) -> pl.DataFrame:
    from xamm_ingest.readers.hpctoolkit_db import read_contexts
    from xamm_ingest.readers.hpctoolkit_regions import _region_tree

    return _region_tree(read_contexts(db)[0]).join(prof.regions, on="region")


@pytest.mark.parametrize("db", [GAMESS_DB, f"{METADB}/lmp-openmp"])
def test_new_hpctoolkit_regions_are_function_contexts_checked_against_hatchet(shared_data, db):
    """Every function context is a region. Its inclusive time is Hatchet's summary sum at that
    context over the profiles that measured time; its exclusive time (inclusive less callees') is
    HPCToolkit's own function-scope exclusive value, which the reader never reads."""
    db = shared_data / db
    prof = read_regions(db)
    ref = _hatchet_functions(db)
    got = _by_context(db, prof).join(ref, on="ctx_id")
    assert got.height == ref.height > 400
    per_profile = (got["inc"] / got["inclusive_s"]).drop_nans()
    n = round(per_profile.median())
    assert n >= 1 and (per_profile - n).abs().max() < 1e-9 * n
    dev = (got["exc"] / n - got["exclusive_s"]).abs()
    main = got["inc"].max() / n
    assert dev.sum() <= 1e-3 * main and dev.max() <= 1e-3 * main
    # the mean over the profiles that measured time cannot exceed the slowest profile's time
    from xamm_ingest.readers.hpctoolkit_db import read_summary

    peak = next(m for m in read_summary(db).metrics if m.name.startswith("REALTIME"))
    roots = prof.regions.filter(pl.col("parent").is_null())["inclusive_s"].sum()
    assert roots <= peak.values["max_over_profiles"] * (1 + 1e-9)
    assert prof.regions["exclusive_s"].sum() == pytest.approx(roots, rel=1e-9)
    assert f"over the {int(n)} profiles" in prof.meta.time_from
    # an MPI call's library internals are communication, whatever their names
    r = prof.regions
    under_mpi = r["region"].str.contains(r"/P?MPI_[A-Z][a-z]+[^/]*/")
    assert r.filter(under_mpi)["category"].unique().to_list() in ([], ["communication"])
    if "gamess" in str(db):
        assert under_mpi.sum() > 100


def test_a_cycles_only_database_reads_with_the_clock_given_and_is_refused_without(shared_data):
    db = shared_data / METADB / "loop-fork-cycles"
    with pytest.raises(RegionProfileError, match=r"loop-fork-cycles.*cycles.*--clock-ghz"):
        read_regions(db)
    prof = read_regions(db, clock_ghz=2.5)
    ref = _hatchet_functions(db)  # Hatchet reads cycles as its "time"
    got = _by_context(db, prof).join(ref, on="ctx_id")
    assert got.height == ref.height > 0
    n = 2  # the database's two thread profiles both counted cycles
    assert (got["inc"] / n / 2.5e9 - got["inclusive_s"]).abs().max() < 1e-12
    assert "cycles / 2.5 GHz (the clock given)" in prof.meta.time_from
    # instructions ride along as a counter; cycles are the time, not a counter column
    assert prof.regions["work_from"].unique().to_list() == ["none: time only"]


def test_a_prerelease_database_is_one_whole_program_region(shared_data):
    """hpcviewer's multithread database uses the pre-release layout (24-byte metric descriptions),
    whose context tree is not FORMATS.md 4.0's: it is read as one region, and says so."""
    from xamm_ingest.errors import IngestError
    from xamm_ingest.readers.hpctoolkit_db import read_contexts, read_summary

    db = shared_data / METADB / "multithread"
    with pytest.raises(IngestError, match="pre-release database layout"):
        read_contexts(db)
    prof = read_regions(db, clock_ghz=2.0)
    cycles = next(m for m in read_summary(db).metrics if m.name == "cycles")
    assert prof.regions.height == 1 and "pre-release" in prof.meta.time_from
    want = cycles.values["sum"] / 2e9 / cycles.profiles
    assert prof.regions["exclusive_s"][0] == pytest.approx(want, rel=1e-12)


def test_parallel_sorting_profiles_read_or_are_refused_by_name(shared_data):
    """60 files drawn (seeded) from 10,563 profiles written by independent teams: each reads, with
    exclusive times summing to the roots' inclusive time, or is refused with its path named."""
    files = sorted((shared_data / "LLNL+thicket-tutorial/data/parallel-sorting").rglob("*.cali"))
    picked = random.Random(0).sample(files, 60)
    read, refused = 0, []
    for f in picked:
        try:
            prof = read_regions(f)
        except RegionProfileError as e:
            assert str(f) in str(e)
            refused.append(str(e))
            continue
        read += 1
        r = prof.regions
        roots = r.filter(pl.col("parent").is_null())["inclusive_s"].sum()
        assert r["exclusive_s"].sum() == pytest.approx(roots, rel=0.02, abs=1e-3)
    assert read >= 55, refused


def test_region_tables_and_bad_input(tmp_path):
    good = tmp_path / "regions.csv"
    good.write_text(
        "region,exclusive_s,bytes,flops,calls\nmain,0.5,,,\nmain/stencil,2.0,4e9,1e9,100\n"
        "main/MPI_Allreduce,0.25,,,\n"
    )
    prof = read_regions(good)
    r = {row["region"]: row for row in prof.regions.iter_rows(named=True)}
    assert r["main/stencil"]["parent"] == "main" and r["main/stencil"]["bytes"] == 4e9
    assert r["main/MPI_Allreduce"]["category"] == "communication"
    assert prof.meta.source is None and prof.work_known == "some"
    cases = {
        "region,seconds\nmain,1\n": "no column exclusive_s",
        "region,exclusive_s\nmain,abc\n": "hold text, not numbers",
        "region,exclusive_s,inclusive_s\nmain,2,1\n": r"region 'main' breaks \[exclusive_s <= inc",
        "region,exclusive_s\nmain,-1\n": r"breaks \[exclusive_s is finite and >= 0\]",
        "region,exclusive_s\n": "no regions",
    }
    for text, message in cases.items():
        f = tmp_path / "bad.csv"
        f.write_text(text)
        with pytest.raises(RegionProfileError, match=message) as e:
            read_regions(f)
        assert str(f) in str(e.value)
    for name, message in (("x.txt", "not a profile xamm reads"), ("none.cali", "no such file")):
        if name == "x.txt":
            (tmp_path / name).write_text("hello")
        with pytest.raises(RegionProfileError, match=message):
            read_regions(tmp_path / name)


def test_a_profiles_time_is_the_correctly_rounded_sum_of_its_regions():
    """``runtime_s`` is ``math.fsum`` of the exclusive times, whatever their order: a sum in
    floating point from the left would lose the 1 s region beside two that cancel."""
    import math

    from xamm_data.tables.regions import exact_sum

    times = [1e16, 1.0, -1e16, None]
    assert exact_sum(times) == 1.0 == math.fsum([1e16, 1.0, -1e16])
    assert exact_sum(list(reversed(times))) == 1.0
    assert sum([1e16, 1.0, -1e16]) == 0.0  # what a plain sum would store
    assert math.isnan(exact_sum([math.inf, -math.inf]))
    # fsum refuses a sum past the largest double; the plain sum's infinity is refused downstream
    assert exact_sum([1e308, 1e308, None]) == math.inf
    assert exact_sum([-1e308, -1e308]) == -math.inf


def test_the_params_text_keeps_each_values_type():
    """``--param`` values that compare equal (True, 1, 1.0) are stored as the JSON of each."""
    from xamm_ingest.readers.profile_common import _params_text

    texts = [_params_text((("x", type(v), v),)) for v in (True, 1, 1.0, "1")]
    assert texts == ['{"x":true}', '{"x":1}', '{"x":1.0}', '{"x":"1"}']


def test_a_records_numbers_are_each_attribute_beside_its_place_that_float_reads():
    """The reader converts a record's values at once where every one is a number, else one by one;
    either way it keeps what ``float`` reads (NaN and inf included) and nothing else."""
    import math

    from xamm_ingest.readers.caliper_regions import _PLACE, _numbers

    def oracle(rec: dict) -> dict:
        out = {}
        for k, v in rec.items():
            if k in _PLACE:
                continue
            try:
                out[k] = float(v)
            except (TypeError, ValueError):
                pass
        return out

    records = [
        {"path": ["main"], "region": "main", "a": "1.5", "b": "2", "mpi.rank": "3"},
        {"path": ["main"], "a": "nan", "b": "-inf", "c": "1e308"},
        {"path": ["main"], "a": "x", "b": "2", "kernel": ["k", "l"], "d": True},
        {"path": ["main"], "b": "2", "a": " 7 "},
        {"path": ["main"]},
    ]
    for rec in records:
        got, want = _numbers(rec), oracle(rec)
        assert list(got) == list(want), rec
        assert all(got[k] == want[k] or (math.isnan(got[k]) and math.isnan(want[k])) for k in got)


def test_a_region_split_by_another_attribute_is_summed_and_ranks_are_averaged(tmp_path):
    """Two records of one region and rank that differ in another attribute add up; a region's time
    is then the mean over the ranks whose records time it, and a region written once is its one
    record's value (read back from the file with the standard library)."""
    from cali_writer import write_cali

    t = "sum#time.duration"
    regions = [
        (["main"], {t: 4.0, "mpi.rank": "0", "phase": "a"}),
        (["main"], {t: 2.0, "mpi.rank": "0", "phase": "b"}),
        (["main"], {t: 3.0, "mpi.rank": "1", "phase": "a"}),
        (["main", "solve"], {t: 1.0, "mpi.rank": "0", "phase": "a"}),
    ]
    f = write_cali(tmp_path / "split.cali", regions, {"cluster": "quartz"}, units={t: "sec"})
    prof = read_regions(f)
    r = {row["region"]: row for row in prof.regions.iter_rows(named=True)}
    assert r["main"]["exclusive_s"] == pytest.approx(((4.0 + 2.0) + 3.0) / 2)
    assert r["main/solve"]["exclusive_s"] == pytest.approx(1.0)


def test_a_json_records_path_of_numbers_names_its_regions_as_their_text(tmp_path):
    """A ``format json`` file whose region paths are lists holding numbers reads as the same
    file with those labels written as text: the same regions, parents and times."""
    import json

    t = "sum#time.duration"

    def regions_of(label):
        recs = [{"path": [label], t: 3.0}, {"path": [label, "solve"], t: 1.0}]
        f = tmp_path / f"{type(label).__name__}.json"
        f.write_text(json.dumps({"records": recs, "globals": {}, "attributes": {}}))
        return read_regions(f, time_unit="sec").regions

    as_number, as_text = regions_of(7), regions_of("7")
    assert as_number.equals(as_text)
    assert as_number.get_column("region").to_list() == ["7", "7/solve"]
    assert as_number.get_column("parent").to_list() == [None, "7"]


def test_the_ingest_paths_metadata_record_is_the_models_fields_and_its_values():
    """The record the ingest path holds (:class:`ProfileFields`, not validated) has the model's
    fields, in its order, with its defaults and types: a field added to one and not the other
    fails here."""
    import typing

    from xamm_data.tables.regions import ProfileMeta
    from xamm_ingest.readers.profile_common import ProfileFields

    model = ProfileMeta.model_fields
    assert list(ProfileFields._fields) == list(model)
    hints = typing.get_type_hints(ProfileFields)
    for name, info in model.items():
        assert hints[name] == info.annotation, name
        default = ProfileFields._field_defaults.get(name, "required")
        expected = info.default_factory() if info.default_factory else info.default
        assert default == ("required" if info.is_required() else expected), name


def test_a_json_profiles_numeric_caliper_version_is_stored_as_text(tmp_path):
    """A JSON profile that writes Caliper's version as a number: the version as text, for the
    store and for ``xamm predict`` alike (the model would refuse a number)."""
    import json

    from xamm_ingest.readers.caliper_regions import read_caliper_rows

    recs = [{"path": ["main"], "sum#time.duration": 3.0}]
    f = tmp_path / "p.json"
    glob = {"cali.caliper.version": 2.9, "cluster": "quartz"}
    f.write_text(json.dumps({"records": recs, "globals": glob, "attributes": {}}))
    rows = read_caliper_rows(f, time_unit="sec")
    assert rows.meta.tool_versions == {"caliper": "2.9"}
    assert read_regions(f, time_unit="sec").meta.tool_versions == {"caliper": "2.9"}


def test_attribute_metadata_is_worked_out_when_first_read_and_is_caliperreaders(shared_data):
    """A ``.cali`` profile's metadata of an attribute waits until a reader asks for that attribute
    (asking for one works out no other); it is, for every attribute its records hold, what
    caliperreader reads for that attribute, and a name no record holds has none."""
    import caliperreader

    files = sorted((shared_data / "LLNL+thicket-tutorial/data").rglob("*.cali"))[::503]
    assert len(files) >= 10
    for f in files:
        assert "no.such.attribute" not in load_profile(f).meta, f  # a miss, the first question
        prof = load_profile(f)
        assert prof.meta._got == {}, f  # nothing worked out yet
        ref = caliperreader.CaliperReader()
        ref.read(str(f))
        keys = {k for rec in ref.records for k in rec}
        first = sorted(keys - {"path"})[0]
        assert prof.meta[first] is prof.meta[first]  # worked out once
        assert set(prof.meta._got) == {first}, f
        assert set(prof.meta) == keys and len(prof.meta) == len(keys), f
        for k in keys - {"path"}:
            want = {a: v for a, v in ref.attribute(k).metadata().items() if a.startswith("attr")}
            got = {a: v for a, v in prof.meta[k].items() if a.startswith("attr")}
            assert got == want, (f, k)
        assert "no.such.attribute" not in prof.meta
        assert prof.meta.get("no.such.attribute") is None
        assert prof.meta.get("no.such.attribute", {}) == {} and prof.meta.get(first) is not None
        with pytest.raises(KeyError):
            prof.meta["no.such.attribute"]


def test_infinities_of_both_signs_in_one_metric_are_refused_by_name(tmp_path, capsys):
    """An attribute written as inf in one record and -inf in another has no sum: the source is
    refused naming the metric and what was expected (not as an input xamm did not expect), and
    the region reader of ``xamm predict``, which does not use that metric, reads the times as it
    does beside one infinity."""
    import json

    from cali_writer import write_cali

    from xamm_ingest.cli import main as ingest

    t, odd = "sum#time.duration", "max#papi.PAPI_L1_DCM"
    regions = [(["main"], {t: 5.5, odd: "inf"}), (["main", "solve"], {t: 5.0, odd: "-inf"})]
    write_cali(tmp_path / "runs" / "p.cali", regions, {"cluster": "quartz"}, units={t: "sec"})
    argv = ["caliper", str(tmp_path / "runs"), "--app", "x", "--machine", "quartz"]
    assert ingest([*argv, "--dry-run", "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    (rej,) = got["rejected_files"]
    assert rej["path"].endswith("p.cali")
    # the metric under its canonical counter name, its value the sum IEEE gives (no number)
    assert "metric 'papi.PAPI_L1_DCM' is nan; expected a finite number" in rej["reason"]
    assert "did not expect" not in rej["reason"]
    prof = read_regions(tmp_path / "runs" / "p.cali")
    assert prof.runtime_s == pytest.approx(5.5 + 5.0)  # exclusive times, summed


def test_a_json_split_profile_holding_what_no_writer_writes_is_refused_by_name(
    shared_data, tmp_path, capsys
):
    """Caliper's json-split names each column with text and each tree node's column with text; a
    rank is a scalar. A file that breaks one of these is refused naming what broke it, by the
    region reader and by the ingest alike, and a rank written as a list is read as the text it
    holds rather than failing as a key."""
    import copy
    import json
    import re

    from xamm_ingest.cli import main as ingest

    src = shared_data / "LLNL+hatchet/hatchet/tests/data/caliper-lulesh-json"
    doc = json.loads((src / "lulesh-annotation-profile.json").read_text())
    assert doc["columns"][1] == "mpi.rank" and doc["nodes"]

    def edited(name: str, edit):
        d = copy.deepcopy(doc)
        edit(d)
        f = tmp_path / name / "p.json"
        f.parent.mkdir()
        f.write_text(json.dumps(d))
        return f

    refusals = {
        "column": (lambda d: d["columns"].__setitem__(2, 5), "column 2 is 5; expected a column"),
        "node": (
            lambda d: d["nodes"][0].__setitem__("column", ["path"]),
            "node 0 has column ['path']; expected a column name",
        ),
    }
    argv = ["--app", "x", "--machine", "quartz", "--time-unit", "usec", "--dry-run", "--json"]
    for name, (edit, message) in refusals.items():
        f = edited(name, edit)
        with pytest.raises(RegionProfileError, match=re.escape(message)):
            read_regions(f, time_unit="usec")
        assert ingest(["caliper", str(f.parent), *argv]) == 1
        (rej,) = json.loads(capsys.readouterr().out)["rejected_files"]
        assert message in rej["reason"] and "did not expect" not in rej["reason"]
    # the first row's rank, written as a list: one more rank, read as its text
    at = next(i for i, row in enumerate(doc["data"]) if row[3] is not None)  # a region's row
    f = edited("rank", lambda d: d["data"][at].__setitem__(1, [d["data"][at][1]]))
    plain = read_regions(src / "lulesh-annotation-profile.json", time_unit="usec")
    assert read_regions(f, time_unit="usec").meta.ranks == plain.meta.ranks + 1


def test_a_context_tree_whose_pointer_loops_is_refused_not_walked_forever(shared_data, tmp_path):
    """A damaged meta.db whose context points back at the children array holding it is refused
    naming the database and the context, within seconds and not by running out of memory. The
    loop is made with ``struct`` from FORMATS.md's layout of a {Ctx}."""
    import shutil
    import struct

    from test_ingest_fuzz import within

    from xamm_ingest.errors import IngestError
    from xamm_ingest.readers.hpctoolkit_db import read_contexts

    db = tmp_path / "db"
    shutil.copytree(shared_data / GAMESS_DB, db)
    meta = bytearray((db / "meta.db").read_bytes())
    _, p_sec = struct.unpack_from("<QQ", meta, 0x10 + 3 * 16)
    p_entries, n_entries, sz_entry = struct.unpack_from("<QHB", meta, p_sec)
    sz, p_kids = struct.unpack_from("<QQ", meta, p_entries)  # the first entry point's children
    assert n_entries >= 1 and sz > 0
    # its first child context now has that same array as its own children: a loop
    struct.pack_into("<QQ", meta, p_kids, sz, p_kids)
    (db / "meta.db").write_bytes(bytes(meta))
    with pytest.raises(IngestError, match=r"damaged or truncated database .*met twice \(a loop\)"):
        within(10, read_contexts, db)
    assert len(read_contexts(shared_data / GAMESS_DB)[0]) > 1000  # the real one is read whole


def _seeded_profile(rng: random.Random) -> tuple[list, dict, dict]:
    """Regions (path, metrics), globals and units of a random Caliper profile: time, annotation,
    counter and other attributes, at times a rank, an mpi.function, text, NaN, inf, a repeat."""
    times = ["sum#inclusive#sum#time.duration", "avg#inclusive#sum#time.duration",
             "min#inclusive#sum#time.duration", "sum#sum#time.duration", "time.duration",
             "avg#sum#time.duration", "inclusive#time.duration"]  # fmt: skip
    others = ["any#Reps", "any#Bytes/Rep", "any#Flops/Rep", "any#Kernels/Rep",
              "sum#papi.PAPI_DP_OPS", "sum#papi.PAPI_L3_TCM", "sum#papi.PAPI_FP_OPS", "count",
              "sum#count", "sum#foo", "mpi.function", "note"]  # fmt: skip
    attrs = rng.sample(times, rng.randint(1, 3)) + rng.sample(others, rng.randint(0, 5))
    labels = ["main", "solve", "comm", "MPI_Allreduce", "io_write", "Stream_TRIAD", "a/b"]
    paths = {("main",)}
    while len(paths) < rng.randint(1, 7):
        parent = rng.choice(sorted(paths))
        paths.add((*parent, rng.choice(labels)))
    ranks = [None] if rng.random() < 0.8 else ["0", "1"]
    regions = []
    for p in sorted(paths):
        for rank in ranks:
            metrics = {}
            for a in attrs:
                if a in ("mpi.function", "note"):
                    metrics[a] = rng.choice(["MPI_Send", "x"])
                else:
                    # a negative time or -0.0 too: the exclusive time is kept from below 0
                    metrics[a] = rng.choice([0.0, 1.5, rng.uniform(0, 9), -2.5, -0.0])
                    if rng.random() < 0.03:
                        metrics[a] = rng.choice([math.nan, math.inf, "text"])
            if rank is not None:
                metrics["mpi.rank"] = rank
            regions.append((list(p), metrics))
    if rng.random() < 0.1:
        regions.append(rng.choice(regions))  # a repeat
    spot = {"cali.channel": "spot", "mpi.world.size": "4"} if rng.random() < 0.3 else {}
    units = {a: "sec" for a in attrs if "time" in a and rng.random() < 0.95}
    return regions, {"cluster": "quartz", **spot}, units


def _reading(path) -> tuple:
    from xamm_ingest.readers.caliper_regions import read_caliper_rows

    try:
        r = read_caliper_rows(path)
    except RegionProfileError as e:
        return ("refused", str(e))
    # the record the ingest path holds unvalidated is what the model takes unchanged
    assert r.meta.validated().model_dump() == r.meta._asdict(), path
    return (r.meta, list(r.rows), r.runtime_s, r.totals, r.notes)


def test_a_profile_read_attribute_by_attribute_is_the_profile_read_record_by_record(
    tmp_path, monkeypatch
):
    """Where every record holds the same attributes (nearly every aggregated profile) they are
    read attribute by attribute at once: the regions, times, work, categories, totals, metadata
    and refusals are those of the reading record by record, on 400 seeded profiles."""
    from cali_writer import write_cali

    from xamm_ingest.readers import caliper_regions

    at_once = []
    uniform = caliper_regions._uniform
    rng = random.Random(20261201)
    for i in range(400):
        regions, globals_, units = _seeded_profile(rng)
        f = write_cali(tmp_path / f"p{i}.cali", regions, globals_, units=units)
        monkeypatch.setattr(
            caliper_regions, "_uniform", lambda recs: at_once.append(recs) or uniform(recs)
        )
        fast = _reading(f)
        monkeypatch.setattr(caliper_regions, "_uniform", lambda recs: None)
        slow = _reading(f)
        assert repr(fast) == repr(slow), f
    taken = sum(uniform(recs) is not None for recs in at_once)
    assert 100 < taken < len(at_once) - 100, taken


def test_a_launch_date_is_the_utc_time_fromtimestamp_gives():
    """``launchdate`` is read as ``datetime.fromtimestamp(seconds, UTC)`` reads it, on seeded
    times over the whole range taken (1 s to 1e11 s) and at its ends; outside it, none."""
    from datetime import UTC, datetime

    from xamm_ingest.readers.caliper_regions import _run_date

    rng = random.Random(20261201)
    times = [1, 86399, 1700993161, 99999999999, *(rng.uniform(1, 1e11) for _ in range(2000))]
    for x in times:
        assert _run_date({"launchdate": str(x)}) == datetime.fromtimestamp(int(x), tz=UTC), x
    for x in ("0", "-5", "1e11", "nan", "inf", "soon"):
        assert _run_date({"launchdate": x}) is None, x


def test_a_metadata_entry_is_shared_per_key_and_text_and_equal_to_one_made_anew():
    """The ``extra_metadata`` entries of two profiles writing the same key and text are one
    object (a batch holds each once), equal to the entry made anew; a value that is not text
    (a repeated attribute's list, a JSON number) gets its own entry, as text."""
    from xamm_ingest.metadata_map import MetadataMap

    m = MetadataMap()
    a = m.apply({"libraries": "[/lib/a.so,/lib/b.so]", "team": "x"}).extra
    b = m.apply({"libraries": "".join(["[/lib/a.so,", "/lib/b.so]"]), "team": "y"}).extra
    assert a[0] is b[0] and a[0] == {"name": "libraries", "value": "[/lib/a.so,/lib/b.so]"}
    assert a[1] == {"name": "team", "value": "x"} and b[1] == {"name": "team", "value": "y"}
    listed = m.apply({"libraries": ["/lib/a.so", "/lib/b.so"]}).extra
    assert listed == [{"name": "libraries", "value": "[/lib/a.so,/lib/b.so]"}]
    assert listed[0] is not a[0]
    assert m.apply({"team": 7}).extra == [{"name": "team", "value": "7"}]


def test_no_params_are_stored_as_the_empty_object_the_params_text_gives():
    """A command without ``--param`` stores ``{}``, the text of no parameters."""
    from xamm_ingest.readers.profile_common import _params_of, _params_text

    assert _params_of({}) == _params_text(()) == "{}"
    assert _params_of({"b": 1, "a": "x"}) == '{"a":"x","b":1}'
