"""Formats are plug-ins: every installed format honours the contract, and a format from a separate,
installed package is ingested and predicted from without any edit to xamm.

The toy package is built and installed by pip (``--target``, no index, no build isolation) into a
folder of its own; the commands then run with that folder on ``PYTHONPATH``, so the toy's
``xamm.formats`` entry point is found the way any installed package's is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from conftest import FIXTURES
from ramble_writer import write_workspace

from xamm_data.store.store import Store
from xamm_ingest.format import (
    Format,
    UnknownFormatError,
    UnknownFormatNameError,
    formats,
    get_format,
    guess_format,
    list_formats,
)
from xamm_ingest.readers.base import ReadResult
from xamm_ingest.sources import Plan

BIN = Path(sys.executable).parent

TOY = '''
"""A toy profiler's format: ``app``, ``machine`` and ``region NAME SECONDS BYTES FLOPS`` lines."""
from pathlib import Path

import polars as pl

from xamm_ingest.plugin import (APP_PROFILES, Format, IngestError, ProfileMeta, ReadResult,
                                RegionProfile, RegionProfileError, category_expr, check_regions,
                                conform_regions, profiles, whole_program)


def guess(path):
    path = Path(path)
    return path.suffix == ".toy" and path.is_file()


def read_regions(path, opts):
    path = Path(path)
    head, rows = {}, []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        kind, *rest = line.split()
        if kind == "region":
            name, s, b, f = rest
            rows.append({"region": name, "exclusive_s": float(s), "bytes": float(b),
                         "flops": float(f)})
        elif kind in ("app", "machine"):
            head[kind] = rest[0]
        else:
            raise RegionProfileError(f"{path}: line {n}: expected app, machine or region")
    df = pl.DataFrame(rows).with_columns(
        pl.col("region").str.split("/").list.last().alias("name"),
        pl.when(pl.col("region").str.contains("/"))
        .then(pl.col("region").str.replace(r"/[^/]*$", "")).alias("parent"),
        pl.lit("toy: bytes and flops as written").alias("work_from"),
    ).with_columns(category_expr("name"))
    regions = conform_regions(df)
    check_regions(regions, str(path))
    machine = head.get("machine")
    meta = ProfileMeta(path=str(path), format="toy", app=head.get("app", path.stem),
                       source=f"{machine}:cpu" if machine else None, cluster=machine,
                       time_from="toy region lines")
    return RegionProfile(meta, regions)


def read(task, opts):
    try:
        profile = read_regions(task.path, opts)
    except RegionProfileError as e:
        raise IngestError(task.path, str(e)) from None
    spec = profiles.need_spec(opts, "toy")
    return ReadResult(rows=[whole_program(profile, spec, profiles.task_source(task), "xamm_toy")])


FORMAT = Format(
    name="toy",
    summary="the toy profiler's .toy files",
    table=APP_PROFILES,
    plan=profiles.plan_files("toy", (".toy",)),
    prepare=profiles.require_spec("toy"),
    read=read,
    finish=profiles.finish,
    guess=guess,
    read_regions=read_regions,
    add_arguments=profiles.add_sample_arguments,
    options=profiles.sample_options,
    batched=True,
    examples=("xamm-ingest toy ./runs --app toyapp --machine quartz",),
)
'''


@pytest.fixture(scope="module")
def toy_site(tmp_path_factory) -> Path:
    """The toy package, built and installed by pip into a folder of its own."""
    src = tmp_path_factory.mktemp("toy-src")
    (src / "xamm_toy").mkdir()
    (src / "xamm_toy" / "__init__.py").write_text(TOY)
    (src / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [build-system]
            requires = ["setuptools>=61"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "xamm-toy"
            version = "0.1"

            [project.entry-points."xamm.formats"]
            toy = "xamm_toy:FORMAT"
            broken = "xamm_toy_missing:FORMAT"

            [tool.setuptools]
            packages = ["xamm_toy"]
            """
        )
    )
    site = tmp_path_factory.mktemp("toy-site")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    r = subprocess.run(
        [*pip, "--no-build-isolation", "--target", str(site), str(src)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert (site / "xamm_toy" / "__init__.py").is_file()
    return site


def _run(argv: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "XAMM_HOME": str(cwd / "home")}
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def _toy_file(path: Path, stencil_s: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "app toyapp\nmachine quartz\nregion main 0.5 0 0\n"
        f"region main/stencil {stencil_s} 4e9 1e9\nregion main/MPI_Allreduce 0.25 0 0\n"
    )


def test_an_installed_package_adds_a_format_to_ingest_and_predict(toy_site, tmp_path):
    for i, s in enumerate((2.0, 3.0, 4.0)):
        _toy_file(tmp_path / "runs" / f"r{i}.toy", s)
    (tmp_path / "runs" / "notes.txt").write_text("not a toy file")
    store = tmp_path / "store"
    r = _run([str(BIN / "xamm-ingest"), "--help"], toy_site, tmp_path)
    assert r.returncode == 0 and "toy" in r.stdout and "the toy profiler" in r.stdout
    # the broken entry point is left out with a warning naming it; the others load
    assert "broken" in r.stderr and "did not load" in r.stderr
    argv = [str(BIN / "xamm-ingest"), "toy", "runs", "--app", "toyapp", "--machine", "quartz"]
    r = _run([*argv, "--store", str(store), "--json", "--no-progress"], toy_site, tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["rows_written"] == 3 and summary["commits"] == [0]
    rows = Store(store).scan("app_profiles").collect().sort("source_path")
    # each stored runtime is the sum of the file's region times, read independently here
    assert rows["runtime_s"].to_list() == pytest.approx([2.75, 3.75, 4.75], rel=1e-12)
    assert set(rows["source_format"]) == {"toy"} and set(rows["reader"]) == {"xamm_toy"}
    assert rows["regions"].list.len().to_list() == [3, 3, 3]
    # resumable like any batched format: a rerun reads nothing new
    r = _run([*argv, "--store", str(store), "--json", "--no-progress"], toy_site, tmp_path)
    assert json.loads(r.stdout)["already_stored"] == 3 and json.loads(r.stdout)["commits"] == []
    r = _run(
        [str(BIN / "xamm"), "predict", "runs/r0.toy", "--source", "quartz:cpu", "--json"],
        toy_site,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    programs = pl.DataFrame(out["programs"] if isinstance(out, dict) else out)
    assert programs.height >= 2
    assert programs["time_source_s"].to_list() == pytest.approx([2.75] * programs.height)


def test_without_the_package_the_format_is_unknown(tmp_path):
    _toy_file(tmp_path / "r.toy", 1.0)
    with pytest.raises(UnknownFormatNameError, match="unknown format 'toy'"):
        get_format("toy")
    with pytest.raises(UnknownFormatError, match="not a profile xamm reads"):
        guess_format(tmp_path / "r.toy", regions=True)


# a source each built-in format reads, and one it must not claim
def _sources(tmp_path: Path) -> dict[str, tuple[Path, Path]]:
    cali = FIXTURES / "rajaperf_sample" / "run-1" / "Base_Seq-default.cali"
    csv = FIXTURES / "rajaperf_sample" / "run-1" / "RAJAPerf-kernel-run-data.csv"
    regions = tmp_path / "regions.csv"
    regions.write_text("region,exclusive_s\nmain,1.0\n")
    stream = tmp_path / "stream.txt"
    stream.write_text(
        "BabelStream\nVersion: 4.0\nImplementation: OpenMP\nRunning kernels 100 times\n"
        "Precision: double\nArray size: 268.4 MB (=0.3 GB)\nTotal size: 805.3 MB (=0.8 GB)\n"
        "Function    MBytes/sec  Min (sec)   Max         Average\n"
        "Copy        100000.000  0.00537     0.00600     0.00550\n"
    )
    db = tmp_path / "db"
    db.mkdir()
    (db / "meta.db").write_bytes(b"HPCTOOLKIT")
    return {
        "rajaperf": (csv, cali),
        "babelstream": (stream, csv),
        "caliper": (cali, csv),
        "hpctoolkit": (db, cali),
        "region-table": (regions, csv),
    }


def test_every_installed_format_honours_the_contract(tmp_path):
    names = formats().list()
    assert {"rajaperf", "babelstream", "caliper", "hpctoolkit", "table", "region-table",
            "benchpark"} <= set(names)  # fmt: skip
    sources = _sources(tmp_path)
    ws = write_workspace(tmp_path / "benchpark", [])
    sources["benchpark"] = (ws, ws / "configs")
    for fmt in list_formats():
        assert isinstance(fmt, Format) and fmt.name in names and fmt.summary
        if fmt.name in sources:
            yes, no = sources[fmt.name]
            assert fmt.guess(yes) is True, fmt.name
            assert fmt.guess(no) is False, fmt.name
        if fmt.ingests:
            plan = fmt.plan([FIXTURES / "rajaperf_sample"], {})
            assert isinstance(plan, Plan)
    # one sniffer: what predict takes is told apart by the formats' guesses alone
    assert guess_format(sources["caliper"][0], regions=True).name == "caliper"
    assert guess_format(sources["region-table"][0], regions=True).name == "region-table"
    assert guess_format(sources["hpctoolkit"][0], regions=True).name == "hpctoolkit"
    assert guess_format(sources["rajaperf"][0]).name == "rajaperf"
    with pytest.raises(UnknownFormatError):
        guess_format(sources["rajaperf"][0], regions=True)  # a RAJAPerf CSV is no profile


def test_every_ingesting_format_reads_a_planned_source_into_rows(tmp_path, shared_data):
    """Each built-in format that stores rows, through its own prepare, plan and read, on one of
    its sources: rows (or a table reader's frame) that name the source's format."""
    from xamm_ingest import SampleSpec

    sources = _sources(tmp_path)
    table = tmp_path / "samples.csv"
    table.write_text(
        "application,system,time_ms,nthreads,size,notes,br\nLaghos,ruby,1520.5,36,16,a,1\n"
    )
    spec = SampleSpec(app="LULESH", machine="quartz")
    dane = shared_data / "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane"
    write_workspace(tmp_path / "benchpark", sorted(dane.rglob("*.cali"))[:1])
    cases = {
        "rajaperf": (FIXTURES / "rajaperf_sample", {}),
        "benchpark": (tmp_path / "benchpark", {}),
        "babelstream": (sources["babelstream"][0], {"machine": "quartz", "device": "cpu"}),
        "caliper": (
            sorted((shared_data / "LLNL+thicket-tutorial" / "data" / "lulesh").glob("*.cali"))[0],
            {"spec": spec},
        ),
        "hpctoolkit": (
            shared_data / "HPCToolkit+hpcviewer.e4" / "tests" / "resources" / "metadb",
            {"spec": spec},
        ),
        "table": (
            table,
            {"mapping": Path(__file__).parents[2] / "examples" / "table-mapping.toml"},
        ),
    }
    assert set(cases) == {f.name for f in list_formats(ingests=True)}
    for name, (path, opts) in cases.items():
        fmt = get_format(name)
        opts = fmt.prepare(dict(opts))
        plan = fmt.plan([path], opts)
        assert plan.tasks and not plan.rejected, name
        res = fmt.read(plan.tasks[0], opts)
        assert isinstance(res, ReadResult), name
        formats_read = (
            {r["source_format"] for r in res.full_rows()}
            if res.rows
            else set(res.frame.get_column("source_format"))
        )
        assert formats_read and all(
            f and f.split("-")[0] in (name, "caliper") for f in formats_read
        ), (
            name,
            formats_read,
        )
    assert [f.name for f in list_formats(ingests=False)] == ["region-table"]
    assert {f.name for f in list_formats(regions=True)} >= {"caliper", "hpctoolkit", "region-table"}


def test_the_plugin_face_names_everything_the_toy_format_imports():
    import ast

    import xamm_ingest.plugin as face

    tree = ast.parse(TOY)
    used = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            and (n.module or "").startswith("xamm") for a in n.names}  # fmt: skip
    froms = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert froms <= {"xamm_ingest.plugin", "pathlib"} and used <= set(face.__all__)
    assert all(hasattr(face, n) for n in face.__all__)


def test_a_plugin_whose_guess_raises_is_warned_about_once_and_skipped(tmp_path, caplog):
    import logging

    from xamm_ingest.format import formats, guess_format

    def guess(path):
        raise RuntimeError("the plug-in's bug")

    import dataclasses

    from xamm_ingest.format import get_format

    broken = dataclasses.replace(get_format("table"), name="aaa-broken", guess=guess)
    formats().add("aaa-broken", broken)  # first by name: asked before every other format
    try:
        cali = next((FIXTURES / "rajaperf_sample").rglob("*.cali"))
        with caplog.at_level(logging.WARNING, "xamm_ingest"):
            assert guess_format(cali).name != "aaa-broken"
            assert guess_format(cali).name != "aaa-broken"
        said = [r.getMessage() for r in caplog.records if "aaa-broken" in r.getMessage()]
        assert len(said) == 1 and "the plug-in's bug" in said[0]
    finally:
        formats().remove("aaa-broken")
