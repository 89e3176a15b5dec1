"""Records, not files: a bad kernel drops its row with a reason; plausibility bounds; clear words
for the rest."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from cali_writer import rajaperf_cali
from conftest import FIXTURES
from rajaperf_writer import sim_run, write_csv

from xamm_ingest import Bounds, read_profiles, read_rajaperf
from xamm_ingest.cli import main
from xamm_ingest.readers.profile_common import SampleSpec

SAMPLE = FIXTURES / "rajaperf_sample"
KS = {
    "Basic_DAXPY": {"time": 0.5, "reps": 500, "size": 1000, "bytes": 24000, "flops": 2000},
    "Stream_TRIAD": {"time": 1.25, "reps": 1000, "size": 1000, "bytes": 24000, "flops": 2000},
    "Apps_ENERGY": {"time": 1.04, "reps": 130, "size": 1000, "bytes": 288000, "flops": 24000},
}


def _cali(tmp_path, **changes):
    """Times in ns, as the thicket-tutorial files: Caliper prints 6 decimals, so seconds would lose
    tiny times."""
    ks = {k: dict(v, **changes.get(k, {})) for k, v in KS.items()}
    return rajaperf_cali(
        tmp_path / "Base_Seq-default.cali",
        ks,
        cluster="sim-node",
        time_attr="inclusive#sum#time.duration.ns",
        unit="ns",
    )


@pytest.mark.parametrize(
    "kernel,change,field,rule",
    [
        (
            "Stream_TRIAD",
            {"reps": 0},
            "reps",
            "Reps is 0.0; expected a whole number from 1 to 2^62",
        ),
        (
            "Stream_TRIAD",
            {"reps": 2.5},
            "reps",
            "Reps is 2.5; expected a whole number from 1 to 2^62",
        ),
        # once crashed the cast
        (
            "Stream_TRIAD",
            {"reps": 1e300},
            "reps",
            "Reps is 1e+300; expected a whole number from 1 to 2^62",
        ),
        (
            "Apps_ENERGY",
            {"time": -1.0},
            "time_per_rep_s",
            "time per rep is -0.007692307692307693 s; expected a finite time > 0",
        ),
        (
            "Apps_ENERGY",
            {"size": 1e300},
            "problem_size",
            "problem size 1e+300 is above the plausible maximum 1e+12 (bound max_problem_size)",
        ),
        (
            "Basic_DAXPY",
            {"bytes": 5e17},
            "bytes_per_rep",
            "bytes_per_rep 5e+17 is above the plausible maximum 1e+16 (bound max_bytes_per_rep)",
        ),
        (
            "Basic_DAXPY",
            {"flops": 2e16},
            "flops_per_rep",
            "flops_per_rep 2e+16 is above the plausible maximum 1e+16 (bound max_flops_per_rep)",
        ),
        # 5e-9 s over 500 reps, as Caliper prints it in ns
        (
            "Basic_DAXPY",
            {"time": 5e-9},
            "time_per_rep_s",
            "time per rep 1.0000000000000001e-11 s is outside the plausible "
            "range [1e-10 s, 100000 s] (bounds min_time_per_rep_s, max_time_per_rep_s)",
        ),
    ],
)
def test_one_bad_kernel_drops_one_row(tmp_path, kernel, change, field, rule):
    f = _cali(tmp_path, **{kernel: change})
    rep = read_rajaperf(f, workers=1)
    assert rep.rejected == [] and len(rep.dropped) == 1
    d = rep.dropped[0]
    assert (
        d.path.endswith("Base_Seq-default.cali")
        and d.record.endswith(kernel)
        and d.field == field
        and d.rule == rule
    )
    assert sorted(rep.frame.get_column("kernel")) == sorted(set(KS) - {kernel})


def test_bounds_are_configurable(tmp_path):
    f = _cali(tmp_path, Basic_DAXPY={"time": 5e-9})
    assert read_rajaperf(f, workers=1, bounds=Bounds(min_time_per_rep_s=1e-12)).dropped == []
    with pytest.raises(ValueError, match="min_time_per_rep_s, max_time_per_rep_s"):
        Bounds.from_items(["max_time=3"])
    assert Bounds.from_items(["max_problem_size=1e15"]).max_problem_size == 1e15


def test_sizefact_half_gives_problem_size_param_zero_and_is_valid(tmp_path):
    ks = {k: dict(v) for k, v in KS.items()}
    f = rajaperf_cali(
        tmp_path / "Base_Seq-default.cali",
        ks,
        cluster="sim-node",
        cmdline="[raja-perf.exe,--sizefact,0.5]",
        extra_globals={"ProblemSizeRunParam": "0"},
    )
    rep = read_rajaperf(f, workers=1)
    assert rep.rejected == [] and rep.dropped == []
    assert set(rep.frame.get_column("problem_size_param")) == {0}


def test_file_level_problems_reject_the_file(tmp_path):
    ks = {k: dict(v) for k, v in KS.items()}
    f = rajaperf_cali(tmp_path / "x.cali", ks, cluster="sim-node", variant="Base_Fortran")
    rep = read_rajaperf(f, workers=1)
    assert rep.dropped == [] and "unknown RAJAPerf variant 'Base_Fortran'" in rep.rejected[0].reason


def test_cli_names_dropped_records_and_strict_fails(tmp_path, capsys):
    f = _cali(tmp_path, Stream_TRIAD={"reps": 0})
    assert main(["rajaperf", str(f), "--store", str(tmp_path / "s"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "dropped 1 record(s)" in err and "Stream_TRIAD" in err and "Reps is 0.0" in err
    assert (
        main(["rajaperf", str(f), "--store", str(tmp_path / "s2"), "--no-progress", "--strict"])
        == 1
    )
    with pytest.raises(SystemExit) as e:
        main(["rajaperf", str(f), "--bound", "nonsense=1"])
    assert e.value.code == 2 and "max_problem_size" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("bounds", "said"),
    [
        (["min_time_per_rep_s=10", "max_time_per_rep_s=1"], "min_time_per_rep_s (10) is not below"),
        (["min_runtime_s=1e8"], "min_runtime_s (1e+08) is not below max_runtime_s (1e+07)"),
        (["max_problem_size=1", "max_problem_size=2"], "max_problem_size is given twice"),
        (["min_time_per_rep_s=nan"], "--bound min_time_per_rep_s=nan: Input should be greater"),
    ],
)
def test_bounds_that_leave_nothing_plausible_or_repeat_are_a_usage_error(
    bounds, said, tmp_path, capsys
):
    """A lowest plausible value at or above the highest would drop every record as implausible;
    a bound given twice would keep the last unseen; an error names the bound."""
    f = _cali(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["rajaperf", str(f), "--dry-run", *(x for b in bounds for x in ("--bound", b))])
    assert e.value.code == 2 and said in capsys.readouterr().err


def test_otf2_trace_and_dangling_link_are_named(tmp_path):
    d = tmp_path / "runs"
    shutil.copytree(SAMPLE / "run-1", d)
    (d / "trace.otf2").write_bytes(b"\x00OTF2")
    (d / "trace").mkdir()
    (d / "trace" / "0.evt").write_bytes(b"\x00")
    (d / "trace.def").write_bytes(b"\x00")
    os.symlink(tmp_path / "gone.cali", d / "lost.cali")
    rep = read_rajaperf(d, machine="example-node", workers=1)
    reasons = sorted(r.reason for r in rep.rejected)
    assert len(reasons) == 2
    assert (
        "OTF2 traces are not read; xamm reads RAJAPerf CSV, Caliper" in reasons[1]
        and "trace.otf2" in reasons[1]
    )
    assert "lost.cali: dangling symbolic link" in reasons[0] and "gone.cali" in reasons[0]
    assert rep.frame.height == 5


def test_hpctoolkit_directory_without_meta_db_is_named(tmp_path):
    d = tmp_path / "db"
    d.mkdir()
    (d / "profile.db").write_bytes(b"HPCTOOLKITprof")
    (d / "cct.db").write_bytes(b"HPCTOOLKITctxt")
    m = tmp_path / "hpctoolkit-app-measurements"
    m.mkdir()
    (m / "app-000000-000-a8c00270-12345-0.hpcrun").write_bytes(b"\x00")
    rep = read_profiles("hpctoolkit", [d, m], SampleSpec(app="a", machine="quartz"))
    reasons = sorted(r.reason for r in rep.rejected)
    assert "cct.db, profile.db but no meta.db" in " ".join(
        reasons
    ) or "profile.db, cct.db but no meta.db" in " ".join(reasons)
    assert any("measurement directory" in r and "hpcprof" in r for r in reasons)


def test_csv_with_byte_order_mark_is_read(tmp_path):
    run = sim_run(1, seed=1)
    write_csv(run, tmp_path, "v2026.04")
    for f in tmp_path.glob("*.csv"):
        f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    rep = read_rajaperf(tmp_path, machine="sim-node", workers=1)
    assert (
        rep.rejected == [] and rep.frame.height == 8 and set(rep.frame.get_column("ranks")) == {1}
    )


@pytest.mark.parametrize(
    "spelling,seconds",
    [
        ("us", 1e-6),
        ("usec", 1e-6),
        ("µs", 1e-6),
        ("microseconds", 1e-6),
        ("ms", 1e-3),
        ("msec", 1e-3),
        ("s", 1.0),
        ("seconds", 1.0),
        ("ns", 1e-9),
        ("nanoseconds", 1e-9),
    ],
)
def test_time_unit_spellings(tmp_path, spelling, seconds, capsys):
    from cali_writer import write_cali

    f = write_cali(
        tmp_path / "app.cali",
        [(["main"], {"inclusive#sum#time.duration": 2000.0})],
        {"cluster": "quartz"},
    )
    assert (
        main(["caliper", str(f), "--app", "a", "--time-unit", spelling, "--dry-run", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["rows"] == 1
    rep = read_profiles("caliper", f, SampleSpec(app="a", time_unit=spelling))
    assert rep.frame.get_column("runtime_s").to_list() == [pytest.approx(2000.0 * seconds)]


def test_unknown_time_unit_is_a_usage_error_naming_the_accepted_ones(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["caliper", str(tmp_path), "--app", "a", "--time-unit", "fortnights"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "fortnights" in err and "usec" in err and "µs" in err


def test_identical_reasons_are_grouped(tmp_path, capsys):
    """220 CSV runs without a machine name print as one line; --json keeps every file."""
    base = tmp_path / "runs"
    run = sim_run(1, seed=4)
    for i in range(220):
        write_csv(run, base, "v2024.07.0", prefix=f"run{i:03d}")
    assert main(["rajaperf", str(base), "--no-progress", "--workers", "1", "--dry-run"]) == 1
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "no machine name" in ln]
    assert len(lines) == 1 and lines[0].strip().startswith("220 files:") and "--machine" in lines[0]
    assert (
        main(["rajaperf", str(base), "--no-progress", "--workers", "1", "--dry-run", "--json"]) == 1
    )
    out = json.loads(capsys.readouterr().out)
    assert len(out["rejected_files"]) == 220 and out["rejection_groups"][0]["files"] == 220


def test_table_csv_with_byte_order_mark_is_read(tmp_path):
    (tmp_path / "t.csv").write_bytes(b"\xef\xbb\xbfapp,machine,runtime_s\nKripke,quartz,1.5\n")
    m = tmp_path / "m.toml"
    m.write_text('[columns]\napp = "app"\nmachine = "machine"\nruntime_s = "runtime_s"\n')
    rep = read_profiles("table", tmp_path / "t.csv", mapping=m)
    assert rep.rejected == [] and rep.frame.get_column("app").to_list() == ["Kripke"]


def test_hints_name_values_the_cli_accepts(tmp_path):
    """The message for a time without a unit suggests --time-unit values; each must be accepted by
    the CLI."""
    import re

    from cali_writer import write_cali

    from xamm_ingest.cli import build_parser

    f = write_cali(
        tmp_path / "app.cali",
        [(["main"], {"inclusive#sum#time.duration": 2.0})],
        {"cluster": "quartz"},
    )
    rep = read_profiles("caliper", f, SampleSpec(app="a"))
    msg = rep.rejected[0].reason
    suggested = (
        re.search(r"--time-unit \(([^)]*)\)", msg).group(1).replace(" or ", ", ").split(", ")
    )
    assert len(suggested) == 4
    for unit in suggested:
        args = build_parser().parse_args(["caliper", str(f), "--app", "a", "--time-unit", unit])
        assert args.time_unit == unit


def test_support_matrix_names_tests_that_exist():
    """docs/formats.md cites the tests that prove each cell; each must exist."""
    import re

    from conftest import REPO

    doc = (REPO / "docs" / "formats.md").read_text()
    cited = set(re.findall(r"`(test_[a-z0-9_]+)`", doc)) | set(
        re.findall(r"`(test_[a-z0-9_]+)\[", doc)
    )
    defined = {
        m
        for p in (REPO / "tests").rglob("test_*.py")
        for m in re.findall(r"^def (test_\w+)", p.read_text(), re.M)
    }
    assert cited and cited <= defined, cited - defined


def test_bounds_are_numbers_above_zero_checked_when_built():
    """Bounds are a frozen dataclass checked when built: each a number above 0 (no bool, no text,
    no nan), each lowest below its highest; what the error says names the bound."""
    from xamm_data.errors import BoundsError, XammError

    assert Bounds() == Bounds.from_items(None) and Bounds().max_problem_size == 1e12
    assert Bounds(max_problem_size=5).max_problem_size == 5.0
    assert hash(Bounds()) == hash(Bounds())  # the record rules are cached per bounds
    for value, said in ((True, "a number"), ("1", "a number"), (0, "greater than 0"),
                        (-1e-3, "greater than 0"), (float("nan"), "greater than 0")):  # fmt: skip
        with pytest.raises(BoundsError, match=said) as e:
            Bounds(max_problem_size=value)
        assert e.value.name == "max_problem_size" and isinstance(e.value, XammError | ValueError)
    with pytest.raises(BoundsError, match=r"min_runtime_s \(2\) is not below max_runtime_s"):
        Bounds(min_runtime_s=2, max_runtime_s=1)
    assert Bounds.names()[:2] == ["min_time_per_rep_s", "max_time_per_rep_s"]
    with pytest.raises(AttributeError):
        Bounds().max_problem_size = 1.0  # frozen


def test_the_bounds_named_in_help_are_the_bounds_with_their_defaults():
    """``--bound``'s help names each bound with its default without importing the bounds (help
    loads no table code): every bound is named once, with the default the class gives it."""
    import re

    from xamm_ingest.cli import BOUNDS_HELP

    said = [m for text in BOUNDS_HELP.values() for m in re.findall(r"(\w+) \(([^)]+)\)", text)]
    assert sorted(name for name, _ in said) == sorted(Bounds.names())
    assert {name: float(v) for name, v in said} == {n: getattr(Bounds(), n) for n in Bounds.names()}
