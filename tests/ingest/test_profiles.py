"""Application profiles: HPCToolkit (old and new), Caliper and tables into app_profiles, with
features."""

from __future__ import annotations

import json
import re
import struct
import warnings

import numpy as np
import polars as pl
import pytest

from xamm_data import load_dataset
from xamm_data.store.store import Store
from xamm_data.tables.features import add_features
from xamm_ingest import ingest_profiles, read_profiles
from xamm_ingest.cli import main
from xamm_ingest.readers.profile_common import SampleSpec

SPEC = SampleSpec(app="demo", machine="quartz", params={"n": 1})


@pytest.fixture(scope="module")
def dbs(shared_data):
    meta = shared_data / "HPCToolkit+hpcviewer.e4" / "tests" / "resources" / "metadb"
    hat = shared_data / "LLNL+hatchet" / "hatchet" / "tests" / "data"
    return {
        "loop-fork-cycles": meta / "loop-fork-cycles",
        "multithread": meta / "multithread",
        "lmp-openmp": meta / "lmp-openmp",
        "quicksilver": meta / "quicksilver",
        "derived-metrics": meta / "derived-metrics.db",
        "gamess": shared_data
        / "spencer-gre+hatchet"
        / "hatchet"
        / "tests"
        / "data"
        / "hpctoolkit-gamess",
        "cpi": hat / "hpctoolkit-cpi-database",
        "allgather": hat / "hpctoolkit-allgather-database",
        "caliper": hat,
    }


def one_row(fmt, path, spec=SPEC, **kw) -> dict:
    rep = read_profiles(fmt, path, spec, **kw)
    assert rep.rejected == [], rep.rejected
    assert rep.frame.height == 1
    return rep.frame.row(0, named=True)


def hatchet_root(db, names):
    import hatchet as ht

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = ht.GraphFrame.from_hpctoolkit_latest(str(db), metric_names=names)
    return gf.dataframe.loc[gf.graph.roots[0]]


def test_cycles_instructions_database_and_derived_features(dbs):
    row = one_row("hpctoolkit", dbs["loop-fork-cycles"])
    # hatchet calls cycles "time"
    ref = hatchet_root(dbs["loop-fork-cycles"], ["time", "instructions"])
    assert row["ctr_tot_ins"] == ref["instructions (inc)"] == 12877005453
    assert row["ctr_tot_cyc"] == ref["time (inc)"] == 11055430886
    assert row["counters_present"] == ["tot_cyc", "tot_ins"]
    assert row["s001_ipc"] == pytest.approx(12877005453 / 11055430886)
    assert row["s001_instructions"] == 12877005453
    # features whose counters are absent are null, never zero
    assert row["feat_branch_intensity"] is None and row["feat_mem_stall"] is None
    assert row["runtime_s"] is None and "no time metric" in row["runtime_aggregation"]
    assert row["source_format"] == "hpctoolkit-latest" and len(row["source_sha256"]) == 64


def test_prerelease_layout_database_reads(dbs):
    # multithread's meta.db uses a pre-release metric layout that Hatchet 2026.2 cannot read
    row = one_row("hpctoolkit", dbs["multithread"])
    assert (row["ctr_tot_cyc"], row["ctr_tot_ins"]) == (19185380779, 7091168179)
    # the summary's sum equals the per-thread profiles' (independent part of profile.db)
    assert row["s001_ipc"] == pytest.approx(7091168179 / 19185380779)


def _per_profile_realtime(db) -> list[float]:
    """Every thread profile's whole-program REALTIME, read from profile.db as FORMATS.md says."""
    prof = (db / "profile.db").read_bytes()
    _, p_info = struct.unpack_from("<QQ", prof, 0x10)
    p_profiles, n_prof, sz = struct.unpack_from("<QIB", prof, p_info)
    per_thread = []
    for k in range(1, n_prof):
        nv, pv, nc, pi = struct.unpack_from("<QQI4xQ", prof, p_profiles + k * sz)
        ctx, start = struct.unpack_from("<IQ", prof, pi)
        end = struct.unpack_from("<IQ", prof, pi + 12)[1] if nc > 1 else nv
        vals = [struct.unpack_from("<Hd", prof, pv + 10 * j)[1] for j in range(start, end)]
        per_thread.append(max(vals))
    return per_thread


def test_realtime_runtime_is_the_mean_over_thread_profiles(dbs):
    """One time per profile (docs/decisions.md): the mean over ranks and threads, as `xamm
    predict` reads the same database."""
    from xamm_ingest import read_regions

    row = one_row("hpctoolkit", dbs["lmp-openmp"])
    per_thread = _per_profile_realtime(dbs["lmp-openmp"])
    assert len(per_thread) == 24
    assert row["runtime_s"] == pytest.approx(sum(per_thread) / 24, rel=1e-9)
    assert "mean over the 24 profiles" in row["runtime_aggregation"]
    assert row["runtime_s"] == pytest.approx(read_regions(dbs["lmp-openmp"]).runtime_s, rel=1e-12)
    assert len(row["regions"]) == read_regions(dbs["lmp-openmp"]).regions.height


def test_gpu_database_keeps_unknown_metrics(dbs):
    row = one_row(
        "hpctoolkit",
        dbs["gamess"],
        SampleSpec(app="GAMESS", machine="frontier", device="gpu", gpus=8),
    )
    extra = {e["name"]: e["value"] for e in row["extra_counters"]}
    ref = hatchet_root(dbs["gamess"], ["time", "gker"])
    assert extra["GKER (sec)"] == pytest.approx(ref["gker (inc)"])
    assert {"GPUOP (sec)", "GXCOPY (sec)"} <= set(extra)
    from xamm_ingest import read_regions

    # the mean over the 40 profiles that measured REALTIME: below the database's own maximum over
    # profiles (100.411994 s), and what `xamm predict` reads from the same database
    assert row["runtime_s"] < 100.411994
    assert row["runtime_s"] == pytest.approx(read_regions(dbs["gamess"]).runtime_s, rel=1e-12)
    assert row["device"] == "gpu"
    for name in ("quicksilver", "derived-metrics"):
        r = one_row("hpctoolkit", dbs[name])
        assert r["extra_counters"], name


def test_old_format_root_time_read_independently(dbs):
    row = one_row("hpctoolkit", dbs["cpi"])
    roots = []
    for f in sorted(dbs["cpi"].glob("*.metric-db")):
        with open(f, "rb") as fh:
            fh.seek(24)
            nn, nm = struct.unpack(">ii", fh.read(8))
            fh.seek(32)
            roots.append(np.fromfile(fh, dtype=">f8", count=nn * nm).reshape(nn, nm)[0, 0])
    # CPUTIME (usec) in experiment.xml; the mean over ranks
    assert row["runtime_s"] == pytest.approx(np.mean(roots) * 1e-6)
    assert row["ranks"] == 4 and row["source_format"] == "hpctoolkit"
    assert one_row("hpctoolkit", dbs["allgather"])["runtime_aggregation"].endswith(
        "mean over 10 ranks x 2 threads"
    )


def test_caliper_profiles(dbs):
    lulesh = dbs["caliper"] / "caliper-lulesh-json" / "lulesh-annotation-profile.json"
    rep = read_profiles("caliper", lulesh, SampleSpec(app="LULESH", machine="quartz"))
    assert rep.frame.is_empty() and "--time-unit" in rep.rejected[0].reason
    row = one_row("caliper", lulesh, SampleSpec(app="LULESH", machine="quartz", time_unit="usec"))
    doc = json.loads(lulesh.read_text())
    ci, cp = doc["columns"].index("inclusive#sum#time.duration"), doc["columns"].index("path")
    roots = [i for i, n in enumerate(doc["nodes"]) if "parent" not in n]
    # one time per profile: the mean over ranks of the root's inclusive time
    per_rank = [r[ci] for r in doc["data"] if r[cp] in roots]
    assert len(per_rank) == 8
    assert row["runtime_s"] == pytest.approx(np.mean(per_rank) * 1e-6)
    assert row["ranks"] == 8
    sw4 = dbs["caliper"] / "caliper-sw4-cuda-activity-profile-cali"
    row = one_row(
        "caliper", sw4, SampleSpec(app="SW4", machine="lassen", device="gpu", time_unit="sec")
    )
    assert row["runtime_s"] == pytest.approx(271.493903) and row["ranks"] == 4
    assert any("cupti.activity.duration" in e["name"] for e in row["extra_counters"])


def test_caliper_papi_counters_and_features(tmp_path):
    from cali_writer import write_cali

    f = write_cali(
        tmp_path / "app.cali",
        [
            (
                ["main"],
                {
                    "inclusive#sum#time.duration": 2.0,
                    "sum#papi.PAPI_TOT_INS": 1000.0,
                    "sum#papi.PAPI_BR_INS": 100.0,
                    "sum#papi.PAPI_LD_INS": 300.0,
                    "sum#papi.PAPI_FANCY": 7.0,
                },
            ),
            (
                ["main", "solve"],
                {
                    "inclusive#sum#time.duration": 1.5,
                    "sum#papi.PAPI_TOT_INS": 3000.0,
                    "sum#papi.PAPI_BR_INS": 200.0,
                    "sum#papi.PAPI_LD_INS": 900.0,
                },
            ),
        ],
        {"cluster": "ruby"},
        units={"inclusive#sum#time.duration": "sec"},
    )
    row = one_row("caliper", f, SampleSpec(app="toy"))
    assert row["machine"] == "ruby" and row["runtime_s"] == 2.0
    assert (row["ctr_tot_ins"], row["ctr_br_ins"], row["ctr_ld_ins"]) == (4000, 300, 1200)
    assert row["feat_branch_intensity"] == pytest.approx(300 / 4000)
    assert row["feat_load_intensity"] == pytest.approx(0.3)
    assert row["feat_store_intensity"] is None
    assert row["extra_counters"] == [{"name": "sum#papi.PAPI_FANCY", "value": 7.0}]


def test_table_with_mapping_and_errors(tmp_path):
    csv = tmp_path / "samples.csv"
    csv.write_text(
        "application,system,time_ms,nthreads,size,PAPI_TOT_INS,br,PAPI_SR_INS,mystery\n"
        "Kripke,Quartz,1500,4,32,1e9,1e8,2e8,3\n"
        "Kripke,Ruby,900,4,32,1e9,,,4\n"
    )
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        'params = ["size"]\n[columns]\napp = "application"\nmachine = '
        '"system"\nruntime_s = "time_ms"\n'
        'threads = "nthreads"\n[counters]\nbr = '
        '"branches"\n[units]\nruntime_s = "ms"\n'
    )
    rep = read_profiles("table", csv, mapping=mapping)
    assert rep.rejected == []
    df = rep.frame.sort("machine")
    assert df.get_column("machine").to_list() == ["quartz", "ruby"]
    assert df.get_column("runtime_s").to_list() == [1.5, 0.9]
    assert df.get_column("app_params").to_list() == ['{"size":32}'] * 2
    assert df.get_column("feat_branch_intensity").to_list() == [0.1, None]
    assert df.get_column("counters_present").to_list() == [
        ["br_ins", "sr_ins", "tot_ins"],
        ["tot_ins"],
    ]
    assert df.get_column("extra_counters").to_list()[0] == [{"name": "mystery", "value": 3.0}]
    bad = tmp_path / "bad.toml"
    bad.write_text('[columns]\napp = "application"\nmachine = "system"\nruntime = "time_ms"\n')
    from xamm_ingest import IngestError

    with pytest.raises(IngestError, match=r"\[columns\] has \['runtime'\]; canonical fields are"):
        read_profiles("table", csv, mapping=bad)
    bad.write_text('[columns]\napp = "nope"\nmachine = "system"\nruntime_s = "time_ms"\n')
    rep = read_profiles("table", csv, mapping=bad)
    assert "['nope']" in rep.rejected[0].reason


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("threads = 2.5", "[defaults]: threads is 2.5; expected a whole number >= 1"),
        ("threads = true", "[defaults]: threads is True; expected a whole number >= 1"),
        ("threads = 0", "[defaults]: threads is 0; expected a whole number >= 1"),
        ('trial = "1"', "[defaults]: trial is '1'; expected a whole number >= 0"),
        ("trial = -1", "[defaults]: trial is -1; expected a whole number >= 0"),
        ("runtime_s = 5", "[defaults]: runtime_s has a column under [columns] ('time_ms')"),
        ("bogus = 1", "[defaults]: bogus is no canonical field"),
        ('app = ""', "[defaults]: app has a column under [columns]"),
        ('device = " "', "[defaults]: device is ' '; expected text"),
    ],
)
def test_a_default_that_does_not_fit_its_field_is_refused_naming_the_mapping(line, said, tmp_path):
    """``[defaults]`` fill fields without a column: a count is a whole number in its range (never
    truncated, never a switch), a field with a column takes no default, an unknown field is
    named."""
    from xamm_ingest import IngestError

    csv = tmp_path / "runs.csv"
    csv.write_text("application,system,time_ms\nKripke,quartz,1500\n")
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        '[columns]\napp = "application"\nmachine = "system"\nruntime_s = "time_ms"\n'
        f"[defaults]\n{line}\n"
    )
    with pytest.raises(IngestError, match=re.escape(f"{mapping} {said}")):
        read_profiles("table", csv, mapping=mapping)
    mapping.write_text(
        'params = ["system", "system"]\n'
        '[columns]\napp = "application"\nmachine = "system"\nruntime_s = "time_ms"\n'
    )
    with pytest.raises(IngestError, match=r"\[params\]: 'system' is named twice"):
        read_profiles("table", csv, mapping=mapping)


def test_trials_side_by_side_in_one_table_are_kept_and_a_copy_of_it_adds_none(tmp_path):
    """Rows of one file are never byte-identical copies of each other: a table holding three runs
    of one configuration stores three trials (numbered in the file's order); the same bytes under
    a second path add nothing."""
    csv = tmp_path / "runs.csv"
    csv.write_text(
        "application,system,time_ms,size\nKripke,quartz,1500,32\nKripke,quartz,900,32\n"
        "Kripke,quartz,1200,32\nKripke,quartz,700,64\n"
    )
    (tmp_path / "copy.csv").write_bytes(csv.read_bytes())
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        'params = ["size"]\n[columns]\napp = "application"\nmachine = "system"\n'
        'runtime_s = "time_ms"\n[units]\nruntime_s = "ms"\n'
    )
    one = read_profiles("table", csv, mapping=mapping)
    assert one.notes == [] and one.frame.height == 4
    got = one.frame.sort("app_params", "trial")
    assert got.select("app_params", "trial").rows() == [
        ('{"size":32}', 0),
        ('{"size":32}', 1),
        ('{"size":32}', 2),
        ('{"size":64}', 0),
    ]
    assert got.get_column("runtime_s").to_list() == pytest.approx([1.5, 0.9, 1.2, 0.7])
    both = read_profiles("table", [tmp_path / "copy.csv", csv], mapping=mapping)
    assert both.frame.height == 4 and set(both.frame.get_column("source_path")) == {"copy.csv"}
    assert both.notes == ["dropped 4 row(s) from byte-identical copies of the same file"]


def test_features_are_vectorised_and_null_safe():
    df = pl.DataFrame(
        {
            "ctr_tot_ins": [100.0, 0.0, None],
            "ctr_br_ins": [10.0, 5.0, 1.0],
            "ctr_tot_cyc": [50.0, 1.0, 1.0],
        }
    )
    out = add_features(df)
    assert out.get_column("feat_branch_intensity").to_list() == [0.1, None, None]
    assert out.get_column("s001_ipc").to_list() == [2.0, 0.0, None]
    assert out.get_column("feat_dp_fp_intensity").null_count() == 3


def test_cli_ingest_and_load_app_profiles(dbs, tmp_path, capsys):
    store = tmp_path / "store"
    args = [
        "hpctoolkit",
        str(dbs["loop-fork-cycles"]),
        str(dbs["multithread"]),
        "--app",
        "loops",
        "--machine",
        "quartz",
        "--param",
        "n=10",
        "--threads",
        "2",
        "--store",
        str(store),
        "--json",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 2 and out["apps"] == ["loops"]
    df = load_dataset("quartz", kind="app_profiles", store=Store(store))
    assert df.height == 2 and set(df.get_column("trial")) == {0, 1}
    assert main(args) == 0  # re-ingest: replaced, not duplicated
    assert load_dataset("quartz", kind="app_profiles", store=Store(store)).height == 2
    with pytest.raises(SystemExit) as e:
        main(["hpctoolkit", str(dbs["cpi"]), "--app", "x", "--param", "oops"])
    assert e.value.code == 2
    assert main(["hpctoolkit", str(tmp_path), "--app", "x", "--machine", "quartz"]) == 1


def test_corrupt_database_is_rejected_with_its_name(dbs, tmp_path):
    import shutil

    d = tmp_path / "broken"
    shutil.copytree(dbs["loop-fork-cycles"], d)
    data = (d / "profile.db").read_bytes()
    (d / "profile.db").write_bytes(data[:64])
    rep = read_profiles("hpctoolkit", d, SPEC)
    assert rep.frame.is_empty() and "broken" in rep.rejected[0].reason
    (d / "meta.db").write_bytes(b"not a database at all" * 4)
    rep = read_profiles("hpctoolkit", d, SPEC)
    assert "not an HPCToolkit meta file" in rep.rejected[0].reason


def test_ingest_profiles_writes_store(dbs, tmp_path):
    rep = ingest_profiles(
        "hpctoolkit",
        dbs["lmp-openmp"],
        SampleSpec(app="LAMMPS", machine="quartz", threads=24),
        store=Store(tmp_path / "s"),
    )
    assert rep.write.rows_written == 1
    info = Store(tmp_path / "s").metadata("app_profiles", "quartz")
    assert info["table"] == "app_profiles" and info["units"]["runtime_s"] == "s"


def test_old_format_without_hatchet_names_the_extra(dbs, hide_module):
    hide_module("hatchet")
    rep = read_profiles("hpctoolkit", [dbs["cpi"], dbs["loop-fork-cycles"]], SPEC)
    assert rep.frame.height == 1  # the new-format database needs no hatchet
    assert len(rep.rejected) == 1 and "pip install 'xamm[hatchet]'" in rep.rejected[0].reason


def test_a_call_without_the_application_is_the_callers_error(tmp_path):
    """The files do not name their application: without a spec the call fails before any file is
    read, with one line, instead of rejecting each file as an unexpected input."""
    (tmp_path / "p.cali").write_text("not read")
    for fn in (read_profiles, ingest_profiles):
        with pytest.raises(ValueError, match=r"caliper profiles need spec=SampleSpec\(app=") as e:
            fn("caliper", tmp_path)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="unknown format 'rajaperf'"):
        read_profiles("rajaperf", tmp_path, SampleSpec(app="A"))


def test_a_table_row_with_text_for_a_counter_or_a_count_past_an_integer_is_dropped_by_name(
    tmp_path,
):
    """A counter column holding text (``n/a``), or a thread count no integer holds (``1e23``),
    drops that row naming the line, the column and the value; the table's other rows are read."""
    csv = tmp_path / "samples.csv"
    csv.write_text(
        "application,system,time_ms,nthreads,PAPI_TOT_INS\n"
        "Kripke,Quartz,1500,4,1e9\n"
        "Kripke,Quartz,1600,4,n/a\n"
        "Kripke,Quartz,1700,1e23,1e9\n"
    )
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        '[columns]\napp = "application"\nmachine = "system"\nruntime_s = "time_ms"\n'
        'threads = "nthreads"\n[units]\nruntime_s = "ms"\n'
    )
    rep = read_profiles("table", csv, mapping=mapping)
    assert rep.rejected == []
    assert rep.frame.get_column("runtime_s").to_list() == [1.5]
    got = {(d.record, d.field, d.value) for d in rep.dropped}
    assert got == {("row 3", "PAPI_TOT_INS", "n/a"), ("row 4", "nthreads", "1e+23")}  # as read
    rules = {d.field: d.rule for d in rep.dropped}
    assert "counter" in rules["PAPI_TOT_INS"] and "expected a number" in rules["PAPI_TOT_INS"]
    assert "expected a whole number below 2^63" in rules["nthreads"]


def test_params_need_a_key_once_and_store_finite_numbers_or_text(capsys):
    """``--param``: a value is an integer, a finite number or text (``nan`` stays text: the
    parameters are stored as JSON, which has no NaN); a missing key, or one given twice, is a usage
    error naming it."""
    import argparse

    from xamm_ingest.profiles import _parse_params

    parser = argparse.ArgumentParser(prog="p")
    got = _parse_params([" n =10", "eps=1e-3", "mode=fast", "x=nan", "y=-inf", "z=1e400"], parser)
    assert got == {"n": 10, "eps": 1e-3, "mode": "fast", "x": "nan", "y": "-inf", "z": "1e400"}
    assert json.loads(json.dumps(got, allow_nan=False)) == got
    from pydantic import ValidationError

    from xamm_ingest.readers.profile_common import SampleSpec

    with pytest.raises(ValidationError, match="params.x"):  # a library caller's NaN
        SampleSpec(app="a", params={"x": float("nan")})
    for items, said in (
        (["=1"], "--param '=1': expected KEY=VALUE"),
        ([" =1"], "--param ' =1': expected KEY=VALUE"),
        (["oops"], "--param 'oops': expected KEY=VALUE"),
        (["a=1", "a =2"], "--param 'a' given twice (1 and '2')"),
    ):
        with pytest.raises(SystemExit) as e:
            _parse_params(items, parser)
        assert e.value.code == 2 and said in capsys.readouterr().err
