"""Start-up at the cost of its work: ``xamm --help`` and every ``xamm COMMAND ... --help`` build
their parsers without polars, numpy, pydantic, the store, completion, the Hub client or torch;
what a command needs is loaded when it runs. Asserted on the modules imported (robust to a loaded
machine); ``benchmarks/bench_startup.py`` measures the times."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, REPO

#: where each of xamm's formats does its work (its declaration, in xamm_ingest.formats.catalog, is
#: light: every --help loads it)
WORK = tuple(
    f"xamm_ingest.formats.{m}"
    for m in (
        "rajaperf", "babelstream", "benchpark", "caliper", "hpctoolkit", "table", "region_table"
    )
)  # fmt: skip
#: unit names (plain Python): what a profile format's --time-unit accepts
ALLOWED = ("xamm_data.tables", "xamm_data.tables.units")

#: what no parser may load (the store's location parsing, a few lines of ``os`` and ``urllib``,
#: is allowed: every ``--store`` option is read by it)
FORBIDDEN = (
    "polars",
    "numpy",
    "pydantic",
    "pyarrow",
    "deltalake",
    "huggingface_hub",
    "shtab",
    "torch",
    "xamm_data.store.store",
    "xamm_data.store.log",
    "xamm_data.tables",
    "xamm_data.hub",
    "xamm_ingest.pipeline",
    "xamm_ingest.readers",
    "xamm_ingest.sources",
    "xamm_ingest.profiles",
    *WORK,
    "xamm_models.predictors",
    "xamm_models.compare",
)

WALK = """
import argparse, contextlib, io, json, sys
FORBIDDEN, ALLOWED = %r
from %s import build_parser, main

def walk(p, path):
    yield path
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from walk(sub, path + [name])

built = build_parser()
parser, passthrough = built if isinstance(built, tuple) else (built, ())
paths = [p for p in walk(parser, []) if not (p[:1] and p[0] in passthrough)]
first = None
for path in paths:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main([*path, "--help"])
        except SystemExit:
            pass
    loaded = sorted(
        m for m in sys.modules
        if m not in ALLOWED and any(m == f or m.startswith(f + ".") for f in FORBIDDEN)
    )
    if loaded and first is None:
        first = {"command": " ".join(path), "loaded": loaded[:8]}
print(json.dumps({"commands": [" ".join(p) for p in paths], "first": first}))
"""


def last_json(code: str, env: dict | None = None, timeout: int = 120) -> dict:
    """The JSON line ``code`` prints last, run in a fresh interpreter in the checkout."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_xamm_help_builds_its_parser_without_the_heavy_libraries():
    got = last_json(WALK % ((FORBIDDEN, ALLOWED), "xamm_data.cli.commands"))
    assert {"", "datasets list", "machines add", "predict", "compare", "amm diff"} <= set(
        got["commands"]
    ) and len(got["commands"]) >= 30
    assert got["first"] is None, got["first"]


def test_the_walk_would_see_a_heavy_import():
    code = WALK.replace("FORBIDDEN, ALLOWED = %r", "import polars\nFORBIDDEN, ALLOWED = %r")
    first = last_json(code % ((FORBIDDEN, ALLOWED), "xamm_data.cli.commands"))["first"]
    assert first["command"] == "" and "polars" in first["loaded"]


def test_completion_loads_shtab_only_when_asked_and_offers_its_shells():
    import shtab

    from xamm_data.cli.tools import SHELLS

    assert list(SHELLS) == list(shtab.SUPPORTED_SHELLS)
    out = subprocess.run(
        [sys.executable, "-m", "xamm_data.cli.commands", "--print-completion", "bash"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.returncode == 0 and "shtab" in out.stdout and "_shtab_xamm" in out.stdout


def test_every_xamm_ingest_help_builds_its_parser_without_the_heavy_libraries():
    """``xamm-ingest --help`` and each ``xamm-ingest FORMAT --help``: every format's declaration,
    none of its readers, tables or pipeline."""
    got = last_json(WALK % ((FORBIDDEN, ALLOWED), "xamm_ingest.cli"))
    assert {"", "rajaperf", "babelstream", "caliper", "hpctoolkit", "table", "benchpark"} <= set(
        got["commands"]
    )
    assert got["first"] is None, got["first"]


ONE_COMMAND = """
import contextlib, io, json, sys
from xamm_ingest.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(%r)
print(json.dumps({"code": code, "loaded": sorted(sys.modules), "out": out.getvalue()}))
"""


def _loaded(argv: list[str], home) -> tuple[int, set[str]]:
    code, loaded, _ = _run(argv, home)
    return code, loaded


def _run(argv: list[str], home) -> tuple[int, set[str], str]:
    """(exit code, the modules loaded, what was printed) of ``xamm-ingest ARGV``."""
    got = last_json(ONE_COMMAND % (argv,), {**os.environ, "XAMM_HOME": str(home)}, 300)
    return got["code"], set(got["loaded"]), got["out"]


def test_an_ingest_loads_its_own_format_and_no_other(tmp_path):
    """A RAJAPerf ingest reads with the rajaperf format's code and no other format's, and never
    loads completion, the Hub client or torch; its summary table is drawn by polars, already
    loaded, not by rich (whose import cost more than drawing the table)."""
    code, loaded, out = _run(
        ["rajaperf", str(FIXTURES / "rajaperf_sample"), "--dry-run", "--executor", "serial"],
        tmp_path,
    )
    assert code == 0
    assert "xamm_ingest.formats.rajaperf" in loaded  # the check can see a format's work
    others = {m for m in WORK if m != "xamm_ingest.formats.rajaperf"} & loaded
    assert others == set()
    assert {"shtab", "huggingface_hub", "torch", "dask", "rich"} & loaded == set()
    assert "concurrent.futures.process" not in loaded  # read in this process: no pool to make
    assert "ingested benchmark runs" in out and "\u2502 machine" in out  # the table was drawn


#: per format, what it ingests from the shared data (beside the checkout) and its options
FORMAT_INPUTS = {
    "babelstream": (
        "UoB-HPC+performance-portability/benchmarking/2019/babelstream/v100-isambard",
        ["--machine", "v100-isambard"],
    ),
    "caliper": ("LLNL+thicket-tutorial/data/lulesh", ["--app", "LULESH", "--machine", "quartz"]),
    "hpctoolkit": (
        "LLNL+hatchet/hatchet/tests/data/hpctoolkit-cpi-database",
        ["--app", "LULESH", "--machine", "quartz"],
    ),
}
#: what no ingest loads: completion, the Hub client and its network stack, torch, dask
NEVER_IN_AN_INGEST = {"shtab", "huggingface_hub", "httpx", "torch", "dask", "rich"}


@pytest.mark.data
@pytest.mark.parametrize("fmt", sorted(FORMAT_INPUTS))
def test_each_format_s_ingest_loads_its_own_work_and_no_other_format_s(fmt, shared_data, tmp_path):
    """``xamm-ingest FORMAT`` on real inputs of that format reads them with its own code and no
    other format's (the check sees a format's work: the rajaperf test above), and loads no
    completion, Hub client, torch or dask."""
    where, options = FORMAT_INPUTS[fmt]
    argv = [fmt, str(shared_data / where), *options, "--dry-run", "--executor", "serial"]
    code, loaded, out = _run(argv, tmp_path)
    assert code == 0, out
    _only_its_own_work(fmt, loaded)


def _only_its_own_work(fmt: str, loaded: set[str]) -> None:
    own = f"xamm_ingest.formats.{fmt}"
    assert own in loaded  # the check can see a format's work
    assert {m for m in WORK if m != own} & loaded == set()
    assert {m.split(".")[0] for m in loaded} & NEVER_IN_AN_INGEST == set()


def test_a_table_ingest_loads_its_own_work_and_no_other_format_s(tmp_path):
    """``xamm-ingest table`` (the README's CSV and the example mapping): the table format's code
    only."""
    csv = tmp_path / "samples.csv"
    csv.write_text(
        "application,system,time_ms,nthreads,size,notes,br\nLaghos,ruby,1520.5,36,16,first,1.2e9\n"
    )
    mapping = REPO / "examples" / "table-mapping.toml"
    code, loaded, out = _run(["table", str(csv), "--mapping", str(mapping), "--dry-run"], tmp_path)
    assert code == 0, out
    _only_its_own_work("table", loaded)


def test_an_ingest_into_a_new_store_commits_without_numpy(tmp_path):
    """A first ingest has no stored sources or trial counts to search, so numpy (what those
    searches use) is never imported: its import is a fifth of the command's start-up. It writes no
    shared file (the registry, the file hashes of a batched ingest), so it loads no lock library
    either."""
    store = tmp_path / "store"
    code, loaded = _loaded(
        ["rajaperf", str(FIXTURES / "rajaperf_sample"), "--store", str(store), "--quiet"],
        tmp_path,
    )
    assert code == 0 and (store / "benchmark_runs" / "_delta_log").is_dir()
    assert "xamm_data.store.write" in loaded  # the check can see the commit's code
    assert "numpy" not in loaded
    assert "filelock" not in loaded


def test_a_rajaperf_ingest_loads_no_validation_library_where_no_file_asks_for_one(tmp_path):
    """Nothing an ingest of RAJAPerf files needs is a pydantic model (the tables, the bounds, the
    counters are declarations checked when built): pydantic is loaded only where a file asks for
    its checks, an ``xamm.toml`` beside the runs or a machine registry of the user's own (its
    import and models are a large share of the command's start-up: docs/bench/whole.md)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(FIXTURES / "rajaperf_sample" / "run-1" / "Base_Seq-default.cali", runs)
    argv = ["rajaperf", str(runs), "--quiet", "--store"]
    code, loaded = _loaded([*argv, str(tmp_path / "s1")], tmp_path / "home")
    assert code == 0 and "xamm_data.store.write" in loaded
    assert {m for m in loaded if m.split(".")[0] in ("pydantic", "pydantic_core")} == set()
    assert "xamm_data.machines.registry" not in loaded
    # a run directory's xamm.toml is checked by its model
    (runs / "xamm.toml").write_text('machine = "example-node"\n')
    code, loaded = _loaded([*argv, str(tmp_path / "s2")], tmp_path / "home")
    assert code == 0 and {"xamm_ingest.run_config", "pydantic"} <= loaded
    # and a user's registry by the registry's records
    (runs / "xamm.toml").unlink()
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "machines.toml").write_text('[machines.mybox]\nsource = "mine"\n')
    code, loaded = _loaded([*argv, str(tmp_path / "s3")], tmp_path / "home")
    assert code == 0 and {"xamm_data.machines.registry", "pydantic"} <= loaded


PREDICT = """
import contextlib, io, json, sys
from xamm_data.cli.commands import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(%r)
print(json.dumps({"code": code, "loaded": sorted(sys.modules)}))
"""


@pytest.mark.data
def test_predicting_a_profile_offline_loads_no_hub_client_and_only_its_format(
    shared_data, tmp_path
):
    """``xamm predict lulesh.cali`` (the README's profile) with the embedded default predictor:
    no Hub client, no completion, no torch, and of the formats only Caliper's work; with no store
    of its own, no Delta Lake, no lock library (it writes no shared file), and none of the paper's
    training pipeline (its configs: yaml)."""
    cali = shared_data / "LLNL+thicket-tutorial/data/lulesh/230906-105532_880456_M8YbWSOYgGWa.cali"
    env = {**os.environ, "XAMM_HOME": str(tmp_path)}
    got = last_json(PREDICT % (["predict", str(cali), "--json"],), env, 300)
    loaded = set(got["loaded"])
    assert got["code"] == 0
    assert "xamm_ingest.formats.caliper" in loaded and "xamm_models.predictors.contract" in loaded
    assert {m for m in WORK if m != "xamm_ingest.formats.caliper"} & loaded == set()
    assert {m.split(".")[0] for m in loaded} & {
        "huggingface_hub",
        "shtab",
        "torch",
        "httpx",
        "deltalake",
        "yaml",
        "filelock",
    } == set()
    assert "xamm_models.predictors.paper.pipeline" not in loaded
