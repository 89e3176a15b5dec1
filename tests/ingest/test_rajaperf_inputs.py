"""RAJAPerf ingest: formats, npasses, CSV/Caliper cross-check, the bad-input corpus, the CLI."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from cali_writer import rajaperf_cali
from conftest import FIXTURES

from xamm_data.store.store import Store
from xamm_ingest import read_rajaperf
from xamm_ingest.cli import main
from xamm_ingest.readers.base import Source
from xamm_ingest.readers.rajaperf_caliper import read_caliper

SAMPLE = FIXTURES / "rajaperf_sample"
BAD = FIXTURES / "bad"


def test_sample_merges_csv_and_caliper_of_the_same_run():
    rep = read_rajaperf(SAMPLE, workers=1)
    assert rep.rejected == [] and rep.merged_rows == 3
    df = rep.frame
    run1 = df.filter(pl.col("source_path").str.starts_with("run-1"))
    # one row per (kernel, variant): 3 Base_Seq (Caliper, filled from CSV) + 2 Base_OpenMP (CSV)
    assert run1.height == 5 and run1.select("kernel", "variant").is_unique().all()
    daxpy = run1.filter(pl.col("kernel") == "Basic_DAXPY", pl.col("variant") == "Base_Seq").row(
        0, named=True
    )
    # from the CSV
    assert daxpy["source_format"] == "caliper-cali" and daxpy["bytes_read_per_rep"] == 16000
    # the Caliper row keeps its own statistics (min/max over ranks); the CSV fills only what it
    # lacks
    assert (
        daxpy["time_per_rep_min_s"] == pytest.approx(1.0e-3)
        and daxpy["problem_dimensionality"] is None
    )
    omp = run1.filter(pl.col("variant") == "Base_OpenMP")
    assert set(omp.get_column("compiler")) == {"g++-12.2.0"} and set(omp.get_column("threads")) == {
        2
    }
    assert any("Not run" in n for n in rep.notes)
    old = df.filter(pl.col("source_format") == "rajaperf-timing-csv")
    assert old.height == 5 and old.filter(
        pl.col("kernel") == "Basic_DAXPY", pl.col("variant") == "Base_Seq"
    ).get_column("time_per_rep_s").item() == pytest.approx(0.5 * 1.02 / 500)


def test_disagreeing_formats_refuse_only_that_record(tmp_path):
    d = tmp_path / "runs"
    shutil.copytree(SAMPLE, d)
    from make_fixtures import sample_kernels

    ks = sample_kernels("Base_Seq")
    # three passes' total taken for one pass's: not the same measurement
    ks["Stream_TRIAD"]["time"] *= 3
    rajaperf_cali(d / "run-1" / "Base_Seq-default.cali", ks, cluster="example-node")
    rep = read_rajaperf(d, workers=1)
    assert rep.rejected == [] and len(rep.dropped) == 2
    for drop in rep.dropped:
        # both values
        assert "Stream_TRIAD" in drop.rule and "0.00375" in drop.rule and "0.00125" in drop.rule
        assert "Base_Seq-default.cali" in drop.rule and "RAJAPerf-kernel-run-data.csv" in drop.rule
    run1 = rep.frame.filter(pl.col("source_path").str.starts_with("run-1"))
    seq = run1.filter(pl.col("variant") == "Base_Seq")
    # the file's other records stay
    assert "Stream_TRIAD" not in set(seq.get_column("kernel")) and seq.height >= 1
    assert set(run1.get_column("variant")) == {"Base_Seq", "Base_OpenMP"}


def test_npasses_gives_the_same_time_per_rep_as_the_csv(tmp_path):
    """Caliper accumulates every pass; RAJAPerf's CSV reports the mean over passes."""
    from make_fixtures import sample_kernels, write_csv_run

    d = tmp_path / "np"
    write_csv_run(d)
    ks = {k: dict(v, time=v["time"] * 3) for k, v in sample_kernels("Base_Seq").items()}
    f = rajaperf_cali(
        d / "Base_Seq-default.cali",
        ks,
        cluster="example-node",
        cmdline="[raja-perf.exe,--npasses,3,--size,1000]",
    )
    row = next(r for r in read_caliper(Source.of(f)).full_rows() if r["kernel"] == "Basic_DAXPY")
    assert row["npasses"] == 3 and row["time_per_rep_s"] == pytest.approx(1.0e-3)
    rep = read_rajaperf(d, machine="example-node", workers=1)
    assert rep.rejected == [] and rep.merged_rows == 3


def test_caliper_json_split_gives_the_same_rows(tmp_path):
    import caliperreader

    src = SAMPLE / "run-1" / "Base_Seq-default.cali"
    r = caliperreader.CaliperReader()
    r.read(str(src))
    nodes, index = [], {}
    for rec in r.records:
        p = tuple(rec["path"]) if isinstance(rec.get("path"), list) else (rec["path"],)
        for i in range(len(p)):
            if p[: i + 1] not in index:
                index[p[: i + 1]] = len(nodes)
                nodes.append(
                    {"label": p[i], "column": "path", **({"parent": index[p[:i]]} if i else {})}
                )
    cols = sorted({k for rec in r.records for k in rec if k not in ("path", "region")})
    doc = {
        "data": [
            [float(rec[c]) if c in rec else None for c in cols]
            + [index[tuple(rec["path"]) if isinstance(rec["path"], list) else (rec["path"],)]]
            for rec in r.records
        ],
        "columns": cols + ["path"],
        "column_metadata": [
            {"is_value": True, **({"attribute.unit": "sec"} if "time" in c else {})} for c in cols
        ]
        + [{"is_value": False}],
        "nodes": nodes,
        **r.globals,
    }
    j = tmp_path / "Base_Seq-default.json"
    j.write_text(json.dumps(doc))
    a = read_caliper(Source.of(src)).full_rows()
    b = read_caliper(Source.of(j)).full_rows()

    def strip(rows):
        drop = ("source_path", "source_sha256", "source_format")
        return [{k: v for k, v in x.items() if k not in drop} for x in rows]

    assert strip(a) == strip(b) and b[0]["source_format"] == "caliper-json"


@pytest.mark.parametrize(
    "name,expected",
    [
        ("truncated.cali", "truncated"),
        ("corrupt.cali", "not a text Caliper file"),
        ("no_rajaperf_regions.cali", "no RAJAPerf kernel regions"),
        ("all_not_run", "every cell says 'Not run'"),
    ],
)
def test_bad_files_are_rejected_naming_file_and_reason(name, expected):
    rep = read_rajaperf(BAD / name, machine="example-node", workers=1)
    assert rep.frame.is_empty()
    assert len(rep.rejected) == 1
    assert expected in rep.rejected[0].reason and name in rep.rejected[0].reason


@pytest.mark.parametrize(
    "name,kernel,expected",
    [
        ("zero_time.cali", "Basic_DAXPY", "time per rep is 0.0 s; expected a finite time > 0"),
        ("negative_time", "Basic_DAXPY", "time per rep is -0.001 s; expected a finite time > 0"),
        ("infinite_time", "Basic_DAXPY", "time per rep is inf s; expected a finite time > 0"),
    ],
)
def test_bad_records_are_dropped_and_the_rest_of_the_file_kept(name, kernel, expected):
    rep = read_rajaperf(BAD / name, machine="example-node", workers=1)
    assert rep.rejected == [] and len(rep.dropped) == 1
    d = rep.dropped[0]
    assert (
        name in d.path and kernel in d.record and d.field == "time_per_rep_s" and d.rule == expected
    )
    kept = rep.frame.select(pl.concat_str("kernel", "variant", separator=" ")).to_series().to_list()
    assert f"{kernel} Base_Seq" not in kept and "Stream_TRIAD Base_Seq" in kept


def test_unknown_columns_are_kept_not_dropped(tmp_path):
    d = tmp_path / "unknown"
    shutil.copytree(BAD / "unknown_column", d)
    f = d / "RAJAPerf-kernel-run-data.csv"
    # a numeric column this reader does not know
    f.write_text(f.read_text().replace(" PASSED ", " 42.5 "))
    rep = read_rajaperf(d, machine="example-node", workers=1)
    assert rep.rejected == [] and any("Mystery" in n for n in rep.notes)
    extra = rep.frame.filter(
        pl.col("kernel") == "Basic_DAXPY", pl.col("variant") == "Base_Seq"
    ).get_column("extra_metrics")
    assert extra.to_list() == [[{"name": "Mystery", "value": 42.5}]]


def test_missing_machine_and_conflicting_machine(tmp_path):
    rep = read_rajaperf(BAD / "no_cluster.cali", workers=1)
    assert "no 'cluster'" in rep.rejected[0].reason and "--machine" in rep.rejected[0].reason
    d = tmp_path / "csv"
    shutil.copytree(SAMPLE / "run-1", d)
    (d / "Base_Seq-default.cali").unlink()
    rep = read_rajaperf(d, workers=1)
    assert "carry no machine name" in rep.rejected[0].reason
    rep = read_rajaperf(SAMPLE / "run-1" / "Base_Seq-default.cali", machine="quartz", workers=1)
    assert "cluster='example-node'" in rep.rejected[0].reason


def test_bad_xamm_toml_names_file_and_field(tmp_path):
    d = tmp_path / "runs"
    shutil.copytree(SAMPLE, d)
    (d / "xamm.toml").write_text('machin = "x"\n')
    rep = read_rajaperf(d, workers=1)
    assert rep.rejected and all("xamm.toml" in r.reason for r in rep.rejected)
    assert any("machin" in r.reason for r in rep.rejected)
    # each rejection is a source the file applies to, by its own path (the xamm.toml is no source)
    sources = {str(p) for p in d.rglob("*") if p.suffix in (".cali", ".csv")}
    assert {r.path for r in rep.rejected} <= sources and len(rep.rejected) >= 3
    assert all(r.reason.startswith(f"{r.path}: {d / 'xamm.toml'}: ") for r in rep.rejected)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('machine = ""', "machine"),
        ('compiler = "  "', "compiler"),
        ('compiler_flags = ""', "compiler_flags"),
        ("omp_max_threads = true", "omp_max_threads"),
    ],
)
def test_an_empty_or_mistyped_xamm_toml_value_is_refused_not_read_as_absent(line, field, tmp_path):
    """An empty machine, compiler or flags is no value (never "not given"), and a switch is no
    thread count: each refused naming the file and the field."""
    d = tmp_path / "runs"
    shutil.copytree(SAMPLE, d)
    (d / "xamm.toml").write_text(line + "\n")
    rep = read_rajaperf(d, workers=1)
    assert rep.frame.height == 0 and len(rep.rejected) >= 3
    assert all(f"{d / 'xamm.toml'}: field {field!r}" in r.reason for r in rep.rejected)


def test_cli_partial_strict_and_dry_run(tmp_path, capsys):
    d = tmp_path / "runs"
    shutil.copytree(SAMPLE, d)
    shutil.copy(BAD / "truncated.cali", d / "run-1" / "truncated.cali")
    store = tmp_path / "store"
    assert main(["rajaperf", str(d), "--store", str(store), "--strict", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "truncated.cali" in err and "nothing written" in err
    assert not Store(store).has("benchmark_runs", "example-node")
    assert main(["rajaperf", str(d), "--store", str(store), "--dry-run", "--no-progress"]) == 0
    assert "dry run: nothing written" in capsys.readouterr().out
    assert not Store(store).has("benchmark_runs", "example-node")
    assert main(["rajaperf", str(d), "--store", str(store), "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rejected"] == 1 and out["rows"] == 10 and out["machines"] == ["example-node"]
    assert Store(store).read("benchmark_runs", "example-node").height == 10


def test_cli_usage_and_help(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["rajaperf"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["rajaperf", "--help"])
    assert e.value.code == 0 and "examples:" in capsys.readouterr().out
    assert main(["rajaperf", str(tmp_path / "missing")]) == 1
    (tmp_path / "empty").mkdir()
    assert main(["rajaperf", str(tmp_path / "empty"), "--no-progress"]) == 1


def test_xamm_command_exit_codes(tmp_path, capsys):
    from xamm_data.cli.commands import main as xamm

    assert (
        xamm(["ingest", "rajaperf", str(SAMPLE), "--store", str(tmp_path / "s"), "--no-progress"])
        == 0
    )
    assert xamm(["datasets", "show", "example-node", "--store", str(tmp_path / "s")]) == 0
    assert "example-node" in capsys.readouterr().out
    assert xamm(["datasets", "show", "quartzz", "--store", str(tmp_path / "s")]) == 1
    assert "Did you mean 'quartz'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        xamm(["datasets", "frobnicate"])
    assert e.value.code == 2
    assert (
        xamm(["schemas", "export", "--check", "--dir", str(FIXTURES.parent.parent / "schemas")])
        == 0
    )
    assert xamm(["schemas", "export", "--check", "--dir", str(tmp_path)]) == 1
    # outside a checkout: no folder to compare, said in one line
    capsys.readouterr()
    assert xamm(["schemas", "export", "--check", "--dir", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no such folder" in err and "--dir DIR" in err


def test_xamm_toml_supplies_what_csv_files_do_not_say(tmp_path):
    d = tmp_path / "runs"
    shutil.copytree(SAMPLE, d)
    (d / "xamm.toml").write_text(
        'machine = "example-node"\ncompiler = '
        '"g++-12.2.0"\ncompiler_flags = "-O3"\n'
        "omp_max_threads = 2\n"
    )
    df = read_rajaperf(d, workers=1).frame
    old = df.filter(pl.col("source_path").str.starts_with("run-2"))
    assert set(old.get_column("compiler")) == {"g++-12.2.0"} and set(
        old.get_column("compiler_flags")
    ) == {"-O3"}
    assert set(old.filter(pl.col("variant") == "Base_OpenMP").get_column("threads")) == {2}
    (d / "xamm.toml").write_text('machine = "example-node"\nomp_max_threads = 0\n')
    rep = read_rajaperf(d, workers=1)
    assert rep.rejected and "omp_max_threads" in rep.rejected[0].reason


def test_a_kernels_passes_timed_inf_and_minus_inf_give_no_time_not_an_error():
    """A kernel whose summed passes hold both infinities has no time (NaN, which the record
    checks refuse by name), as IEEE sums them, rather than an error that sinks its file."""
    import math

    from xamm_ingest.readers.rajaperf_caliper import _times

    t = "avg#inclusive#sum#time.duration"
    mean, _, _ = _times([{t: "inf"}, {t: "-inf"}], {"mean": (t, 1.0)})
    assert math.isnan(mean)
    assert _times([{t: "2.5"}, {t: "1.5"}], {"mean": (t, 2.0)})[0] == 8.0


@pytest.mark.parametrize(
    "total, want", [("8.0", 4.0), ("inf", None), ("nan", None), ("1e400", None)]
)
def test_ranks_from_a_spot_root_whose_total_is_no_number_are_unknown_not_an_error(total, want):
    """A spot profile's rank count is its root's total over ranks / their mean; a total that is
    no finite number gives no count (its time is refused by name later) rather than an error
    that sinks the file."""
    from xamm_ingest.readers.caliper_files import CaliperProfile
    from xamm_ingest.readers.rajaperf_caliper import spot_ranks

    rec = {"path": ["RAJAPerf"], "sum#inclusive#sum#time.duration": total}
    rec["avg#inclusive#sum#time.duration"] = "2.0"
    assert spot_ranks(CaliperProfile([rec], {}, {})) == want


def test_not_run_in_the_kernel_table_drops_that_kernel_by_name(tmp_path):
    """RAJAPerf writes a number in every cell of its kernel table; 'Not run' there (a file edited
    or joined by hand) drops that kernel, naming the table's line and column, and the run's other
    kernels are read."""
    d = tmp_path / "run"
    shutil.copytree(SAMPLE / "run-1", d)
    (d / "Base_Seq-default.cali").unlink()  # the CSV files alone
    f = d / "RAJAPerf-kernel-details.csv"
    lines = f.read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Basic_DAXPY "))
    cells = lines[at].split(",")
    cells[4] = " Not run "  # Kernels/rep
    lines[at] = ",".join(cells)
    f.write_text("\n".join(lines))
    rep = read_rajaperf(d, machine="example-node", workers=1)
    assert rep.rejected == []
    (named,) = [x for x in rep.dropped if x.field == "kernels_per_rep"]
    assert named.record == f"RAJAPerf-kernel-details.csv line {at + 1}" and named.value == "Not run"
    kernels = set(rep.frame.get_column("kernel"))
    assert "Basic_DAXPY" not in kernels and "Stream_TRIAD" in kernels


def test_a_time_past_the_largest_double_is_dropped_by_name_not_an_overflow(tmp_path):
    """``1e400`` reads as inf; the half-digit resolution of its text is inf too rather than an
    ``OverflowError``, and the record is dropped naming its time; the run's other records read."""
    import math

    from xamm_ingest.readers.rajaperf_csv import resolution

    assert resolution("1e400") == math.inf and resolution("0.000297") == pytest.approx(5e-7)
    assert resolution("5e-400") == 0.0
    d = tmp_path / "run"
    shutil.copytree(SAMPLE / "run-1", d)
    (d / "Base_Seq-default.cali").unlink()
    f = d / "RAJAPerf-kernel-run-data.csv"
    lines = f.read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Basic_DAXPY "))
    cells = lines[at].split(",")
    cells[5] = " 1e400 "  # Mean time per rep (sec.)
    lines[at] = ",".join(cells)
    f.write_text("\n".join(lines))
    rep = read_rajaperf(d, machine="example-node", workers=1)
    assert rep.rejected == []
    (named,) = [x for x in rep.dropped if "Basic_DAXPY" in x.record]
    assert named.field == "time_per_rep_s" and "expected a finite time" in named.rule
    assert "Stream_TRIAD" in set(rep.frame.get_column("kernel"))


def _bits(value):
    """A value as its exact bits (a float's sign of zero and NaN told apart), else itself."""
    import struct

    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, dict):
        return {k: _bits(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bits(v) for v in value]
    return value


def test_a_regions_one_record_gives_to_the_bit_what_summing_its_records_gives():
    """The one-record paths of a kernel's times and extra metrics (nearly every region) against the
    paths that sum any number of records, on the values a file may write: signed zeros, the
    smallest subnormals (a time in ns scaled to seconds rounds to a zero), NaN, infinities, text,
    lists and missing attributes."""
    import random
    from types import SimpleNamespace

    from xamm_ingest.readers import rajaperf_caliper as rc

    rng = random.Random(66)
    values = [
        "0.000000", "-0.000000", "-0", "5e-324", "-5e-324", "1.5", "-2.25", "nan", "-nan", "inf",
        "-inf", "1e308", "abc", "", ["1", "2"], "103.588786", "2.5e-7",
    ]  # fmt: skip
    roles = {"mean": "inclusive#sum#time.duration", "min": "min#t", "max": "max#t"}
    extras = [("sum#sum#time.duration", "time (exc)", True), ("any#Other", "Other", False)]
    attrs = SimpleNamespace(extra_by_name=extras)
    for _ in range(3000):
        scale = rng.choice([1.0, 1e-9, 1e-6, 1e300])
        times = {r: (a, scale) for r, a in roles.items() if r == "mean" or rng.random() < 0.5}
        rec = {a: rng.choice(values) for a in [*roles.values(), *(e[0] for e in extras)]}
        for a in list(rec):
            if rng.random() < 0.2:
                del rec[a]
        assert _bits(rc._times([rec], times)) == _bits(rc._summed_times([rec], times)), (rec, times)
        one, summed = rc._extra_metrics([rec], attrs), rc._summed_extra([rec], attrs)
        assert _bits(one) == _bits(summed), rec


def test_a_files_time_attributes_and_metric_classes_are_what_their_definitions_pick():
    """Seeded attribute lists (time attributes of every spelling, kernel figures, top-down
    counters, other metrics; aliases and units in the metadata or not, an alias naming a figure):
    the time attribute of each role is the first of the sorted attributes its patterns match, in
    the order mean (``avg#`` first), min, max, with its unit's scale, and each other attribute is
    a figure, BlockSize, a top-down column or an extra metric by its own name where that is a
    figure or a top-down counter, else by its alias — worked out here from those definitions, the
    same for lists the cache has seen and lists it has not."""
    import random
    import re

    from xamm_data.tables.units import seconds_per
    from xamm_ingest.readers import rajaperf_caliper as rc
    from xamm_ingest.readers.caliper_files import CaliperProfile

    times = [
        "avg#inclusive#sum#time.duration", "avg#inclusive#sum#time.duration.ns",
        "inclusive#sum#time.duration", "inclusive#time.duration.ns", "time.inclusive.duration",
        "min#inclusive#sum#time.duration", "max#inclusive#sum#time.duration.ns",
        "sum#inclusive#sum#time.duration", "avg#inclusive#sum#time.durationX",
    ]  # fmt: skip
    others = [
        "any#any#max#Reps", "any#any#max#ProblemSize", "any#any#max#Bytes/Rep", "max#BlockSize",
        "any#any#max#topdown.retiring", "any#topdown.unknown", "sum#papi.X", "count", "q#z",
    ]  # fmt: skip
    aliases = ["Reps", "BlockSize", "topdown.retiring", "Kernels/Rep", "time (exc)"]
    rng = random.Random(1130)
    for _ in range(400):
        keys = rng.sample(times + others, rng.randint(1, 9))
        meta = {}
        for k in keys:
            if rng.random() < 0.3:
                meta[k] = {"attribute.alias": rng.choice(aliases)}
            if k in times and rng.random() < 0.3:
                meta.setdefault(k, {})["attribute.unit"] = rng.choice(["usec", "ms", "ns"])
        prof = CaliperProfile([dict.fromkeys(keys, "1.0")], {}, meta)
        want: dict = {}
        for role, rx in [("mean", rc._TIME_RE[p]) for p in ("avg", "plain")] + [
            ("min", rc._TIME_RE["min"]),
            ("max", rc._TIME_RE["max"]),
        ]:
            k = next((k for k in sorted(set(meta) | set(keys)) if rx.match(k)), None)
            if role not in want and k is not None:
                unit = meta.get(k, {}).get("attribute.unit") or (
                    "ns" if k.endswith(".ns") else "sec"
                )
                want[role] = (k, seconds_per(unit))
        if "mean" not in want:
            with pytest.raises(rc.IngestError, match="no inclusive time attribute"):
                rc._time_attrs(prof)
            continue
        assert rc._time_attrs(prof) == want, (keys, meta)
        attrs = rc._Attrs(prof, {a for a, _ in want.values()})
        got = {a: "figure" for a, _ in attrs.figures} | dict.fromkeys(attrs.block, "block")
        got |= dict.fromkeys(attrs.topdown, "topdown") | dict.fromkeys(attrs.extra, "extra")
        for k in set(keys) - rc._NOT_METRICS - {a for a, _ in want.values()}:
            base = k.split("#")[-1]
            own = base in rc.KERNEL_METRICS or base.startswith("topdown.")
            name = base if own else (meta.get(k, {}).get("attribute.alias") or base)
            kind = (
                "block"
                if name == "BlockSize"
                else "figure"
                if name in rc.KERNEL_METRICS
                else "topdown"
                if re.fullmatch(r"topdown\.(retiring)", name)
                else "extra"
            )
            assert got.pop(k) == kind, (k, meta.get(k))
            if kind == "extra":
                assert attrs.extra[k] == (meta.get(k, {}).get("attribute.alias") or k)
        assert not got
